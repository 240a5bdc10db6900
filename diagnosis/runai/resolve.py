"""Step 1 resolution against the control plane (issue 11 §1): what the text's candidates name.

The parser (:mod:`diagnosis.question`) only proposes: UUIDs, bare "in X" / "on X" scopes and workload-name
candidates. Here each is checked against what the Run:ai API says exists, never guessed:

- a UUID is a cluster when it is one of the clusters (``GET /api/v1/clusters``), else a workload id;
- a scope names a project or a cluster when it equals (case-insensitively) the name of one that exists;
- several workload candidates are looked up concurrently (one round trip): the one that exists decides;
- nothing found: the closest existing names in that project are suggested (``rapidfuzz``), newest failure first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rapidfuzz import fuzz, process

from diagnosis.fetched import Fetched
from diagnosis.report import Gap
from diagnosis.runai.client import RunaiClient
from diagnosis.runai.models import TERMINAL_PHASES, Cluster, Records, Workload

#: A suggestion is offered only when at least this similar (rapidfuzz WRatio, 0-100).
SUGGEST_SCORE = 72
MAX_SUGGESTIONS = 5


@dataclass
class ProjectInfo:
    """A project of ``GET /api/v1/org-unit/projects``: its name, cluster and the quota fields it carries (raw)."""

    name: str
    cluster_id: str | None
    raw: dict[str, Any] = field(default_factory=dict)


async def list_projects(client: RunaiClient, cluster_id: str | None) -> list[ProjectInfo]:
    """Every project (of one cluster when ``cluster_id`` is known), with the raw fields kept for quota."""
    params: dict[str, Any] = {"filterBy": f"clusterId=={cluster_id}"} if cluster_id else {}
    raw = await client._paged("/api/v1/org-unit/projects", "projects", params)
    out = []
    for p in raw:
        if isinstance(p, dict) and isinstance(p.get("name"), str):
            out.append(ProjectInfo(name=p["name"], cluster_id=p.get("clusterId"), raw=p))
    return out


def named(name: str, items: Sequence[Any], attr: str = "name") -> Any | None:
    """The one item whose name equals ``name`` exactly, else case-insensitively; None when none or several."""
    exact = [i for i in items if getattr(i, attr, None) == name]
    if len(exact) == 1:
        return exact[0]
    folded = [i for i in items if (getattr(i, attr, None) or "").casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else None


def project_named(name: str, projects: Sequence[ProjectInfo], cluster_id: str | None = None) -> str | None:
    """The API's own spelling of project ``name`` (FORMAT.md "Questions": names are matched case-insensitively),
    among the projects of ``cluster_id`` (every project when None); None when no project has that name, or when
    several spellings differ only in case and none is exact."""
    mine = [p for p in projects if cluster_id is None or p.cluster_id in (None, cluster_id)]
    if any(p.name == name for p in mine):
        return name
    spellings = {p.name for p in mine if p.name.casefold() == name.casefold()}
    return spellings.pop() if len(spellings) == 1 else None


def needs_spelling(project: str | None) -> bool:
    """Whether a typed project name must be read from the projects list before a workload filter uses it: one
    with capitals ("NLP"). Run:ai project names are lowercase (they name the ``runai-<project>`` namespace), so a
    lowercase one is tried as typed and costs no round trip; the not-found path still folds it
    (:func:`project_named`) before saying anything is missing."""
    return bool(project) and project != (project or "").lower()


def same_name(a: str | None, b: str | None) -> bool:
    """Two names of one project, cluster or workload: equal case-insensitively (FORMAT.md "Questions")."""
    return a is not None and b is not None and a.casefold() == b.casefold()


def cluster_of_uuid(uuid: str, clusters: Sequence[Cluster]) -> Cluster | None:
    return next((c for c in clusters if c.uuid.lower() == uuid.lower()), None)


async def lookup(
    client: RunaiClient,
    names: Sequence[str],
    scope: list[str],
    *,
    deleted: bool = False,
    gaps: list[Gap] | None = None,
) -> dict[str, list[Workload]]:
    """Each name's workloads in ``scope`` (``projectName==…``, ``clusterId==…`` filters), all names at once.

    A list the server paged wrongly (records served again, a cursor that cycled, no end) is appended to ``gaps``
    as what it left out (issue 15 §1): a choice among 200 copies is never offered silently."""
    reads = [client.list_workloads([f"name=={n}", *scope], deleted=deleted) for n in names]
    results = await asyncio.gather(*reads, return_exceptions=True)
    out: dict[str, list[Workload]] = {}
    for n, read, r in zip(names, reads, results, strict=True):
        if isinstance(r, BaseException):
            if len(names) == 1:
                raise r
            continue  # a failed look-up of one extra candidate is not the answer; the others decide
        out[n] = [w for w in r if same_name(w.name, n)]
        if gaps is not None and isinstance(r, Records) and (r.repeated or r.stopped):
            gaps.append(Gap(what=f"workloads named {n}", why=Fetched(read.call, why=r.skipped_text()).cited_why))
    return out


def suggest(name: str, workloads: Sequence[Workload], now: datetime) -> list[tuple[str, str]]:
    """The closest existing names to ``name`` as ``(name, label)``: the closest first, the newest failure breaking
    a tie (FORMAT.md "Questions": "Did you mean").

    The label says the newest phase and how long ago: ``bert-ft (Failed 2 h ago)``."""
    newest: dict[str, Workload] = {}
    for w in workloads:
        if not w.name:
            continue
        have = newest.get(w.name)
        if have is None or (w.phase_updated_at or now) > (have.phase_updated_at or now):
            newest[w.name] = w
    if not newest:
        return []
    matches = process.extract(name, list(newest), scorer=fuzz.WRatio, limit=20, score_cutoff=SUGGEST_SCORE)
    scores = {m[0]: m[1] for m in matches if m[0] != name}

    def key(n: str) -> tuple[float, int, float]:
        w = newest[n]
        failed = w.phase in TERMINAL_PHASES and w.phase not in {"Completed", "Succeeded"}
        at = (w.phase_updated_at or w.created_at or now).timestamp()
        return (-round(scores[n], 1), 0 if failed else 1, -at)

    out = []
    for n in sorted(scores, key=key)[:MAX_SUGGESTIONS]:
        w = newest[n]
        out.append((n, f"{n} ({w.phase or 'unknown phase'} {ago(w.phase_updated_at, now)})"))
    return out


def ago(at: datetime | None, now: datetime) -> str:
    """``2 h ago``, ``15 min ago``, ``3 d ago``."""
    if at is None:
        return "at an unknown time"
    seconds = max(0, int((now - at).total_seconds()))
    if seconds < 3600:
        return f"{max(1, seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"
