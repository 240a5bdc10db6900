"""Resolve: Step 1 of one Run:ai diagnosis (spec "Parameters" and Step 1), the first of its four jobs.

The question's cluster, project and workload are checked against the control plane (FORMAT.md "Questions":
a word names a project or a cluster only when one of that name exists; the cluster is never guessed), the
workload is found by id or by name (live first, then deleted), one candidate is selected by intent (Option B),
and its cluster is checked against the one asked (Step 1.3). :func:`resolve` returns the workload with its
Tier 1 evidence, or the answer that ends the diagnosis there (a follow-up question with its choices, not found
with the closest names, a cluster mismatch). Lookups and suggestions are :mod:`diagnosis.runai.resolve`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import httpx

from diagnosis.config import KubeConfig
from diagnosis.question import UUID_RE, Question, Symptom, asked_name, named_symptom
from diagnosis.report import Choice, Report
from diagnosis.runai import classify as cls
from diagnosis.runai import incident
from diagnosis.runai import resolve as lookup
from diagnosis.runai.client import ApiError, NotFoundError
from diagnosis.runai.models import TERMINAL_PHASES, Cluster, Workload
from diagnosis.runai.reporting import builder
from diagnosis.runai.signals import DIRECT_KINDS, Kind
from diagnosis.runai.state import Diagnosis
from diagnosis.runai.tier1 import Tier1, collect

ACTIVE_PHASES = frozenset({"Running", "Pending", "Initializing", "Creating", "Degraded"})
#: The signals that confirm a symptom a question names (status k8sPhase, conditions, events).
SYMPTOM_KINDS: dict[str, frozenset[Kind]] = {
    "crashloop": frozenset({Kind.CRASHLOOP}),
    "image_pull": frozenset({Kind.IMAGE_PULL}),
    "init": frozenset({Kind.INIT_FAILED}),
    "mount": frozenset({Kind.MOUNT_FAILED}),
}


async def resolve(d: Diagnosis) -> tuple[Workload, Tier1] | Report:
    """Spec Step 1: the question resolved against the control plane, one workload selected (with its Tier 1,
    read once), its cluster checked; or the answer when that ends the diagnosis (a follow-up question, not
    found, a cluster mismatch). Sets ``d.question`` to the question as resolved and ``d.kube`` to the Tier 2
    access of the workload's own cluster."""
    resolved = await resolve_question(d)
    if isinstance(resolved, Report):
        return resolved
    q, cluster_id, clusters = resolved
    names = workload_names(q)
    missing = _missing_parameters(q, names, cluster_id)
    if missing:
        return await ask_missing(d, q, missing, names, cluster_id, clusters or [])
    assert cluster_id is not None
    found = await find_candidates(d, q, cluster_id, names)
    if isinstance(found, Report):
        return found
    q, candidates = d.question, found
    d.found = list(candidates)
    selected, tier1 = await select(d, candidates, q.effective_intent())
    if selected is None:
        return builder(d).needs_input(
            q,
            ["workload"],
            f"Which '{q.workload_name}' do you mean? Several workloads of that name in project '{q.project}' "
            "fit equally.",
            [
                Choice(label=f"{w.name} ({w.type or 'workload'}, {w.phase}, {w.id})", field="workload_id", value=w.id)
                for w in candidates[:10]
            ],
        )
    workload = selected
    # Step 1.3: the returned clusterId must match the asked cluster.
    if workload.cluster_id and not lookup.same_name(workload.cluster_id, cluster_id):
        if not clusters:
            with contextlib.suppress(ApiError, httpx.HTTPError, TimeoutError):
                # the clusters' names for the message (their ids stay in the evidence)
                clusters = await asyncio.wait_for(d.client.list_clusters(), d.deadline.remaining())
        return builder(d).cluster_mismatch(q, workload, cluster_id, clusters)
    if tier1 is None:
        tier1 = await collect(d, workload)
    d.kube = kube_for(d, workload, tier1, cluster_id)  # Tier 2 of this workload's cluster only
    return workload, tier1


