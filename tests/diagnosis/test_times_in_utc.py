"""Every time the product shows is UTC and says so: a time the API gives with another offset is converted, never
shown as it was written beside "UTC" (issue 19 review)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from diagnosis.render import render_text
from diagnosis.units import parse_time
from tests import builders as b
from tests.conftest import Diagnose


def test_an_offset_is_converted_to_utc() -> None:
    assert parse_time("2026-11-28T12:59:00+02:00") == datetime(2026, 11, 28, 10, 59, tzinfo=UTC)
    assert parse_time("2026-11-28T12:59:00+02:00").utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert parse_time(datetime.fromisoformat("2026-11-28T05:00:00-05:00")) == datetime(2026, 11, 28, 10, tzinfo=UTC)
    assert parse_time("2026-11-28 10:59:00") == datetime(2026, 11, 28, 10, 59, tzinfo=UTC)  # naive: UTC


@pytest.mark.asyncio
async def test_a_report_shows_an_offset_time_in_utc(diagnose: Diagnose) -> None:
    at = datetime.fromisoformat(b.ago(minutes=61).replace("Z", "+00:00"))
    shifted = at.astimezone(datetime.fromisoformat("2000-01-01T00:00:00+02:00").tzinfo).isoformat()
    history = [
        b.phase_update("Creating", b.ago(hours=3)),
        b.phase_update("Running", b.ago(minutes=170)),
        b.event("OOMKilling", "Memory cgroup out of memory: Killed process 4242 (python)", shifted),
        b.phase_update("Failed", b.ago(hours=1), "Workload failed"),
    ]
    report, _ = await diagnose(b.snapshot(b.entry(b.workload(), history=history)))
    text = render_text(report)
    assert f"{at:%Y-%m-%d %H:%M:%S} UTC" in text
    assert f"{at.astimezone(datetime.fromisoformat(shifted).tzinfo):%H:%M:%S} UTC" not in text
