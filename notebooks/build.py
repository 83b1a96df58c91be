"""Build the notebooks from this file, so they are reviewed as plain Python.

Run ``.venv/bin/python notebooks/build.py`` after editing; commit this file and the
``.ipynb`` files it writes (they have no outputs). ``tests/test_notebooks.py`` executes them
and checks they match this builder.

Every notebook starts with ``connect()``: the local service, started in the kernel, unless
the ``SVC_*`` variables point at a real deployment (see the first cell of each).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

CONNECT_MD = """\
By default this notebook starts the **local service** with the demo application inside the
kernel. To run it against a **real deployment**, start Jupyter with `SVC_APP_ID`,
`SVC_API_KEY` and `SVC_BASE_URL` set (and `SVC_EMAIL` / `SVC_PASSWORD` for views behind a
login); the cells below read the other `SVC_*` variables named in them."""

SETUP = """\
import os
from pathlib import Path

import pandas as pd

from svc_frames.demo import connect

# outputs go to the repository's demo-output/ (ignored by git), run from notebooks/ or not
OUT = Path(os.environ.get("SVC_NOTEBOOK_OUT") or (
    "../demo-output/notebooks" if Path.cwd().name == "notebooks" else "demo-output/notebooks"))
OUT.mkdir(parents=True, exist_ok=True)
"""


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(text.strip("\n"))


def code(text: str) -> nbformat.NotebookNode:
    return new_code_cell(text.strip("\n"))


# ---- 1 quickstart ------------------------------------------------------------------------
QUICKSTART = [
    md("""
# 1 · Quickstart: records to typed DataFrames

Connect, load an object into pandas, explore it, plot it, and save it as Parquet.
"""),
    md(CONNECT_MD + "\n\n`SVC_OBJECT` picks the object to load (default: the widest one)."),
    code(SETUP + """
from svc_frames import (plot_counts, plot_locations, plot_over_time, read_object,
                        read_parquet, to_parquet)

client, service = connect()
client
"""),
    md("## What the application holds\nThe schema lists objects (tables) and their fields."),
    code("""
schema = client.schema() or {"objects": []}  # some deployments do not expose it
pd.DataFrame([{"object": o["key"], "name": o["name"], "fields": len(o["fields"])}
              for o in schema["objects"]])
"""),
    md("## Load an object\nOne row per record, the record id as index, one typed column per "
       "value, named by the field labels you know from the service's screens. A first "
       "look at a few columns:"),
    code("""
OBJECT = os.environ.get("SVC_OBJECT") or max(schema["objects"],
                                             key=lambda o: len(o["fields"]))["key"]
frames = read_object(client, OBJECT)
print(f"{OBJECT}: {len(frames.main)} records, {frames.main.shape[1]} columns")
fields = frames.fields   # one row per field: its label, kind, and columns in these frames

simple = ("short_text", "multiple_choice", "number", "currency", "rating", "boolean",
          "date_time")
shown = [cols[0] for kind, cols in zip(fields["kind"], fields["columns"])
         if kind in simple and cols][:6]
frames.main[shown].head()
"""),
    md("Columns are named by field label; `read_object(..., columns=\"keys\")` (or "
       "`frames.with_keys()`) names them by key (`field_N`) instead, names that stay the "
       "same when someone renames a field. `frames.fields` says which field each column "
       "comes from. A name, an address or a file spreads over several columns "
       "(`Contact.first`, `Site.city`...); a connection is an exploded table in "
       "`frames.tables`:"),
    code("""
overview = fields.reset_index()[["key", "label", "kind", "columns", "table"]]
overview["dtype"] = [", ".join(dict.fromkeys(str(frames.main[c].dtype) for c in cols))
                     if cols else "table" if isinstance(table, str) else ""
                     for cols, table in zip(fields["columns"], fields["table"])]
