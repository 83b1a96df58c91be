"""The ``make demo`` job: the whole toolkit, end to end, against the embedded local service.

Run ``python -m svc_frames.demo`` (or ``make demo``). In one run it starts the local service
with the demo application, logs in as a demo user, loads every object and the
login-protected views, prints a short summary of each frame, exports them to parquet,
saves plots as PNG, plans a bulk edit (printed as a dry run), applies it and prints the
report. Outputs go to ``demo-output/``.

Options: ``--records N`` (or ``SVC_DEMO_RECORDS``; default 300) and ``--out DIR``
(or ``SVC_DEMO_OUT``).

``connect()`` is the notebooks' first cell: a client for a real deployment when the
``SVC_*`` variables are set, otherwise one for a local service started in-process.

Usage::

    python -m svc_frames.demo --records 50 --out /tmp/demo
    client, service = connect()
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from . import plot
from .application import read_app
from .errors import ConfigurationError, UsageError, warnings_as_lines
from .frames import Frames
from .kinds import BLANK
from .labels import column_names
from .loaders import read_object, read_view
from .names import sql_slug
from .records import Client
from .refreshing.policy import RefreshReport, refresh
from .reviewing.html import format_change_value
from .saved.parquet import to_parquet
from .writeback import diff, write_back

__all__ = ["connect", "run", "main", "frame_summary", "ENV_HELP"]

DEFAULT_RECORDS = 1000
NOTEBOOK_RECORDS = 500
DEFAULT_OUT = "demo-output"

ENV_HELP = ("To use a real deployment set SVC_APP_ID, SVC_API_KEY and SVC_BASE_URL "
            "(plus SVC_EMAIL and SVC_PASSWORD, or SVC_TOKEN, for views behind a login). "
            "To use the local service instead, unset them and SVC_LOCAL.")


def connect(records: int | None = None, *, seed: int = 0, login: bool = True,
            local: bool | None = None, writes: bool = False) -> tuple[Any, Any]:
    """A ``(client, service)`` pair for notebooks and scripts.

    With any ``SVC_APP_ID``/``SVC_BASE_URL``/``SVC_API_KEY`` in the environment the client
    talks to that deployment (``service`` is None; ``Client.from_env`` logs in with
    ``SVC_EMAIL``/``SVC_PASSWORD`` when set). Otherwise a local service with the demo
    application is started in-process (stopped at exit; ``records`` per object, default
    ``SVC_DEMO_RECORDS`` or 500) and, when ``login``, the client logs in as its first demo
    user; it paces itself at ``SVC_RATE_LIMIT`` requests/s (default 10, as hosted).
    ``SVC_LOCAL=0`` forbids the local service. ``writes=True`` (notebooks that write)
    refuses a real deployment unless ``SVC_ALLOW_WRITES=1``. Missing settings raise
    ConfigurationError saying what to set.

    Usage: ``client, service = connect()``"""
    env = os.environ
    remote = any(env.get(k) for k in ("SVC_APP_ID", "SVC_BASE_URL", "SVC_API_KEY"))
    if local is None:
        local = not remote and env.get("SVC_LOCAL", "1") != "0"
    if not local:
        missing = [k for k in ("SVC_APP_ID", "SVC_BASE_URL") if not env.get(k)]
        if missing:
            raise ConfigurationError(f"no local service and missing {', '.join(missing)}. "
                                     f"{ENV_HELP}")
        if writes and env.get("SVC_ALLOW_WRITES") != "1":
            raise ConfigurationError(
                f"this notebook writes records; to let it write to {env.get('SVC_BASE_URL')} "
                "set SVC_ALLOW_WRITES=1 (or unset SVC_APP_ID/SVC_BASE_URL/SVC_API_KEY to use "
                "the local service)")
        return Client.from_env(), None
    if records is None:
        records = int(env.get("SVC_DEMO_RECORDS") or NOTEBOOK_RECORDS)
    service = start_local_service(records=records, seed=seed)
    # the hosted pace by default, so notebooks behave as they will against a deployment
    pace = float(env.get("SVC_RATE_LIMIT") or 10)
    client = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                    rate_limit=pace)
    if login and service.users:
        user = service.users[0]
        client.login(user["email"], user["password"])
    return client, service


def start_local_service(records: int = DEFAULT_RECORDS, seed: int = 0) -> Any:
    """Start the local service with the demo application; it stops when Python exits.

    Usage: ``svc = start_local_service(100); print(svc.base_url)``"""
    # the server (FastAPI, uvicorn) loads only when a local service is started: a notebook
    # connected to a real deployment never imports it
    from .server import LocalService

    service = LocalService(demo=True, records=records, seed=seed).start()
    atexit.register(service.stop)  # stop() is idempotent: an explicit stop() is fine too
    return service


def frame_summary(name: str, frames: Frames, *, width: int = 88) -> str:
    """A short text summary of loaded frames: rows, columns, dtypes, exploded tables.

    Usage: ``print(frame_summary("orders", frames))``"""
    main = frames.main
    labels: dict[str, str] = {}
    if frames.source is not None:
        labels = {f.key: f.label for f in frames.source.fields}
    lines = [f"== {name}: {len(main)} rows x {main.shape[1]} columns"]
    by_dtype: dict[str, list[str]] = {}
    for col, dtype in main.dtypes.items():
        base = str(col).split(".", 1)
        label = labels.get(base[0], base[0]) + (f".{base[1]}" if len(base) > 1 else "")
        by_dtype.setdefault(str(dtype), []).append(label)
    for dtype, cols in sorted(by_dtype.items(), key=lambda kv: -len(kv[1])):
        text = ", ".join(cols)
        head = f"   {dtype:<32} {len(cols):>3}: "
        if len(head) + len(text) > width:
            text = text[: width - len(head) - 1] + "…"
        lines.append(head + text)
    for key, table in frames.tables.items():
        lines.append(f"   table {key} ({labels.get(key, key)}): {len(table)} rows "
                     f"[{', '.join(map(str, table.columns))}]")
    return "\n".join(lines)


# ---- the job -------------------------------------------------------------------------------
class _Printer:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.t0 = time.perf_counter()

    def step(self, text: str) -> None:
        print(f"\n[{time.perf_counter() - self.t0:5.1f}s] {text}", file=self.out, flush=True)

    def __call__(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)


def _fields_of(schema_obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema_obj.get("fields") or [])


def run(records: int = DEFAULT_RECORDS, out_dir: str | Path = DEFAULT_OUT, *, seed: int = 0,
        stream: TextIO | None = None) -> dict[str, Any]:
    """Run the demo job; returns what it made: ``{"frames", "parquet", "plots", "report"}``.

    Usage: ``result = run(records=50, out_dir="/tmp/demo")``"""
    import matplotlib

    matplotlib.use("Agg")  # files only: the job may run without a display
    import matplotlib.pyplot as plt

    from .server import LocalService  # see start_local_service

    if not isinstance(records, int) or records < 1:
        raise UsageError(f"records must be a positive integer, got {records!r}")
    say = _Printer(stream or sys.stdout)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    made: dict[str, Any] = {"frames": {}, "parquet": [], "plots": [], "report": None}

    say.step(f"Starting the local service with the demo application ({records} records)")
    with LocalService(demo=True, records=records, seed=seed) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url)
        say(f"   {svc.base_url}  application {svc.app_id}")
        user = svc.users[0]
        client.login(user["email"], user["password"])
        say(f"   logged in as {user['email']} ({user.get('name', '')})")

        schema = client.schema()
        objects = {o["key"]: o for o in schema.get("objects", [])}

        say.step("Loading every object")
        frames_by_name: dict[str, Frames] = {}
        for key, obj in objects.items():
            frames = read_object(client, key)
            name = f"{key} {obj.get('name', '')}".strip()
            frames_by_name[key] = frames
            say(frame_summary(name, frames))

        say.step("Loading the views behind a login, as the logged-in user")
        for scene in schema.get("scenes", []):
            if not scene.get("authenticated"):
                continue
            for view in scene.get("views", []):
                if view.get("type") not in ("table", "list", "search", "calendar"):
                    continue
                frames = read_view(client, scene["key"], view["key"])
                name = f"{scene['key']}/{view['key']} {view.get('name', '')}".strip()
                frames_by_name[f"{scene['key']}_{view['key']}"] = frames
                say(frame_summary(name, frames))
        made["frames"] = frames_by_name

        say.step(f"Saving to Parquet under {out}/ (columns named by field label)")
        for name, frames in frames_by_name.items():
            # a directory per frame, readable by any Parquet reader, its columns named as
            # the frames name them (labels). The demo owns its output directory: a second
            # run replaces it.
            path = to_parquet(frames, out / "parquet" / name, overwrite=True)
            made["parquet"].append(path)
            size = sum(p.stat().st_size for p in path.rglob("*.parquet"))
            say(f"   {path}/  ({size / 1024:.0f} KiB; pd.read_parquet or "
                "svc_frames.read_parquet)")

        say.step("Plotting")
        for path in _plots(frames_by_name, objects, out / "plots", plot):
            made["plots"].append(path)
            say(f"   {path}")
        plt.close("all")

        say.step("Planning a bulk edit")
        edit = _bulk_edit(frames_by_name, objects)
        if edit is None:
            say("   no editable choice or number field found; skipped")
            return made
        key, edited, description = edit
        say(f"   {description}")
        plan = diff(edited)
        say(f"   {plan!r}")
        dry = write_back(client, edited, plan=plan, dry_run=True)
        say(f"   dry run, nothing sent: {dry.counts}; the changes:")
        say(_indent(_table_text(_labelled(plan.changes, edited).head(8))))
        if len(plan.changes) > 8:
            say(f"   … and {len(plan.changes) - 8} more")

        say.step("Applying the bulk edit")
        report = write_back(client, edited, plan=plan)
        made["report"] = report
        counts = report.table["status"].value_counts().to_dict()
        say(f"   report: {counts}")
        say(_indent(_table_text(_labelled(report.table, edited).head(8))))
        _labelled(report.table, edited).to_csv(out / "bulk_edit_report.csv", index=False)
        made["report_csv"] = out / "bulk_edit_report.csv"

        check = read_object(client, key)
        say(f"   re-read {key}: {_verify(edited, check)}")

        made["refresh"] = _refresh_step(say, client, svc, objects)
        made.update(whole_app_step(client, out, say))

    say.step(f"Done. Outputs are in {out.resolve()}/")
    say(f"   parquet/   {len(made['parquet'])} frames (svc_frames.read_parquet(path) gives "
        "them back with their dtypes)")
    say(f"   plots/     {', '.join(p.name for p in made['plots'])}")
    say("   bulk_edit_report.csv")
    say("   app.duckdb (every object, connection and choice table: duckdb demo-output/"
        "app.duckdb)")
    return made


def _refresh_step(say: _Printer, client: Any, svc: Any, objects: dict[str, Any]
                  ) -> list[RefreshReport]:
    """Load, let another user change records on the server, refresh: the report and the
    requests it took against a full reload's."""
    key = next((k for k in objects if client.schema().stamped_field(k)), None)
    if key is None:
        return []
    stamp = client.schema().stamped_field(key)
    say.step(f"Refreshing {key} incrementally (its field {stamp} is stamped on every "
             "change)")
    frames = read_object(client, key)
    # another user, on the application's own pages: its forms' record rules stamp the
    # changes (an object API write would carry no stamp, as on the hosted service)
    other = svc.pages
    ids = list(frames.main.index)
    title = objects[key].get("identifier")
    for rid in ids[:3]:  # another user edits three records and adds two
        other.update_record(key, rid, {title: f"Edited elsewhere {rid[-4:]}"} if title else {})
    for n in range(2):
        other.create_record(key, {title: f"Added elsewhere {n + 1}"} if title else {})
    reports: list[RefreshReport] = []
    for label in ("3 edited and 2 added on the server", "1 more deleted on the server"):
        if reports:
            other.delete_record(key, ids[-1])
        t0 = time.perf_counter()
        report = refresh(client, frames)
        took = time.perf_counter() - t0
        t0, before = time.perf_counter(), client.request_count
        read_object(client, key)
        full, full_took = client.request_count - before, time.perf_counter() - t0
        say(f"   {label}: {report}")
        say(f"      {report.requests} requests in {took:.2f}s, against {full} requests in "
            f"{full_took:.2f}s for a full reload")
        reports.append(report)
    say("   a deletion shows as a lower total; a few deleted records are found by counting "
        "auto-increment ranges (one-row requests), many by one listing of every page")
    return reports


