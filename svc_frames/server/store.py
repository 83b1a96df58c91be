"""The records of one application: their ready JSON, links, counters, and writes (codecs,
record rules, uniqueness, computed fields of dependents), over ``db.Database``.

Users and tokens live in ``accounts.Accounts`` and uploaded files in
``assetstore.AssetStore``; a ``Store`` holds one of each (``store.accounts``,
``store.assets``) on the same database.

A record row keeps ``frag`` (its ``format=both`` JSON text, asset URLs with a base-URL
placeholder swapped at answer time), ``vals`` (filter/sort values, see query.py) and
``secret`` (password hashes, never served). ``frag`` is the last column: a sort reads
``vals`` without walking the (large) fragment's overflow pages. Every write of a record's
row writes its narrow filter rows in the same transaction (filtervalues.py): filters read
those, never the wide rows.

Date and auto-increment fields (what incremental loads filter and sort on: a stamp, a
cursor) have an index on their numeric value (``query.numeric_value_sql``), so a sort on
one reads the index in order instead of every record's ``vals`` (a filter reads the
number index of the filter values); a page sorted
by a field counts its matches apart from the sorted rows it reads (a window count would
make SQLite compute the sort key of every match first). The emulated latency and limits
apply as to any request (emulate.py): the index only makes SQLite quick, as a hosted
database's own indexes are.

Usage::

    store = Store(Path("data"), app, renderer)
    rid, frag = store.write("object_3", {"field_12": "Fix pump"})
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidValue
from ..kinds.base import FieldSpec
from . import filtervalues
from .accounts import Accounts, hash_password
from .aggregates import conn_key_of
from .apierror import ApiError
from .assetstore import SHARED, AssetStore
from .computed import Inbound, compute, inbound_aggregated
from .db import Database, new_id
from .private import private_dir
from .query import numeric_value_sql, rule_matches
from .render import (
    Piece,
    RecordRow,
    Renderer,
    dumps,
    format_record,
    record_row,
    text_of,
)
from .schema import AGGREGATE_KINDS, COMPUTED_KINDS, AppDef, ObjectDef, RecordRule

BASE_URL_PLACEHOLDER = "@@SVC_BASE_URL@@"
INDEXED_KINDS = frozenset({"date_time", "auto_increment"})
"""Kinds whose numeric value is indexed (module docstring)."""
_KEY = re.compile(r"(object|field)_\d+")
_CASCADE = 4
"""How far a change carries through computed fields (a sum over records whose sum changed,
...): deep enough for real applications, bounded for connections that loop."""


@dataclass
class WriteContext:
    """Who writes and how: a view write limits fields and runs record rules.

    ``pages``: the write comes from a form (a view-based request to it) or the
    application's own pages, where the object's record rules (a "Last Modified" stamp)
    run after the form's own; an object-based API write runs none (hosted: record rules
    belong to forms, docs/hosted-behaviour.md "Record rules")."""

    allowed: set[str] | None = None      # fields a view accepts; others are ignored
    user_id: str | None = None           # logged-in user (record rules "user")
    rules: Sequence[Any] = ()            # schema.RecordRule list
    strict: bool = True                  # unknown keys -> 400 (object requests)
    pages: bool = False                  # the object's record rules run (see above)


PAGE_WRITE = WriteContext(pages=True)
"""A write as a user makes it on the application's own pages (stamps run)."""


