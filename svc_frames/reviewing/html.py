"""The review's HTML: a record's changes, a plan's changes table, a write-back report, the
error Apply met, and the one stylesheet they share (scoped to the widget's classes).

Values are escaped; a long value is cut with its full text on hover. Nothing here knows
ipywidgets: the widget (``widget.py``) sets these strings as its HTML controls' values.
"""

from __future__ import annotations

import html
import traceback
from typing import Any

import pandas as pd

from ..kinds import BLANK
from ..writeback.plan import NEW_ID_PREFIX

__all__ = ["CSS", "Cell", "change_cells", "changes_html", "error_html", "field_labels",
           "format_change_value", "record_html", "report_html", "short_id"]

_MAX_CELL = 160   # characters of a value shown in a cell; the full value is its tooltip
_MAX_TIP = 2000   # characters of a tooltip
_PROBLEMS = ("failed", "conflict", "unknown", "not_applied", "skipped")

# JupyterLab's CSS variables (with fallbacks for other front ends) so light and dark
# themes both read; every rule is scoped to the widget's own classes. A row sets its own
# line height: an HTML widget's is one control's height (28 px), too loose for text.
CSS = """<style>
.svcf-review{color:var(--jp-ui-font-color1,#222);font-size:var(--jp-ui-font-size1,13px);
 line-height:1.45}
.svcf-list{border:1px solid var(--jp-border-color2,#ddd);border-radius:2px}
.svcf-row{border-bottom:1px solid var(--jp-border-color2,#e4e4e4);padding:4px 4px 6px 4px}
.svcf-rec{display:flex;gap:12px;align-items:flex-start;min-width:0;line-height:1.4}
.svcf-who{flex:0 0 210px;min-width:0;overflow-wrap:anywhere}
.svcf-ident{font-weight:600;color:var(--jp-ui-font-color0,#000)}
.svcf-id{font-family:var(--jp-code-font-family,monospace);font-size:11px;
 color:var(--jp-ui-font-color2,#666)}
.svcf-act{display:inline-block;white-space:nowrap;padding:0 6px;margin-top:2px;
 border:1px solid currentColor;border-radius:8px;font-size:11px;font-weight:600}
.svcf-act-update{color:var(--jp-brand-color1,#1976d2)}
.svcf-act-create{color:var(--jp-success-color1,#388e3c)}
.svcf-act-delete{color:var(--jp-error-color1,#d32f2f)}
.svcf-fields{flex:1 1 auto;min-width:0}
.svcf-t{border-collapse:collapse;table-layout:fixed;width:100%;margin:0}
.svcf-t th,.svcf-t td{border:1px solid var(--jp-border-color2,#ddd);padding:2px 6px;
 text-align:left;vertical-align:top;overflow-wrap:anywhere;white-space:normal}
.svcf-t th{background:var(--jp-layout-color2,#f3f3f3);font-weight:600;
 color:var(--jp-ui-font-color1,#222)}
.svcf-t .svcf-fcol{width:24%}
.svcf-old{color:var(--jp-ui-font-color2,#666)}
.svcf-new{color:var(--jp-ui-font-color0,#000);font-weight:600}
.svcf-bar{color:var(--jp-ui-font-color1,#222)}
.svcf-st{display:inline-block;white-space:nowrap;padding:0 6px;border-radius:8px;
 border:1px solid currentColor;font-size:11px;font-weight:600}
.svcf-st-applied,.svcf-st-planned{color:var(--jp-success-color1,#388e3c)}
.svcf-st-failed,.svcf-st-unknown{color:var(--jp-error-color1,#d32f2f)}
.svcf-st-conflict,.svcf-st-not_applied,.svcf-st-skipped{color:var(--jp-warn-color1,#f57c00)}
.svcf-bad td{background:var(--jp-layout-color2,#fff4f4)}
.svcf-bad td:first-child{border-left:3px solid var(--jp-warn-color1,#f57c00)}
.svcf-err{color:var(--jp-error-color1,#d32f2f)}
.svcf-err pre{white-space:pre-wrap;font-size:11px;color:var(--jp-ui-font-color1,#222)}
</style>"""