async def resolve_question(d: Diagnosis) -> tuple[Question, str | None, list[Cluster] | None] | Report:
    """The question's cluster, project and workload checked against the control plane (issue 11 §1): the
    question as resolved, the cluster id (None when still unknown) and the clusters when they were listed;
    or the follow-up question when a named cluster does not exist."""
    q = d.question
    clusters: list[Cluster] | None = None
    cluster_id = (q.cluster_id or "").strip() or None
    if cluster_id is not None and not UUID_RE.fullmatch(cluster_id):
        # A name where an id was expected (``cluster=dgx-prod``): resolve it by exact name, never guess.
        q = d.question = q.model_copy(update={"cluster": cluster_id, "cluster_id": None})
        cluster_id = None
    elif cluster_id is not None:
        cluster_id = cluster_id.lower()  # a UUID pasted in capitals is the same cluster
    if cluster_id is not None and q.workload_id == cluster_id:
        q = d.question = q.model_copy(update={"workload_id": None})  # the cluster's UUID, not a workload's
    # Resolution against the control plane (issue 11 §1): the clusters (and, for a bare "in X", the projects)
    # in one concurrent round trip; a UUID is a cluster when it is one, a scope names what it equals.
    # a project typed with capitals is listed too: the API's own spelling is what the workload filter needs
    # tokens that may name the project or the cluster ("W P C", "C/P/W", "W (P)") are checked against both lists
    loose = bool(q.loose) and (not q.project or cluster_id is None)
    need_projects = bool(q.scopes) or lookup.needs_spelling(q.project) or loose or q.project_weak
    resolvable = bool(q.cluster or q.cluster_hint or q.uuids or q.scopes or loose)
    if (cluster_id is None and (resolvable or d.offer_choices)) or need_projects:
        listed, projects = await asyncio.wait_for(
            asyncio.gather(
                d.client.list_clusters(),
                # every cluster's projects: a name that exists on another cluster is never called missing
                lookup.list_projects(d.client, None) if need_projects else _nothing_list(),
            ),
            d.deadline.remaining(),
        )
        clusters = listed
        d.projects = projects
        d.scope_words = [*q.scopes, *q.loose]
        q, cluster_id = resolve_scope(d, q, listed, projects, cluster_id)
        d.question = q
        if cluster_id is None and q.cluster:
            target = f"'{asked_name(q)}'" if asked_name(q) else "it"
            return builder(d).needs_input(
                q,
                ["cluster"],
                f"Which cluster is {target} on? I found no cluster named '{q.cluster}'.",
                cluster_choices(listed),
            )
    return q, cluster_id, clusters


async def find_candidates(d: Diagnosis, q: Question, cluster_id: str, names: list[str]) -> list[Workload] | Report:
    """The workloads the question may mean (spec Step 1.1): by id, else by name in the project, live first and
    then deleted; or the answer when none or several names match. Sets ``d.question``'s workload name to the
    one name found."""
    if q.workload_id:
        try:
            workload = await asyncio.wait_for(d.client.get_workload(q.workload_id), d.deadline.remaining())
        except NotFoundError:
            return await not_found(d, q, cluster_id, by_id=True)
        candidates = [workload]
    else:
        scope = [f"projectName=={q.project}", f"clusterId=={cluster_id}"]
        live = await _matches(d, q, names, scope)
        others = [n for n in dict.fromkeys([*q.candidates, *q.words]) if n not in names and not _is_scope_name(n, q)]
        if not live and others and q.candidates and (not q.workload_name or q.workload_name in q.candidates):
            # the tokens looked up name no workload ("after the cuda-12.4 upgrade nightly fails"): the text's other
            # tokens and its English words may (FORMAT.md "the one that names an existing workload ... decides");
            # "not found" still names only the tokens tried first
            live = await _matches(d, q, others, scope)
        if len(live) > 1:
            return builder(d).needs_input(
                q,
                ["workload"],
                "Which workload do you mean? Your message names several that exist in project "
                f"'{q.project}': " + ", ".join(f"`{n}`" for n in live) + ".",
                [Choice(label=n, field="workload_name", value=n) for n in live],
            )
        if not live:
            if not q.workload_name and not q.candidates:
                # only ordinary words, none of which is a workload: ask, never "not found: 'fail'"
                return builder(d).needs_input(q, ["workload"], _missing_question(q, ["workload"]), [])
            if all(_is_scope_name(n, q) for n in names):
                # "why did my nlp job fail?": the only name is the project's (or cluster's) own, and no workload
                # has it: a scope mention, not a workload; ask for the workload, never "not found: 'nlp'"
                q = q.model_copy(update={"workload_name": None, "candidates": []})
                return builder(d).needs_input(q, ["workload"], _missing_question(q, ["workload"]), [])
            return await not_found(d, q, cluster_id, by_id=False, tried=names)
        name, candidates = next(iter(live.items()))
        if q.workload_name != name:
            d.question = q.model_copy(update={"workload_name": name})
    return candidates


