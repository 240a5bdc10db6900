"""Run:ai failed-workload diagnosis, step by step (``shared/spec/runai-diagnose-failed-workload.md``).

Data flows one way: question -> resolve (Step 1) -> collect Tier 1 evidence concurrently
(Steps 1-3, metrics of Step 4) -> classify (pure) -> Tier 2 when Step 4 calls for it ->
classify again -> report. Every failed fetch becomes a named :class:`~diagnosis.report.Gap`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx

from diagnosis import kube_objects as kube
from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.errors import BackendUnavailable
from diagnosis.fetched import Fetched, Read, describe_error
from diagnosis.fetched import fetch as shared_fetch
from diagnosis.k8s import KubeCalls, Tier2Evidence, pod_mismatch, shared_source
from diagnosis.question import UUID_RE, Question, Symptom, asked_name, named_symptom
from diagnosis.redact import sanitize
from diagnosis.report import Category, Choice, Gap, Report
from diagnosis.runai import classify as cls
from diagnosis.runai import recurrence as rec
from diagnosis.runai import resolve
from diagnosis.runai.categories import CATEGORIES
from diagnosis.runai.client import ApiError, Calls, NotFoundError, RunaiClient
from diagnosis.runai.models import (
    SUCCESS_PHASES,
    TERMINAL_PHASES,
    Cluster,
    Pod,
    Project,
    Records,
    Workload,
)
from diagnosis.runai.reporting import ReportBuilder, asks_stuck
from diagnosis.runai.signals import (
    DIRECT_KINDS,
    Kind,
    Signal,
    gpu_hardware_in_log,
    k8s_phase_signals,
    log_signals,
    node_signals,
    pod_object_signals,
    text_signals,
)
from diagnosis.runai.tier1 import Tier1

log = logging.getLogger(__name__)
_EPOCH = datetime.min.replace(tzinfo=UTC)
T = TypeVar("T")

METRIC_TYPES = ["CPU_MEMORY_USAGE_BYTES", "CPU_MEMORY_LIMIT_BYTES", "CPU_MEMORY_REQUEST_BYTES"]
RUN_START_PHASES = frozenset({"Creating", "Resuming"})
FINAL_WINDOW = timedelta(minutes=10)
FINAL_SLACK = timedelta(minutes=1)  # events are stamped a little after the termination they report
ACTIVE_PHASES = frozenset({"Running", "Pending", "Initializing", "Creating", "Degraded"})
#: The signals that confirm a symptom a question names (status k8sPhase, conditions, events).
SYMPTOM_KINDS: dict[str, frozenset[Kind]] = {
    "crashloop": frozenset({Kind.CRASHLOOP}),
    "image_pull": frozenset({Kind.IMAGE_PULL}),
    "init": frozenset({Kind.INIT_FAILED}),
    "mount": frozenset({Kind.MOUNT_FAILED}),
}


class Deadline:
    """A hard overall deadline (seconds from creation)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self) -> float:
        return max(0.001, self.end - time.monotonic())


async def fetch(read: Read[T], deadline: Deadline) -> Fetched[T]:
    """Await ``read`` within the deadline (:func:`diagnosis.fetched.fetch`); any failure but a read-only
    violation becomes ``why``, with the read's call."""
    return await shared_fetch(read, within=deadline.remaining())


async def diagnose_runai(
    question: Question, config: RunaiConfig, kube: KubeConfig, *, now: datetime, offer_choices: bool = False
) -> Report:
    """Answer ``question`` about a Run:ai workload at time ``now`` (UTC).

    Raises :class:`~diagnosis.question.QuestionError` for a bad lookback and
    :class:`~diagnosis.errors.BackendUnavailable` when Run:ai cannot be reached or refuses the
    credentials; every other problem becomes a gap in the returned report.
    """
    lookback = question.lookback_delta()
    deadline = Deadline(config.deadline)
    async with RunaiClient(config) as client:
        try:
            diagnosis = Diagnosis(question, client, kube, now, lookback, deadline, config)
            diagnosis.offer_choices = offer_choices
            try:
                return await diagnosis.run()
            finally:
                for pending in diagnosis.project_items.values():
                    pending.cancel()  # a quota read the answer did not need
        except (ApiError, httpx.HTTPError, TimeoutError) as exc:
            raise BackendUnavailable(f"Run:ai at {config.base_url} did not answer: {describe_error(exc)}") from exc