overview
"""),
    md("## Explore with plain pandas\nNullable dtypes: numbers are `Float64`, text is "
       "`string`, dates are tz-aware in the application's timezone, empty is `<NA>`."),
    code("""
def first_of(*kinds):
    \"\"\"The key of the first field of one of these kinds, or None.\"\"\"
    return next((key for key, kind in fields["kind"].items() if kind in kinds), None)

frames.main.select_dtypes("Float64").describe().T.head(8)
"""),
    code("""
choice = first_of("multiple_choice")
if choice:
    display(frames.main[fields.loc[choice, "columns"][0]].value_counts(dropna=False).to_frame())
print("exploded tables (connections, multi choices):", list(frames.tables))
"""),
    md("## Plot\nEach plot takes a field by key or label and returns its matplotlib Axes."),
    code("""
import matplotlib.pyplot as plt

address, date = first_of("address"), first_of("date_time")
single = next((f.key for f in frames.source.fields if f.kind == "multiple_choice"
               and f.format.get("type", "single") == "single"), None)
if address:
    plot_locations(frames, address, color_by=single)
    plt.show()
if choice:
    plot_counts(frames, choice)
    plt.show()
if date:
    plot_over_time(frames, date, freq="M")
    plt.show()
"""),
    md("## Save as Parquet\nThe directory holds the records alone, so any Parquet reader "
       "(`pd.read_parquet`, DuckDB, Polars) gets each record once; beside it sit the "
       "exploded tables, the as-loaded copy and a small JSON file, so `read_parquet` gives "
       "the frames back equal and `svc-frames push` can send edits made with any tool."),
    code("""
path = to_parquet(frames, OUT / f"quickstart_{OBJECT}", overwrite=True)  # a re-run replaces it
back = read_parquet(path)
pd.testing.assert_frame_equal(back.main, frames.main)
print("saved to", path, "and read back equal;", len(pd.read_parquet(path)),
      "rows for pd.read_parquet")
print(sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name)))
"""),
]

# ---- 2 bulk edit ---------------------------------------------------------------------------
BULK_EDIT = [
    md("""
# 2 · Bulk edit: pandas edits, a dry run, a review, then apply

Edit a frame in pandas, see exactly what would be sent, review it record by record, send
only what you keep, and handle a record that someone else changed meanwhile.
"""),
    md(CONNECT_MD + """