class _Hooks:
    """ServiceHooks for the codecs during one write (see kinds/base.py)."""

    def __init__(self, store: Store, conn: sqlite3.Connection, record_id: str) -> None:
        self.store = store
        self.conn = conn
        self.record_id = record_id
        self.app_id = store.app.id
        self.base_url = BASE_URL_PLACEHOLDER
        self.placements: list[tuple[str, str]] = []

    def connected(self, object_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        out = []
        found = self.store.identifiers(object_key, ids, self.conn)
        for i in ids:
            if i not in found:
                raise InvalidValue(f"no record {i!r} in {object_key}")
            out.append({"id": i, "identifier": found[i]})
        return out

    def asset(self, asset_id: str, field_key: str) -> dict[str, Any]:
        row = AssetStore.placement(self.conn, str(asset_id))
        if row is None:
            raise InvalidValue(f"unknown asset {asset_id!r}", field=field_key)
        atype, filename, size, thumb, placed_field, placed_record = row
        shared_demo_asset = placed_record == SHARED and placed_field == field_key
        if placed_field is not None and not shared_demo_asset and (
                placed_field != field_key or placed_record != self.record_id):
            raise InvalidValue(f"asset {asset_id} is already used in another field or record; "
                               "upload the file again for each placement", field=field_key)
        if not shared_demo_asset:
            self.placements.append((str(asset_id), field_key))
        return self.store.assets.asset_raw(str(asset_id), atype, filename, size, bool(thumb),
                                           field_key, BASE_URL_PLACEHOLDER)


class Store:
    """One application's data directory."""

    def __init__(self, data_dir: Path, app: AppDef, renderer: Renderer) -> None:
        self.data_dir = private_dir(Path(data_dir))
        self.db_path = self.data_dir / "service.db"
        self.app = app
        self.renderer = renderer
        self.db = Database(self.db_path)
        self.accounts = Accounts(self.db, app)
        self.assets = AssetStore(self.db, self.data_dir / "assets", app.id,
                                 clock=lambda: self.app.clock())
        self._add_raw_fragments()
        self._add_value_indexes()
        with self.db.transaction() as conn:
            filtervalues.fill_once(conn)
        # fields whose connection points at each object: (source object, field spec)
        self._inbound: dict[str, list[tuple[ObjectDef, FieldSpec]]] = {}
        for obj, f in app.iter_fields():
            if f.kind == "connection":
                target = (f.relationship or {}).get("object", "")
                self._inbound.setdefault(target, []).append((obj, f))
        # (holder, connection) -> objects aggregating over it from the other side
        self._aggregated = inbound_aggregated(app)

    def _add_raw_fragments(self) -> None:
        """A data directory written before ``frag_raw`` existed gets the column, filled from
        the stored ``format=both`` fragments (once)."""
        if "frag_raw" in self.db.columns("records"):
            return
        with self.db.transaction() as conn:
            conn.execute("ALTER TABLE records ADD COLUMN frag_raw TEXT NOT NULL DEFAULT ''")
            rows = conn.execute("SELECT seq, frag FROM records").fetchall()
            conn.executemany("UPDATE records SET frag_raw = ? WHERE seq = ?",
                             [(dumps(format_record(json.loads(f), "raw")), s) for s, f in rows])

    # ---- connections --------------------------------------------------------------------
    def _add_value_indexes(self) -> None:
        """An index on the numeric value of every date and auto-increment field (module
        docstring), created once (kept in the file; SQLite maintains it on every write)."""
        wanted = []
        for obj, f in self.app.iter_fields():
            if f.kind not in INDEXED_KINDS or not _KEY.fullmatch(obj.key) \
                    or not _KEY.fullmatch(f.key):
                continue  # keys are field_N/object_N: anything else is not put into DDL
            expr = numeric_value_sql(f.key, alias=None)
            wanted.append(f"CREATE INDEX IF NOT EXISTS records_{obj.key}_{f.key}_n ON "
                          f"records(obj, {expr})")
        if not wanted:
            return
        with self.db.transaction() as conn:
            for ddl in wanted:
                conn.execute(ddl)

    @property
    def reader(self) -> sqlite3.Connection:
        """This thread's read connection."""
        return self.db.reader

    def close(self) -> None:
        self.db.close()

    def count(self, obj_key: str) -> int:
        return int(self.reader.execute("SELECT count(*) FROM records WHERE obj = ?",
                                       (obj_key,)).fetchone()[0])

    # ---- reads --------------------------------------------------------------------------
    def page(self, obj_key: str, where: str, params: Sequence[Any], order: str, limit: int,
             offset: int, extra_ids: Sequence[str] | None = None, *, raw: bool = False,
             ) -> tuple[int, list[str]]:
        """(total matching, fragments of one page: ``format=both``, or ``raw``)."""
        col = "frag_raw" if raw else "frag"
        cond = f"r.obj = ? AND ({where})"
        args: list[Any] = [obj_key, *params]
        if extra_ids is not None:
            cond += f" AND r.id IN ({','.join('?' * len(extra_ids))})" if extra_ids else " AND 0"
            args.extend(extra_ids)
        conn = self.reader
        if where == "1" and extra_ids is None and order.startswith("r.seq"):
            total = self.count(obj_key)
            rows = conn.execute(f"SELECT r.{col} FROM records r WHERE {cond} ORDER BY {order} "
                                "LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
            return total, [r[0] for r in rows]
        conn.execute("BEGIN")  # one snapshot for the count and the page
        try:
            if order.startswith("r.seq"):
                # one scan evaluates the filters and counts the matches
                hits = conn.execute(f"SELECT r.seq, count(*) OVER () FROM records r WHERE "
                                    f"{cond} ORDER BY {order} LIMIT ? OFFSET ?",
                                    [*args, limit, offset]).fetchall()
                total = int(hits[0][1]) if hits else -1
            else:
                # sorted by a field: counted apart, so an indexed sort key is read for the
                # page's rows only (a window count computes it for every match first)
                total = int(conn.execute(f"SELECT count(*) FROM records r WHERE {cond}",
                                         args).fetchone()[0])
                hits = conn.execute(f"SELECT r.seq FROM records r WHERE {cond} "
                                    f"ORDER BY {order} LIMIT ? OFFSET ?",
                                    [*args, limit, offset]).fetchall()
            if not hits:
                if total < 0:
                    total = int(conn.execute(f"SELECT count(*) FROM records r WHERE {cond}",
                                             args).fetchone()[0]) if offset else 0
                return total, []
            # the page's fragments are read by rowid
            seqs = [h[0] for h in hits]
            frags: dict[int, str] = {}
            for i in range(0, len(seqs), 500):
                chunk = seqs[i:i + 500]
                frags.update(conn.execute(
                    f"SELECT seq, {col} FROM records WHERE seq IN "
                    f"({','.join('?' * len(chunk))})", chunk).fetchall())
            return total, [frags[q] for q in seqs if q in frags]
        finally:
            conn.execute("COMMIT")

    def frag(self, obj_key: str, record_id: str, conn: sqlite3.Connection | None = None,
             *, raw: bool = False) -> str | None:
        col = "frag_raw" if raw else "frag"
        row = (conn or self.reader).execute(f"SELECT {col} FROM records WHERE obj = ? AND id = ?",
                                            (obj_key, record_id)).fetchone()
        return row[0] if row else None

    def known_ids(self, obj_key: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are records of ``obj_key`` (read from the index only)."""
        rows = self.reader.execute("SELECT value FROM json_each(?) WHERE EXISTS (SELECT 1 "
                                   "FROM records k WHERE k.obj = ? AND k.id = value)",
                                   (json.dumps(list(ids)), obj_key))
        return {r[0] for r in rows}

    def records(self, obj_key: str, ids: Sequence[str],
                conn: sqlite3.Connection | None = None) -> dict[str, dict[str, Any]]:
        """{id: parsed record (both format)} for existing ids."""
        out: dict[str, dict[str, Any]] = {}
        c = conn or self.reader
        ids = list(dict.fromkeys(ids))
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            q = f"SELECT id, frag FROM records WHERE obj = ? AND id IN ({','.join('?' * len(chunk))})"
            for rid, frag in c.execute(q, [obj_key, *chunk]):
                out[rid] = json.loads(frag)
        return out

    def identifiers(self, obj_key: str, ids: Sequence[str],
                    conn: sqlite3.Connection | None = None) -> dict[str, str]:
        obj = self.app.objects.get(obj_key)
        if obj is None:
            return {}
        recs = self.records(obj_key, [str(i) for i in ids], conn)
        ident = obj.identifier
        return {rid: (text_of(rec.get(ident, "")) if ident else rid) for rid, rec in recs.items()}

    @staticmethod
    def raw_of(record: Mapping[str, Any]) -> dict[str, Any]:
        """Raw values of a parsed record (members ending in ``_raw``)."""
        return {k[:-4]: v for k, v in record.items() if k.endswith("_raw")}

    def connected_records(self, conn: sqlite3.Connection
                          ) -> Callable[[str, Sequence[str]], list[dict[str, Any]]]:
        """The ``connected`` lookup computed.compute needs, on this connection."""
        def fetch(obj_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
            recs = self.records(obj_key, ids, conn)
            return [{"id": i, "raw": self.raw_of(recs[i]), "display": recs[i]}
                    for i in ids if i in recs]
        return fetch

    def inbound_records(self, conn: sqlite3.Connection) -> Inbound:
        """The ``inbound`` lookup computed.compute needs: records of ``holder`` whose
        connection ``field`` holds a record (read from the links table)."""
        fetch = self.connected_records(conn)

        def inbound(holder: str, field: str, record_id: str) -> list[dict[str, Any]]:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM links WHERE obj = ? AND field = ? AND target = ? ORDER BY id",
                (holder, field, record_id))]
            return fetch(holder, ids) if ids else []
        return inbound

    # ---- rendering ----------------------------------------------------------------------
    def render_row(self, obj: ObjectDef, rid: str, raw: dict[str, Any],
                   conn: sqlite3.Connection) -> tuple[RecordRow, list[Piece]]:
        """(stored row, pieces) of a record from its raw values (computed filled)."""
        compute(self.renderer, obj, raw, self.connected_records(conn),
                self.inbound_records(conn), rid)
        pieces = [self.renderer.piece(f, raw.get(f.key)) for f in obj.fields]
        return record_row(obj.key, rid, pieces), pieces

    # ---- writes -------------------------------------------------------------------------
    def write(self, obj_key: str, values: Mapping[str, Any], record_id: str | None = None,
              ctx: WriteContext | None = None) -> tuple[str, str]:
        """Create (record_id None) or update one record in one transaction -> (id, frag).

        Raises ApiError (400 naming fields, 404 unknown record)."""
        ctx = ctx or WriteContext()
        obj = self.app.object(obj_key)
        if not isinstance(values, Mapping):
            raise ApiError.invalid("the body must be a JSON object of field keys and values")
        with self.db.transaction() as conn:
            return self._write(conn, obj, values, record_id, ctx)

    def _write(self, conn: sqlite3.Connection, obj: ObjectDef, values: Mapping[str, Any],
               record_id: str | None, ctx: WriteContext) -> tuple[str, str]:
        creating = record_id is None
        raw: dict[str, Any] = {}
        secret: dict[str, str] = {}
        if not creating:
            row = conn.execute("SELECT frag, secret FROM records WHERE obj = ? AND id = ?",
                               (obj.key, record_id)).fetchone()
            if row is None:
                raise ApiError.not_found(f"no record {record_id!r} in {obj.key}")
            raw = self.raw_of(json.loads(row[0]))
            secret = json.loads(row[1]) if row[1] else {}
        before = self._aggregated_targets(obj, raw)
        rid = record_id or new_id(self.app.clock())
        hooks = _Hooks(self, conn, rid)
        errors: list[dict[str, Any]] = []
        for key, value in values.items():
            if key == "id":
                continue  # clients send it back; it is never written
            if not obj.has_field(key):
                if ctx.strict:
                    errors.append({"message": f"{key} is not a field of {obj.key}",
                                   "field": key})
                continue
            if ctx.allowed is not None and key not in ctx.allowed:
                continue  # a view uses only its fields (docs/service-interface.md §4.4 rules 1-2)
            spec = obj.field(key)
            if spec.kind in COMPUTED_KINDS:
                errors.append({"message": f"{key} ({spec.kind}) is computed by the service "
                                          "and cannot be written", "field": key})
                continue
            if spec.kind == "password":
                if value is None or value == "":
                    secret.pop(key, None)
                    raw[key] = None
                elif not isinstance(value, str) or len(value) > 1024:
                    errors.append({"message": f"{key}: a password must be a string",
                                   "field": key})
                else:
                    secret[key] = hash_password(value)
                    raw[key] = "set"
                continue
            try:
                raw[key] = self.renderer.normalize(spec, value, hooks)
            except InvalidValue as exc:
                errors.append({"message": exc.message, "field": exc.field or key})
        if errors:
            raise ApiError.errors(errors)
        self._apply_rules(conn, obj, raw, rid, ctx, hooks)
        for spec in obj.fields:
            if spec.kind == "password":
                raw[spec.key] = "set" if secret.get(spec.key) else None
        self._check_unique(conn, obj, raw, rid, values)
        if creating:
            for spec in obj.fields_of("auto_increment"):
                raw[spec.key] = self._next_counter(conn, obj.key, spec.key)
        (_, _, frag, frag_raw, vals, _), _ = self.render_row(obj, rid, raw, conn)
        sec = dumps(secret) if secret else None
        if creating:
            seq = conn.execute("INSERT INTO records(obj, id, frag, frag_raw, vals, secret) "
                               "VALUES (?,?,?,?,?,?)",
                               (obj.key, rid, frag, frag_raw, vals, sec)).lastrowid
        else:
            seq = conn.execute("UPDATE records SET frag = ?, frag_raw = ?, vals = ?, secret = ? "
                               "WHERE obj = ? AND id = ? RETURNING seq",
                               (frag, frag_raw, vals, sec, obj.key, rid)).fetchall()[0][0]
        assert seq is not None
        filtervalues.put(conn, seq, obj.key, vals)
        self._write_links(conn, obj, rid, raw)
        for asset_id, field_key in hooks.placements:
            AssetStore.place(conn, asset_id, field_key, rid)
        if not creating:
            self._refresh_dependents(conn, obj.key, [rid])
        self._recompute_targets(conn, before, self._aggregated_targets(obj, raw))
        return rid, frag

    def _apply_rules(self, conn: sqlite3.Connection, obj: ObjectDef, raw: dict[str, Any],
                     rid: str, ctx: WriteContext, hooks: _Hooks) -> None:
        # the object's own record rules (``rules.records`` on the object: e.g. a "Last
        # Modified" stamp) stand for the rules every form of the application runs: after
        # the form's, and only where forms run (``WriteContext.pages``), never for an
        # object-based API write
        own = (obj.doc.get("rules") or {}).get("records") or [] if ctx.pages else []
        rules = [*ctx.rules, *(RecordRule(list(r.get("criteria") or []),
                                          list(r.get("values") or [])) for r in own)]
        if not rules:
            return
        pieces = {f.key: self.renderer.piece(f, raw.get(f.key)) for f in obj.fields
                  if f.kind not in COMPUTED_KINDS}
        now = self.app.local_now()
        for rule in rules:
            if not all(rule_matches(obj, pieces, c) for c in rule.criteria):
                continue
            for v in rule.values:
                key = v.get("field")
                if not isinstance(key, str) or not obj.has_field(key):
                    continue
                spec = obj.field(key)
                vtype = v.get("type", "value")
                if vtype == "current_date":
                    value: Any = {"date": now.strftime("%m/%d/%Y"),
                                  "hours": now.strftime("%I"), "minutes": now.strftime("%M"),
                                  "am_pm": now.strftime("%p")}
                elif vtype == "user":
                    if ctx.user_id is None:
                        continue
                    value = [ctx.user_id]
                else:
                    value = v.get("value")
                try:
                    raw[key] = self.renderer.normalize(spec, value, hooks)
                except InvalidValue as exc:
                    raise ApiError.invalid(f"record rule on {key}: {exc.message}", key) from exc

    def _check_unique(self, conn: sqlite3.Connection, obj: ObjectDef, raw: Mapping[str, Any],
                      rid: str, written: Mapping[str, Any]) -> None:
        for spec in obj.fields:
            if not spec.unique or spec.key not in written or spec.kind == "password":
                continue
            piece = self.renderer.piece(spec, raw.get(spec.key))
            if not piece.text:
                continue
            hit = conn.execute(
                f"SELECT 1 FROM records WHERE obj = ? AND id != ? AND "
                f"json_extract(vals, '$.\"{spec.key}\"') = ? LIMIT 1",
                (obj.key, rid, piece.text)).fetchone()
            if hit:
                raise ApiError.invalid(f"{spec.key} must be unique: "
                                       f"{text_of(piece.display)!r} is already used", spec.key)

    def _next_counter(self, conn: sqlite3.Connection, obj_key: str, field_key: str) -> int:
        row = conn.execute("SELECT value FROM counters WHERE obj = ? AND field = ?",
                           (obj_key, field_key)).fetchone()
        value = (row[0] if row else 0) + 1
        conn.execute("INSERT OR REPLACE INTO counters(obj, field, value) VALUES (?,?,?)",
                     (obj_key, field_key, value))
        return value

    def _write_links(self, conn: sqlite3.Connection, obj: ObjectDef, rid: str,
                     raw: Mapping[str, Any]) -> None:
        conn.execute("DELETE FROM links WHERE obj = ? AND id = ?", (obj.key, rid))
        rows = []
        for spec in obj.fields_of("connection"):
            for c in raw.get(spec.key) or []:
                if isinstance(c, dict) and "id" in c:
                    rows.append((obj.key, rid, spec.key, str(c["id"])))
        if rows:
            conn.executemany("INSERT INTO links(obj, id, field, target) VALUES (?,?,?,?)", rows)

    # ---- computed values kept current ----------------------------------------------------
    def _aggregated_targets(self, obj: ObjectDef, raw: Mapping[str, Any]
                            ) -> dict[str, set[str]]:
        """{object: ids} of the records ``raw`` connects to whose aggregates count it (an
        aggregate over a connection this record holds, from the other side)."""
        out: dict[str, set[str]] = {}
        for (holder, key), objects in self._aggregated.items():
            if holder != obj.key:
                continue
            ids = {str(c["id"]) for c in raw.get(key) or [] if isinstance(c, dict)
                   and "id" in c}
            for target in objects:
                if ids:
                    out.setdefault(target, set()).update(ids)
        return out

    def _recompute_targets(self, conn: sqlite3.Connection, *targets: Mapping[str, set[str]],
                           depth: int = 0) -> None:
        """Re-render the records in ``targets`` (before and after a write: connected,
        disconnected) and what depends on them in turn."""
        merged: dict[str, set[str]] = {}
        for t in targets:
            for obj_key, ids in t.items():
                merged.setdefault(obj_key, set()).update(ids)
        for obj_key, ids in merged.items():
            self.rerender(conn, obj_key, sorted(ids), depth)

    def rerender(self, conn: sqlite3.Connection, obj_key: str, ids: Sequence[str],
                 depth: int = 0) -> None:
        """Compute and store again the records ``ids`` of ``obj_key`` (unknown ids are
        skipped), then the records whose computed values read them."""
        if depth > _CASCADE:
            return
        obj = self.app.object(obj_key)
        for rid, rec in self.records(obj_key, ids, conn).items():
            raw = self.raw_of(rec)
            (_, _, frag, frag_raw, vals, _), _ = self.render_row(obj, rid, raw, conn)
            if frag == rec_frag(rec):
                continue
            seq = conn.execute("UPDATE records SET frag = ?, frag_raw = ?, vals = ? "
                               "WHERE obj = ? AND id = ? RETURNING seq",
                               (frag, frag_raw, vals, obj_key, rid)).fetchall()[0][0]
            filtervalues.put(conn, seq, obj_key, vals)
            self._refresh_dependents(conn, obj_key, [rid], depth=depth + 1)
            self._recompute_targets(conn, self._aggregated_targets(obj, raw),
                                    depth=depth + 1)

    def recompute_all(self, obj_key: str) -> None:
        """Compute every record of ``obj_key`` again, in one transaction (after a bulk
        load that made the records an aggregate counts after the record itself)."""
        with self.db.transaction() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM records WHERE obj = ?",
                                              (obj_key,))]
            for i in range(0, len(ids), 500):
                self.rerender(conn, obj_key, ids[i:i + 500])

    def _refresh_dependents(self, conn: sqlite3.Connection, target_obj: str,
                            ids: Sequence[str], deleted: bool = False, depth: int = 0) -> None:
        """Re-render records that connect to ``ids`` (identifiers, sums, text formulas)."""
        if depth > _CASCADE:
            return
        for src_obj, conn_field in self._inbound.get(target_obj, []):
            depends = any(
                (f.kind in AGGREGATE_KINDS and conn_key_of(f) == conn_field.key)
                or (f.kind in ("concatenation", "equation") and f"{{{conn_field.key}." in
                    str((f.format or {}).get("equation", "")))
                for f in src_obj.fields)
            srcs: set[str] = set()
            for i in ids:
                srcs.update(r[0] for r in conn.execute(
                    "SELECT id FROM links WHERE field = ? AND target = ? AND obj = ?",
                    (conn_field.key, i, src_obj.key)))
            if not srcs:
                continue
            recs = self.records(src_obj.key, sorted(srcs), conn)
            ident = self.identifiers(target_obj, ids, conn) if not deleted else {}
            for sid, rec in recs.items():
                raw = self.raw_of(rec)
                conns = []
                changed = False
                for c in raw.get(conn_field.key) or []:
                    if isinstance(c, dict) and c.get("id") in ids:
                        if deleted:
                            changed = True
                            continue
                        new_ident = ident.get(c["id"], c.get("identifier"))
                        if new_ident != c.get("identifier"):
                            c = {**c, "identifier": new_ident}
                            changed = True
                    conns.append(c)
                if not changed and not depends:
                    continue
                raw[conn_field.key] = conns or None
                (_, _, frag, frag_raw, vals, _), _ = self.render_row(src_obj, sid, raw, conn)
                seq = conn.execute("UPDATE records SET frag = ?, frag_raw = ?, vals = ? "
                                   "WHERE obj = ? AND id = ? RETURNING seq",
                                   (frag, frag_raw, vals, src_obj.key, sid)).fetchall()[0][0]
                filtervalues.put(conn, seq, src_obj.key, vals)
                if deleted:
                    self._write_links(conn, src_obj, sid, raw)
                if depends or deleted:  # its own computed values changed: carry on
                    self._refresh_dependents(conn, src_obj.key, [sid], depth=depth + 1)
                    self._recompute_targets(conn, self._aggregated_targets(src_obj, raw),
                                            depth=depth + 1)

    def delete(self, obj_key: str, record_id: str) -> None:
        """Delete one record (404 when unknown); connections to it are dropped."""
        with self.db.transaction() as conn:
            gone = conn.execute("DELETE FROM records WHERE obj = ? AND id = ? RETURNING seq, "
                                "frag", (obj_key, record_id)).fetchall()
            if not gone:
                raise ApiError.not_found(f"no record {record_id!r} in {obj_key}")
            filtervalues.forget(conn, gone[0][0])
            conn.execute("DELETE FROM links WHERE obj = ? AND id = ?", (obj_key, record_id))
            self._refresh_dependents(conn, obj_key, [record_id], deleted=True)
            self._recompute_targets(conn, self._aggregated_targets(
                self.app.object(obj_key), self.raw_of(json.loads(gone[0][1]))))
            Accounts.forget_user(conn, record_id)

    # ---- bulk load (generator) ----------------------------------------------------------
    def bulk_insert(self, rows: Iterable[RecordRow],
                    links: Iterable[tuple[str, str, str, str]],
                    counters: Mapping[tuple[str, str], int]) -> None:
        """Insert pre-rendered rows (``render.record_row``) in one transaction."""
        with self.db.transaction() as conn:
            rows = list(rows)
            first = conn.execute("SELECT COALESCE(max(seq), 0) + 1 FROM records").fetchone()[0]
            conn.executemany("INSERT INTO records(obj, id, frag, frag_raw, vals, secret) "
                             "VALUES (?,?,?,?,?,?)", rows)
            # the seqs of the rows just written, from the (obj, id) index alone
            seqs: dict[tuple[str, str], int] = {}
            for obj_key in {row[0] for row in rows}:
                seqs.update(((obj_key, rid), seq) for rid, seq in conn.execute(
                    "SELECT id, seq FROM records INDEXED BY records_id WHERE obj = ? "
                    "AND seq >= ?", (obj_key, first)))
            filtervalues.add(conn, ((seqs[row[0], row[1]], row[0], row[4]) for row in rows))
            conn.executemany("INSERT INTO links(obj, id, field, target) VALUES (?,?,?,?)",
                             links)
            for (o, f), v in counters.items():
                conn.execute("INSERT OR REPLACE INTO counters(obj, field, value) "
                             "VALUES (?,?,?)", (o, f, v))

    def counter(self, obj_key: str, field_key: str) -> int:
        """The last value an auto-increment field handed out (0 when none)."""
        row = self.reader.execute("SELECT value FROM counters WHERE obj = ? AND field = ?",
                                  (obj_key, field_key)).fetchone()
        return int(row[0]) if row else 0


def rec_frag(record: Mapping[str, Any]) -> str:
    """The stored fragment text of a parsed record (as render.assemble writes it)."""
    return dumps(dict(record))
