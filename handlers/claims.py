"""The claim of one Slack event (issue 15 §2, §3): answered at least once, never twice by two live replicas.

A delivery claims ``evt:<event_id>`` with a lease (:meth:`ClaimStore.claim_event`, one script that also returns
the lease's fencing token) before its work; the lease is then held by the one lease holder of claimed work
(:class:`diagnosis.lease.Lease`: renewed every third of its lease while the answer is worked on, a lost signal)
and the event is marked done at the end (a fenced write, so a replica that stalled past its lease cannot mark its
successor's work). A redelivery finds:

* the event done: a duplicate, dropped;
* the lease held: another replica is answering it, dropped;
* the lease expired unanswered (its replica died mid-answer): claimed again and answered; the stale
  "Diagnosing…" message the dead replica posted (recorded in the event's state) is updated in place
  (:class:`handlers.slack_surface.SlackSurface` asks :meth:`EventClaim.take_stale`).

A question acked is a question answered (issue 24): Slack never redelivers an event it got an ack for, and a slash
command is never redelivered at all, so the first claim keeps the request itself in Redis (in the claim's one
script, on the ack path) until it is answered. Events and slash commands (``cmd:<trigger_id>``) are claimed alike.
Every replica, when it starts and then every third of a lease, takes over the questions whose holder died
(:class:`Orphans`): it dispatches the kept request through the app again, where the claim decides as for any
delivery (one replica wins; the answered record is fenced), and the dead holder's "Diagnosing…" is updated in place.

The ack waits for the claim only ``budget`` seconds (:meth:`EventClaim.begin`): when Redis is slower the event is
answered anyway (logged, counted in ``workload_doctor_dedup_fallbacks``) and the claim's answer is awaited after
the ack, before the work (:meth:`EventClaim.confirm`): a duplicate is caught once Redis answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from diagnosis import metrics
from diagnosis.cancelling import checkpoint
from diagnosis.lease import Lease, LeaseStore, new_owner

log = logging.getLogger(__name__)
Verdict = Literal["answer", "duplicate", "pending"]
#: the Slack message metadata ``event_type`` of a claimed delivery's first message ("Diagnosing…"), its
#: ``event_payload.key`` the event's claim name: how a successor finds a message its dead holder never recorded
PROGRESS_TAG = "wd_progress"


@dataclass(frozen=True)
class EventClaimed:
    """What :meth:`ClaimStore.claim_event` found: ``token`` > 0 the event is ours (fencing token), 0 another replica
    holds it, -1 it was answered; ``state`` what the previous holder recorded (its progress message);
    ``shared`` False when the store was unavailable and the claim was made in process memory only."""

    token: int
    state: dict[str, Any] = field(default_factory=dict)
    shared: bool = True


class ClaimStore(LeaseStore, Protocol):
    """What the claims need of the bot's state (:class:`bot.state.Store`): the claim with the kept request, the
    event's fenced state, the questions not yet answered."""

    async def claim_event(
        self, event_id: str, owner: str, ttl: float, body: dict[str, Any] | None = None
    ) -> EventClaimed: ...

    async def note_event(self, event_id: str, owner: str, token: int, state: dict[str, Any]) -> bool: ...

    async def forget_question(self, event_id: str) -> None: ...

    async def orphaned_questions(self, limit: int = 20) -> list[dict[str, Any]]: ...