PARTS_COST_SQL = """
SELECT coalesce(w."{status}", '{blank}') AS status, count(DISTINCT w.id) AS work_orders, count(*) AS parts_used,
       round(sum(p."{price}"), 2) AS parts_cost
FROM "{orders}" w
JOIN "{links}" c ON c.record_id = w.id
JOIN "{parts}" p ON p.id = c.connected_id
GROUP BY ALL ORDER BY parts_cost DESC
"""
"""Parts cost by work order status, over the tables ``App.to_duckdb`` writes."""


def whole_app_step(client: Any, out: Path, say: Any) -> dict[str, Any]:
    """The demo's last step: the whole application with read_app, the join of work orders
    with their parts, ``app.duckdb`` and one SQL query over it. Returns ``{"app",
    "duckdb", "parts_cost"}``. Usage: ``whole_app_step(client, Path("out"), print)``"""
    say.step("The whole application: read_app, a join, a DuckDB file")
    app = read_app(client, progress=False)
    say(_indent(repr(app)))
    orders = app["Work Orders"]
    joined = app.join("Work Orders", "Parts", columns=["Part Name", "Unit Price"])
    say(f"   app.join('Work Orders', 'Parts'): {len(joined)} rows (one per order x part) "
        f"for {len(orders.main)} work orders")
    shown = joined[["id", "Title", "Parts.Part Name", "Parts.Unit Price"]]
    say(_indent(_table_text(shown.head(6))))
    try:
        import duckdb  # the svc_frames[duckdb] extra (make demo installs it)
    except ImportError:
        say("   DuckDB is not installed (pip install 'svc-frames[duckdb]'): no app.duckdb")
        return {"app": app}
    path = app.to_duckdb(out / "app.duckdb", overwrite=True)
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = dict(con.execute("SELECT object_key, table_name FROM svc_sources").fetchall())
        links = con.execute("SELECT table_name FROM svc_connections WHERE field = ?",
                            [field_key(orders, "Parts")]).fetchone()
        sql = PARTS_COST_SQL.format(blank=BLANK, status="Status", price="Unit Price",
                                    orders=tables["object_3"],
                                    parts=tables["object_2"], links=links and links[0])
        cost = con.execute(sql).df()
    finally:
        con.close()
    size = path.stat().st_size
    say(f"   {path} ({size / 1024:.0f} KiB); parts cost by status, in SQL:")
    say(_indent(_table_text(cost)))
    return {"app": app, "duckdb": path, "parts_cost": cost}