def format_change_value(value: Any) -> str:
    """A change value as readable text (lists joined, NA and empty lists as ``BLANK``), in
    full."""
    if isinstance(value, (list, tuple)):
        return ", ".join(format_change_value(v) for v in value) if value else BLANK
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_change_value(v)}" for k, v in value.items())
    try:
        if pd.isna(value):
            return BLANK
    except (TypeError, ValueError):
        pass
    if isinstance(value, pd.Timestamp):
        return value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _cut(text: str, limit: int = _MAX_CELL) -> tuple[str, str]:
    """(shown, tooltip): a long text is cut with an ellipsis, its full value on hover."""
    if len(text) <= limit:
        return html.escape(text), ""
    tip = text if len(text) <= _MAX_TIP else text[: _MAX_TIP - 1] + "…"
    return html.escape(text[: limit - 1] + "…"), f" title='{html.escape(tip, quote=True)}'"


def short_id(rid: str) -> str:
    """A long record id shortened for a narrow column (``5f3a1c…9b2e``)."""
    return rid if len(rid) <= 12 else f"{rid[:6]}…{rid[-4:]}"


def field_labels(*sources: Any) -> dict[str, str]:
    """Field key -> label, from whichever of plan / frames carries a Source."""
    out: dict[str, str] = {}
    for obj in sources:
        src = getattr(obj, "source", None)
        for spec in getattr(src, "fields", None) or []:
            out.setdefault(spec.key, spec.label)
    return out


def _field_name(field: str, column: str, labels: dict[str, str]) -> str:
    if column and column != field and not column.startswith(field + "."):
        return column   # frames named by label: the column says it as they do
    name = labels.get(field, field)
    if column and column != field and column.startswith(field + "."):
        name += column[len(field):]
    return name


Cell = tuple[str, str, str, Any, Any]   # one change: action, field, column, old, new


def change_cells(changes: pd.DataFrame) -> list[Cell]:
    """The rows of ``plan.changes`` as plain tuples (one pass; no pandas per record)."""
    cols = [changes[c].tolist() for c in ("action", "field", "column", "old", "new")]
    return [(str(a), str(f or ""), str(c or ""), o, n) for a, f, c, o, n in zip(*cols,
                                                                              strict=True)]


def _record_rows(cells: list[Cell], labels: dict[str, str]) -> str:
    rows = []
    for action, field, column, old_value, new_value in cells:
        if action == "delete":
            rows.append("<tr><td>(whole record)</td><td class='svcf-old'>as loaded</td>"
                        "<td class='svcf-new'>deleted</td></tr>")
            continue
        name, name_tip = _cut(_field_name(field, column or field, labels), 60)
        old, old_tip = _cut(format_change_value(old_value))
        new, new_tip = _cut(format_change_value(new_value))
        rows.append(f"<tr><td{name_tip}>{name}</td><td class='svcf-old'{old_tip}>{old}</td>"
                    f"<td class='svcf-new'{new_tip}>{new}</td></tr>")
    return "".join(rows)


_HEAD = ("<thead><tr><th class='svcf-fcol'>field</th><th>value as loaded</th>"
         "<th>new value</th></tr></thead>")


def record_html(rid: str, identifier: str, action: str, cells: list[Cell],
                labels: dict[str, str]) -> str:
    """One record of a review: identifier, id (full on hover), action, its changes table."""
    ident, ident_tip = _cut(identifier, 80) if identifier else (f"<i>{BLANK}</i>", "")
    shown_id = "new record" if rid.startswith(NEW_ID_PREFIX) else short_id(rid)
    return (f"<div class='svcf-rec'><div class='svcf-who'>"
            f"<div class='svcf-ident'{ident_tip}>{ident}</div>"
            f"<div class='svcf-id' title='{html.escape(rid, quote=True)}'>"
            f"{html.escape(shown_id)}</div>"
            f"<span class='svcf-act svcf-act-{html.escape(action)}'>{html.escape(action)}"
            f"</span></div><div class='svcf-fields'><table class='svcf-t'>{_HEAD}<tbody>"
            f"{_record_rows(cells, labels)}</tbody></table></div></div>")