class EventClaim:
    def __init__(self, store: ClaimStore, event_id: str, lease: float, body: dict[str, Any] | None = None) -> None:
        self.store = store
        self.event_id = event_id
        self.lease = lease
        self.body = body  # kept with the first claim, for a takeover
        # one owner per delivery, not per replica: a retry reaching the replica that is still answering the
        # first delivery must find the lease held, not renew it
        self.owner = new_owner()
        self.token = 0
        self._claiming: asyncio.Task[EventClaimed] | None = None
        self._stale: dict[str, Any] | None = None
        self._noted = False
        self._holding: Lease | None = None
        #: whether this delivery answers the event, once the claim is settled (None: not yet)
        self._ours: bool | None = None
        #: the claim was held by another holder (alive, or dead with its lease not yet expired)
        self.held_elsewhere = False

    async def begin(self, budget: float) -> Verdict:
        """Claim the event, waiting ``budget`` seconds at most: ``answer`` (ours), ``duplicate``, or
        ``pending`` (Redis is slow: answer it, :meth:`confirm` decides after the ack)."""
        self._claiming = asyncio.get_running_loop().create_task(
            self.store.claim_event(self.event_id, self.owner, self.lease, self.body), name=f"claim-{self.event_id}"
        )
        done, _ = await asyncio.wait({self._claiming}, timeout=budget)
        if not done:
            metrics.DEDUP_FALLBACKS.labels("slow").inc()
            log.warning(
                "event %s: Redis did not answer the claim within %.2f s; acking and answering it, the claim "
                "decides after the ack",
                self.event_id,
                budget,
            )
            return "pending"
        self._ours = self._settle(self._claiming.result())
        return "answer" if self._ours else "duplicate"

    async def confirm(self) -> bool:
        """After the ack: True when this delivery is the one to answer (awaits a claim still in flight)."""
        if self._claiming is None:
            return True
        if self._ours is None:
            # the claim was pending at the ack: settle it now, whether Redis answered since or is still to answer
            # (a claim that finished meanwhile was once read as "not ours": its answer was dropped silently)
            try:
                claimed = await self._claiming
            except Exception:
                log.exception("event %s: claim failed; answering it", self.event_id)
                return True
            self._ours = self._settle(claimed)
            if not self._ours:
                log.info("event %s: a duplicate, caught by the claim after the ack", self.event_id)
        return self._ours

    def _settle(self, claimed: EventClaimed) -> bool:
        if not claimed.shared:
            metrics.DEDUP_FALLBACKS.labels("unavailable").inc()
            log.warning("event %s: Redis unavailable, claimed in process memory only", self.event_id)
        if claimed.token == -1:
            metrics.EVENT_CLAIMS.labels("duplicate").inc()
            log.info("duplicate event %s ignored (answered)", self.event_id)
            return False
        if claimed.token == 0:
            self.held_elsewhere = True  # a queued job tries again later (handlers.shedding.Delivery)
            metrics.EVENT_CLAIMS.labels("held").inc()
            log.info("duplicate event %s ignored (another delivery is answering it)", self.event_id)
            return False
        self.token = claimed.token
        if claimed.state.get("ts") or claimed.state.get("posting"):
            # a redelivery after its holder died: update the holder's "Diagnosing…" message in place (a holder that
            # died while posting it left no ts: the message is looked for by its tag, :meth:`take_stale`)
            self._stale = dict(claimed.state)
            metrics.EVENT_CLAIMS.labels("takeover").inc()
            log.warning("event %s: its previous holder died mid-answer; answering it again", self.event_id)
        else:
            metrics.EVENT_CLAIMS.labels("new" if claimed.shared else "memory").inc()
        return True

    # -- while the answer is worked on ------------------------------------------------------------

    @property
    def noted(self) -> bool:
        """This delivery's first message is recorded (or named by the state it took over)."""
        return self._noted

    def take_stale(self, channel: str) -> dict[str, Any] | None:
        """The dead holder's first message in ``channel`` (``ts``, ``thread``), once: the caller updates it
        instead of posting a new one. Without ``ts`` (``posting``: the holder died while posting it, before it
        could record it) the caller looks for the message by its tag (:data:`PROGRESS_TAG` and this event)."""
        stale, self._stale = self._stale, None
        if stale is None or stale.get("channel") != channel:
            return None
        self._noted = bool(stale.get("ts"))  # the state already names this message
        return stale

    async def posting(self, channel: str, thread: str | None) -> None:
        """Record, before this delivery's first message is posted, that it is being posted (where): a successor of
        a holder that died before :meth:`posted` looks for it by its tag instead of posting a second one."""
        if self._noted or self.token <= 0:
            return
        state = {"done": False, "channel": channel, "thread": thread, "posting": True}
        if not await self.store.note_event(self.event_id, self.owner, self.token, state):
            log.warning("event %s: could not record that its progress message is being posted", self.event_id)

    async def posted(self, channel: str, ts: str, thread: str | None) -> None:
        """Record this delivery's first posted message (its "Diagnosing…" message), for a successor."""
        if self._noted or self.token <= 0:
            return
        self._noted = True
        state = {"done": False, "channel": channel, "ts": ts, "thread": thread}
        if not await self.store.note_event(self.event_id, self.owner, self.token, state):
            log.warning("event %s: could not record its progress message", self.event_id)

    def start_renewing(self) -> None:
        """Hold the claim's lease while the answer is worked on (:class:`diagnosis.lease.Lease`, adopted with the
        claim's token): stalled past it, a redelivery may be answered by another replica."""
        if self._holding is None and self.token > 0:
            self._holding = Lease(self.store, f"evt:{self.event_id}", self.lease, owner=self.owner, token=self.token)
            self._holding.start()

    async def finish(self, answered: bool) -> None:
        """Stop renewing; mark the event done (``answered``) or give the claim up (cancelled at shutdown:
        a redelivery is answered by another replica at once)."""
        if self.token <= 0:
            return
        holding = self._holding or Lease(
            self.store, f"evt:{self.event_id}", self.lease, owner=self.owner, token=self.token
        )
        await holding.stop_renewing()
        if answered:
            noted = await self.store.note_event(self.event_id, self.owner, self.token, {"done": True})
            if not noted:
                # the lease lapsed while the answer was worked on (a stalled loop): when nobody took it meanwhile,
                # take it again and record the answer, so a redelivery is not answered a second time
                again = Lease(self.store, f"evt:{self.event_id}", self.lease, owner=self.owner)
                if await again.acquire() and again.token > 0:
                    holding, self.token = again, again.token
                    noted = await self.store.note_event(self.event_id, self.owner, self.token, {"done": True})
                    log.warning(
                        "event %s: its claim had lapsed while answering; recorded answered again", self.event_id
                    )
            if noted:
                await self.store.forget_question(self.event_id)
        await holding.release()


class Orphans:
    """Takes over the questions acked by a replica that died before answering them (see the module): at start and
    every ``every`` seconds, each kept request no live claim holds is dispatched again (``dispatch(body)``)."""

    def __init__(self, store: ClaimStore, dispatch: Callable[[dict[str, Any]], Awaitable[Any]], every: float) -> None:
        self.store = store
        self.dispatch = dispatch
        self.every = max(0.2, every)

    async def sweep(self) -> int:
        """Dispatch the orphaned questions once; how many."""
        taken = 0
        for body in await self.store.orphaned_questions():
            metrics.EVENT_CLAIMS.labels("orphan").inc()
            log.warning("taking over a question acked by a replica that died: %s", _what(body))
            try:
                await self.dispatch(body)
            except Exception:
                log.exception("could not take over the question %s", _what(body))
            taken += 1
        return taken

    async def sweep_forever(self) -> None:
        while True:
            checkpoint()
            try:
                await self.sweep()
            except Exception:
                log.exception("question sweep failed")
            await asyncio.sleep(self.every)


def _what(body: dict[str, Any]) -> str:
    if body.get("command"):
        return f"{body.get('command')} by {body.get('user_id')}"
    event = body.get("event") or {}
    return f"{event.get('type')} {body.get('event_id')}"
