"""What an asker may see of a report (issue 19 §2): a report is built once and shared (the cache, the diagnoses in
flight), so what it says of *other* workloads (a diagnosis's neighbours on the node) is cut for each asker here,
before anything is rendered: named only in projects the access policy lets the asker diagnose, the others only
counted. Without a policy (the CLI, a bot with no policy file) every project is visible."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Iterable
from typing import Any

from diagnosis.report import Choice, Outcome, Report
from handlers.protocols import AccessPolicy

log = logging.getLogger(__name__)


def seen_by(policy: AccessPolicy, user: str, groups: set[str] | None, report: Report) -> Report:
    """``report`` as ``user`` (in user groups ``groups``) may see it: another workload is named only when the policy
    lets them diagnose its project in the report's cluster; a project that is not known is seen only where every
    project is allowed (the policy's ``whole``)."""
    if report.neighbours is None:
        return report
    ident = report.identity
    clusters = {c for c in (ident.cluster_name, ident.cluster_id) if c} if ident is not None else set()
    return report.seen_by(
        lambda project: policy.allows(user, clusters=clusters, project=project, user_groups=groups, whole=True)
    )


# -- issue 23: every suggestion, choice and "not found" inside the asker's scope, cluster included -------------

#: what a "not found" asks once the choices it offered were cut (the same as a name that exists nowhere near)
NEUTRAL_ASK = (
    "Which workload do you mean? Send its workload id (Run:ai console, Workloads), or check the name and project."
)
_WORKLOAD_FIELDS = frozenset({"workload_name", "workload_id", "workload"})
_CLUSTER_FACT = re.compile(r"^(?P<name>.+?) \((?P<id>[^()\s]+)\)$")


class ClusterNames:
    """Each cluster by both its names (issue 23): a policy rule may name a cluster by its name or its UUID, while a
    question, a channel default or a button names it by one of them. The configured backends' cluster lists
    (:meth:`diagnosis.backends.Backend.clusters`; Run:ai's is one ``GET /api/v1/clusters``), kept ``ttl`` seconds;
    without a system that has clusters (or when a list cannot be read) a name stays as given, so a rule naming the
    cluster by its other name does not match it (refused, never widened)."""

    def __init__(self, backends: Any, ttl: float = 300.0) -> None:
        self.backends = backends
        self.ttl = ttl
        self._pairs: list[tuple[str, str]] = []
        self._at = -math.inf
        self._lock = asyncio.Lock()

    async def both(self, names: Iterable[str | None]) -> set[str]:
        """``names`` with the other name of every cluster they name (case-insensitively)."""
        known = {n for n in names if n}
        if not known:
            return known
        folded = {n.casefold() for n in known}
        for uuid, name in await self._list():
            if uuid.casefold() in folded or (name and name.casefold() in folded):
                known |= {c for c in (uuid, name) if c}
        return known

    async def _list(self) -> list[tuple[str, str]]:
        from diagnosis.backends import configured

        ready = configured(self.backends)
        if not ready:
            return []
        async with self._lock:
            if time.monotonic() - self._at < self.ttl:
                return self._pairs
            try:  # every configured system's clusters (Run:ai's; a system without clusters lists none)
                found = await asyncio.gather(*(b.clusters(self.backends) for b in ready))
            except Exception as exc:  # the policy then sees the name as given (fails closed)
                log.warning("could not list the clusters for the access policy: %s", type(exc).__name__)
                return self._pairs
            self._pairs = [pair for pairs in found for pair in pairs]
            self._at = time.monotonic()
            return self._pairs


def clusters_of(report: Report, asked: set[str]) -> set[str]:
    """The cluster a report speaks of, by both its names when the report knows them (its identity, or the cluster
    fact of a "not found"), else ``asked`` (the question's, see :class:`ClusterNames`)."""
    ident = report.identity
    if ident is not None and (ident.cluster_name or ident.cluster_id):
        return {c for c in (ident.cluster_name, ident.cluster_id) if c}
    for item in report.evidence:
        if item.label == "cluster" and item.source == "question" and item.value:
            m = _CLUSTER_FACT.match(item.value)
            return {m["name"], m["id"]} if m else {item.value}
    return set(asked)


def in_scope(
    policy: AccessPolicy, user: str, groups: set[str] | None, report: Report, asked: set[str], project: str | None
) -> Report:
    """``report``'s choices as ``user`` may see them: a project offered only when they may diagnose it on the
    report's cluster, a cluster only when they may diagnose in it, a workload (a "did you mean") only when they may
    see the whole scope it was looked up in. A "not found" or a question whose workload or project choices were
    cut says nothing of them: it reads as when nothing was found nearby (no existence oracle)."""
    if not report.choices:
        return report
    clusters = clusters_of(report, asked)

    def allowed(c: Choice) -> bool:
        if c.field == "project":
            return policy.allows(user, clusters=clusters, project=c.value, user_groups=groups, whole=True)
        if c.field in ("cluster", "cluster_id"):
            return policy.allows(user, clusters={c.value, c.label}, project=None, user_groups=groups)
        if c.field in _WORKLOAD_FIELDS:
            return policy.allows(user, clusters=clusters, project=project, user_groups=groups, whole=True)
        return True

    kept = [c for c in report.choices if allowed(c)]
    if len(kept) == len(report.choices):
        return report
    cut = [c for c in report.choices if c not in kept]
    words = f"{report.headline} {report.question or ''}"
    if not any(f"'{c.value}'" in words or f"`{c.value}`" in words for c in cut):
        return report.model_copy(update={"choices": kept})  # the words name none of what was cut
    # the words name a workload or project that was cut: they are replaced, and no workload or project is offered
    kept = [c for c in kept if c.field in ("cluster", "cluster_id", "system")]
    if report.outcome == Outcome.NOT_FOUND:
        what = report.headline.split(". ", 1)[0]
        update = {"headline": f"{what}. {NEUTRAL_ASK}", "question": NEUTRAL_ASK, "next_action": NEUTRAL_ASK}
        return report.model_copy(update={"choices": kept, **update})
    question = report.headline if report.headline.endswith("?") else f"{report.headline} {NEUTRAL_ASK}"
    return report.model_copy(update={"choices": kept, "question": question})
