"""What the four jobs of one Run:ai diagnosis share (:mod:`diagnosis.runai.procedure`): :class:`Diagnosis`, the
diagnosis in progress, with its :class:`Deadline` and the neighbours' read it may start beside Tier 2
(:class:`Nearby`, around an :class:`Anchor`).

A leaf of the jobs: the procedure imports the jobs and every job imports this module; it imports none of them,
so no import (a type-only one included) runs from a job back to the procedure.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.fetched import Fetched
from diagnosis.question import Question
from diagnosis.report import Gap
from diagnosis.runai import resolve as lookup
from diagnosis.runai.client import RunaiClient
from diagnosis.runai.models import Pod, Records, Workload
from diagnosis.runai.signals import Signal


class Deadline:
    """A hard overall deadline (seconds from creation)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self) -> float:
        return max(0.001, self.end - time.monotonic())


@dataclass(frozen=True)
class Anchor:
    """The first failure: pod ``pod`` on node ``node`` failed at ``at`` (UTC)."""

    pod: str | None
    node: str
    at: datetime


@dataclass(frozen=True)
class Nearby:
    """The read of the node's pods around ``anchor`` (``margin`` wider either side than
    :data:`diagnosis.runai.neighbours.WINDOW`)."""

    anchor: Anchor
    got: Fetched[Records[Pod]]
    margin: timedelta = timedelta()

    def covers(self, other: Anchor) -> bool:
        """Whether this read's window holds ``other``'s (the same node, its time within the margin)."""
        return self.anchor.node == other.node and abs(self.anchor.at - other.at) <= self.margin


@dataclass
class Diagnosis:
    """One Run:ai diagnosis in progress: the question, the client and Tier 2 access, the time and lookback, the
    deadline, and what the jobs found on the way (gaps, the workloads of the asked name, the projects listed).
    :func:`diagnosis.runai.procedure.run` answers it: resolve, then route, decide, phrase."""

    question: Question
    client: RunaiClient
    kube: KubeConfig
    now: datetime
    lookback: timedelta
    deadline: Deadline
    config: RunaiConfig
    gaps: list[Gap] = field(default_factory=list)
    t2_signals: list[Signal] = field(default_factory=list)  # signals of the (one) Tier 2 read
    t2_window: tuple[datetime | None, datetime | None] = (None, None)  # the run: node events outside it are ignored
    #: read the listable answers of a follow-up question (clusters, projects holding the name) to offer as choices;
    #: off, a missing identifier is asked for before any call (spec "Parameters")
    offer_choices: bool = False
    found: list[Workload] = field(default_factory=list)  # every workload of the asked name that was found
    #: the projects listed while resolving the question, of every cluster (empty when they were not needed)
    projects: list[lookup.ProjectInfo] = field(default_factory=list)
    #: the question's scope words as typed ("in X", bare words), before resolution used any of them
    scope_words: list[str] = field(default_factory=list)
    #: the projects-API item of a Pending workload's project, read beside its Tier 1 evidence
    project_items: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)
    #: count other workloads' pods failed on the first failure's node around it when the rule asks for it
    #: (:mod:`diagnosis.runai.neighbours`; a digest scan does not)
    read_neighbours: bool = True
    #: that read when it was started beside Tier 2 (:func:`diagnosis.runai.neighbours.start`), until it is settled
    nearby: asyncio.Future[Nearby] | None = None

    @property
    def cutoff(self) -> datetime:
        return self.now - self.lookback
