"""OSMO's side of the one watch loop (:mod:`diagnosis.watching`): a workflow polled by id through one
:class:`~diagnosis.osmo.client.OsmoClient` opened for the whole watch; its status and, for the cadence, the kind of
work it is (:func:`diagnosis.osmo.watch.work_kind`). A workflow OSMO does not know ends the watch
(:class:`~diagnosis.watching.TargetGone`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from diagnosis.config import OsmoConfig
from diagnosis.osmo.client import OsmoClient, WorkflowNotFound
from diagnosis.osmo.watch import work_kind
from diagnosis.watching import Poll, Polled, TargetGone


@contextlib.asynccontextmanager
async def polling(config: OsmoConfig) -> AsyncIterator[Poll]:
    """A :data:`~diagnosis.watching.Poll` of OSMO workflows (``GET /api/workflow/{id}``), its client closed at the
    end. Raises :class:`~diagnosis.watching.TargetGone` for a workflow OSMO does not know; other errors of the
    client propagate (a failed poll)."""
    async with OsmoClient(config) as client:

        async def poll(workflow_id: str) -> Polled:
            try:
                workflow = await client.get_workflow(workflow_id)
            except WorkflowNotFound as exc:
                raise TargetGone(workflow_id) from exc
            return Polled(workflow.status, work_kind(workflow))

        yield poll
