"""Excel workbooks of saved frames (``export(..., format="xlsx")``), and back.

Excel holds no time zone (pandas' ``to_excel`` refuses tz-aware datetimes), so the records
are written as the application's users see them: dates as the application's wall time (the
timezone recorded in the metadata), numbers as numbers, the rest as the CSV export shows it
(durations ``H:MM:SS``, multi choices ``A, B``, yes/no in the field's words), every text cell
a text (one starting with ``=`` is no formula). Read back (:func:`read_texts`), each cell is
the text the CSV path reads (``csvtext.read_cells``): a date without offset is the
application's time, ``78742`` or ``78742.0`` the loaded zip, so a workbook edited in Excel
or through ``pd.read_excel``/``to_excel`` plans exactly the edits.

Usage::

    write_xlsx(frame, Path("orders/part-00001.xlsx"), fields)
    names, texts = read_texts(Path("orders/part-00001.xlsx"))
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import UsageError
from ..kinds.base import FieldSpec
from .csvtext import duration_text, format_column

SHEET = "records"
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")   # what a workbook cannot hold


def check_openpyxl() -> None:
    """UsageError, before any request, when openpyxl (the xlsx reader and writer) is
    not installed."""
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        raise UsageError("format='xlsx' needs openpyxl: pip install 'svc_frames[excel]' "
                         "(or export as csv or parquet)") from None


def _cells(values: pd.Series, field: FieldSpec | None, name: str,
           ids: list[str]) -> list[Any]:
    """One column as workbook cells: wall times, numbers, or the CSV export's text."""
    dtype = values.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        wall = values.dt.tz_localize(None)   # the column is in the application's zone
        return [None if pd.isna(v) else pd.Timestamp(v).to_pydatetime() for v in wall]
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return [None if pd.isna(v) else pd.Timestamp(v).to_pydatetime() for v in values]
    if pd.api.types.is_timedelta64_dtype(dtype):
        return [None if pd.isna(v) else duration_text(v) for v in values]
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        out: list[Any] = []
        for v in values:
            if pd.isna(v):
                out.append(None)
            elif pd.api.types.is_integer_dtype(dtype):
                out.append(int(v))
            else:
                out.append(float(v))
        return out
    texts = format_column(values, field)
    for row, text in enumerate(texts):
        if _ILLEGAL.search(text):
            raise UsageError(f"column {name!r}, record {ids[row]!r}: {text!r:.60} holds a "
                             "control character a workbook cannot hold: export this object "
                             "as csv or parquet", field=name)
    return [t if t != "" else None for t in texts]


def write_xlsx(df: pd.DataFrame, path: Path, fields: Mapping[str, FieldSpec]) -> None:
    """One workbook (sheet ``records``; a table's rows for a table) of ``df``'s columns
    (the index, when named, first)."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    frame = df.reset_index() if df.index.name else df
    ids = (frame["id"].astype(str).tolist() if "id" in frame.columns
           else frame.iloc[:, 0].astype(str).tolist() if len(frame.columns) else [])
    columns = [(str(c), _cells(frame[c], fields.get(str(c)), str(c), ids))
               for c in frame.columns]
    book = Workbook(write_only=True)
    sheet = book.create_sheet(SHEET)
    sheet.append([name for name, _ in columns])
    for row in range(len(frame)):
        cells = []
        for _, values in columns:
            v = values[row]
            cell = WriteOnlyCell(sheet, value=v)
            if isinstance(v, str):
                cell.data_type = "s"    # text, never a formula
            elif isinstance(v, dt.datetime):
                cell.number_format = "yyyy-mm-dd hh:mm:ss"
            cells.append(cell)
        sheet.append(cells)
    book.save(path)


def _text(v: Any, duration: bool = False) -> str:
    """A workbook cell as the text the CSV path reads (``duration``: of a duration
    column, where a number is days, as Excel and pandas' ``to_excel`` write one)."""
    if v is None:
        return ""
    if duration and isinstance(v, (int, float)) and not isinstance(v, bool):
        return duration_text(pd.Timedelta(days=v).round("ms"))
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, dt.datetime):
        return v.isoformat()          # no offset: the application's time
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return duration_text(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return str(v)


def read_texts(path: Path, dtypes: Mapping[str, str] | None = None
               ) -> tuple[list[str], dict[str, list[str]]]:
    """The first sheet of a workbook: its header and each column's cells as text. A
    formula is its value as Excel last computed it, or, in a workbook no spreadsheet
    computed (openpyxl or pandas wrote ``=...`` text), the text itself; a number in a
    column ``dtypes`` says is a duration is days (Excel's way); UsageError
    naming the file when it is no readable workbook or a header repeats."""
    from openpyxl import load_workbook

    try:
        book = load_workbook(path, read_only=True, data_only=False)
        rows = [list(r) for r in book.worksheets[0].iter_rows(values_only=True)]
        book.close()
        formulas = [(i, j) for i, r in enumerate(rows) for j, v in enumerate(r)
                    if isinstance(v, str) and v.startswith("=")]
        if formulas:
            book = load_workbook(path, read_only=True, data_only=True)
            values = [list(r) for r in book.worksheets[0].iter_rows(values_only=True)]
            book.close()
            for i, j in formulas:
                if values[i][j] is not None:
                    rows[i][j] = values[i][j]
    except Exception as exc:   # openpyxl raises many types for a damaged file
        raise UsageError(f"{path}: not a readable xlsx workbook ({exc})") from None
    if not rows:
        raise UsageError(f"{path}: the workbook's first sheet is empty (no header row)")
    header = ["" if v is None else str(v) for v in rows[0]]
    while header and header[-1] == "":
        header.pop()
    body = [r for r in rows[1:] if any(v is not None and v != "" for v in r)]
    texts: dict[str, list[str]] = {}
    for j, name in enumerate(header):
        if name in texts:
            raise UsageError(f"{path}: column {name!r} appears twice", field=name)
        days = str((dtypes or {}).get(name, "")).startswith("timedelta")
        texts[name] = [_text(r[j], days) if j < len(r) else "" for r in body]
    return header, texts