def field_key(frames: Frames, label: str) -> str:
    """The key of the field labelled ``label`` in loaded frames (demo fields by name)."""
    assert frames.source is not None
    return next(f.key for f in frames.source.fields if f.label == label)


def _labelled(table: pd.DataFrame, frames: Frames) -> pd.DataFrame:
    """Plan changes or a report table for printing: the field named by the frames' own
    column (a label), values as the application shows them."""
    out = table.drop(columns=[c for c in ("field",) if c in table.columns])
    for col in ("old", "new"):
        if col in out.columns:
            out[col] = out[col].map(format_change_value)
    return out


def _indent(text: str) -> str:
    return "\n".join("   " + line for line in text.splitlines())


def _table_text(table: pd.DataFrame) -> str:
    with pd.option_context("display.width", 120, "display.max_colwidth", 40):
        return table.to_string(index=False)


def _plots(frames_by_name: dict[str, Frames], objects: dict[str, Any], out: Path,
           plot: Any) -> list[Path]:
    """One plot of each sort, on the biggest object that has a field of the right kind,
    each in its own PNG, then all of them on one page (``overview.png``, through ``ax=``)."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []

    def first(kinds: tuple[str, ...], pred: Any = None) -> tuple[str, dict[str, Any]] | None:
        for key in sorted(objects, key=lambda k: -len(frames_by_name.get(k, ()))):
            frames = frames_by_name.get(key)
            if frames is None or len(frames) == 0:
                continue
            for f in _fields_of(objects[key]):
                if f.get("type") in kinds and (pred is None or pred(f, frames)):
                    return key, f
        return None

    def named(*parts: str) -> str:
        """A plot's file name from the object's name and the field's label (readable:
        ``counts_work_orders_status.png``)."""
        return "_".join(sql_slug(p) for p in parts) + ".png"

    def column(fr: Frames, key: str, part: str = "") -> str:
        """The frames' column of a field (a part of it), as they name it."""
        assert fr.source is not None
        return column_names(fr.source.fields, fr.source.columns)[key] + part

    # (file name, draw(ax) -> Axes): each drawn alone, then again on the overview page
    jobs: list[tuple[str, Any]] = []
    loc = first(plot.LOCATION_KINDS,
                lambda f, fr: column(fr, f["key"], ".latitude") in fr.main.columns
                and fr.main[column(fr, f["key"], ".latitude")].notna().any())
    if loc:
        key, f = loc
        colour = next((g["key"] for g in _fields_of(objects[key])
                       if g.get("type") == "multiple_choice"
                       and (g.get("format") or {}).get("type", "single") == "single"), None)
        jobs.append((named("locations", objects[key].get("name") or key,
                           f.get("name") or f["key"]),
                     lambda ax, k=key, f=f, c=colour:
                     plot.plot_locations(frames_by_name[k], f["key"], color_by=c, ax=ax)))
    counted = first(("multiple_choice",)) or first(("connection",))
    conn = first(("connection",))
    for pick in (counted, conn if conn != counted else None):
        if pick:
            key, f = pick
            jobs.append((named("counts", objects[key].get("name") or key,
                               f.get("name") or f["key"]), lambda ax, k=key, f=f:
                         plot.plot_counts(frames_by_name[k], f["key"], ax=ax, top=12,
                                          others=False)))
    dated = first(plot.TIME_KINDS, lambda f, fr: column(fr, f["key"]) in fr.main.columns
                  and fr.main[column(fr, f["key"])].notna().any())
    if dated:
        key, f = dated
        jobs.append((named("over_time", objects[key].get("name") or key,
                           f.get("name") or f["key"]), lambda ax, k=key, f=f:
                     plot.plot_over_time(frames_by_name[k], f["key"], freq="M", ax=ax)))

    for name, draw in jobs:
        ax = draw(None)
        ax.figure.savefig(out / name, dpi=110)
        plt.close(ax.figure)
        made.append(out / name)
    if len(jobs) >= 2:
        rows = (len(jobs) + 1) // 2
        fig, axes = plt.subplots(rows, 2, figsize=(15, 5.6 * rows), layout="constrained")
        flat = list(axes.flat)
        for (_name, draw), ax in zip(jobs, flat, strict=False):
            draw(ax)
        for ax in flat[len(jobs):]:
            ax.set_visible(False)
        fig.savefig(out / "overview.png", dpi=90)
        plt.close(fig)
        made.append(out / "overview.png")
    return made