def workload_names(q: Question) -> list[str]:
    """The workload names to look up: the one named, else the text's candidates, else its English words
    (a name only when a workload of exactly that name exists)."""
    if q.workload_name:
        return [q.workload_name.lower()]  # a Kubernetes name: "TRAIN-7" is train-7 (FORMAT.md "Questions")
    return list(dict.fromkeys(q.candidates or q.words))


def resolve_scope(
    d: Diagnosis, q: Question, clusters: list[Cluster], projects: list[lookup.ProjectInfo], cluster_id: str | None
) -> tuple[Question, str | None]:
    """UUIDs, cluster names and bare scopes checked against what exists (FORMAT.md "Questions")."""
    update: dict[str, Any] = {}
    workload_id = q.workload_id
    for uuid in q.uuids:
        if lookup.cluster_of_uuid(uuid, clusters) is not None:
            if cluster_id is None:
                cluster_id = uuid
            if workload_id == uuid:
                workload_id = next((u for u in q.uuids if u != uuid and u != cluster_id), None)
    if workload_id != q.workload_id:
        update["workload_id"] = workload_id
    if cluster_id is None and (q.cluster or q.cluster_hint):
        match = lookup.named(q.cluster or q.cluster_hint or "", clusters)
        if match is not None:
            cluster_id = match.uuid
    if q.project and q.project_weak and lookup.project_named(q.project, projects) is None:
        # "nlp project llama-ft-3": the word after "project" names no project; one before it may
        words = [*q.scopes, *q.loose, *q.words]
        swap = next((t for t in words if lookup.project_named(t, projects, cluster_id)), None)
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
        canonical = lookup.project_named(q.project, projects, cluster_id)
        if canonical is not None and canonical != q.project:
            update["project"] = canonical
    used: set[str] = set()
    # explicit scopes ("in X", "on X") first, then the loose tokens (bare words, "W (P, C)", "C/P/W"); a token
    # names a project or a cluster only when one of that name exists (FORMAT.md "Questions")
    for scope in [*q.scopes, *q.loose]:
        if not q.project and "project" not in update:
            project_name = lookup.project_named(scope, projects, cluster_id)
            if project_name is not None:
                update["project"] = project_name
                used.add(scope.lower())
                continue
        if cluster_id is None:
            match = lookup.named(scope, clusters)
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


def cluster_choices(clusters: Sequence[Cluster], only: set[str] | None = None) -> list[Choice]:
    return [
        Choice(label=c.name or c.uuid, field="cluster_id", value=c.uuid)
        for c in clusters
        if only is None or c.uuid in only
    ][:10]