@dataclass
class Diagnosis:
    """One Run:ai diagnosis in progress: the question, the client and Tier 2 access, the time and lookback, the
    deadline; :meth:`run` answers it. Collect (:meth:`collect`, :meth:`tier2`) -> decide (:meth:`route`,
    :meth:`decide`, pure classification in :mod:`~diagnosis.runai.classify`) -> evidence and phrase
    (:class:`~diagnosis.runai.reporting.ReportBuilder`, texts in :mod:`~diagnosis.runai.categories`)."""

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
    projects: list[resolve.ProjectInfo] = field(default_factory=list)
    #: the question's scope words as typed ("in X", bare words), before resolution used any of them
    scope_words: list[str] = field(default_factory=list)
    #: the projects-API item of a Pending workload's project, read beside its Tier 1 evidence
    project_items: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)

    @property
    def cutoff(self) -> datetime:
        return self.now - self.lookback

    def builder(self) -> ReportBuilder:
        """A report builder carrying the gaps found so far (a name lookup that paged wrongly, for instance)."""
        b = ReportBuilder(
            now=self.now,
            lookback=self.lookback,
            console_url=self.config.console_url,
            workload_url_template=self.config.workload_url_template,
        )
        for g in self.gaps:
            b.gap(g.what, g.why)
        return b

    # -- Step 1: parameters and resolution ----------------------------------------------------------

    async def run(self) -> Report:
        """Spec Step 1 (resolve, select, check the cluster) and then the diagnosis of the selected workload."""
        resolved = await self.resolve_question()
        if isinstance(resolved, Report):
            return resolved
        q, cluster_id, clusters = resolved
        names = self.names(q)
        missing = _missing_parameters(q, names, cluster_id)
        if missing:
            return await self.ask_missing(q, missing, names, cluster_id, clusters or [])
        assert cluster_id is not None
        found = await self.find_candidates(q, cluster_id, names)
        if isinstance(found, Report):
            return found
        q, candidates = self.question, found
        self.found = list(candidates)
        selected, tier1 = await self.select(candidates, q.effective_intent())
        if selected is None:
            return self.builder().needs_input(
                q,
                ["workload"],
                f"Which '{q.workload_name}' do you mean? Several workloads of that name in project '{q.project}' "
                "fit equally.",
                [
                    Choice(
                        label=f"{w.name} ({w.type or 'workload'}, {w.phase}, {w.id})", field="workload_id", value=w.id
                    )
                    for w in candidates[:10]
                ],
            )
        workload = selected
        # Step 1.3: the returned clusterId must match the asked cluster.
        if workload.cluster_id and not resolve.same_name(workload.cluster_id, cluster_id):
            if not clusters:
                with contextlib.suppress(ApiError, httpx.HTTPError, TimeoutError):
                    # the clusters' names for the message (their ids stay in the evidence)
                    clusters = await asyncio.wait_for(self.client.list_clusters(), self.deadline.remaining())
            return self.builder().cluster_mismatch(q, workload, cluster_id, clusters)
        if tier1 is None:
            tier1 = await self.collect(workload)
        self.kube = self.kube_for(workload, tier1, cluster_id)  # Tier 2 of this workload's cluster only
        return await self.diagnose(workload, tier1)

    async def resolve_question(self) -> tuple[Question, str | None, list[Cluster] | None] | Report:
        """The question's cluster, project and workload checked against the control plane (issue 11 §1): the
        question as resolved, the cluster id (None when still unknown) and the clusters when they were listed;
        or the follow-up question when a named cluster does not exist."""
        q = self.question
        clusters: list[Cluster] | None = None
        cluster_id = (q.cluster_id or "").strip() or None
        if cluster_id is not None and not UUID_RE.fullmatch(cluster_id):
            # A name where an id was expected (``cluster=dgx-prod``): resolve it by exact name, never guess.
            q = self.question = q.model_copy(update={"cluster": cluster_id, "cluster_id": None})
            cluster_id = None
        elif cluster_id is not None:
            cluster_id = cluster_id.lower()  # a UUID pasted in capitals is the same cluster
        if cluster_id is not None and q.workload_id == cluster_id:
            q = self.question = q.model_copy(update={"workload_id": None})  # the cluster's UUID, not a workload's
        # Resolution against the control plane (issue 11 §1): the clusters (and, for a bare "in X", the projects)
        # in one concurrent round trip; a UUID is a cluster when it is one, a scope names what it equals.
        # a project typed with capitals is listed too: the API's own spelling is what the workload filter needs
        # tokens that may name the project or the cluster ("W P C", "C/P/W", "W (P)") are checked against both lists
        loose = bool(q.loose) and (not q.project or cluster_id is None)
        need_projects = bool(q.scopes) or resolve.needs_spelling(q.project) or loose or q.project_weak
        resolvable = bool(q.cluster or q.cluster_hint or q.uuids or q.scopes or loose)
        if (cluster_id is None and (resolvable or self.offer_choices)) or need_projects:
            listed, projects = await asyncio.wait_for(
                asyncio.gather(
                    self.client.list_clusters(),
                    # every cluster's projects: a name that exists on another cluster is never called missing
                    resolve.list_projects(self.client, None) if need_projects else _nothing_list(),
                ),
                self.deadline.remaining(),
            )
            clusters = listed
            self.projects = projects
            self.scope_words = [*q.scopes, *q.loose]
            q, cluster_id = self.resolve_scope(q, listed, projects, cluster_id)
            self.question = q
            if cluster_id is None and q.cluster:
                target = f"'{asked_name(q)}'" if asked_name(q) else "it"
                return self.builder().needs_input(
                    q,
                    ["cluster"],
                    f"Which cluster is {target} on? I found no cluster named '{q.cluster}'.",
                    self.cluster_choices(listed),
                )
        return q, cluster_id, clusters

    async def find_candidates(self, q: Question, cluster_id: str, names: list[str]) -> list[Workload] | Report:
        """The workloads the question may mean (spec Step 1.1): by id, else by name in the project, live first and
        then deleted; or the answer when none or several names match. Sets ``self.question``'s workload name to the
        one name found."""
        if q.workload_id:
            try:
                workload = await asyncio.wait_for(self.client.get_workload(q.workload_id), self.deadline.remaining())
            except NotFoundError:
                return await self.not_found(q, cluster_id, by_id=True)
            candidates = [workload]
        else:
            scope = [f"projectName=={q.project}", f"clusterId=={cluster_id}"]
            found = await asyncio.wait_for(
                resolve.lookup(self.client, names, scope, gaps=self.gaps), self.deadline.remaining()
            )
            live = {n: ws for n, ws in found.items() if ws}
            terminal = q.effective_intent() != "current"
            if len(live) != 1 or (terminal and not any(w.phase in TERMINAL_PHASES for ws in live.values() for w in ws)):
                # Live first, then deleted=true (FORMAT.md): also when no live match fits a terminal question.
                wanted = list(live) if len(live) == 1 else [n for n in names if n not in live] or names
                deleted = await asyncio.wait_for(
                    resolve.lookup(self.client, wanted, scope, deleted=True, gaps=self.gaps), self.deadline.remaining()
                )
                for n, ws in deleted.items():
                    if ws:
                        live[n] = live.get(n, []) + ws
            if len(live) > 1:
                return self.builder().needs_input(
                    q,
                    ["workload"],
                    "Which workload do you mean? Your message names several that exist in project "
                    f"'{q.project}': " + ", ".join(f"`{n}`" for n in live) + ".",
                    [Choice(label=n, field="workload_name", value=n) for n in live],
                )
            if not live:
                if not q.workload_name and not q.candidates:
                    # only ordinary words, none of which is a workload: ask, never "not found: 'fail'"
                    return self.builder().needs_input(q, ["workload"], _missing_question(q, ["workload"]), [])
                if all(_is_scope_name(n, q) for n in names):
                    # "why did my nlp job fail?": the only name is the project's (or cluster's) own, and no workload
                    # has it: a scope mention, not a workload; ask for the workload, never "not found: 'nlp'"
                    q = q.model_copy(update={"workload_name": None, "candidates": []})
                    return self.builder().needs_input(q, ["workload"], _missing_question(q, ["workload"]), [])
                return await self.not_found(q, cluster_id, by_id=False, tried=names)
            name, candidates = next(iter(live.items()))
            if q.workload_name != name:
                self.question = q.model_copy(update={"workload_name": name})
        return candidates

    async def project_item(self, workload: Workload) -> dict[str, Any] | None:
        """The raw projects-API item of the workload's project (its GPU quota and allocation), or None."""
        if not workload.project_name:
            return None
        try:
            items = await asyncio.wait_for(
                resolve.list_projects(self.client, workload.cluster_id), self.deadline.remaining()
            )
        except (ApiError, httpx.HTTPError, TimeoutError):
            return None
        item = resolve.named(workload.project_name, items)
        return item.raw if item is not None else None

    @staticmethod
    def names(q: Question) -> list[str]:
        """The workload names to look up: the one named, else the text's candidates, else its English words
        (a name only when a workload of exactly that name exists)."""
        if q.workload_name:
            return [q.workload_name.lower()]  # a Kubernetes name: "TRAIN-7" is train-7 (FORMAT.md "Questions")
        return list(dict.fromkeys(q.candidates or q.words))

    def resolve_scope(
        self, q: Question, clusters: list[Cluster], projects: list[resolve.ProjectInfo], cluster_id: str | None
    ) -> tuple[Question, str | None]:
        """UUIDs, cluster names and bare scopes checked against what exists (FORMAT.md "Questions")."""
        update: dict[str, Any] = {}
        workload_id = q.workload_id
        for uuid in q.uuids:
            if resolve.cluster_of_uuid(uuid, clusters) is not None:
                if cluster_id is None:
                    cluster_id = uuid
                if workload_id == uuid:
                    workload_id = next((u for u in q.uuids if u != uuid and u != cluster_id), None)
        if workload_id != q.workload_id:
            update["workload_id"] = workload_id
        if cluster_id is None and (q.cluster or q.cluster_hint):
            match = resolve.named(q.cluster or q.cluster_hint or "", clusters)
            if match is not None:
                cluster_id = match.uuid
        if q.project and q.project_weak and resolve.project_named(q.project, projects) is None:
            # "nlp project llama-ft-3": the word after "project" names no project; one before it may
            words = [*q.scopes, *q.loose, *q.words]
            swap = next((t for t in words if resolve.project_named(t, projects, cluster_id)), None)
            if swap is not None:
                moved = q.project.lower()
                q = q.model_copy(
                    update={
                        "project": None,
                        "candidates": [moved, *q.candidates],
                        "workload_name": moved,
                        "loose": [*q.loose, swap],
                    }
                )
        if q.project:
            canonical = resolve.project_named(q.project, projects, cluster_id)
            if canonical is not None and canonical != q.project:
                update["project"] = canonical
        used: set[str] = set()
        # explicit scopes ("in X", "on X") first, then the loose tokens (bare words, "W (P, C)", "C/P/W"); a token
        # names a project or a cluster only when one of that name exists (FORMAT.md "Questions")
        for scope in [*q.scopes, *q.loose]:
            if not q.project and "project" not in update:
                project_name = resolve.project_named(scope, projects, cluster_id)
                if project_name is not None:
                    update["project"] = project_name
                    used.add(scope.lower())
                    continue
            if cluster_id is None:
                match = resolve.named(scope, clusters)
                if match is not None:
                    cluster_id = match.uuid
                    used.add(scope.lower())
        if used:
            update["scopes"] = [s for s in q.scopes if s.lower() not in used]
            update["loose"] = [s for s in q.loose if s.lower() not in used]
        consumed = bool(q.workload_name) and (q.workload_name or "").lower() in used
        if used and q.candidates and (consumed or not q.workload_name):
            # a candidate that named the project or the cluster is no workload ("dgx-prod/research/nightly")
            left = [c for c in q.candidates if c.lower() not in used]
            update["candidates"] = left
            update["workload_name"] = left[0] if len(left) == 1 else None
        if used and q.words and not (q.workload_name and not consumed):
            update["words"] = [w for w in q.words if w.lower() not in used]
        known = {c.name.lower() for c in clusters if c.name} | {p.name.lower() for p in projects}
        # a scope that names a cluster or a project (on any cluster) is never reported as missing
        update["scopes"] = [s for s in update.get("scopes", q.scopes) if s.lower() not in known]
        return q.model_copy(update=update), cluster_id

    def cluster_choices(self, clusters: Sequence[Cluster], only: set[str] | None = None) -> list[Choice]:
        return [
            Choice(label=c.name or c.uuid, field="cluster_id", value=c.uuid)
            for c in clusters
            if only is None or c.uuid in only
        ][:10]

    async def ask_missing(
        self, q: Question, missing: list[str], names: list[str], cluster_id: str | None, clusters: list[Cluster]
    ) -> Report:
        """One question naming every missing parameter, with every listable answer as a choice: the clusters
        (where the named workload exists, when it is known), or the projects that hold a workload by that name."""
        choices: list[Choice] = []
        strong = [n for n in names if q.workload_name or n in q.candidates]
        if "cluster" in missing:
            # never a search across clusters: the clusters are offered (those that have the named project, when it
            # is known), never the one where the workload's name exists
            holding = {p.cluster_id for p in self.projects if q.project and resolve.same_name(p.name, q.project)}
            choices = self.cluster_choices(clusters, {c for c in holding if c} or None)
        elif self.offer_choices and strong and not q.workload_id and "project" in missing and cluster_id:
            scope = [f"clusterId=={cluster_id}"]
            try:
                found = await asyncio.wait_for(
                    resolve.lookup(self.client, strong, scope, gaps=self.gaps), self.deadline.remaining()
                )
            except (ApiError, httpx.HTTPError, TimeoutError):
                found = {}
            held = sorted({w.project_name for ws in found.values() for w in ws if w.project_name})
            choices = [Choice(label=p, field="project", value=p) for p in held][:10]
        text = _missing_question(q, missing)
        if "project" in missing and cluster_id and not q.project:
            # "llama-ft-3 in vision on dgx-prod": vision is a project, on another cluster; say where it is
            here = next((c.name or c.uuid for c in clusters if c.uuid == cluster_id), cluster_id)
            for token in self.scope_words:
                where = [w for w in _clusters_having(token, self.projects, clusters) if w != here]
                if where:
                    need, _, rest = text.partition(". ")
                    text = f"{need}. Project '{token}' is on {', '.join(where)}, not on {here}. {rest}".strip()
                    break
        unknown = [s for s in q.scopes if s.lower() not in {n.lower() for n in names}]
        if unknown and ("project" in missing or "cluster" in missing):
            # after the sentence that says what is needed: the first line of the message says that
            need, _, rest = text.partition(". ")
            text = f"{need}. I found no project or cluster named '{unknown[0]}'. {rest}".strip()
        return self.builder().needs_input(q, missing, text, choices)

    async def not_found(self, q: Question, cluster_id: str, by_id: bool, tried: Sequence[str] = ()) -> Report:
        """Nothing matched: if the cluster id itself is unknown, say so and ask for the cluster instead; else
        suggest the closest existing names in that project (newest failure first) as choices."""
        try:
            clusters = await asyncio.wait_for(self.client.list_clusters(), self.deadline.remaining())
        except (ApiError, httpx.HTTPError, TimeoutError):
            clusters = None
        if clusters is not None and clusters and not any(c.uuid == cluster_id for c in clusters):
            target = f"'{asked_name(q)}'" if asked_name(q) else "it"
            return self.builder().needs_input(
                q,
                ["cluster"],
                f"Which cluster is {target} on? There is no cluster with id {cluster_id}.",
                self.cluster_choices(clusters),
            )
        suggestions: list[tuple[str, str]] = []
        projects: list[resolve.ProjectInfo] | None = None
        existing: Sequence[Workload] = []
        elsewhere: dict[str, list[str]] = {}
        if not by_id and q.project:
            scope = [f"projectName=={q.project}", f"clusterId=={cluster_id}"]
            try:
                existing, projects, found = await asyncio.wait_for(
                    asyncio.gather(
                        self.client.list_workloads(scope),
                        resolve.list_projects(self.client, None),
                        # the same names in the cluster's other projects: offered first, never used silently
                        resolve.lookup(self.client, list(tried or [q.workload_name or ""])[:3], [scope[1]]),
                    ),
                    self.deadline.remaining(),
                )
            except (ApiError, httpx.HTTPError, TimeoutError):
                existing, projects, found = [], None, {}
            for name, ws in found.items():
                held = sorted({w.project_name for w in ws if w.project_name and w.project_name != q.project})
                if held:
                    elsewhere[name] = held
            for name in tried or [q.workload_name or ""]:
                for pick in resolve.suggest(name, existing, self.now):
                    if pick not in suggestions:
                        suggestions.append(pick)
        here = [p for p in projects or [] if p.cluster_id in (None, cluster_id)]
        known = [p.name for p in here]
        cluster_name = next((c.name for c in clusters or [] if c.uuid == cluster_id and c.name), None)
        if known and q.project and resolve.project_named(q.project, here) is None:
            report = self.builder().not_found(
                q, cluster_id, by_id=by_id, tried=tried, projects=sorted(set(known)), cluster_name=cluster_name
            )
            where = _clusters_having(q.project, projects or [], clusters or [])
            if where:
                # never "no project named X" alone when one of that name exists on another cluster
                note = f" (a project '{q.project}' exists on {', '.join(where)})"
                report = report.model_copy(update={"headline": report.headline.replace(". ", note + ". ", 1)})
            return report
        return self.builder().not_found(
            q,
            cluster_id,
            by_id=by_id,
            tried=tried,
            suggestions=suggestions,
            cluster_name=cluster_name,
            elsewhere=elsewhere,
        )

    async def select(self, candidates: list[Workload], intent: str) -> tuple[Workload | None, Tier1 | None]:
        """Option B selection by intent (spec Step 1.1; FORMAT.md "Questions")."""
        ordered = sorted(
            candidates,
            key=lambda w: w.phase_updated_at or w.created_at or self.now,
            reverse=True,
        )
        if len(ordered) == 1:
            return ordered[0], None
        if intent == "terminal":
            terminal = [w for w in ordered if w.phase in TERMINAL_PHASES]
            pool = terminal or ordered
        else:
            active = [w for w in ordered if w.phase in ACTIVE_PHASES]
            symptom = named_symptom(self.question.text or "")
            if active:
                collected = await asyncio.gather(*(self.collect(w) for w in active))
                for w, t1 in zip(active, collected, strict=True):
                    if self.confirms_symptom(w, t1, symptom):
                        return w, t1
            pool = ordered
        top = pool[0]
        ties = [w for w in pool if w.phase_updated_at == top.phase_updated_at]
        if len(ties) > 1:
            return None, None
        return top, None

    def confirms_symptom(self, workload: Workload, tier1: Tier1, symptom: Symptom | None = None) -> bool:
        """A direct failed-pod signal or a crash loop in the current run (status, conditions, events, pods).

        When the question names a symptom, only evidence of *that* symptom confirms it (issue 8 §2)."""
        signals = cls.drop_superseded(self.run_signals(workload, tier1))
        if symptom is not None:
            return any(
                s.kind in SYMPTOM_KINDS[symptom] or (symptom == "init" and s.init and s.kind in DIRECT_KINDS)
                for s in signals
            )
        return any(s.kind in DIRECT_KINDS or s.kind in {Kind.CRASHLOOP, Kind.POD_ERROR} for s in signals)

    # -- Steps 1-4: collect ---------------------------------------------------------------------------

    async def collect(self, workload: Workload) -> Tier1:
        """Pods, history, events, spec, metrics, clusters and project concurrently (one round trip)."""
        wid = workload.id
        c = self.client
        d = self.deadline
        # Pods of a deleted or cleaned-up workload are listed only with deleted=true.
        gone = workload.is_terminal or workload.deleted_at is not None
        if workload.phase == "Pending" and workload.id not in self.project_items:
            # a Pending workload's answer compares the project's GPU quota: read it in the same round trip
            self.project_items[workload.id] = asyncio.ensure_future(self.project_item(workload))
        results = await asyncio.gather(
            fetch(c.get_pods(wid, or_deleted=gone, deleted_since=self.incident_start(workload)), d),
            fetch(c.get_history(wid), d),
            fetch(c.get_events(wid, since=self.cutoff), d),
            fetch(c.get_spec_for(workload), d),
            fetch(c.get_metrics(wid, METRIC_TYPES, self.cutoff, self.now), d),
            fetch(c.list_clusters(), d),
            # The project is read only to find the namespace when the workload does not name it.
            fetch(
                c.list_projects(workload.project_name or "", workload.cluster_id or "")
                if not workload.namespace
                else Read(Calls.projects(), _nothing),
                d,
            ),
        )
        return Tier1(workload, *results)  # type: ignore[arg-type]

    # -- evidence windows -------------------------------------------------------------------------------

    @staticmethod
    def incident_start(workload: Workload) -> datetime | None:
        """For a failed workload of several pods, the earliest time a replica of the same incident may have ended
        (its phase update less :data:`~diagnosis.runai.classify.PEER_WINDOW`): deleted pods that ended since then
        are read too. None for other workloads (their deleted pods are asked only when none is live)."""
        if workload.phase != "Failed" or workload.phase_updated_at is None or not workload.is_distributed:
            return None
        return workload.phase_updated_at - cls.PEER_WINDOW

    def run_start(self, workload: Workload, tier1: Tier1) -> datetime | None:
        """Start of the run that ended (or is in) the diagnosed state: the last Creating/Resuming before it."""
        end = workload.phase_updated_at or self.now
        starts = [
            r.meta.creation_timestamp
            for r in tier1.history.value or []
            if r.spec.phase_update is not None
            and r.spec.phase_update.phase in RUN_START_PHASES
            and r.meta.creation_timestamp is not None
            and r.meta.creation_timestamp <= end
        ]
        if starts:
            return max(starts)
        return workload.created_at

    def last_running(self, tier1: Tier1, end: datetime | None) -> datetime | None:
        """When the last Running phase began (before ``end``): a preemption is "recent" after it."""
        times = [
            r.meta.creation_timestamp
            for r in tier1.history.value or []
            if r.spec.phase_update is not None
            and r.spec.phase_update.phase == "Running"
            and r.meta.creation_timestamp is not None
            and (end is None or r.meta.creation_timestamp <= end)
        ]
        return max(times) if times else None

    def termination_time(self, workload: Workload) -> datetime | None:
        if workload.phase in TERMINAL_PHASES:
            return workload.phase_updated_at or workload.completed_at
        return None

    def run_signals(self, workload: Workload, tier1: Tier1) -> list[Signal]:
        """Tier 1 signals of the current run: workload status, conditions, phase updates, events, pods."""
        wl = Calls.workload(workload.id)
        wl_src = wl.cite()
        start = self.run_start(workload, tier1)
        out: list[Signal] = []
        out += text_signals(
            workload.phase_reason,
            workload.phase_message,
            source=wl_src,
            at=workload.phase_updated_at,
            label="phaseMessage" + (f" ({workload.phase_reason})" if workload.phase_reason else ""),
        )
        for cond in workload.conditions:
            if cond.status == "True" or cond.type in {"Failed", "Ready"}:
                out += text_signals(
                    cond.reason,
                    cond.message,
                    source=wl.cite("conditions"),
                    at=cond.last_transition_time,
                    label=f"condition {cond.type} {cond.reason or ''}".strip(),
                )
        for psm in workload.pending_scheduling_messages or []:
            out += text_signals(
                psm.phase_reason,
                psm.user_message,
                source=wl.cite("pendingSchedulingMessages"),
                at=None,
                label="pendingSchedulingMessages",
            )
        hist = Calls.history(workload.id)
        hist_src = hist.cite()
        for r in tier1.history.value or []:
            ts = r.meta.creation_timestamp
            if r.spec.phase_update is not None and (start is None or ts is None or ts >= start):
                pu = r.spec.phase_update
                out += text_signals(
                    None, pu.phase_message, source=hist.cite("phase update"), at=ts, label=f"phase update {pu.phase}"
                )
        ev_src = Calls.events(workload.id).cite()
        for ev in tier1.all_events:
            if start is not None and ev.created_at is not None and ev.created_at < start:
                continue
            pod_name = ev.involved_object.name if ev.involved_object and ev.involved_object.kind == "Pod" else None
            out += text_signals(
                ev.reason, ev.message, source=ev_src if tier1.events.ok else hist_src, at=ev.created_at, pod=pod_name
            )
        spec = tier1.spec.value
        if workload.phase == "Stopped" and spec is not None and spec.desired_phase == "Stopped":
            # The phase is the runtime evidence; the spec's desiredPhase says the stop was asked for.
            out.append(
                Signal(
                    Kind.POLICY_STOP,
                    text="phase Stopped with desiredPhase Stopped (a stop was requested for this workload)",
                    source=Calls.spec(self.client.spec_path_for(workload)).cite("desiredPhase"),
                    at=workload.phase_updated_at,
                    reason="Stopped",
                )
            )
        for pod in tier1.pods.value or []:
            at = pod.k8s_phase_updated_at  # an old pod phase is not evidence of the recent termination
            found = k8s_phase_signals(
                pod.k8s_phase, source=Calls.pods(workload.id).cite("k8sPhase"), at=at, pod=pod.name
            )
            if not found and workload.is_distributed and pod.deleted_at is not None:
                # a replica deleted while it ran ended then (FORMAT.md: "the pod's completion or deletion"): it
                # takes part in the order of the failing pods
                found = [
                    Signal(
                        Kind.POD_ERROR,
                        text=f"pod deleted at {pod.deleted_at:%Y-%m-%d %H:%M:%S} UTC (k8sPhase {pod.k8s_phase})",
                        source=Calls.pods(workload.id).cite("deletedAt"),
                        at=pod.deleted_at,
                        pod=pod.name,
                        reason="deleted",
                    )
                ]
            out += found
        return cls.drop_stale_scheduler(out)

    def final_window(self, signals: Sequence[Signal], end: datetime | None) -> list[Signal]:
        """Signals describing the diagnosed termination: timeless ones and those within FINAL_WINDOW before it."""
        if end is None:
            return list(signals)
        return [s for s in signals if s.at is None or (end - FINAL_WINDOW <= s.at <= end + timedelta(minutes=1))]

    # -- Steps 1.4-5 ------------------------------------------------------------------------------------

    async def diagnose(self, workload: Workload, tier1: Tier1) -> Report:
        """Spec Steps 1.4-5 over the collected Tier 1 evidence: route out (preempted, succeeded, suspended,
        Pending, Running), else classify (Tier 2 where Step 4 calls for it), count recurrences, read the memory
        peak when it matters, and report."""
        b = self.builder()
        b.set_identity(workload, tier1)
        self.tier1_gaps(b, workload, tier1)
        signals = self.run_signals(workload, tier1)
        end = self.termination_time(workload)
        final = self.final_window(signals, end)
        routed, tier2 = await self.route(b, workload, tier1, signals, end)
        if routed is not None:
            return routed

        # Step 2-4: classify from Tier 1, then Tier 2 where Step 4 calls for it. With several pods the one whose
        # failure came first decides (FORMAT.md "Workloads with several pods").
        finding, order = self.decide(tier1, signals, final, end, None)
        if tier2 is None and self.needs_tier2(finding, final):
            tier2 = await self.tier2(workload, tier1, finding, signals, order)
        if tier2 is not None:
            t2 = self.t2_signals
            # Tier 2 can name the sender of a signal exit: a preemption routes out (spec Step 1.4).
            t2_preempted = cls.preempted_before_failure(signals + t2)
            t2_preempted = [s for s in t2_preempted if s in t2]
            if t2_preempted:
                return b.route_preempted(workload, t2_preempted, tier1.spec.value.spec if tier1.spec.value else None)
            b.tier2(tier2)
            finding, order = self.decide(tier1, signals + t2, final + t2, end, tier2)
            final = final + t2
        elif not self.kube.available:
            b.gap(
                "Tier 2 Kubernetes evidence (previous logs, pod description, namespace events, node)",
                self.kube.why_unavailable,
            )
        b.pod_order(order)
        for g in self.gaps:
            b.gap(g.what, g.why)
        if finding is None:
            finding = cls.unknown(final, tier2_available=tier2 is not None)
        self.recurrence(b, tier1, finding, end)

        # Step 4: memory peak vs the limit when OOM or an unexplained exit 137 is involved.
        pod_name = tier2.pod_name if tier2 is not None else self.diagnosed_pod(tier1, finding, final, order)[0]
        sidecar = finding.category == Category.OOM_KILLED and b.killed_container_limit(workload, finding, tier2)
        if not sidecar and (finding.category == Category.OOM_KILLED or cls.unresolved_exit(final)):
            b.memory(workload, tier1, tier2, pod=pod_name)  # the peak and the limit of the diagnosed pod
        namespace = tier2.namespace if tier2 is not None else self.namespace(workload, tier1)
        return b.diagnosed(workload, tier1, finding, final, tier2, self.kube.available, pod_name, namespace)

    @staticmethod
    def tier1_gaps(b: ReportBuilder, workload: Workload, tier1: Tier1) -> None:
        """What Tier 1 could not show: each failed call (``why [GET path]``), skipped list items, an unread
        spec of a Stopped workload, failed events, an empty pods list."""
        for got in (tier1.pods, tier1.history, tier1.events, tier1.spec, tier1.metrics):
            if not b.fetched(got, with_call=True):
                continue
            if isinstance(got.value, Records) and got.value.skipped:
                b.gap(got.what, f"{got.value.skipped_text()} [{got.path}]")
        if workload.phase == "Stopped" and tier1.spec.value is None:
            b.gap("stop requested (desiredPhase)", "not known: the submitted spec could not be read")
        if not tier1.events.ok and tier1.history.ok:
            b.note(
                "The events call failed; that is not proof that no events occurred. History events were used instead."
            )
        if tier1.pods.ok and not tier1.pods.value:
            asked = isinstance(tier1.pods.value, Records) and tier1.pods.value.asked_deleted
            both = ", live or deleted (asked again with deleted=true)" if asked else ""
            b.gap("pods", f"the pods endpoint returned no pods{both} (deleted or not yet created)")

    async def route(
        self, b: ReportBuilder, workload: Workload, tier1: Tier1, signals: list[Signal], end: datetime | None
    ) -> tuple[Report | None, Tier2Evidence | None]:
        """Spec Steps 1.4-1.5: the answer when the workload routes out (a recent preemption, success, suspension,
        Pending or Running without a failed-pod signal, another phase), else None; and the Tier 2 evidence read
        to confirm or rule out a symptom on the way (None when none was read)."""
        # Step 1.4: a recent preemption routes out (before the phase rule; Stopped needs it excluded).
        since = self.last_running(tier1, end)
        preempted = [s for s in cls.preempted_before_failure(signals) if s.at is None or since is None or s.at >= since]
        if preempted:
            return b.route_preempted(workload, preempted, tier1.spec.value.spec if tier1.spec.value else None), None

        # Step 1.5: phase rules.
        phase = workload.phase
        if phase in SUCCESS_PHASES:
            return b.succeeded(workload), None
        if phase == "Suspended":
            return b.out_of_scope(workload), None
        tier2: Tier2Evidence | None = None
        if phase in TERMINAL_PHASES or self.symptom_confirmed(phase, signals):
            return None, None
        # Tier 1 shows no failed-pod signal. Before routing away, let Tier 2's pod status confirm or rule out the
        # symptom when Tier 1 is thin (events unread, a scheduled pod that is not running) or the person asked
        # about a current symptom.
        if phase in {"Pending", "Initializing", "Creating", "Running"} and self.tier1_is_thin(tier1):
            tier2 = await self.tier2(workload, tier1, None, signals)
        t2 = self.t2_signals if tier2 is not None else []
        if t2 and self.symptom_confirmed(phase, signals + t2):
            return None, tier2
        usable = cls.drop_superseded(signals)
        if phase == "Pending":
            scheduling = [s for s in usable if s.kind == Kind.SCHEDULING]
            pending = self.project_items.get(workload.id)
            item = await pending if pending is not None else await self.project_item(workload)
            return b.route_pending(workload, scheduling, item, stuck=asks_stuck(self.question.text)), tier2
        if phase == "Running":
            return b.ask_past_run(workload, self.found), tier2
        return b.phase_only(workload, signals), tier2

    def recurrence(self, b: ReportBuilder, tier1: Tier1, finding: cls.Finding, end: datetime | None) -> None:
        """Spec Step 3: the failures of the finding's category in the lookback (history and events), and the gap
        when history could not be read."""
        occ = rec.occurrences(tier1.history.value or [], tier1.all_events, self.cutoff)
        # A failure still in progress (crash loop, pull back-off) dates from its latest direct signal.
        diagnosed_at = end or max((s.at for s in finding.signals if s.at), default=self.now)
        times = [
            t for t in rec.same_category(occ, finding.category, diagnosed_at) if t >= self.cutoff or t == diagnosed_at
        ]
        b.recurrence(finding.category, times)
        if not tier1.history.ok:
            b.gap(
                "recurrence",
                "history could not be read, so earlier occurrences were counted from the events call only"
                if tier1.events.ok
                else "neither history nor events could be read: only the diagnosed failure is counted",
            )

    def pod_ended(self, tier1: Tier1, tier2: Tier2Evidence | None) -> dict[str, datetime]:
        """When each pod ended: its main containers' latest ``finishedAt`` (Tier 2), else ``completedAt``."""
        out: dict[str, datetime] = {}
        for pod in tier1.pods.value or []:
            if pod.completed_at is not None:
                out[pod.name] = pod.completed_at
            elif pod.deleted_at is not None:
                out[pod.name] = pod.deleted_at  # deleted while it ran: it ended then
        if tier2 is not None and tier2.pod is not None:
            finished = kube.main_finished_at(tier2.pod)
            if finished is not None:
                out[tier2.pod_name] = finished
        return out

    def decide(
        self,
        tier1: Tier1,
        signals: Sequence[Signal],
        final: Sequence[Signal],
        end: datetime | None,
        tier2: Tier2Evidence | None,
    ) -> tuple[cls.Finding | None, cls.PodOrder]:
        """Spec Step 4 over the pods in the order they failed: the first failing pod's own signals and the
        workload's decide; when every visible failing pod is a consequence, UNKNOWN naming the first replica."""
        window = [
            s
            for s in signals
            if end is None or s.at is None or end - cls.PEER_WINDOW <= s.at <= end + timedelta(minutes=1)
        ]
        order = cls.order_pods(window, self.pod_ended(tier1, tier2))
        if not order.several:
            return cls.classify(final) or cls.classify(signals), order
        unknown = cls.peer_unknown(order, tier2 is not None) or self.unseen_first(order, tier1, tier2, window)
        if unknown is not None:
            return unknown, order
        finding = (
            cls.classify(cls.decisive_signals(final, order))
            or cls.classify(cls.decisive_signals(window, order))
            or cls.classify(cls.decisive_signals(signals, order))
        )
        return finding, order

    @staticmethod
    def unseen_first(
        order: cls.PodOrder, tier1: Tier1, tier2: Tier2Evidence | None, signals: Sequence[Signal]
    ) -> cls.Finding | None:
        """UNKNOWN naming the pod that failed first when it cannot be seen (FORMAT.md "Workloads with several
        pods"): deleted, only the Run:ai pods list still shows it, its own evidence names no cause (a bare
        ``Error``), and Tier 2 could not read it. The later pods' exits (a launcher's, a master's) are then
        consequences, never the cause."""
        first = order.first
        if first is None or not order.several:
            return None
        own = [s for s in signals if s.pod == first]
        if any(s.kind in DIRECT_KINDS for s in own):
            return None
        pod = next((p for p in tier1.pods.value or [] if p.name == first), None)
        seen = tier2 is not None and tier2.pod is not None and tier2.pod_name == first
        if seen or pod is None or pod.deleted_at is None:
            return None
        ended = order.ended.get(first)
        when = f" at {ended:%Y-%m-%d %H:%M:%S} UTC" if ended else ""
        later = [p for p in order.failing if p != first]
        reason = (
            f"the pod that failed first, {first}, ended{when} and cannot be seen (deleted; the Run:ai pods list "
            f"says only '{pod.k8s_phase or 'failed'}')"
        )
        if later:
            reason += f"; {', '.join(later)} ended later, as consequences of that failure, not by their own fault"
        return cls.Finding(Category.UNKNOWN, tuple(own), reason=reason)

    @staticmethod
    def symptom_confirmed(phase: str, signals: Sequence[Signal]) -> bool:
        """Spec Step 1 phase rule for a non-terminal phase: Pending/Initializing/Creating need a direct
        failed-pod signal; Running needs a crash loop or repeated container crashes."""
        usable = cls.drop_superseded(signals)
        direct = [s for s in usable if s.kind in DIRECT_KINDS and s.kind != Kind.POLICY_STOP]
        if phase in {"Pending", "Initializing", "Creating"}:
            return bool(direct or [s for s in usable if s.kind in {Kind.POD_ERROR, Kind.EXIT_SIGNAL}])
        if phase == "Running":
            return bool(direct or [s for s in usable if s.kind == Kind.CRASHLOOP])
        return False

    def tier1_is_thin(self, tier1: Tier1) -> bool:
        """Tier 1 may miss a failed-pod signal: no events were read, a pod is scheduled but not running,
        or the question names a current symptom."""
        if not self.kube.available:
            return False
        if not tier1.events.ok and not tier1.history.ok:
            return True
        if self.question.effective_intent() == "current":
            return True
        return any(
            p.node_name and p.k8s_phase not in {"Running", "Pending", "Succeeded"} for p in tier1.pods.value or []
        )

    def needs_tier2(self, finding: cls.Finding | None, final: Sequence[Signal]) -> bool:
        """Spec Step 4: Tier 2 when container-level evidence is needed, exit 137 is unexplained, or Tier 1
        produces no category. Container-level evidence (exit states, restart counts, previous logs) is what
        explains an OOM kill, a crash and an init failure; a node failure needs ``describe node``. Image pull,
        mount and policy findings are explained by their Tier 1 messages."""
        if not self.kube.available:
            return False
        if finding is None or cls.unresolved_exit(final):
            return True
        return CATEGORIES[finding.category].tier2  # the category's own Tier 2 need (diagnosis.runai.categories)

    def diagnosed_pod(
        self,
        tier1: Tier1,
        finding: cls.Finding | None,
        signals: Sequence[Signal],
        order: cls.PodOrder | None = None,
    ) -> tuple[str | None, Pod | None]:
        """The pod to inspect: the first failing pod of several, else the one the finding names, else the newest
        failed pod, else one events name."""
        pods = tier1.pods.value or []
        by_name = {p.name: p for p in pods}
        if order is not None and order.several:
            pick = order.first or next((p for p in order.failing if p in by_name), None)
            if pick is not None:
                return pick, by_name.get(pick)
        if finding is not None:
            for s in reversed(finding.signals):
                if s.pod:
                    return s.pod, by_name.get(s.pod)
        failed = [p for p in pods if p.k8s_phase not in {"Succeeded", "Running", None}]
        pool = failed or pods
        if pool:
            newest = max(pool, key=lambda p: p.completed_at or p.k8s_phase_updated_at or p.created_at or self.now)
            return newest.name, newest
        named = [s.pod for s in signals if s.pod]
        return (named[-1], None) if named else (None, None)

    @staticmethod
    def namespace(workload: Workload, tier1: Tier1) -> str | None:
        """``workload.namespace``, else the project's ``status.namespace``, else ``runai-<project>`` (spec fallback)."""
        if workload.namespace:
            return workload.namespace
        for project in tier1.projects.value or []:
            if project.status and project.status.namespace:
                return project.status.namespace
        if workload.project_name:
            return f"runai-{workload.project_name}"
        return None

    def kube_for(self, workload: Workload, tier1: Tier1, cluster_id: str) -> KubeConfig:
        """The Tier 2 access of the workload's own cluster (``WD_KUBE_CONTEXTS`` by cluster id, then by the name in
        the clusters list); an unavailable config naming the gap when that cluster has none."""
        cid = workload.cluster_id or cluster_id
        names = tier1.clusters.value
        name = next((c.name for c in names or [] if c.uuid == cid and c.name), None)
        return self.kube.for_cluster(cid, name, names_known=names is not None)

    async def tier2(
        self,
        workload: Workload,
        tier1: Tier1,
        finding: cls.Finding | None,
        signals: Sequence[Signal],
        order: cls.PodOrder | None = None,
    ) -> Tier2Evidence | None:
        pod_name, pod = self.diagnosed_pod(tier1, finding, signals, order)
        namespace = self.namespace(workload, tier1)
        b_gap = self.gaps
        if pod_name is None or namespace is None:
            b_gap.append(
                Gap(what="Tier 2 evidence", why="no pod name or namespace could be resolved; nothing was guessed")
            )
            return None
        node = None
        if finding is not None and finding.category == Category.NODE_FAILURE:
            node = next((s.node for s in finding.signals if s.node), None) or (pod.node_name if pod else None)
        try:
            source = await shared_source(self.kube)
        except Exception as exc:
            b_gap.append(
                Gap(
                    what="Tier 2 Kubernetes evidence",
                    why=f"{self.kube.describe()} could not be loaded: {type(exc).__name__}",
                )
            )
            return None
        try:
            containers = [c.name for c in pod.containers] if pod else []
            evidence = await asyncio.wait_for(
                source.collect(namespace, pod_name, containers, node), self.deadline.remaining()
            )
            # Only the pod Run:ai reported: a pod of the same name created at another time (or answered from
            # elsewhere) is another pod, and none of what was read for that name is its evidence.
            mismatch = (
                pod_mismatch(evidence.pod, namespace, pod_name, pod.created_at if pod else None)
                if evidence.pod is not None
                else None
            )
            if mismatch is not None:
                b_gap.append(
                    Gap(
                        what=f"Tier 2 evidence of pod {namespace}/{pod_name} (description, events, logs)",
                        why=f"{mismatch}, so what was read for that name was not used",
                    )
                )
                return None
            # Logs are untrusted: credentials masked and instruction-like lines withheld once, before any line is
            # classified, picked or cut (issue 8 §3).
            evidence.logs = {key: sanitize(text) for key, text in evidence.logs.items()}
            signals = self.tier2_signals(evidence)
            # Node events are evidence only for this run: a GPU fault reported on the node before the run started,
            # or after the failure, is another story (FORMAT.md "GPU hardware faults").
            self.t2_window = (self.run_start(workload, tier1), self.termination_time(workload))
            if evidence.pod is not None and node is None:
                pod_node = (evidence.pod.get("spec") or {}).get("nodeName")
                gpu_fault = any(gpu_hardware_in_log(text) for text in evidence.logs.values())
                if pod_node and (gpu_fault or any(s.kind == Kind.NODE_FAILURE for s in signals)):
                    await asyncio.wait_for(source.add_node(evidence, pod_node), self.deadline.remaining())
                    signals = self.tier2_signals(evidence)
            self.t2_signals = signals
            return evidence
        except TimeoutError as exc:
            b_gap.append(Gap(what="Tier 2 evidence", why=describe_error(exc)))
            return None

    def tier2_signals(self, t2: Tier2Evidence) -> list[Signal]:
        """Signals of what Tier 2 read: the pod object, its events, its logs, the node and the node's events of
        this run (:attr:`t2_window`; a node event outside it is another story). Each cites its ``kubectl`` call."""
        ns, pod = t2.namespace, t2.pod_name
        out: list[Signal] = []
        if t2.pod is not None:
            out += pod_object_signals(t2.pod, source=KubeCalls.pod(ns, pod).source)
        ev_src = KubeCalls.pod_events(ns, pod).source
        for ev in kube.events(t2.events):
            out += text_signals(ev.reason, ev.message, source=ev_src, at=ev.at, pod=pod)
        for (container, previous), text in t2.logs.items():
            src = KubeCalls.log(ns, pod, container, previous).source
            out += log_signals(text, source=src, pod=pod, container=container)
        if t2.node is not None:
            out += node_signals(t2.node, source=KubeCalls.node(kube.node_name(t2.node)).source)
        since, until = self.t2_window
        for ev in kube.events(t2.node_events):
            early = since is not None and ev.at is not None and ev.at < since
            late = until is not None and ev.at is not None and ev.at > until + FINAL_SLACK
            if early or late:
                continue
            src = KubeCalls.node_events(ev.name).source
            out += [
                s
                for s in text_signals(ev.reason, ev.message, source=src, at=ev.at, node=ev.name)
                if s.kind == Kind.NODE_FAILURE
            ]
        return out