def changes_html(changes: pd.DataFrame, labels: dict[str, str] | None = None) -> str:
    """The plan's changes as one HTML table: a header row per record, then field, value
    as loaded and new value.

    Parameters
    ----------
    changes : pandas.DataFrame
        ``plan.changes``.
    labels : dict, optional
        Field key -> label for the field column.

    Returns
    -------
    str
        HTML (values escaped).

    Examples
    --------
    >>> IPython.display.HTML(changes_html(plan.changes, {"field_3": "Status"}))  # doctest: +SKIP
    """
    labels = labels or {}
    body = []
    for rid, group in changes.groupby("record_id", sort=False):
        first = group.iloc[0]
        body.append(f"<tr><th colspan='3'>{html.escape(str(rid))} · "
                    f"{html.escape(str(first['action']))}</th></tr>")
        body.append(_record_rows(change_cells(group), labels))
    return (CSS + "<table class='svcf-t'>" + _HEAD + "<tbody>" + "".join(body)
            + "</tbody></table>")


def report_html(report: Any, identifiers: dict[str, str] | None = None) -> str:
    """A write-back Report as HTML: counts per status and requests, then the records that
    did not go through (failed, conflict, unknown, not applied, skipped) with their reason.

    Parameters
    ----------
    report : svc_frames.writeback.Report
        What ``write_back`` returned.
    identifiers : dict, optional
        Record id -> identifier text, shown beside each id.

    Returns
    -------
    str
        HTML (values escaped); the whole table is ``report.table``.

    Examples
    --------
    >>> IPython.display.HTML(report_html(write_back(client, edited)))  # doctest: +SKIP
    """
    identifiers = identifiers or {}
    table: pd.DataFrame = report.table
    counts = table["status"].value_counts() if len(table) else pd.Series(dtype=int)
    badges = " ".join(f"<span class='svcf-st svcf-st-{html.escape(str(s))}'>{int(n)} "
                      f"{html.escape(str(s).replace('_', ' '))}</span>"
                      for s, n in counts.items()) or "nothing sent"
    sent = sum(getattr(report, "requests", {}).values())
    head = (f"<p><b>Report{' (dry run)' if getattr(report, 'dry_run', False) else ''}:"
            f"</b> {badges} · {sent} request{'s' if sent != 1 else ''}</p>")
    bad = table[table["status"].isin(_PROBLEMS)]
    if not len(bad):
        return CSS + head
    rows = []
    for row in bad.head(500).itertuples(index=False):
        rid = str(row.record_id)
        ident = identifiers.get(rid, "")
        who = (f"{html.escape(ident)} " if ident else "") + \
            f"<span class='svcf-id' title='{html.escape(rid, quote=True)}'>" \
            f"{html.escape(short_id(rid))}</span>"
        reason, tip = _cut(str(row.message or ""), 400)
        rows.append(f"<tr class='svcf-bad'><td>{who}</td><td>{html.escape(str(row.action))}"
                    f"</td><td><span class='svcf-st svcf-st-{html.escape(str(row.status))}'>"
                    f"{html.escape(str(row.status).replace('_', ' '))}</span></td>"
                    f"<td{tip}>{reason}</td></tr>")
    more = f"<p>… and {len(bad) - 500} more in report.table</p>" if len(bad) > 500 else ""
    return (CSS + head + "<table class='svcf-t'><thead><tr><th>record</th>"
            "<th style='width:70px'>action</th><th style='width:100px'>status</th>"
            "<th>reason</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>" + more)



def error_html(error: BaseException) -> str:
    """What Apply shows when the run raised: the exception's type and message, and its
    traceback folded away."""
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return (CSS + f"<div class='svcf-err'><b>Not applied:</b> "
            f"{html.escape(type(error).__name__)}: {html.escape(str(error))}"
            "<details><summary>traceback (<code>box.reraise()</code> raises it)"
            f"</summary><pre>{html.escape(trace)}</pre></details></div>")
