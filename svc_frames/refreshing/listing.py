"""The load's listing asked again: its target and column names, and its records decoded
as the load decoded them. Shared by the refresh's phases; its filters are the load's own
query (``source.query``, with ``Query.also`` for extra rules).

Usage: ``decode(records, source)``; ``list_ids(client, source, source.load, 1000)``
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from ..frames import Frames, Source, build_frames
from ..keys import Target
from ..kinds import codec_for
from ..labels import label_map, relabel
from ..read.options import LoadOptions
from ..read.pager import Paginator
from ..read.pipeline import PagePipeline
from ..records import Client

OVERLAP_DAYS = 2
"""When the stamps must be asked for by date (blank stamps sorted first): ``is after`` the
date this many days before the cutoff's, which matches from the day before it on (filter
dates are whole days, docs/hosted-behaviour.md §1.4: a day of slack for timezones)."""


def target_of(source: Source) -> Target:
    if source.kind == "view":
        assert source.scene_key is not None and source.view_key is not None
        return (source.scene_key, source.view_key)
    return source.object_key


def column_maps(source: Source) -> tuple[dict[str, str], dict[str, str]]:
    """(main column -> field key, field key -> its bare column or table name) of a source,
    in keys or labels mode."""
    names = label_map(source.fields)
    labels = source.columns == "labels"
    col_field: dict[str, str] = {}
    bare: dict[str, str] = {}
    for f in source.fields:
        for col in codec_for(f).columns(f):
            col_field[relabel(col, names) if labels else col] = f.key
        bare[f.key] = relabel(f.key, names) if labels else f.key
    return col_field, bare


def target_name(source: Source) -> str:
    """The key of the source's object, or its scene/view, as messages name it."""
    return (f"{source.scene_key}/{source.view_key}" if source.kind == "view"
            else source.object_key)


def decode(records: Sequence[Any], source: Source, *, raw: bool = False) -> Frames:
    """Records (dicts, or ``format=raw`` structs with ``raw``) -> frames of the source."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    return build_frames(list(records), source.fields, source, tz=tz, keep_original=False,
                        raw_format=raw)


def list_all(client: Client, source: Source, load: Mapping[str, Any], rpp: int) -> Frames:
    """Every record of the load's listing (its query and sort), consistent, decoded as
    the load decoded them: the pipeline's ``format=raw`` pages, with display values where
    a raw value needs them."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    pager = Paginator(client, target_of(source), LoadOptions.of(
        rows_per_page=rpp, filters=source.query, sort_field=load.get("sort_field"),
        sort_order=load.get("sort_order"), verify="first"), keyset=True)
    pipe = PagePipeline(pager, source.fields, source, tz)
    pipe.settle(None)
    return pipe.collect()


def list_ids(client: Client, source: Source, load: Mapping[str, Any], rpp: int
             ) -> pd.Index:
    """The ids of every record of the load's listing: pages asked for with ``format=raw``
    and parsed for their ids alone (the cheapest listing the service offers: it has no
    field selection, so each page still carries whole records)."""
    pager = Paginator(client, target_of(source), LoadOptions.of(
        rows_per_page=rpp, filters=source.query, sort_field=load.get("sort_field"),
        sort_order=load.get("sort_order"), verify="first"))
    pager.ask_raw([])
    for _page in pager.iter_pages():
        pass
    ids: pd.Index = pd.Index(np.asarray(pager.final_ids or [], dtype=object))
    return ids