This notebook **writes**: against a real deployment it refuses to start unless
`SVC_ALLOW_WRITES=1`. Choose what it edits with `SVC_OBJECT` (an object's name),
`SVC_EDIT_FIELD` (a single choice field's label), `SVC_EDIT_FROM` and `SVC_EDIT_TO` (two of
its options)."""),
    code(SETUP + """
from svc_frames import diff, read_object, review, write_back

client, service = connect(writes=True)

OBJECT = os.environ.get("SVC_OBJECT", "Work Orders")    # an object, by name
FIELD = os.environ.get("SVC_EDIT_FIELD", "Status")      # a column: the field's label
FROM = os.environ.get("SVC_EDIT_FROM", "Open")
TO = os.environ.get("SVC_EDIT_TO", "On Hold")
"""),
    md("## Load, then edit in pandas\nPut up to 10 records that are `FROM` into `TO`. "
       "Columns are named by field label, as the application's pages show them. The "
       "frames remember what was loaded, so nothing else needs tracking."),
    code("""
frames = read_object(client, OBJECT)
main = frames.main
picked = main.index[main[FIELD] == FROM][:10]
main.loc[picked, FIELD] = TO
print(f"{len(picked)} records edited in pandas; nothing sent yet")
"""),
    md("## Diff: the plan\nOnly changed fields of changed records; values encoded the way "
       "the service accepts them."),
    code("""
plan = diff(frames)
print(plan)
plan.changes.head(10)
"""),
    md("## Dry run\nEverything is validated; nothing is sent."),
    code("""
dry = write_back(client, frames, plan=plan, dry_run=True)
print(dry.counts)
dry.table.head()
"""),
    md("## Review and apply\nUntick records you do not want and press **Apply**: only the "
       "ticked records are sent, and the report replaces the button. Below, the same is "
       "done from code so the notebook runs top to bottom: the first two are left out."),
    code("""
box = review(plan, client)
box
"""),
    code("""
left_out = plan.record_ids[:2]
box.exclude(left_out)          # same as unticking them
report = box.apply()           # same as pressing Apply
report.table.status.value_counts()
"""),
    code("""
check = read_object(client, OBJECT).main
sent = [r for r in plan.record_ids if r not in left_out]
print("sent and now", TO, ":", (check.loc[sent, FIELD] == TO).all())
print("left out, still", FROM, ":", (check.loc[left_out, FIELD] == FROM).all())
"""),
    md("""
## A conflict, shown and resolved

We load, a colleague changes a record on the server, then we edit the same record from
our stale copy. `write_back` re-reads the records it is about to change and **skips** the
one that moved (`on_conflict="skip"`, the default), reporting it as a conflict.
"""),
    code("""
ours = read_object(client, OBJECT)
rid = ours.main.index[ours.main[FIELD] == FROM][0]
theirs = read_object(client, OBJECT)                    # a colleague's copy,
theirs.main.loc[rid, FIELD] = TO
write_back(client, theirs, progress=False)              # and their change

options = ours.fields.set_index("label").at[FIELD, "choices"]   # the field's options
mine = next(o for o in options if o not in (FROM, TO))  # a third option
ours.main.loc[rid, FIELD] = mine                        # our edit, from the stale copy
other = ours.main.index[ours.main[FIELD] == FROM][:1]
ours.main.loc[other, FIELD] = TO                        # and an edit nobody else touched
report = write_back(client, ours)
report.table
"""),
    code("""
report.conflicts
"""),
    md("""
**Resolve** by re-loading the record, looking at the server's value, and re-applying the
edit that is still wanted (or pass `on_conflict="overwrite"` to impose ours, or
`on_conflict="raise"` to stop before anything is written).
"""),
    code("""
fresh = read_object(client, OBJECT)
print("server now has:", fresh.main.loc[rid, FIELD])
fresh.main.loc[rid, FIELD] = mine                        # we still want our value
resolved = write_back(client, fresh)
resolved.table
"""),
]

# ---- 3 views and login -------------------------------------------------------------------
VIEWS = [
    md("""
# 3 · Views and login

Views show only some fields and records, and some sit behind a login. Log in as a user,
read a protected view as that user, and update a record through a form (its record rules
run on the server).
"""),
    md(CONNECT_MD + """

Pick the views with `SVC_VIEW` (a table behind a login), `SVC_LIST` (a list whose records
the form can update) and `SVC_FORM` (an update form), each as `scene_N/view_N`;
`SVC_EDIT_FIELD` / `SVC_EDIT_TO` give the form input to change and its new value. Against a
real deployment the form update writes only with `SVC_ALLOW_WRITES=1`."""),
    code(SETUP + """
from svc_frames import AuthenticationError, Client, Forbidden, read_view, write_back

client, service = connect(login=False)
VIEW = os.environ.get("SVC_VIEW", "scene_2/view_3")    # demo: Dispatch board (managers)
LIST = os.environ.get("SVC_LIST", "scene_4/view_6")    # demo: My work orders
FORM = os.environ.get("SVC_FORM", "scene_4/view_7")    # demo: Update my work order
FIELD = os.environ.get("SVC_EDIT_FIELD", "field_27")   # demo: Status
TO = os.environ.get("SVC_EDIT_TO", "Done")
if service is not None:   # the demo users; on a real deployment: SVC_EMAIL / SVC_PASSWORD
    EMAIL, PASSWORD = service.users[0]["email"], service.users[0]["password"]
else:
    EMAIL, PASSWORD = os.environ.get("SVC_EMAIL"), os.environ.get("SVC_PASSWORD")
    if not (EMAIL and PASSWORD):
        raise RuntimeError("set SVC_EMAIL and SVC_PASSWORD to log in to the deployment")
"""),
    md("## Without a login the view is refused"),
    code("""
anonymous = Client(client.app_id, base_url=client.base_url)
try:
    read_view(anonymous, *VIEW.split("/"))
except (Forbidden, AuthenticationError) as exc:
    print(type(exc).__name__, "-", exc)
"""),
    md("## Log in, then read the view as that user\nThe token stays on the client; the "
       "password is not kept."),
    code("""
user = client.login(EMAIL, PASSWORD)
print("logged in:", EMAIL, "profiles", user.get("profile_keys"))
board = read_view(client, *VIEW.split("/"), columns="keys")
print(f"{VIEW}: {len(board.main)} records, columns {list(board.main.columns)}")
board.main.head()
"""),
    md("A connection column of a view arrives as an exploded table: one row per "
       "connected record, with its id and identifier."),
    code("""
for key, table in board.tables.items():
    print(key, board.source.field(key).label)
    display(table.head())
"""),
    md("## Update through a form\nLoad the records the form can update (the user's own "
       "list), edit one in pandas, and write back **through the form** as the user. Only "
       "the form's inputs are written; its record rules run on the server."),
    code("""
mine = read_view(client, *LIST.split("/"), columns="keys")
print(f"{len(mine.main)} records in {LIST}")
rid = mine.main.index[mine.main[FIELD] != TO][0]
mine.main.loc[rid, FIELD] = TO
writes_ok = service is not None or os.environ.get("SVC_ALLOW_WRITES") == "1"
report = write_back(client, mine, target=tuple(FORM.split("/")), dry_run=not writes_ok)
report.table
"""),
    code("""
after = read_view(client, *LIST.split("/"), columns="keys").main
print(rid, FIELD, "is now", after.loc[rid, FIELD])
if service is not None:  # the demo form's rule: Urgent (field_26) is cleared when Done
    record = client.get_record(mine.source.object_key, rid)
    print("Urgent after the rule:", record.get("field_26_raw"))
"""),
]

# ---- 4 files and images ------------------------------------------------------------------
FILES = [
    md("""
# 4 · Files and images

Upload a file and an image, create a record that holds them (the two-step flow), read the
record back, download the bytes, and show the image and its thumbnail.
"""),
    md(CONNECT_MD + """

This notebook **writes** (uploads and creates a record): against a real deployment it needs
`SVC_ALLOW_WRITES=1`. `SVC_OBJECT` (an object's name), `SVC_TITLE_FIELD`, `SVC_FILE_FIELD`
and `SVC_IMAGE_FIELD` (fields' labels) say where to put them."""),
    code(SETUP + """
import io

from IPython.display import Image, display
from PIL import Image as PILImage, ImageDraw

from svc_frames import (Field, create_with_asset, download, read_object, upload_image,
                        write_back)

client, service = connect(writes=True)
OBJECT = os.environ.get("SVC_OBJECT", "Work Orders")          # an object, by name
TITLE = os.environ.get("SVC_TITLE_FIELD", "Title")            # fields, by label
FILE_FIELD = os.environ.get("SVC_FILE_FIELD", "Attachment")   # a file field
IMAGE_FIELD = os.environ.get("SVC_IMAGE_FIELD", "Photo")      # an image field
"""),
    md("## Make a small image and a file"),
    code("""
img = PILImage.new("RGB", (360, 220), (235, 242, 250))
draw = ImageDraw.Draw(img)
draw.rectangle((30, 40, 330, 180), outline=(30, 90, 160), width=6)
draw.ellipse((140, 70, 220, 150), fill=(220, 120, 40))
draw.text((40, 190), "site photo (generated)", fill=(20, 20, 20))
buf = io.BytesIO()
img.save(buf, format="PNG")
photo = buf.getvalue()
(OUT / "site-photo.png").write_bytes(photo)
readings = pd.DataFrame({"sensor": ["A", "B", "C"], "value": [1.5, 2.25, 3.0]})
(OUT / "readings.csv").write_text(readings.to_csv(index=False))
print(len(photo), "bytes of PNG;", (OUT / "readings.csv").stat().st_size, "bytes of CSV")
"""),
    md("## Upload\nAn upload answers an asset: its id goes into a file or image field. "
       "One asset can be placed in one field only."),
    code("""
asset = upload_image(client, photo, "site-photo.png")
{k: asset[k] for k in ("id", "type", "filename", "size", "public_url", "thumb_url")}
"""),
    md("## Create a record with assets\n`create_with_asset` does both steps: one upload "
       "per field, then the create with the asset ids."),
    code("""
record = create_with_asset(client, OBJECT, {TITLE: "Pump inspection (with photo)"},
                           {FILE_FIELD: OUT / "readings.csv", IMAGE_FIELD: OUT / "site-photo.png"})
rid = record["id"]
print("created", rid)
"""),
    md("## Read it back\nFile and image fields give the asset id, file name, URLs and size "
       "as columns."),
    code("""
frames = read_object(client, OBJECT,
                     filters=Field(TITLE).is_("Pump inspection (with photo)"))
cols = [c for c in frames.main.columns if c.split(".")[0] in (FILE_FIELD, IMAGE_FIELD)]
frames.main.loc[[rid], cols].T
"""),
    md("## Download and show\nThe bytes come back exactly as uploaded."),
    code("""
row = frames.main.loc[rid]
data = download(client, row[f"{IMAGE_FIELD}.url"])
assert data == photo
print("CSV back:", download(client, row[f"{FILE_FIELD}.url"]).decode().splitlines())
display(Image(data=data))
"""),
    code("""
thumb = download(client, {"thumb_url": row[f"{IMAGE_FIELD}.thumb_url"]}, thumb=True)
print(len(thumb), "bytes of thumbnail")
display(Image(data=thumb))
"""),
    md("## Attach a file to existing records by writing back a path\nPut a local path in a "
       "file column: `write_back` uploads it (once per record and field) and places it."),
    code("""
some = read_object(client, OBJECT, limit=3)
some.main[FILE_FIELD] = str(OUT / "readings.csv")
report = write_back(client, some)
report.table
"""),
]

# ---- 5 the whole application ---------------------------------------------------------------
WHOLE_APP = [
    md("""
# 5 · The whole application: one load, joins along connections, a DuckDB file

`read_app` loads every object at one pace with one progress bar; the `App` it returns knows
the connections between objects, joins along them, and writes everything to one DuckDB file
that any SQL tool opens (`pip install 'svc-frames[duckdb]'`).
"""),
    md(CONNECT_MD),
    code(SETUP + """
from svc_frames.application import read_app

client, service = connect()
app = read_app(client)   # every object, side by side, one pace; columns by field label
app
"""),
    md("## The connections\nFrom the schema: which field of which object links records of "
       "which other object, one or many."),
    code("""
app.connections_table()
"""),
    md("## Join along a connection\nOne row per connected pair for a *many* connection (one "
       "per record for a *one* connection); the connected object's columns are prefixed by "
       "the connection's label. Records without a connection are kept (`how=\"inner\"` "
       "drops them). The demo joins work orders with their parts; elsewhere the first "
       "*many* connection between loaded objects is used."),
    code("""
conn = next((c for c in app.connections if app.name(c.from_object) == "Work Orders"
             and app.name(c.to_object) == "Parts"), None) or next(
    (c for c in app.connections if c.many and c.to_object in app), app.connections[0])
left, right = app[conn.from_object], app[conn.to_object]
joined = app.join(app.name(conn.from_object), app.name(conn.to_object), field=conn.label)
print(f"{app.describe(conn)}: {len(joined)} rows for {len(left.main)} records")
joined.head()
"""),
    md("## The same join by hand\nWhat an analyst would otherwise write: two merges over the "
       "exploded table. `app.join` gives the same rows."),
    code("""
links = left.tables[conn.label][["record_id", "connected_id"]]   # the exploded table
by_hand = (left.main.reset_index()
           .merge(links.rename(columns={"record_id": "id",
                                        "connected_id": f"{conn.label}.id"}),
                  on="id", how="left")
           .merge(right.main.add_prefix(f"{conn.label}.").rename_axis(f"{conn.label}.id")
                  .reset_index(), on=f"{conn.label}.id", how="left"))
pd.testing.assert_frame_equal(joined, by_hand)
print("same rows and columns:", joined.shape)
"""),
    md("## A DuckDB file\nOne table per object (typed), one per connection and multi-choice "
       "table, primary and foreign keys, and `svc_tables` / `svc_connections` / "
       "`svc_sources` describing them."),
    code("""
import duckdb

path = app.to_duckdb(OUT / "app.duckdb", overwrite=True)
con = duckdb.connect(str(path), read_only=True)
con.execute("SELECT table_name, kind, rows, primary_key, foreign_keys FROM svc_tables").df()
"""),
    md("## SQL over the file\nThe connected object's first number summed by the first single "
       "choice of the connecting object (the demo: parts cost by work order status)."),
    code("""
tables = dict(con.execute("SELECT object_key, table_name FROM svc_sources").fetchall())
link_table = con.execute("SELECT table_name FROM svc_connections WHERE field = ?",
                         [conn.field]).fetchone()[0]
number = next(c for c in right.main.columns if str(right.main[c].dtype) == "Float64")
group = next((f.label for f in left.source.fields if f.kind == "multiple_choice"
              and f.format.get("type", "single") == "single"), "id")
sql = f\"\"\"
SELECT coalesce(CAST(l."{group}" AS VARCHAR), '(blank)') AS "{group}",
       count(*) AS links, round(sum(r."{number}"), 2) AS "{number}"
FROM "{tables[conn.from_object]}" l
JOIN "{link_table}" c ON c.record_id = l.id
JOIN "{tables[conn.to_object]}" r ON r.id = c.connected_id
GROUP BY ALL ORDER BY 3 DESC\"\"\"
cost = con.execute(sql).df()
cost
"""),
    code("""
import matplotlib.pyplot as plt

ax = cost.plot.barh(x=cost.columns[0], y=cost.columns[2], legend=False)
ax.set_xlabel(f"sum of {number} ({app.name(conn.to_object)})")
ax.invert_yaxis()
plt.show()
"""),
    md("## The SQL agrees with the join"),
    code("""
inner = joined.dropna(subset=[f"{conn.label}.id"])
keys = inner[group].astype("string").fillna("(blank)")
by_pandas = inner.groupby(keys)[f"{conn.label}.{number}"].sum().round(2)
assert dict(zip(cost.iloc[:, 0], cost.iloc[:, 2])) == by_pandas.to_dict()
con.close()
print("DuckDB and pandas agree;", path, f"({path.stat().st_size / 1024:.0f} KiB)")
"""),
]

NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_bulk_edit.ipynb": BULK_EDIT,
    "03_views_and_login.ipynb": VIEWS,
    "04_files_and_images.ipynb": FILES,
    "05_whole_app.ipynb": WHOLE_APP,
}


def build(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` as built from this file (no outputs)."""
    nb = new_notebook(cells=[nbformat.from_dict(dict(c)) for c in NOTEBOOKS[name]])
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"},
        "language_info": {"name": "python"},
    }
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{Path(name).stem[:2]}-{i:02d}"  # stable ids: clean diffs
    return nb


def main() -> int:
    for name in NOTEBOOKS:
        nb = build(name)
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
