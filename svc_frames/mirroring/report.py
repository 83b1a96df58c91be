"""What a mirror run did, per object and in all: the records inserted, updated, deleted and
left unchanged, the schema changes followed, the requests sent and the time taken."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from ..errors import UsageError

__all__ = ["ObjectReport", "MirrorReport", "display_name"]


def display_name(spec: Any) -> str:
    """A target's name as reports and messages print it (a URL's password masked)."""
    text = os.fspath(spec) if isinstance(spec, os.PathLike) else str(spec)
    if "://" in text and "@" in text:
        scheme, rest = text.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            creds = creds.split(":", 1)[0] + ":***"
        return f"{scheme}://{creds}@{host}"
    return text


@dataclass
class ObjectReport:
    """One object's part of a mirror run.

    Attributes
    ----------
    object_key, name, table : str
        The object, its name, and its current-state table in the target.
    inserted, updated, deleted, unchanged : int
        Records new since the last run, changed, gone, and the same as before.
    schema_changes : list of str
        The schema changes followed (``"field_47 added (short_text)"``, ...).
    requests : int
        Requests this object's part sent.
    seconds : float
        Its wall time.
    full : bool
        Every record was listed (first run, a schema change, a sweep, no stamped field).
    reason : str
        Why, when ``full``.
    assets : int
        Files and images downloaded for the mirror's copies (``assets=True``).
    rows_read : int
        Rows of its current tables read back from the target (an incremental run reads
        those of the records that changed only).
    """

    object_key: str
    name: str
    table: str
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    schema_changes: list[str] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    full: bool = False
    reason: str = ""
    assets: int = 0
    rows_read: int = 0


@dataclass
class MirrorReport:
    """What ``mirror`` did: one :class:`ObjectReport` per object, the run and its cost.

    ``str(report)`` is the one summary line the CLI prints; ``report.to_json()`` what
    ``--json`` prints; ``report.frame()`` one row per object.

    Attributes
    ----------
    run : int
        The run's number in the target (1 for the first).
    target : str
        The target as named (a password in a URL masked).
    started, finished : str
        ISO times (UTC) of the run's start (every version it wrote is valid from then)
        and its commit.
    objects : dict of str to ObjectReport
        By object key.
    requests : int
        Requests the run sent (the schema's included).
    seconds : float
        Wall time.

    Examples
    --------
    >>> report = mirror(client, tmp_path / "mirror.duckdb")
    >>> print(report)  # doctest: +ELLIPSIS
    mirror run 1 to ...mirror.duckdb: 3 objects, 90 inserted, 0 updated, 0 deleted, ...
    >>> report.frame()[["object", "inserted", "updated"]]
         object  inserted  updated
    0  object_1        20        0
    1  object_2        40        0
    2  object_3        30        0
    """

    run: int
    target: str
    started: str
    finished: str = ""
    objects: dict[str, ObjectReport] = field(default_factory=dict)
    requests: int = 0
    seconds: float = 0.0

    def total(self, what: str) -> int:
        """The sum over the objects of ``inserted``, ``updated``, ``deleted`` or ``unchanged``.

        Parameters
        ----------
        what : {"inserted", "updated", "deleted", "unchanged"}

        Returns
        -------
        int

        Raises
        ------
        UsageError
            ``what`` is none of the four.

        Examples
        --------
        >>> mirror(client, tmp_path / "m.duckdb").total("inserted")
        90
        """
        if what not in ("inserted", "updated", "deleted", "unchanged"):
            raise UsageError(f"total of inserted, updated, deleted or unchanged, got {what!r}")
        return sum(int(getattr(o, what)) for o in self.objects.values())

    @property
    def schema_changes(self) -> list[str]:
        """Every schema change followed, as ``object_key: change``.

        Examples
        --------
        >>> mirror(client, tmp_path / "m.duckdb").schema_changes
        []
        """
        return [f"{k}: {c}" for k, o in self.objects.items() for c in o.schema_changes]

    def frame(self) -> pd.DataFrame:
        """One row per object: the counts, schema changes, requests, seconds.

        Returns
        -------
        pandas.DataFrame

        Examples
        --------
        >>> mirror(client, tmp_path / "m.duckdb").frame().columns.tolist()[:4]
        ['object', 'name', 'table', 'inserted']
        """
        rows = [{"object": o.object_key, "name": o.name, "table": o.table,
                 "inserted": o.inserted, "updated": o.updated, "deleted": o.deleted,
                 "unchanged": o.unchanged, "schema_changes": "; ".join(o.schema_changes),
                 "requests": o.requests, "seconds": round(o.seconds, 3), "full": o.full}
                for o in self.objects.values()]
        return pd.DataFrame(rows, columns=["object", "name", "table", "inserted", "updated",
                                           "deleted", "unchanged", "schema_changes",
                                           "requests", "seconds", "full"])

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (what ``to_json`` writes).

        Returns
        -------
        dict

        Examples
        --------
        >>> sorted(mirror(client, tmp_path / "m.duckdb").to_dict())[:3]
        ['finished', 'objects', 'requests']
        """
        out = asdict(self)
        out["objects"] = {k: asdict(o) for k, o in self.objects.items()}
        return out

    def to_json(self) -> str:
        """The report as one line of JSON (``svc-frames mirror --json``).

        Returns
        -------
        str

        Examples
        --------
        >>> import json
        >>> json.loads(mirror(client, tmp_path / "m.duckdb").to_json())["run"]
        1
        """
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def __str__(self) -> str:
        changes = len(self.schema_changes)
        return (f"mirror run {self.run} to {self.target}: {len(self.objects)} objects, "
                f"{self.total('inserted')} inserted, {self.total('updated')} updated, "
                f"{self.total('deleted')} deleted, {self.total('unchanged')} unchanged, "
                f"{changes} schema changes; {self.requests} requests, "
                f"{self.seconds:.1f} s")
