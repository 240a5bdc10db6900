"""Watching a workflow to its end (spec "Orchestrate a Workflow End-to-End", step 3).

The rules are pure and the state serialisable, so a surface can persist a watch (e.g. in Redis) and any
replica can carry it on; the one loop that drives them is :func:`diagnosis.watching.follow` (OSMO's polls:
:mod:`diagnosis.osmo.watcher`). Where a watch posts (a Slack channel and thread) is the surface's, not the state's:

- :class:`WatchState`: a plain pydantic model (``model_dump_json`` / ``model_validate_json``);
- :func:`next_interval`: the cadence rule — the user's cadence if given; otherwise 10–15 s
  (:data:`SHORT_INTERVAL_S`) for smoke tests and jobs expected to finish in minutes, 30 s
  (:data:`TRAINING_INTERVAL_S`) for training or data generation, backing off to 60 s
  (:data:`BACKOFF_INTERVAL_S`) after :data:`BACKOFF_AFTER` unchanged RUNNING/PENDING polls;
- :func:`observe`: one poll's status -> (new state, a :class:`StateChange` or None).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from diagnosis.osmo.models import ALIVE_STATUSES, Workflow, is_terminal

SHORT_INTERVAL_S = 15.0
TRAINING_INTERVAL_S = 30.0
BACKOFF_INTERVAL_S = 60.0
BACKOFF_AFTER = 4  # "several unchanged RUNNING or PENDING polls"
SHORT_EXEC_TIMEOUT_S = 3600.0
_SHORT_NAME = re.compile(r"(?i)smoke|hello|test|debug|quick|sanity|ping|check")

WorkKind = Literal["short", "training"]


def work_kind(workflow: Workflow) -> WorkKind:
    """``short`` for smoke tests / simple commands / jobs expected to finish in minutes (an exec
    timeout of at most an hour, or a smoke/test-like name); ``training`` otherwise."""
    if workflow.exec_timeout is not None and workflow.exec_timeout <= SHORT_EXEC_TIMEOUT_S:
        return "short"
    return "short" if _SHORT_NAME.search(workflow.name) else "training"


def next_interval(kind: WorkKind, status: str, unchanged_polls: int, user_cadence_s: float | None = None) -> float:
    """Seconds until the next poll (spec step 3). ``unchanged_polls`` counts consecutive polls that
    saw the same RUNNING/PENDING/WAITING status. A user-given cadence is always honoured."""
    if user_cadence_s is not None and user_cadence_s > 0:
        return float(user_cadence_s)
    if status in ALIVE_STATUSES and unchanged_polls >= BACKOFF_AFTER:
        return BACKOFF_INTERVAL_S
    return SHORT_INTERVAL_S if kind == "short" else TRAINING_INTERVAL_S


class StateChange(BaseModel):
    """One transition to report in the thread: ``previous`` is None for the first observation."""

    model_config = ConfigDict(extra="ignore")

    workflow_id: str
    previous: str | None
    status: str
    at: datetime
    terminal: bool

    def sentence(self) -> str:
        if self.previous is None:
            return f"Watching {self.workflow_id}: it is {self.status}."
        end = " (final)" if self.terminal else ""
        return f"{self.workflow_id}: {self.previous} -> {self.status}{end}."


class WatchState(BaseModel):
    """A watch, persistable as JSON. ``unchanged_polls`` drives the back-off; ``done`` after a
    terminal state."""

    model_config = ConfigDict(extra="ignore")

    workflow_id: str
    kind: WorkKind = "training"
    user_cadence_s: float | None = None
    status: str | None = None
    unchanged_polls: int = 0
    polls: int = 0
    started_at: datetime | None = None
    last_poll_at: datetime | None = None
    last_change_at: datetime | None = None
    done: bool = False

    def interval(self) -> float:
        return next_interval(self.kind, self.status or "PENDING", self.unchanged_polls, self.user_cadence_s)


def observe(state: WatchState, status: str, at: datetime) -> tuple[WatchState, StateChange | None]:
    """Fold one polled ``status`` into ``state`` (pure): returns the new state and the change to post."""
    new = state.model_copy()
    new.polls += 1
    new.last_poll_at = at
    new.started_at = state.started_at or at
    change: StateChange | None = None
    if status != state.status:
        change = StateChange(
            workflow_id=state.workflow_id,
            previous=state.status,
            status=status,
            at=at,
            terminal=is_terminal(status),
        )
        new.status = status
        new.unchanged_polls = 0
        new.last_change_at = at
    else:
        new.unchanged_polls += 1
    new.done = is_terminal(status)
    return new, change