async def _nothing() -> list[Project]:
    return []


async def _nothing_list() -> list[resolve.ProjectInfo]:
    return []


def _missing_parameters(q: Question, names: list[str], cluster_id: str | None) -> list[str]:
    """The parameters still missing before any workload call (spec "Parameters"): cluster, workload, project."""
    missing: list[str] = []
    if cluster_id is None:
        missing.append("cluster")
    if not q.workload_id:
        named = bool(q.workload_name or q.candidates)
        # ordinary words are tried only once the scope is known; until then the workload is asked for too
        if not named and (not names or cluster_id is None or not q.project):
            missing.append("workload")
        if not q.project:
            missing.append("project")
    return missing


def _is_scope_name(name: str, q: Question) -> bool:
    """``name`` is the question's project or cluster name (case-insensitively)."""
    return name.lower() in {x.lower() for x in (q.project, q.cluster) if x}


def _clusters_having(project: str, projects: Sequence[resolve.ProjectInfo], clusters: Sequence[Cluster]) -> list[str]:
    """The names (else ids) of the clusters that have a project named ``project`` (case-insensitively)."""
    names = {c.uuid: c.name or c.uuid for c in clusters}
    ids = sorted({p.cluster_id for p in projects if p.cluster_id and resolve.same_name(p.name, project)})
    return [names.get(i, i) for i in ids]


def _missing_question(q: Question, missing: list[str]) -> str:
    """One clear follow-up question naming every missing parameter (spec "Parameters")."""
    target = f"'{asked_name(q)}'" if asked_name(q) else "the workload"
    parts = []
    if "workload" in missing:
        parts.append("the workload name (or its workload id)")
    if "project" in missing:
        parts.append("the project")
    if "cluster" in missing:
        parts.append("the cluster (name or id)")
    needs = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    tail = " I never guess the cluster or search across clusters." if "cluster" in missing else ""
    order = [m for m in ("workload", "project", "cluster") if m in missing]
    if order == ["cluster"]:
        which = "Which cluster is it on?"
    elif order == ["project"]:
        which = "Which project is it in?"
    else:
        which = "Which " + (order[0] if len(order) == 1 else ", ".join(order[:-1]) + " and " + order[-1]) + " is it?"
    return f"To diagnose {target} I need {needs}. {which}{tail}"