async def ask_missing(
    d: Diagnosis, q: Question, missing: list[str], names: list[str], cluster_id: str | None, clusters: list[Cluster]
) -> Report:
    """One question naming every missing parameter, with every listable answer as a choice: the clusters
    (where the named workload exists, when it is known), or the projects that hold a workload by that name."""
    choices: list[Choice] = []
    strong = [n for n in names if q.workload_name or n in q.candidates]
    if "cluster" in missing:
        # never a search across clusters: the clusters are offered (those that have the named project, when it
        # is known), never the one where the workload's name exists
        holding = {p.cluster_id for p in d.projects if q.project and lookup.same_name(p.name, q.project)}
        choices = cluster_choices(clusters, {c for c in holding if c} or None)
    elif d.offer_choices and strong and not q.workload_id and "project" in missing and cluster_id:
        scope = [f"clusterId=={cluster_id}"]
        try:
            found = await asyncio.wait_for(lookup.lookup(d.client, strong, scope, gaps=d.gaps), d.deadline.remaining())
        except (ApiError, httpx.HTTPError, TimeoutError):
            found = {}
        held = sorted({w.project_name for ws in found.values() for w in ws if w.project_name})
        choices = [Choice(label=p, field="project", value=p) for p in held][:10]
    text = _missing_question(q, missing)
    if "project" in missing and cluster_id and not q.project:
        # "llama-ft-3 in vision on dgx-prod": vision is a project, on another cluster; say where it is
        here = next((c.name or c.uuid for c in clusters if c.uuid == cluster_id), cluster_id)
        for token in d.scope_words:
            where = [w for w in _clusters_having(token, d.projects, clusters) if w != here]
            if where:
                need, _, rest = text.partition(". ")
                text = f"{need}. Project '{token}' is on {', '.join(where)}, not on {here}. {rest}".strip()
                break
    unknown = [s for s in q.scopes if s.lower() not in {n.lower() for n in names}]
    if unknown and ("project" in missing or "cluster" in missing):
        # after the sentence that says what is needed: the first line of the message says that
        need, _, rest = text.partition(". ")
        text = f"{need}. I found no project or cluster named '{unknown[0]}'. {rest}".strip()
    return builder(d).needs_input(q, missing, text, choices)


async def not_found(d: Diagnosis, q: Question, cluster_id: str, by_id: bool, tried: Sequence[str] = ()) -> Report:
    """Nothing matched: if the cluster id itself is unknown, say so and ask for the cluster instead; else
    suggest the closest existing names in that project (newest failure first) as choices."""
    try:
        clusters = await asyncio.wait_for(d.client.list_clusters(), d.deadline.remaining())
    except (ApiError, httpx.HTTPError, TimeoutError):
        clusters = None
    if clusters is not None and clusters and not any(c.uuid == cluster_id for c in clusters):
        target = f"'{asked_name(q)}'" if asked_name(q) else "it"
        return builder(d).needs_input(
            q,
            ["cluster"],
            f"Which cluster is {target} on? There is no cluster with id {cluster_id}.",
            cluster_choices(clusters),
        )
    suggestions: list[tuple[str, str]] = []
    projects: list[lookup.ProjectInfo] | None = None
    existing: Sequence[Workload] = []
    elsewhere: dict[str, list[str]] = {}
    if not by_id and q.project:
        scope = [f"projectName=={q.project}", f"clusterId=={cluster_id}"]
        try:
            existing, projects, found = await asyncio.wait_for(
                asyncio.gather(
                    d.client.list_workloads(scope),
                    lookup.list_projects(d.client, None),
                    # the same names in the cluster's other projects: offered first, never used silently
                    lookup.lookup(d.client, list(tried or [q.workload_name or ""])[:3], [scope[1]]),
                ),
                d.deadline.remaining(),
            )
        except (ApiError, httpx.HTTPError, TimeoutError):
            existing, projects, found = [], None, {}
        for name, ws in found.items():
            held = sorted({w.project_name for w in ws if w.project_name and w.project_name != q.project})
            if held:
                elsewhere[name] = held
        for name in tried or [q.workload_name or ""]:
            for pick in lookup.suggest(name, existing, d.now):
                if pick not in suggestions:
                    suggestions.append(pick)
    here = [p for p in projects or [] if p.cluster_id in (None, cluster_id)]
    known = [p.name for p in here]
    cluster_name = next((c.name for c in clusters or [] if c.uuid == cluster_id and c.name), None)
    if known and q.project and lookup.project_named(q.project, here) is None:
        report = builder(d).not_found(
            q, cluster_id, by_id=by_id, tried=tried, projects=sorted(set(known)), cluster_name=cluster_name
        )
        where = _clusters_having(q.project, projects or [], clusters or [])
        if where:
            # never "no project named X" alone when one of that name exists on another cluster
            note = f" (a project '{q.project}' exists on {', '.join(where)})"
            report = report.model_copy(update={"headline": report.headline.replace(". ", note + ". ", 1)})
        return report
    return builder(d).not_found(
        q,
        cluster_id,
        by_id=by_id,
        tried=tried,
        suggestions=suggestions,
        cluster_name=cluster_name,
        elsewhere=elsewhere,
    )


