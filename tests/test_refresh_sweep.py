"""The refresh's periodic sweep over real HTTP: a change by a writer that does not stamp
(another integration writing through the API) is not in the stamp window, and the Nth
refresh, which lists everything, finds it; a bad ``sweep_every`` sends nothing."""

from __future__ import annotations

from typing import Any

import pytest

from svc_frames.errors import UsageError
from svc_frames.loaders import read_object
from svc_frames.refreshing.policy import refresh
from svc_frames.server import LocalService
from svc_frames.testing import client_for

OBJ = "object_3"


def test_an_unstamped_change_is_found_by_the_periodic_sweep() -> None:
    with LocalService(demo=True, records=25, rate_limit=0, seed=11) as svc:
        client = client_for(svc)
        frames = read_object(client, OBJ, progress=False, columns="keys")
        rid = str(frames.main.index[3])
        # another integration: an object API write runs no record rule, so no stamp
        client.update_record(OBJ, rid, {"field_12": "changed without a stamp"})
        missed = [refresh(client, frames, sweep_every=3) for _ in range(2)]
        for report in missed:
            assert rid not in report.changed and not report.swept and not report.full
        assert frames.main.at[rid, "field_12"] != "changed without a stamp"
        swept = refresh(client, frames, sweep_every=3)
        assert swept.swept and swept.full and "sweep" in swept.reason
        assert swept.changed == [rid]
        assert frames.main.at[rid, "field_12"] == "changed without a stamp"
        after = refresh(client, frames, sweep_every=3)    # the count goes on: no sweep
        assert not after.swept


def test_sweep_every_zero_never_sweeps() -> None:
    with LocalService(demo=True, records=10, rate_limit=0, seed=12) as svc:
        client = client_for(svc)
        frames = read_object(client, OBJ, progress=False, columns="keys")
        assert not any(refresh(client, frames, sweep_every=0).swept for _ in range(3))


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True, None])
def test_bad_sweep_every_sends_nothing(fresh_service: LocalService, bad: Any) -> None:
    client = client_for(fresh_service)
    frames = read_object(client, OBJ, progress=False, columns="keys")
    fresh_service.request_log.clear()
    with pytest.raises(UsageError, match="sweep_every") as err:
        refresh(client, frames, sweep_every=bad)
    assert err.value.field == "sweep_every"
    assert fresh_service.request_log.count() == 0
