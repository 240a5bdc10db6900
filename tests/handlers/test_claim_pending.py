"""An event claim that Redis answered after the ack's budget (handlers.claims.EventClaim, "pending"): the delivery
answers when the claim came back ours, whether it came back before ``confirm()`` or while it waits (found by the
scale bench's SIGKILL burst: a claim settled in between was read as not ours and its answer dropped)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handlers.claims import EventClaim, EventClaimed


class SlowStore:
    """A claim store answering ``claim_event`` after ``delay`` seconds with ``token``."""

    down = False

    def __init__(self, delay: float, token: int) -> None:
        self.delay = delay
        self.token = token

    async def claim_event(self, event_id: str, owner: str, ttl: float, body: Any = None) -> EventClaimed:
        await asyncio.sleep(self.delay)
        return EventClaimed(self.token, {})


@pytest.mark.parametrize("settled_before_confirm", [True, False])
@pytest.mark.parametrize(("token", "ours"), [(7, True), (0, False), (-1, False)])
async def test_a_pending_claim_is_settled_by_confirm(settled_before_confirm: bool, token: int, ours: bool) -> None:
    claim = EventClaim(SlowStore(0.2, token), "Ev1", lease=30)  # type: ignore[arg-type]
    assert await claim.begin(budget=0.01) == "pending"
    if settled_before_confirm:
        await asyncio.sleep(0.4)  # Redis answered after the ack, before the work asked
    assert await claim.confirm() is ours
    assert claim.token == (token if ours else 0)
    assert claim.held_elsewhere is (token == 0)


async def test_a_claim_settled_within_the_budget_is_not_asked_again() -> None:
    claim = EventClaim(SlowStore(0.0, 3), "Ev2", lease=30)  # type: ignore[arg-type]
    assert await claim.begin(budget=1.0) == "answer"
    assert await claim.confirm() is True and claim.token == 3