def _bulk_edit(frames_by_name: dict[str, Frames], objects: dict[str, Any]
               ) -> tuple[str, Frames, str] | None:
    """The demo app's edit (server/demo_app.py keys): flag open, high-priority work orders as
    urgent (Priority >= 4, or the highest priority present when none reaches 4, so that
    any data size has something to do). With no open, non-urgent, prioritised work order,
    or on another schema: move a tenth of a single-choice field to the next option, or else
    raise a number field by 10% on a tenth of the records."""
    orders = frames_by_name.get("object_3")
    wanted = {"Priority", "Urgent", "Status"}
    if orders is not None and wanted <= set(orders.main.columns):
        main = orders.main
        open_calm = ((main["Status"] == "Open")
                     & (main["Urgent"] != True)).fillna(False)  # noqa: E712 (NA-aware)
        priorities = main.loc[open_calm, "Priority"].dropna()
        if len(priorities):
            level = min(4.0, float(priorities.max()))
            pick = (open_calm & (main["Priority"] >= level)).fillna(False)
            main.loc[pick, "Urgent"] = True
            return "object_3", orders, (f"Work Orders: set Urgent on the {int(pick.sum())} "
                                        f"Open work orders with Priority >= {level:g} "
                                        "not yet urgent")
    for key in sorted(objects, key=lambda k: -len(frames_by_name.get(k, ()))):
        frames = frames_by_name.get(key)
        if frames is None or len(frames) < 2:
            continue
        edited = frames  # loaders keep the as-loaded copy in .original; diff compares to it
        main = edited.main
        n = max(1, len(main) // 10)
        names = column_names(frames.source.fields, frames.source.columns) \
            if frames.source is not None else {}
        for f in _fields_of(objects[key]):
            col = names.get(f["key"], f["key"])
            fmt = f.get("format") or {}
            if f.get("type") == "multiple_choice" and fmt.get("type", "single") == "single" \
                    and col in main.columns and len(fmt.get("options") or []) >= 2:
                options = list(fmt["options"])
                rows = main.index[:n]
                new = [options[(options.index(v) + 1) % len(options)]
                       if isinstance(v, str) and v in options else options[0]
                       for v in main.loc[rows, col]]
                main.loc[rows, col] = pd.array(new, dtype=main[col].dtype)
                return key, edited, (f"{key}: move {n} records of {f.get('name', col)} "
                                     "to the next option")
        for f in _fields_of(objects[key]):
            col = names.get(f["key"], f["key"])
            if f.get("type") in ("number", "currency") and col in main.columns:
                rows = main.index[:n]
                main.loc[rows, col] = (main.loc[rows, col] * 1.1).round(2)
                return key, edited, f"{key}: raise {f.get('name', col)} by 10% on {n} records"
    return None


def _verify(edited: Frames, reread: Frames) -> str:
    left = diff(edited, base=reread)
    if left.empty:
        return "the server now holds every edited value"
    return f"{left.changes['record_id'].nunique()} records still differ"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m svc_frames.demo``. Usage: ``main(["--records", "50"])``"""
    parser = argparse.ArgumentParser(prog="python -m svc_frames.demo",
                                     description="Run the svc_frames demo end to end.")
    parser.add_argument("--records", type=int,
                        default=int(os.environ.get("SVC_DEMO_RECORDS", DEFAULT_RECORDS)),
                        help="records per demo object (env SVC_DEMO_RECORDS; default "
                             f"{DEFAULT_RECORDS})")
    parser.add_argument("--out", default=os.environ.get("SVC_DEMO_OUT", DEFAULT_OUT),
                        help=f"output directory (env SVC_DEMO_OUT; default {DEFAULT_OUT})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the demo data")
    args = parser.parse_args(argv)
    if args.records < 1:
        parser.error(f"--records must be at least 1, got {args.records}")
    try:
        with warnings_as_lines("demo"):  # one line each: the demo's user wrote no line to show
            run(args.records, args.out, seed=args.seed)
    except UsageError as exc:  # bad settings: a message, not a traceback
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
