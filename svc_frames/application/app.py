"""``App``: the loaded objects by key and name, the connections the schema declares
(``connections_of``: field, from-object, to-object, one or many), joins along them
(joins.py), and the whole dataset written to DuckDB or Parquet (saved/snapshot.py)."""

from __future__ import annotations

import html
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..display import pending_edits
from ..errors import UsageError
from ..frames import Frames
from ..joins import How, connection_table, join, join_pairs
from ..labels import label_map, renamed
from ..lookup import match
from ..saved.snapshot import app_to_parquet, to_duckdb
from ..schema import Connection, Schema

__all__ = ["App", "connections_of"]


def connections_of(schema: Mapping[str, Any] | None) -> list[Connection]:
    """Every connection field of the schema (schema order; ``schema.Connection``).

    Usage: ``[c.field for c in connections_of(client.schema())]``"""
    return Schema.of(schema).connections()


class App:
    """Loaded objects by key and name, and the connections between them.

    What ``read_app`` returns. ``app["object_3"]`` and ``app["Work Orders"]`` are the
    object's Frames (UsageError for one not loaded); ``"Parts" in app``, ``len(app)``
    and iteration (keys) work as for a dict.

    Parameters
    ----------
    frames : dict of str to Frames
        The loaded objects by key.
    schema : dict, optional
        The application schema (``client.schema()``): names and connections. Without it
        the connections are those the frames' fields declare.
    app_id : str, default ""
        The application, for the repr.

    Attributes
    ----------
    connections : list of Connection
        Every connection field (``field``, ``label``, ``from_object``, ``to_object``,
        ``many``).
    names : dict of str to str
        Object key -> name.

    Examples
    --------
    >>> app = read_app(client)
    >>> print(app)  # doctest: +ELLIPSIS
    App ...: 3 objects, 90 rows, 3 connections
      object_1   People                          20 rows   17 columns
      object_2   Parts                           40 rows    4 columns
      object_3   Work Orders                     30 rows   55 columns
    connections:
      Work Orders.Parts (field_41) -> Parts (many)
      Work Orders.Assignee (field_42) -> People (one)
      Work Orders.Created By (field_43) -> People (one)
    >>> App({"object_2": app["Parts"]}, client.schema()).keys()
    ['object_2']
    """

    def __init__(self, frames: dict[str, Frames], schema: Mapping[str, Any] | None = None, *,
                 app_id: str = "") -> None:
        self.frames = dict(frames)
        self.schema = schema
        self.app_id = app_id
        self.names: dict[str, str] = {}
        for o in (schema or {}).get("objects") or ():
            if o.get("key"):
                self.names[str(o["key"])] = str(o.get("name") or "")
        for key, f in self.frames.items():
            if f.source is not None and f.source.name:
                self.names.setdefault(key, f.source.name)
            self.names.setdefault(key, "")
        self.connections: list[Connection] = connections_of(schema)
        if not schema:  # no schema: the connections the loaded frames declare
            for f in self.frames.values():
                for spec in f.source.fields if f.source is not None else ():
                    rel = spec.relationship or {}
                    if spec.kind == "connection" and rel.get("object"):
                        self.connections.append(Connection(
                            spec.key, spec.label, spec.object_key, str(rel["object"]),
                            rel.get("has") == "many"))

    # ---- mapping -------------------------------------------------------------------------
    def key(self, name: str) -> str:
        """The object key for a key or a name.

        Parameters
        ----------
        name : str
            An object's key or name.

        Returns
        -------
        str

        Raises
        ------
        UsageError
            No object (or several) has that name, listing the objects.

        Examples
        --------
        >>> read_app(client, ["Parts"]).key("Work Orders")
        'object_3'
        """
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"an object is named by its key or name, got {name!r}")
        return match(name, list(self.names.items()), "object", "app.summary()")

    def __getitem__(self, name: str) -> Frames:
        key = self.key(name)
        if key not in self.frames:
            raise UsageError(f"{key} ({self.names.get(key) or key}) was not loaded; loaded: "
                             f"{self._listing()} (read_app(client, objects=[...]))")
        return self.frames[key]

    def __contains__(self, name: object) -> bool:
        try:
            return isinstance(name, str) and self.key(name) in self.frames
        except UsageError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def keys(self) -> list[str]:
        """The keys of the loaded objects.

        Returns
        -------
        list of str

        Examples
        --------
        >>> read_app(client, ["Parts", "People"]).keys()
        ['object_2', 'object_1']
        """
        return list(self.frames)

    def items(self) -> list[tuple[str, Frames]]:
        """The loaded objects as (key, Frames) pairs.

        Returns
        -------
        list of tuple of (str, Frames)

        Examples
        --------
        >>> [(k, len(f)) for k, f in read_app(client).items()]
        [('object_1', 20), ('object_2', 40), ('object_3', 30)]
        """
        return list(self.frames.items())

    def name(self, key: str) -> str:
        """The object's name (its key when the schema gives none).

        Parameters
        ----------
        key : str
            An object key.

        Returns
        -------
        str

        Examples
        --------
        >>> read_app(client, ["Parts"]).name("object_2")
        'Parts'
        """
        return self.names.get(key) or key

    def describe(self, conn: Connection) -> str:
        """A connection in words: its object, label, key, the object it points to, one or many.

        Parameters
        ----------
        conn : Connection
            One of ``app.connections``.

        Returns
        -------
        str

        Examples
        --------
        >>> app = read_app(client, ["Parts"])
        >>> app.describe(app.connections[0])
        'Work Orders.Parts (field_41) -> Parts (many)'
        """
        return (f"{self.name(conn.from_object)}.{conn.label} ({conn.field}) -> "
                f"{self.name(conn.to_object)} ({'many' if conn.many else 'one'})")

    def _listing(self) -> str:
        return ", ".join(f"{k} ({self.name(k)})" for k in self.frames) or "none"

    # ---- connections and joins -----------------------------------------------------------
    def connection(self, left: str, right: str, field: str | None = None
                   ) -> tuple[Connection, bool]:
        """The connection tying two objects, and whether it runs from ``right`` to ``left``.

        Parameters
        ----------
        left, right : str
            Objects, by key or name.
        field : str, optional
            The connection (key or label), when several tie the two.

        Returns
        -------
        tuple of (Connection, bool)
            The connection, and True when it is a field of ``right`` (reversed).

        Raises
        ------
        UsageError
            An unknown object, no connection ties them (listing those that exist), or
            several do and ``field`` does not pick one.

        Examples
        --------
        >>> app = read_app(client, ["Parts"])
        >>> conn, reverse = app.connection("Parts", "Work Orders")
        >>> conn.field, reverse
        ('field_41', True)
        >>> app.connection("Work Orders", "People", "Assignee")[0].field
        'field_42'
        """
        lk, rk = self.key(left), self.key(right)
        found = [(c, False) for c in self.connections
                 if c.from_object == lk and c.to_object == rk]
        found += [(c, True) for c in self.connections
                  if c.from_object == rk and c.to_object == lk and lk != rk]
        if field is not None:
            found = [(c, r) for c, r in found if field in (c.field, c.label)]
        if not found:
            asked = f" through {field!r}" if field is not None else ""
            have = "; ".join(self.describe(c) for c in self.connections) or "none"
            raise UsageError(f"no connection ties {self.name(lk)} ({lk}) and {self.name(rk)} "
                             f"({rk}){asked}; the application's connections: {have}")
        if len(found) > 1:
            which = ", ".join(f"{c.field} ({c.label})" for c, _ in found)
            raise UsageError(f"{self.name(lk)} and {self.name(rk)} are tied by several "
                             f"connections: {which}; pass field= to pick one")
        return found[0]

    def join(self, left: str | Frames, right: str, field: str | None = None, *,
             columns: Sequence[str] | Literal["keys", "labels"] | None = None,
             how: How = "left") -> pd.DataFrame:
        """``left``'s records with the ``right`` records their connection links, either way round.

        A connection of ``right`` to ``left`` is walked backwards.

        Parameters
        ----------
        left : str or Frames
            An object key or name, or Frames (a view of an object: joined on what it
            shows).
        right : str
            An object key or name; when it was not loaded, the join holds the connected id
            and identifier.
        field : str, optional
            The connection (key or label) when several tie the two.
        columns : list of str or {"keys", "labels"}, optional
            As ``Frames.join`` takes it (the brought columns, or their prefix).
        how : {"left", "inner"}, default "left"
            As ``Frames.join`` takes it.

        Returns
        -------
        pandas.DataFrame
            One row per linked pair; the brought columns named ``<prefix>.<column>``
            (docs/column-names.md).

        Raises
        ------
        UsageError
            An object not loaded (or unknown), no connection between the two, a reversed
            connection whose object was not loaded, or a bad ``columns``/``how``.

        Examples
        --------
        >>> app = read_app(client)
        >>> joined = app.join("Work Orders", "People", field="Assignee", how="inner")
        >>> joined.shape, joined.columns[56:58].tolist()
        ((27, 74), ['Assignee.id', 'Assignee.Name.title'])
        """
        if isinstance(left, Frames):
            if left.source is None:
                raise UsageError("join needs Frames with a source (as read_view returns)")
            lframes = left
            lk = left.source.object_key
        else:
            lk = self.key(left)
            lframes = self[lk]
        rk = self.key(right)
        conn, reverse = self.connection(lk, rk, field)
        rframes = self.frames.get(rk)
        if not reverse:
            return join(lframes, conn.field, rframes, columns=columns, how=how)
        # the connection lives on the right object: its table, read backwards
        if rframes is None:
            raise UsageError(f"{self.describe(conn)} is stored with {self.name(rk)} ({rk}), which was not "
                             f"loaded: load it to join {self.name(lk)} with it")
        assert rframes.source is not None
        spec = next(f for f in rframes.source.fields if f.key == conn.field)
        table = connection_table(rframes, spec)
        pairs = pd.DataFrame({"record_id": table["connected_id"],
                              "connected_id": table["record_id"],
                              "identifier": pd.array([pd.NA] * len(table), dtype="string")})
        naming = columns if isinstance(columns, str) else "labels"
        if naming not in ("keys", "labels"):
            raise UsageError(f"columns must be a list of column names, 'keys' or 'labels', "
                             f"got {columns!r}")
        wanted = None if columns is None or isinstance(columns, str) else list(columns)
        prefix = rk if naming == "keys" else self.name(rk)
        return join_pairs(lframes, pairs, rframes, prefix=prefix, wanted=wanted, how=how,
                          what={"object": lk, "name": self.name(lk), "kind": "object",
                                "field": conn.field, "to": rk})

    # ---- naming ----------------------------------------------------------------------------
    def with_labels(self) -> App:
        """The same objects with columns named by field label (``Frames.with_labels``).

        Returns
        -------
        App
            A new App over the frames renamed (their data shared, as ``rename`` does).

        Examples
        --------
        >>> read_app(client, ["Parts"], columns="keys").with_labels()["Parts"].main.columns[0]
        'Part Name'
        """
        return self._named_by("labels")

    def with_keys(self) -> App:
        """The same objects with columns named by field key (``Frames.with_keys``).

        Returns
        -------
        App
            As ``with_labels`` returns it, named by key.

        Examples
        --------
        >>> read_app(client, ["Parts"]).with_keys()["Parts"].main.columns[0]
        'field_8'
        """
        return self._named_by("keys")

    def _named_by(self, naming: Literal["keys", "labels"]) -> App:
        """This App with every object's frames named ``naming`` (labels.renamed).

        Usage: ``app._named_by("keys")``"""
        return App({k: renamed(f, naming) for k, f in self.frames.items()}, self.schema,
                   app_id=self.app_id)

    # ---- summary ---------------------------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """One row per loaded object: key, name, rows, columns, tables, connections out, renames.

        ``renamed``: in labels mode, the labels that clash as column names and the names
        given instead (``'ID' -> 'ID (field_1)'``).

        Returns
        -------
        pandas.DataFrame
            Columns ``object``, ``name``, ``rows``, ``columns``, ``tables``,
            ``connections``, ``renamed``.

        Examples
        --------
        >>> read_app(client).summary()[["object", "rows", "tables"]]
             object  rows  tables
        0  object_1    20       0
        1  object_2    40       0
        2  object_3    30       5
        """
        rows = []
        for key, f in self.frames.items():
            renamed = ""
            if f.source is not None and f.source.columns == "labels":
                labels = label_map(f.source.fields)
                renamed = "; ".join(f"{s.label!r} -> {labels[s.key]!r}"
                                    for s in f.source.fields if labels[s.key] != s.label)
            rows.append({"object": key, "name": self.name(key), "rows": len(f.main),
                         "columns": f.main.shape[1], "tables": len(f.tables),
                         "connections": sum(c.from_object == key for c in self.connections),
                         "renamed": renamed})
        return pd.DataFrame(rows, columns=["object", "name", "rows", "columns", "tables",
                                           "connections", "renamed"])

    def connections_table(self) -> pd.DataFrame:
        """The connections as a table: field, label, from, to, has, both ends loaded.

        Returns
        -------
        pandas.DataFrame
            Columns ``field``, ``label``, ``from``, ``to``, ``has`` (one or many),
            ``loaded`` (both objects are loaded).

        Examples
        --------
        >>> read_app(client, ["Parts", "Work Orders"]).connections_table()[["field", "loaded"]]
              field  loaded
        0  field_41    True
        1  field_42   False
        2  field_43   False
        """
        return pd.DataFrame(
            [{"field": c.field, "label": c.label, "from": f"{self.name(c.from_object)} "
              f"({c.from_object})", "to": f"{self.name(c.to_object)} ({c.to_object})",
              "has": "many" if c.many else "one", "loaded": c.from_object in self.frames
              and c.to_object in self.frames} for c in self.connections],
            columns=["field", "label", "from", "to", "has", "loaded"])

    def __repr__(self) -> str:
        s = self.summary()
        head = (f"App {self.app_id or ''}: {len(self.frames)} objects, "
                f"{int(s['rows'].sum()):,} rows, {len(self.connections)} connections")
        lines = [head.replace("App :", "App:")]
        for r in s.itertuples(index=False):
            lines.append(f"  {r.object:<10} {r.name:<24} {r.rows:>9,} rows {r.columns:>4} "
                         f"columns")
        if self.connections:
            lines.append("connections:")
            lines.extend(f"  {self.describe(c)}" for c in self.connections)
        return "\n".join(lines + [f"edits: {e}" for e in self._edits()])

    def _edits(self) -> list[str]:
        """A line for each loaded object edited since its load (``Frames.edits``)."""
        found = {key: pending_edits(f.main, f.original.main, f.tables, f.original.tables)
                 for key, f in self.frames.items() if f.original is not None}
        return [f"{key} {self.name(key)}: {p.text()}" for key, p in found.items()
                if p.any or p.new_columns]

    def _repr_html_(self) -> str:
        s = self.summary()
        title = html.escape(f"App {self.app_id}: {len(self.frames)} objects, "
                            f"{int(s['rows'].sum()):,} rows, {len(self.connections)} "
                            "connections")
        edits = "".join(f"<p class='svcf-edits'>Edits: {html.escape(e)}</p>"
                        for e in self._edits())
        return (f"<p><b>{title}</b></p>" + edits + s.to_html(index=False)
                + "<p>connections</p>" + self.connections_table().to_html(index=False))

    # ---- snapshots -------------------------------------------------------------------------
    def to_duckdb(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the whole app to one DuckDB file (needs ``svc_frames[duckdb]``).

        A table per object and per exploded table; written aside and moved into place, so
        a failure leaves no half-written file. Table names: docs/column-names.md.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        overwrite : bool, default False
            Replace an existing file.

        Returns
        -------
        pathlib.Path
            The file written.

        Raises
        ------
        UsageError
            ``path`` exists and ``overwrite`` is False, or cannot be written.

        Examples
        --------
        >>> path = read_app(client, ["Parts"]).to_duckdb(tmp_path / "app.duckdb")
        >>> path.name
        'app.duckdb'
        """
        return to_duckdb(self, path, overwrite=overwrite)

    def to_parquet(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the whole app as a directory of Parquet datasets, one per table.

        ``dir/<table>/part-00000.parquet``, the tables of ``to_duckdb`` (named as
        docs/column-names.md says; ``svc_tables`` lists them); written aside and moved into
        place.

        Parameters
        ----------
        path : str or os.PathLike
            The directory to write.
        overwrite : bool, default False
            Replace an existing directory.

        Returns
        -------
        pathlib.Path
            The directory written.

        Raises
        ------
        UsageError
            ``path`` exists and ``overwrite`` is False, or cannot be written.

        Examples
        --------
        >>> out = read_app(client, ["Parts"]).to_parquet(tmp_path / "app")
        >>> sorted(p.name for p in out.iterdir())
        ['parts', 'svc_connections', 'svc_sources', 'svc_tables']
        """
        return app_to_parquet(self, path, overwrite=overwrite)
