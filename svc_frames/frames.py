"""Records -> DataFrames, and the container that remembers where its frames came from.

Usage::

    frames = read_object(client, "object_1")
    frames.main            # one row per record, index "id"
    frames.tables["field_9"]   # exploded connection: record_id, connected_id, identifier
    frames.source          # object/view, fields and kinds, timezone: what write_back needs
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from dataclasses import field as dc_field
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pandas as pd

from .display import Outline, frames_html, frames_text, outline, pending_edits
from .errors import DisplayValuesNeeded, PrecisionWarning, warn_user
from .joins import join
from .keys import FIELD_KEY
from .kinds import blank_to_none, codec_for, infer_field, text_array
from .kinds.base import Codec, FieldSpec, ReadContext
from .kinds.choices import is_multi
from .kinds.rawvalues import RawRecord, column_getter
from .labels import label_map, relabel, renamed
from .query import Query


@dataclass
class Source:
    """Where frames were loaded from: enough to diff, write back, refresh and save them.

    The loaders build it (``frames.source``); ``to_parquet`` saves it beside the data.

    Parameters
    ----------
    kind : {"object", "view"}
        Loaded from an object or through a view.
    object_key : str
        The object the records belong to (a view's source object).
    fields : list of FieldSpec
        The fields loaded, as the schema describes them.
    scene_key, view_key : str, optional
        The view's keys (a view load).
    timezone : str, optional
        The application's timezone (IANA name), in which its dates are read.
    app_id : str, default ""
        The application.
    base_url : str, default ""
        The service's address.
    columns : {"keys", "labels"}, default "keys"
        How the frames name their columns (see docs/column-names.md).
    kinds_inferred : bool, default False
        True when no schema was available and the kinds were inferred from the records.
    name : str, default ""
        The object's or view's name in the schema (for titles and summaries).
    some_fields : bool, default False
        True when loaded with a list of fields (``columns=[...]``): ``fields`` are those
        alone, not every field of the object or view, so no record can be created from
        the frames.
    load : dict, optional
        What the load asked for (``filters``, ``query``: the filters as sent,
        ``sort_field``, ``sort_order``, ``limit``, ``rows_per_page``) and ``loaded_at``
        (ISO, UTC): what ``refresh`` repeats. None: not from a load.

    Examples
    --------
    >>> source = read_object(client, "Work Orders").source
    >>> source.kind, source.object_key, source.name, len(source.fields)
    ('object', 'object_3', 'Work Orders', 35)
    """

    kind: Literal["object", "view"]
    object_key: str
    fields: list[FieldSpec]
    scene_key: str | None = None
    view_key: str | None = None
    timezone: str | None = None
    app_id: str = ""
    base_url: str = ""
    columns: Literal["keys", "labels"] = "keys"
    kinds_inferred: bool = False  # True when no schema was available
    name: str = ""  # the object's or view's name in the schema, for titles and summaries
    some_fields: bool = False  # loaded with columns=[...]: these fields only
    # what the load asked for (filters, query: the filters as sent, sort_field, sort_order,
    # limit, rows_per_page) and when it started (loaded_at, ISO UTC): what ``refresh``
    # repeats. None: not from a load
    load: dict[str, Any] | None = None

    @property
    def query(self) -> Query:
        """The filters the load sent (a ``Query``), which a refresh, cache check and export resend.

        They are sent again byte for byte. Frames saved before the query was kept hold the
        rules alone: they are encoded without the application (an aware time in UTC), as
        those loads' refreshes always did.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders", filters=[Field("Status").is_("Open")])
        >>> orders.source.query.text
        '{"match":"and","rules":[{"field":"field_27","operator":"is","value":"Open"}]}'
        """
        load = self.load or {}
        if "query" in load:
            text = load["query"]
            return Query(text if isinstance(text, str) else None)
        return Query.of(load.get("filters"))

    def field(self, key: str) -> FieldSpec:
        """The loaded field of key ``key``.

        Parameters
        ----------
        key : str
            A field key (``field_27``), not a label.

        Returns
        -------
        FieldSpec

        Raises
        ------
        KeyError
            No loaded field has that key.

        Examples
        --------
        >>> read_object(client, "Work Orders").source.field("field_27").label
        'Status'
        """
        for f in self.fields:
            if f.key == key:
                return f
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        """The source as plain data (JSON-ready; fields in the schema's shape).

        Returns
        -------
        dict
            One entry per attribute; ``Source.from_dict`` reads it back.

        Examples
        --------
        >>> data = read_object(client, "Work Orders").source.to_dict()
        >>> data["object_key"], data["fields"][0]["key"], data["fields"][0]["type"]
        ('object_3', 'field_12', 'short_text')
        """
        out = asdict(self)
        out["fields"] = [f.to_schema() for f in self.fields]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        """The source ``to_dict`` gave.

        Parameters
        ----------
        data : dict
            What ``Source.to_dict`` returned (for example read back from a saved file).

        Returns
        -------
        Source

        Raises
        ------
        TypeError
            ``data`` holds a key that is not an attribute of Source.
        KeyError
            A field without its ``key``.

        Examples
        --------
        >>> source = read_object(client, "Work Orders").source
        >>> Source.from_dict(source.to_dict()) == source
        True
        """
        data = dict(data)
        data["fields"] = [FieldSpec.from_schema(f) for f in data.get("fields", [])]
        return cls(**data)


COPY_ON_WRITE: bool = int(pd.__version__.split(".")[0]) >= 3 or \
    pd.options.mode.copy_on_write is True
"""Whether pandas copies on write (always from 3.0; an option before): then a shallow copy
of a frame is as independent of it as a deep one."""


@dataclass
class Frames:
    """The main frame, its exploded tables, its source, and the values as loaded.

    What ``read_object`` and ``read_view`` return. ``main`` has one row per record, indexed
    by the record ``id``; a field that holds many values (a connection, a multiple choice
    of several, a timer's entries) is exploded into a table of its own in ``tables``, by
    the field's column name. ``frames["main"]`` and ``frames["Parts"]`` index them;
    ``len(frames)`` is the number of records. Column naming: docs/column-names.md.

    Parameters
    ----------
    main : pandas.DataFrame
        One row per record, indexed by ``id``.
    tables : dict of str to pandas.DataFrame, optional
        The exploded tables, one row per (record, value).
    source : Source, optional
        Where the records came from (None: not loaded by svc_frames).
    original : Frames, optional
        The data as loaded (a ``snapshot``), which ``diff`` compares the edits with.
    skipped : dict of str to list of str, optional
        Column -> the records whose wall time there the application's timezone skips (a
        daylight-saving gap): held as the first valid instant, warned about once by the
        load, and sent back as the server stores it when untouched.
    sent_creates : dict of str to list of str or None, optional
        Rows to create whose create ``write_back`` sent without learning its outcome (the
        report said ``unknown``): row label -> the ids that matched its values before it
        was sent (None: not known). The next ``write_back`` of these frames looks the
        record up before sending it again, as with a journal's intent, so a re-run does
        not create it twice.

    See Also
    --------
    read_object, read_view : what builds them.

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> orders.main.shape, orders.main.index.name, len(orders)
    ((30, 55), 'id', 30)
    >>> sorted(orders.tables)
    ['Assignee', 'Created By', 'Parts', 'Tags', 'Work Time']
    """

    main: pd.DataFrame
    tables: dict[str, pd.DataFrame] = dc_field(default_factory=dict)
    source: Source | None = None
    original: Frames | None = dc_field(default=None, repr=False)
    # column -> the records whose wall time there the app's timezone skips (a daylight-
    # saving gap): held as the first valid instant; the load warns about them once
    skipped: dict[str, list[str]] = dc_field(default_factory=dict, repr=False)
    # row label -> ids matching it before a create sent with an unknown outcome (None:
    # not known): the next write_back looks before sending it again (writeback/apply.py)
    sent_creates: dict[str, list[str] | None] = dc_field(default_factory=dict, repr=False)

    def snapshot(self) -> Frames:
        """A copy of the data as it is now, as the loaders keep it in ``original`` for diffing.

        With pandas' copy-on-write (always on from pandas 3) the copy shares the data until
        either side changes it, which then copies what it changes: no edit of one reaches
        the other, as with a deep copy, without the time and memory of copying every
        column at load time. Older pandas without it get a deep copy.

        Returns
        -------
        Frames
            The same main frame, tables and source, copied; no ``original``.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> copied = orders.snapshot()
        >>> copied.main.equals(orders.main), copied.main is orders.main
        (True, False)
        """
        deep = not COPY_ON_WRITE
        return Frames(self.main.copy(deep=deep),
                      {k: v.copy(deep=deep) for k, v in self.tables.items()},
                      copy.deepcopy(self.source))

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.main if name == "main" else self.tables[name]

    def _outline(self) -> Outline:
        s, was = self.source, self.original
        named = label_map(s.fields) if s is not None and s.columns == "labels" else {}
        return outline(
            None if s is None else s.object_key if s.kind == "object"
            else f"{s.scene_key}/{s.view_key}",
            s.name if s else "", s.columns if s else "", self.main, self.tables,
            [(named.get(f.key, f.key), f.label, f.kind) for f in (s.fields if s else [])],
            None if was is None else pending_edits(self.main, was.main, self.tables,
                                                   was.tables))

    def __repr__(self) -> str:
        return frames_text(self._outline())

    def _repr_html_(self) -> str:
        return frames_html(self._outline(), self.main)

    def __len__(self) -> int:
        return len(self.main)

    @property
    def fields(self) -> pd.DataFrame:
        """The fields these frames hold, one row each (as ``svc_frames.fields`` lists them).

        Key, label, kind, required, unique, choices, what a connection points to, and the
        columns (or the table) a field gives here, named as these frames name them
        (docs/column-names.md). Frames without a source raise ValueError.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> orders.fields.loc["field_34", "columns"][:2]
        ['Site.street', 'Site.street2']
        """
        if self.source is None:
            raise ValueError("these frames have no source (not loaded by svc_frames): "
                             "their fields are unknown")
        return field_table(self.source.fields, self.source.columns)

    def join(self, field: str, right: Frames | None = None, *,
             columns: Sequence[str] | Literal["keys", "labels"] | None = None,
             how: Literal["left", "inner"] = "left") -> pd.DataFrame:
        """These records with the records their connection ``field`` links, as one frame.

        One row per connected pair for a ``many`` connection, one per record for a ``one``
        connection; the left columns come first, ``id`` among them.

        Parameters
        ----------
        field : str
            The connection field, by key or label (``"field_41"``, ``"Parts"``).
        right : Frames, optional
            Frames of the connected object (an object load, or a view of it). Without
            them the connected side is the exploded table's id and identifier.
        columns : list of str or {"keys", "labels"}, optional
            The right-hand columns to bring (named as in ``right``); or how the brought
            columns are prefixed: by the connection's key or its label (default).
        how : {"left", "inner"}, default "left"
            ``"left"`` keeps records without a connection (empty right columns),
            ``"inner"`` drops them.

        Returns
        -------
        pandas.DataFrame
            The brought columns are named ``<prefix>.<column>`` (``Parts.id``,
            ``Parts.field_8``); see docs/column-names.md.

        Raises
        ------
        UsageError
            ``field`` is not a connection of these frames, ``right`` is not of the
            connected object, a column ``right`` lacks, or a bad ``how``/``columns``.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> parts = read_object(client, "Parts")
        >>> joined = orders.join("Parts", parts, columns=["Part Name"])
        >>> joined.shape, joined.columns[-2:].tolist()
        ((58, 58), ['Parts.id', 'Parts.Part Name'])
        """
        return join(self, field, right, columns=columns, how=how)

    def with_labels(self) -> Frames:
        """These frames with columns and tables named by field label, as loads name them.

        Labels as the application's pages show them (``Status``, ``Site.city``). The data is shared as pandas' ``rename`` shares it; the as-loaded copy is renamed
        too, so the frames diff, write back, refresh and save as before. Frames already
        named by label, or without a source, come back as they are.

        Returns
        -------
        Frames

        See Also
        --------
        with_keys : the other way round.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders", columns="keys")
        >>> orders.with_labels().main.columns[:3].tolist()
        ['Title', 'Description', 'Notes']
        """
        return renamed(self, "labels")

    def with_keys(self) -> Frames:
        """These frames with columns and tables named by field key, as ``columns="keys"`` does.

        Keys (``field_27``, ``field_34.city``) stay the same when someone renames a field
        in the application.

        Returns
        -------
        Frames
            As ``with_labels`` returns them, named by key.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> keyed = orders.with_keys()
        >>> keyed.main.columns[:3].tolist(), sorted(keyed.tables)[:2]
        (['field_12', 'field_13', 'field_14'], ['field_28', 'field_31'])
        >>> diff(keyed).empty
        True
        """
        return renamed(self, "keys")


# ---- records -> frames ------------------------------------------------------------------
def record_field_keys(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``field_N`` keys present in records, in first-seen order (``_raw`` folded in)."""
    keys: dict[str, None] = {}
    prev: Any = None
    for rec in records:
        ks = rec.keys()
        if prev is not None and ks == prev:  # records of a list share their keys
            continue
        prev = ks
        for k in ks:
            base = k[:-4] if k.endswith("_raw") else k
            if base not in keys and FIELD_KEY.match(base):
                keys[base] = None
    return list(keys)


def resolve_fields(records: Sequence[Mapping[str, Any]], known: Mapping[str, FieldSpec] | None,
                   order: Sequence[FieldSpec] | None = None) -> tuple[list[FieldSpec], bool]:
    """FieldSpecs for the fields of ``records``: from the schema where known, else inferred
    from the raw shapes (an empty column gets the codec layer's "unknown" kind, never a
    made-up one). Returns (fields, any_inferred).

    ``order``: schema fields to use (in schema order) even when absent from the records."""
    present = record_field_keys(records)
    fields: list[FieldSpec] = []
    done: set[str] = set()
    inferred = False
    for spec in order or ():
        fields.append(spec)
        done.add(spec.key)
    for key in present:
        if key in done:
            continue
        done.add(key)
        if known and key in known:
            fields.append(known[key])
            continue
        raws = [r.get(key + "_raw") for r in records]
        displays = [r.get(key) for r in records]
        guess = infer_field(key, raws, displays)
        # an all-empty column: no kind is made up; "unknown" keeps whatever comes later
        fields.append(guess if guess is not None else FieldSpec(key=key, kind="unknown"))
        inferred = True
    return fields, inferred


def warn_skipped(skipped: Mapping[str, Sequence[str]], timezone: str | None,
                 held: Iterable[str] | None = None) -> None:
    """One PrecisionWarning for a load whose date values include wall times the
    application's timezone skips (``skipped``: column -> records, as ``Frames.skipped``),
    naming each column and its records (those in ``held``, when given: a frame's index,
    read only when some wall time was skipped, which is rare)."""
    if not any(skipped.values()):
        return
    keep = None if held is None else set(held)
    parts = []
    for col, ids in skipped.items():
        uniq = [i for i in dict.fromkeys(ids) if keep is None or i in keep]
        if not uniq:
            continue
        parts.append(f"{col}: {len(uniq)} record{'s' if len(uniq) != 1 else ''} ("
                     + ", ".join(uniq[:5]) + (" ..." if len(uniq) > 5 else "") + ")")
    if not parts:
        return
    warn_user(f"wall times the timezone {timezone or '(unknown)'} skips (a daylight-saving "
              "gap) have no instant: they are held as the first valid one and written back "
              "as the server stores them unless edited; " + "; ".join(parts), PrecisionWarning)


def field_table(fields: Sequence[FieldSpec], columns: Literal["keys", "labels"] = "keys"
                ) -> pd.DataFrame:
    """One row per field, indexed by key: ``label``, ``kind``, ``required``, ``unique``,
    ``read_only`` (computed by the service), ``choices`` (a choice field's options),
    ``connects_to`` (a connection's object key), ``columns`` (the main-frame columns a
    load gives for the field, named as ``columns=`` names them; empty for a field held in
    a table only) and ``table`` (the name of its exploded table in ``frames.tables``, as
    ``columns=`` names it: a connection, a multi choice, a timer's intervals). A label
    that had to change to stay unique shows as the name a load gives it.

    Usage: ``field_table(source.fields, "labels")``"""
    labels = label_map(fields) if columns == "labels" else {}
    rows = []
    for f in fields:
        codec = codec_for(f)
        cols = [relabel(c, labels) for c in codec.columns(f)]
        options = f.format.get("options") if f.kind == "multiple_choice" else None
        table = None
        # the kinds whose codec gives an exploded table (kinds/: connection, multi choice,
        # a timer's intervals)
        if f.kind in ("connection", "timer") or (f.kind == "multiple_choice" and is_multi(f)):
            table = relabel(f.key, labels)
        rows.append({"key": f.key, "label": f.label, "kind": f.kind,
                     "required": bool(f.required), "unique": bool(f.unique),
                     "read_only": bool(codec.read_only),
                     "choices": list(options) if isinstance(options, (list, tuple)) else None,
                     "connects_to": (f.relationship or {}).get("object") or None,
                     "columns": cols, "table": table})
    out = pd.DataFrame(rows, columns=["key", "label", "kind", "required", "unique",
                                      "read_only", "choices", "connects_to", "columns",
                                      "table"])
    for c in ("key", "label", "kind", "connects_to", "table"):
        out[c] = out[c].astype("string")
    return out.set_index("key")


def decodes_raw_alone(records: Sequence[Mapping[str, Any]], fields: Sequence[FieldSpec]
                      ) -> bool:
    """Whether the fields of these (raw and display) records decode from raw values alone,
    so the pages still to come may be fetched with ``format=raw``. A raw page is checked
    by build_frames itself (DisplayValuesNeeded). Usage: ``decodes_raw_alone(page1, fields)``"""
    for spec in fields:
        codec = codec_for(spec)
        if type(codec).decodes_raw_alone is Codec.decodes_raw_alone:
            continue  # every value of the kind will do: no need to look
        if not codec.decodes_raw_alone([r.get(spec.key + "_raw") for r in records]):
            return False
    return True


def build_frames(records: Sequence[Mapping[str, Any]], fields: Sequence[FieldSpec],
                 source: Source, *, tz: ZoneInfo | None = None,
                 keep_original: bool = True, raw_format: bool = False,
                 into: Callable[[Any], Any] | None = None) -> Frames:
    """Decode records column by column through the kind codecs into :class:`Frames`.

    ``raw_format``: the records came with ``format=raw`` (each raw value under ``field_N``,
    no display values); ``into``: given each main column in order, returns the one kept
    (read/pagecolumns.py). Usage: ``build_frames(records, fields, Source(...))``"""
    if records and isinstance(records[0], RawRecord):
        ids = list(map(operator.attrgetter("id"), records))
    else:
        ids = [r["id"] for r in records]
    ctx = ReadContext(timezone=tz, ids=ids, skipped={}, decoded={})
    n = len(ids)
    columns: dict[str, Any] = {}
    tables: dict[str, pd.DataFrame] = {}
    used = [(spec, codec_for(spec)) for spec in fields]
    # e.g. password: no column and no table, nothing to read
    used = [(s, c) for s, c in used if c.columns(s) or type(c).tables is not Codec.tables]
    # transpose once, in C: one tuple per record (map of dict.get), then zip(*rows);
    # about twice as fast as a list comprehension per field and per raw/display
    if raw_format:
        names = [spec.key for spec, _ in used]
    else:
        names = [k for spec, _ in used for k in (spec.key + "_raw", spec.key)]
    getter = column_getter(records, names)  # struct records (rawpages): attrgetter
    if n and getter is not None:
        cols = list(zip(*map(getter, records), strict=True))
    elif n:
        cols = list(zip(*[tuple(map(r.get, names)) for r in records], strict=True))
    else:
        cols = [()] * len(names)
    no_displays = (None,) * n
    raws: Sequence[Any]
    displays: Sequence[Any]
    for i, (spec, codec) in enumerate(used):
        key = spec.key
        if raw_format:
            raws, displays = cols[i], no_displays
            raws = blank_to_none(raws)  # an empty field's "" stands in for its missing raw
            if type(codec).decodes_raw_alone is not Codec.decodes_raw_alone \
                    and not codec.decodes_raw_alone(raws):
                raise DisplayValuesNeeded(f"{key} ({spec.kind}): its raw values need their "
                                          "display values (fetch the page with format=both)")
        else:
            raws, displays = cols[2 * i], cols[2 * i + 1]
        for name, series in codec.decode(raws, displays, spec, ctx).items():
            if len(series) != n:
                raise ValueError(f"codec for {key} ({spec.kind}) returned {len(series)} "
                                 f"values for {n} records")
            column = series.array if isinstance(series, pd.Series) else series
            columns[name] = into(column) if into is not None else column
        tables.update(codec.tables(ids, raws, displays, spec, ctx))
    index = pd.Index(text_array(ids), name="id")
    # copy=False: the arrays are fresh from the codecs (pandas would copy each one again)
    main = (pd.DataFrame(columns, index=index, copy=False) if columns
            else pd.DataFrame(index=index))
    skipped = ctx.skipped or {}
    if source.columns == "labels":
        # named as the source's whole set of fields names them (labels made unique among
        # all of them), so a decode of a few fields (the guard's re-read) gets the columns
        # the frames have
        labels = label_map(source.fields or fields)
        main = main.rename(columns=lambda c: relabel(str(c), labels))
        tables = {relabel(k, labels): v for k, v in tables.items()}
        skipped = {relabel(k, labels): v for k, v in skipped.items()}
    frames = Frames(main, tables, source, skipped=skipped)
    if keep_original:
        frames.original = frames.snapshot()
    return frames