async def select(d: Diagnosis, candidates: list[Workload], intent: str) -> tuple[Workload | None, Tier1 | None]:
    """Option B selection by intent (spec Step 1.1; FORMAT.md "Questions")."""
    ordered = sorted(
        candidates,
        key=lambda w: w.phase_updated_at or w.created_at or d.now,
        reverse=True,
    )
    if len(ordered) == 1:
        return ordered[0], None
    if intent == "terminal":
        terminal = [w for w in ordered if w.phase in TERMINAL_PHASES]
        pool = terminal or ordered
    else:
        active = [w for w in ordered if w.phase in ACTIVE_PHASES]
        symptom = named_symptom(d.question.text or "")
        if active:
            collected = await asyncio.gather(*(collect(d, w) for w in active))
            for w, t1 in zip(active, collected, strict=True):
                if confirms_symptom(d, w, t1, symptom):
                    return w, t1
        pool = ordered
    top = pool[0]
    ties = [w for w in pool if w.phase_updated_at == top.phase_updated_at]
    if len(ties) > 1:
        return None, None
    return top, None


def confirms_symptom(d: Diagnosis, workload: Workload, tier1: Tier1, symptom: Symptom | None = None) -> bool:
    """A direct failed-pod signal or a crash loop in the current run (status, conditions, events, pods).

    When the question names a symptom, only evidence of *that* symptom confirms it (issue 8 §2)."""
    signals = cls.drop_superseded(
        incident.current(
            workload, tier1, incident.run_signals(workload, tier1, d.now, d.client.spec_call_for(workload))
        )
    )
    if symptom is not None:
        return any(
            s.kind in SYMPTOM_KINDS[symptom] or (symptom == "init" and s.init and s.kind in DIRECT_KINDS)
            for s in signals
        )
    return any(s.kind in DIRECT_KINDS or s.kind in {Kind.CRASHLOOP, Kind.POD_ERROR} for s in signals)


def kube_for(d: Diagnosis, workload: Workload, tier1: Tier1, cluster_id: str) -> KubeConfig:
    """The Tier 2 access of the workload's own cluster (``WD_KUBE_CONTEXTS`` by cluster id, then by the name in
    the clusters list); an unavailable config naming the gap when that cluster has none."""
    cid = workload.cluster_id or cluster_id
    names = tier1.clusters.value
    name = next((c.name for c in names or [] if c.uuid == cid and c.name), None)
    return d.kube.for_cluster(cid, name, names_known=names is not None)


async def _nothing_list() -> list[lookup.ProjectInfo]:
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


async def _matches(d: Diagnosis, q: Question, names: list[str], scope: list[str]) -> dict[str, list[Workload]]:
    """The workloads of each of ``names`` that exist in ``scope`` (only the names that match): live first, then
    ``deleted=true`` (FORMAT.md), also when no live match fits a terminal question."""
    found = await asyncio.wait_for(lookup.lookup(d.client, names, scope, gaps=d.gaps), d.deadline.remaining())
    live = {n: ws for n, ws in found.items() if ws}
    terminal = q.effective_intent() != "current"
    if len(live) != 1 or (terminal and not any(w.phase in TERMINAL_PHASES for ws in live.values() for w in ws)):
        wanted = list(live) if len(live) == 1 else [n for n in names if n not in live] or names
        deleted = await asyncio.wait_for(
            lookup.lookup(d.client, wanted, scope, deleted=True, gaps=d.gaps), d.deadline.remaining()
        )
        for n, ws in deleted.items():
            if ws:
                live[n] = live.get(n, []) + ws
    return live


def _is_scope_name(name: str, q: Question) -> bool:
    """``name`` is the question's project or cluster name (case-insensitively)."""
    return name.lower() in {x.lower() for x in (q.project, q.cluster) if x}


def _clusters_having(project: str, projects: Sequence[lookup.ProjectInfo], clusters: Sequence[Cluster]) -> list[str]:
    """The names (else ids) of the clusters that have a project named ``project`` (case-insensitively)."""
    names = {c.uuid: c.name or c.uuid for c in clusters}
    ids = sorted({p.cluster_id for p in projects if p.cluster_id and lookup.same_name(p.name, project)})
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
