"""The one lease holder of claimed work (issue 25): a watch's polling, a digest slot, a Slack event's answer.

A lease ``name`` in the shared state is held by one owner at a time for ``ttl`` seconds and carries a fencing
token, new for every fresh holder (:meth:`LeaseStore.lease`). :class:`Lease` wraps one holding:

- ``async with Lease(store, name, ttl) as lease:`` takes it (``lease.held`` says whether it did), renews it with
  one task every third of ``ttl`` while the block runs, and gives it up at the end (unless it was lost);
- :attr:`Lease.lost` is set the moment a renewal or a fenced write finds another holder (this holder stalled past
  its lease): the work must stop, its successor owns the state;
- :meth:`Lease.put` writes shared state only while this holder still holds the lease with its token (atomically,
  in the store), so a stalled holder can never overwrite what its successor wrote;
- a holding that began elsewhere (an event claim takes its lease and its token in one script) is adopted with
  ``Lease(..., token=...)`` and renewed the same way.

When the store is unavailable (``store.lease`` answers None) a holder with ``shared_only=False`` goes on from
process memory (a watch, an event's answer: better answered than lost); with ``shared_only=True`` it holds nothing
(a digest slot: a late digest beats a duplicate one) and an outage during the work counts as lost.

Nearly a leaf of the core (it imports only :mod:`diagnosis.cancelling`); the store is :class:`bot.state.Store`
(or a fake).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from types import TracebackType
from typing import Any, Protocol

from diagnosis.cancelling import checkpoint

log = logging.getLogger(__name__)


def new_owner() -> str:
    """An owner id unique to one holder (host, process, random): two holdings in one process never share one."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(5)}"


class LeaseStore(Protocol):
    """What a lease needs of the shared state (:class:`bot.state.Store`). ``down`` is True after a call failed
    because the store is away."""

    down: bool

    async def lease(self, name: str, owner: str, ttl: float) -> int | None:
        """Take or renew ``name`` for ``ttl`` seconds: the fencing token (> 0), 0 when another owner holds it,
        None when the store is unavailable."""
        ...

    async def release(self, name: str, owner: str) -> None: ...

    async def fenced_put(
        self, lease: str, owner: str, token: int, parts: tuple[str, ...], value: Any, ttl: int
    ) -> bool: ...


class Lease:
    """One holding of the lease ``name`` (see the module). ``ttl`` is in seconds and may be changed while held
    (a watch's lease covers its next interval): the next renewal uses the new value."""

    def __init__(
        self,
        store: LeaseStore,
        name: str,
        ttl: float,
        *,
        owner: str | None = None,
        token: int = 0,
        shared_only: bool = False,
    ) -> None:
        self.store = store
        self.name = name
        self.ttl = ttl
        self.owner = owner or new_owner()
        #: the fencing token while held (> 0); 0 before, or when held from process memory only
        self.token = token
        self.shared_only = shared_only
        #: held from process memory only: the store was away when it was taken
        self.local = False
        #: set when another holder took the lease over (this one stalled past it): stop the work
        self.lost = asyncio.Event()
        self._held = token > 0
        self._renewer: asyncio.Task[None] | None = None

    @property
    def held(self) -> bool:
        """Taken (shared, or from memory) and not lost."""
        return self._held and not self.lost.is_set()

    async def acquire(self) -> bool:
        """Take the lease (or renew it, when this owner holds it already); whether it is held now."""
        token = await self.store.lease(self.name, self.owner, self.ttl)
        if token is None:
            self.local = not self.shared_only
            self._held = self.local
            if self.local:
                log.warning("lease %s: the state store is away; held from process memory only", self.name)
            return self._held
        self.local = False
        self._held = token > 0
        if self._held:
            self.token = token
        return self._held

    async def renew(self) -> bool:
        """Renew now (a renewal is also done every third of ``ttl`` by :meth:`start`); False once lost."""
        if self.lost.is_set():
            return False
        token = await self.store.lease(self.name, self.owner, self.ttl)
        if token is None:
            if self.shared_only:
                self._lose("the state store is away")
            return not self.shared_only
        if self.local and token > 0:
            self.local, self.token = False, token  # the store is back: the holding is shared again
            return True
        if token != self.token:
            self._lose("another holder has it")
            return False
        return True

    def start(self) -> None:
        """Renew in the background every third of ``ttl`` until :meth:`release` (or the lease is lost)."""
        if self._renewer is None and self._held:
            self._renewer = asyncio.get_running_loop().create_task(self._renew_forever(), name=f"lease-{self.name}")

    async def _renew_forever(self) -> None:
        while not self.lost.is_set():
            checkpoint()
            await asyncio.sleep(max(0.05, self.ttl / 3))
            try:
                await self.renew()
            except Exception:  # a renewal that failed is retried at the next third; it never ends the work
                log.exception("lease %s: renewal failed", self.name)

    async def put(self, parts: tuple[str, ...], value: Any, ttl: int) -> bool:
        """Write ``value`` (JSON) at ``parts`` for ``ttl`` seconds only while this holder holds the lease with its
        token. False when it was not written: the lease moved on (then :attr:`lost` is set) or the store is away."""
        if not self.held:
            return False
        ok = await self.store.fenced_put(self.name, self.owner, self.token, parts, value, ttl)
        if not ok and not self.store.down and not self.local:
            self._lose("a fenced write was refused")
        return ok

    def _lose(self, why: str) -> None:
        if not self.lost.is_set():
            log.warning("lease %s lost (%s): its work stops, the new holder carries on", self.name, why)
        self.lost.set()

    async def stop_renewing(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
            self._renewer = None

    async def release(self) -> None:
        """Stop renewing and give the lease up (nothing to give up once lost: it is someone else's)."""
        await self.stop_renewing()
        if self._held and not self.lost.is_set():
            await self.store.release(self.name, self.owner)
        self._held = False

    async def __aenter__(self) -> Lease:
        if self._held or await self.acquire():
            self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.release()
