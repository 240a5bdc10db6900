"""Capture a real world as a snapshot (``shared/cases/FORMAT.md``): ``workload-doctor capture``.

:func:`capture_world` answers one question exactly as ``diagnose`` does, with the response recorder of
:mod:`diagnosis.http` switched on (Run:ai and OSMO through the guarded httpx transport, Tier 2 through
:class:`diagnosis.k8s.Tier2Source`). :func:`build_snapshot` (pure) turns what was read into a snapshot:

- ``runai``: ``clusters``, ``projects`` and one ``workloads`` entry per workload any list or read
  returned (Option B picks among them), each with the ``spec``, ``pods``, ``history``, ``events`` and
  ``metrics`` that were read (pages merged; a key that was never read is left out);
- ``kubernetes`` (when Tier 2 was configured): the pods, events, nodes and logs read;
- ``osmo``: ``workflows`` (``query``, ``logs``, ``task_logs``, ``events``, ``spec_template``, ``tasks``),
  ``pool_quota`` and ``resources``;
- a failed read keeps its status: ``null`` where FORMAT.md gives ``null`` that status, else a
  ``faults`` entry per path replaying the status of every attempt in order (``delay_ms: 0`` entries let
  the attempts that succeeded through). What FORMAT.md cannot express is said in ``description``;
- ``ask`` as given, ``expect`` from today's answer, ``now`` the diagnosis clock; every string passes
  :func:`diagnosis.redact.sanitize_tree` before it is written: redacted with what names it (its key, the
  ``name`` of its env pair, an annotation's key, the flag before it), not alone.
"""

from __future__ import annotations

import base64
import json
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from diagnosis.http import RecordedResponse, recording
from diagnosis.redact import sanitize_tree
from diagnosis.report import Report

#: The ``ask`` keys a capture writes (FORMAT.md ``ask``), by system.
RUNAI_ASK_KEYS = ("text", "cluster_id", "workload_id", "workload_name", "project", "intent", "lookback")
OSMO_ASK_KEYS = ("text", "workflow_id")
TOKEN_PATHS = frozenset({"/api/v1/token", "/api/v2/token", "/api/auth/jwt/access_token"})
#: Attempts the Tier 2 client makes for a retryable status (urllib3 ``total=3`` retries, see diagnosis.k8s).
K8S_ATTEMPTS = 4
K8S_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: A transport error (timeout, refused connection) cannot be served by the sandbox: it is captured as this status.
TRANSPORT_ERROR_STATUS = 504
_PASS = 0  # a fault token: this attempt was answered normally

_SPEC_SEGMENTS = {
    "trainings": "training",
    "workspaces": "workspace",
    "distributed": "distributed",
    "inferences": "inference",
    "distributed-inferences": "distributedinference",
}
_WORKLOAD = re.compile(r"^/api/v1/workloads/(?P<id>[^/]+)$")
_SPEC = re.compile(r"^/api/v1/workloads/(?P<seg>" + "|".join(_SPEC_SEGMENTS) + r")/(?P<id>[^/]+)$")
_SPEC_V2 = re.compile(r"^/api/v2/workloads/(?P<id>[^/]+)$")
_SUB = re.compile(r"^/api/v1/workloads/(?P<id>[^/]+)/(?P<sub>pods|history|events|metrics)$")
#: Every workload's pods (the neighbours on a node): kept as ``runai.other_pods``, which the sandbox serves there.
_ALL_PODS = "/api/v1/workloads/pods"
_K8S_POD = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$")
_K8S_PODS = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods$")  # a label's pods (every pod of a workload)
_K8S_LOG = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/log$")
_K8S_EVENTS = re.compile(r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?events$")  # a pod's, or a node's (all namespaces)
_K8S_NODE = re.compile(r"^/api/v1/nodes/(?P<name>[^/]+)$")
_OSMO_WF = re.compile(r"^/api/workflow/(?P<id>[^/]+)$")
_OSMO_SUB = re.compile(r"^/api/workflow/(?P<id>[^/]+)/(?P<sub>logs|events|spec|error_logs)$")
_OSMO_TASK = re.compile(r"^/api/workflow/(?P<id>[^/]+)/task/(?P<task>[^/]+)$")
_OSMO_PREFIXES = ("/api/workflow", "/api/task", "/api/pool", "/api/resources")


@dataclass
class _Read:
    """One recorded response, with its body decoded."""

    rec: RecordedResponse

    @property
    def path(self) -> str:
        return self.rec.path

    @property
    def ok(self) -> bool:
        return self.rec.status is not None and 200 <= self.rec.status < 300

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.rec.query if k == name), None)

    def json(self) -> Any:
        try:
            return json.loads(self.rec.body)
        except ValueError:
            return None

    def text(self) -> str:
        return self.rec.body.decode("utf-8", errors="replace")

    def attempts(self) -> list[int]:
        """The status of every attempt; a transport error as :data:`TRANSPORT_ERROR_STATUS`."""
        seen = list(self.rec.attempts) or [self.rec.status]
        if self.rec.system == "kubernetes" and self.rec.status in K8S_RETRY_STATUSES:
            seen = [self.rec.status] * K8S_ATTEMPTS  # urllib3 retried inside the read
        return [TRANSPORT_ERROR_STATUS if s is None else s for s in seen]


@dataclass
class _Notes:
    """What the snapshot cannot say exactly (written into ``description``)."""

    items: list[str] = field(default_factory=list)

    def add(self, note: str) -> None:
        if note not in self.items:
            self.items.append(note)


def usable(responses: Iterable[RecordedResponse]) -> list[RecordedResponse]:
    """The GETs that count: no token exchange, and no 401/403 that the client answered by logging in again
    and repeating the same request."""
    reads = [r for r in responses if r.method.upper() == "GET" and r.path not in TOKEN_PATHS]
    out: list[RecordedResponse] = []
    for i, r in enumerate(reads):
        if r.status in (401, 403) and any(
            (o.system, o.path, o.query) == (r.system, r.path, r.query) for o in reads[i + 1 :]
        ):
            continue
        out.append(r)
    return out


def _offset(read: _Read) -> int:
    try:
        return int(read.param("offset") or 0)
    except ValueError:
        return 0


def _pages(reads: list[_Read], key: str) -> list[Any]:
    """The items of the successful pages of one paged endpoint, in offset order (a page read twice counts once)."""
    by_offset: dict[int, list[Any]] = {}
    for read in reads:
        body = read.json()
        if read.ok:
            items = body.get(key) if isinstance(body, dict) else None
            by_offset[_offset(read)] = list(items or [])
    return [item for offset in sorted(by_offset) for item in by_offset[offset]]


def _unique(items: Iterable[Any], key: Any = None) -> list[Any]:
    seen: set[str] = set()
    out: list[Any] = []
    for item in items:
        k = key(item) if key else None
        mark = k if isinstance(k, str) and k else json.dumps(item, sort_keys=True, default=str)
        if mark not in seen:
            seen.add(mark)
            out.append(item)
    return out


def _name_of(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return ""
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


# -- Run:ai --------------------------------------------------------------------------------------------------


def _runai(reads: list[_Read], notes: _Notes, now: datetime) -> dict[str, Any]:
    clusters: list[Any] = []
    projects: list[Any] = []
    entries: OrderedDict[str, dict[str, Any]] = OrderedDict()
    listed_deleted: set[str] = set()
    listed_live: set[str] = set()
    subs: dict[tuple[str, str], list[_Read]] = {}
    other_pods: list[Any] = []
    for read in reads:
        body = read.json()
        path = read.path
        if path == "/api/v1/clusters":
            if read.ok:
                items = body.get("clusters") if isinstance(body, dict) else body
                clusters = _unique([*clusters, *(items if isinstance(items, list) else [])])
        elif path == "/api/v1/org-unit/projects":
            if read.ok and isinstance(body, dict):
                projects = _unique([*projects, *(body.get("projects") or [])])
        elif path == "/api/v1/workloads":
            if read.ok and isinstance(body, dict):
                deleted = (read.param("deleted") or "").lower() == "true"
                for item in body.get("workloads") or []:
                    if not isinstance(item, dict) or not item.get("id"):
                        continue
                    wid = str(item["id"])
                    entries.setdefault(wid, {"workload": item})
                    (listed_deleted if deleted else listed_live).add(wid)
        elif path == _ALL_PODS:
            if read.ok and isinstance(body, dict):
                other_pods = _unique(
                    [*other_pods, *(body.get("pods") or [])],
                    key=lambda p: str(p.get("id") or "") if isinstance(p, dict) else "",
                )
        elif m := _SPEC.match(path):
            subs.setdefault((unquote(m["id"]), "spec"), []).append(read)
        elif m := _SPEC_V2.match(path):
            subs.setdefault((unquote(m["id"]), "spec"), []).append(read)
        elif m := _SUB.match(path):
            subs.setdefault((unquote(m["id"]), m["sub"]), []).append(read)
        elif m := _WORKLOAD.match(path):
            if read.ok and isinstance(body, dict) and body.get("id"):
                wid = str(body["id"])
                entry = entries.setdefault(wid, {"workload": body})
                entry["workload"] = body  # the detailed object wins over a list item
        else:
            notes.add(f"GET {path} was read but has no place in a snapshot")
    for wid in sorted(listed_deleted - listed_live):
        wl = entries[wid]["workload"]
        if not wl.get("deletedAt"):
            wl["deletedAt"] = wl.get("phaseUpdatedAt") or _iso(now)
            notes.add(
                f"workload {wl.get('name')} was listed only with deleted=true but has no deletedAt: "
                "deletedAt was set so the snapshot lists it the same way"
            )
    for (wid, sub), group in subs.items():
        owner = entries.get(wid)
        if owner is None:
            notes.add(f"the {sub} of workload {wid} were read, but the workload itself could not be read")
            continue
        _runai_sub(owner, sub, group, notes)
    section: dict[str, Any] = {"clusters": clusters, "projects": projects, "workloads": list(entries.values())}
    # a pod of a workload the snapshot holds is served from that workload's own pods list
    others = [p for p in other_pods if isinstance(p, dict) and str(p.get("workloadId")) not in entries]
    if others:
        section["other_pods"] = others
    return section


def _runai_sub(entry: dict[str, Any], sub: str, group: list[_Read], notes: _Notes) -> None:
    ok = [r for r in group if r.ok]
    name = entry["workload"].get("name")
    if sub == "spec":
        entry["spec"] = ok[-1].json() if ok else None
    elif sub == "pods":
        live = _pages([r for r in ok if (r.param("deleted") or "").lower() != "true"], "pods")
        gone = _pages([r for r in ok if (r.param("deleted") or "").lower() == "true"], "pods")
        for pod in gone:
            if isinstance(pod, dict) and not pod.get("deletedAt"):
                pod["deletedAt"] = entry["workload"].get("deletedAt") or entry["workload"].get("phaseUpdatedAt")
                notes.add(
                    f"pods of {name} listed only with deleted=true carry no deletedAt: deletedAt was set so the "
                    "snapshot lists them the same way"
                )
        entry["pods"] = _unique([*live, *gone], key=lambda p: str(p.get("id") or "") if isinstance(p, dict) else "")
        if not ok:
            entry["pods"] = None
    elif sub == "history":
        entry["history"] = _pages(ok, "records") if ok else None
    elif sub == "events":
        entry["events"] = _pages(ok, "events") if ok else None
    elif sub == "metrics":
        if not ok:
            entry["metrics"] = None
            return
        merged: OrderedDict[str, dict[str, Any]] = OrderedDict()
        for read in ok:
            body = read.json()
            for m in (body.get("measurements") if isinstance(body, dict) else None) or []:
                if not isinstance(m, dict):
                    continue
                key = json.dumps({k: v for k, v in m.items() if k != "values"}, sort_keys=True, default=str)
                have = merged.setdefault(key, {**m, "values": []})
                have["values"] = _unique([*have["values"], *(m.get("values") or [])])
        for m in merged.values():
            m["values"].sort(key=lambda v: str(v.get("timestamp") or "") if isinstance(v, dict) else "")
        entry["metrics"] = {"measurements": list(merged.values())}


# -- Tier 2 --------------------------------------------------------------------------------------------------


def _kube(reads: list[_Read], notes: _Notes) -> dict[str, Any]:
    pods: OrderedDict[str, dict[str, Any]] = OrderedDict()
    events: list[Any] = []
    nodes: OrderedDict[str, dict[str, Any]] = OrderedDict()
    logs: OrderedDict[tuple[str, str, str, bool], dict[str, Any]] = OrderedDict()
    for read in reads:
        path = read.path
        if m := _K8S_LOG.match(path):
            if read.ok:
                container = read.param("container") or ""
                previous = (read.param("previous") or "").lower() == "true"
                key = (m["ns"], m["name"], container, previous)
                # surrogateescape keeps bytes that are not UTF-8; they become text_b64 after redaction
                text = read.rec.body.decode("utf-8", errors="surrogateescape")
                logs[key] = {
                    "namespace": m["ns"],
                    "pod": m["name"],
                    "container": container,
                    "previous": previous,
                    "text": text,
                }
        elif m := _K8S_POD.match(path):
            body = read.json()
            if read.ok and isinstance(body, dict):
                pods[f"{m['ns']}/{m['name']}"] = body
        elif m := _K8S_PODS.match(path):
            body = read.json()
            for item in (body.get("items") if read.ok and isinstance(body, dict) else None) or []:
                name = (item.get("metadata") or {}).get("name") if isinstance(item, dict) else None
                if name:
                    pods.setdefault(f"{m['ns']}/{name}", item)  # a pod read by name is kept as it was read
        elif _K8S_EVENTS.match(path):
            body = read.json()
            if read.ok and isinstance(body, dict):
                events = _unique(
                    [*events, *(body.get("items") or [])],
                    key=lambda e: str((e.get("metadata") or {}).get("uid") or "") if isinstance(e, dict) else "",
                )
        elif m := _K8S_NODE.match(path):
            body = read.json()
            if read.ok and isinstance(body, dict):
                nodes[m["name"]] = body
        else:
            notes.add(f"Tier 2 GET {path} was read but has no place in a snapshot")
    for ns, pod, _, _ in logs:
        if f"{ns}/{pod}" not in pods:
            # The sandbox serves a pod's logs only for a pod it knows: a stub, while the failed read stays a fault.
            pods[f"{ns}/{pod}"] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": ns}}
            notes.add(f"pod {ns}/{pod} could not be read but its logs could: the snapshot holds a stub of the pod")
    return {"pods": list(pods.values()), "events": events, "nodes": list(nodes.values()), "logs": list(logs.values())}


# -- OSMO ----------------------------------------------------------------------------------------------------


def _query_from_list(item: dict[str, Any]) -> dict[str, Any]:
    """A workflow ``query`` object from a ``GET /api/workflow`` list entry (the fields a list entry has)."""
    out = {k: v for k, v in item.items() if k not in ("user", "workflow_uuid", "error_logs")}
    out["submitted_by"] = item.get("user")
    out["uuid"] = item.get("workflow_uuid")
    return out


def _osmo(reads: list[_Read], notes: _Notes) -> dict[str, Any]:
    """The snapshot's ``osmo`` section from the OSMO reads: ``{"workflows": [...]}``, with ``pool_quota`` and
    ``resources`` when they were read (None when every such read failed)."""
    found = _OsmoCapture(notes)
    for read in reads:  # the workflow objects first: the other reads name them by ID or UUID
        found.collect_workflow(read)
    for read in reads:
        found.collect_read(read)
    return found.section()


class _OsmoCapture:
    """The OSMO section being collected: the workflow entries by name (and the IDs and UUIDs naming them), the
    pool-quota and resources answers, and the per-task events of each workflow."""

    def __init__(self, notes: _Notes) -> None:
        self.notes = notes
        self.workflows: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.alias: dict[str, str] = {}
        self.quota: list[Any] = []
        self.resources: list[Any] = []
        self.quota_read = self.resources_read = False
        self.events_by_task: dict[str, list[str]] = {}

    def remember(self, query: dict[str, Any], asked: str | None = None) -> None:
        """A workflow's ``query``, from a list entry or (``asked``: the ID asked) its own read."""
        name = str(query.get("name") or asked or "")
        if not name:
            return
        entry = self.workflows.setdefault(name, {"query": query})
        if asked is not None:
            entry["query"] = query  # GET /api/workflow/{id} wins over a list entry
        for key in (name, query.get("uuid"), asked):
            if key:
                self.alias[str(key)] = name

    def collect_workflow(self, read: _Read) -> None:
        """The workflow objects of a ``GET /api/workflow`` list or a ``GET /api/workflow/{id}``."""
        body = read.json()
        if read.path == "/api/workflow" and read.ok and isinstance(body, dict):
            for item in body.get("workflows") or []:
                if isinstance(item, dict) and item.get("name"):
                    if str(item["name"]) not in self.workflows:
                        self.remember(_query_from_list(item))
        elif (m := _OSMO_WF.match(read.path)) and read.ok and isinstance(body, dict):
            self.remember(body, unquote(m["id"]))

    def collect_read(self, read: _Read) -> None:
        """What any other read adds: the pool quota, the resources, or a part of the workflow it names."""
        path = read.path
        if path in ("/api/workflow",) or _OSMO_WF.match(path):
            return
        if path == "/api/pool_quota":
            self.quota_read = True
            if read.ok:
                self.quota.append(read.json())
            return
        if path == "/api/resources":
            self.resources_read = True
            if read.ok:
                self.resources.append(read.json())
            return
        m = _OSMO_SUB.match(path) or _OSMO_TASK.match(path)
        wid = unquote(m["id"]) if m else (read.param("workflow_id") if path == "/api/task" else None)
        if wid is None:
            self.notes.add(f"GET {path} was read but has no place in a snapshot")
            return
        entry = self.workflows.get(self.alias.get(wid, wid))
        if entry is None:
            self.notes.add(f"GET {path} was read for workflow {wid}, which itself could not be read")
            return
        self.collect_workflow_part(read, m, wid, entry)

    def collect_workflow_part(self, read: _Read, m: re.Match[str] | None, wid: str, entry: dict[str, Any]) -> None:
        """A read of workflow ``wid``'s tasks, logs, events, spec or error logs, into its ``entry``."""
        if read.path == "/api/task":
            body = read.json()
            if read.ok and isinstance(body, dict):
                entry["tasks"] = [t for t in body.get("tasks") or [] if isinstance(t, dict)]
        elif m is not None and "task" in m.groupdict():
            body = read.json()
            if read.ok and isinstance(body, dict):
                task = unquote(m["task"])
                tasks = [t for t in entry.setdefault("tasks", []) if t.get("task_name") != task]
                entry["tasks"] = [*tasks, body]
        elif m is not None and m["sub"] == "logs":
            self.collect_logs(read, wid, entry)
        elif m is not None and m["sub"] == "events":
            task_name = read.param("task_name")
            if task_name:
                if read.ok:
                    self.events_by_task.setdefault(self.alias.get(wid, wid), []).append(read.text())
            else:
                entry["events"] = read.text() if read.ok else None
        elif m is not None and m["sub"] == "spec":
            key = "spec_template" if (read.param("use_template") or "").lower() == "true" else "spec"
            entry[key] = read.text() if read.ok else None
        elif m is not None and m["sub"] == "error_logs":
            task_name = read.param("task_name") or ""
            if read.ok:
                entry.setdefault("error_logs", {})[task_name] = read.text()

    def collect_logs(self, read: _Read, wid: str, entry: dict[str, Any]) -> None:
        """A workflow's log (or one task's, into ``task_logs``)."""
        task_name = read.param("task_name")
        if task_name:
            if read.ok:
                entry.setdefault("task_logs", {})[task_name] = read.text()
        else:
            entry["logs"] = read.text() if read.ok else None
        if read.ok and not read.rec.complete and not _alive(entry):
            self.notes.add(f"the logs of {wid} were cut by the client while captured; the snapshot holds what was read")

    def section(self) -> dict[str, Any]:
        """The ``osmo`` section: a workflow read only task by task gets those tasks' events as its own."""
        for name, texts in self.events_by_task.items():
            entry = self.workflows[name]
            if "events" not in entry:
                entry["events"] = "".join(t if t.endswith("\n") or not t else t + "\n" for t in _unique(texts))
        out: dict[str, Any] = {"workflows": list(self.workflows.values())}
        if self.quota_read:
            out["pool_quota"] = _merge_quota(self.quota) if self.quota else None
        if self.resources_read:
            out["resources"] = _merge_resources(self.resources) if self.resources else None
        return out


def _alive(entry: dict[str, Any]) -> bool:
    return str((entry.get("query") or {}).get("status") or "") in ("PENDING", "RUNNING", "WAITING")


def _merge_quota(bodies: list[Any]) -> Any:
    """One ``pool_quota`` from several answers (each filtered by ``pools``): the node sets' pools united."""
    first = next((b for b in bodies if isinstance(b, dict)), None)
    if first is None:
        return bodies[0]
    out = dict(first)
    sets: list[dict[str, Any]] = [dict(ns) for ns in first.get("node_sets") or [] if isinstance(ns, dict)]
    for body in bodies[1:]:
        for ns in (body.get("node_sets") if isinstance(body, dict) else None) or []:
            if not isinstance(ns, dict):
                continue
            names = {p.get("name") for s in sets for p in s.get("pools") or [] if isinstance(p, dict)}
            extra = [p for p in ns.get("pools") or [] if isinstance(p, dict) and p.get("name") not in names]
            if extra:
                sets.append({**ns, "pools": extra})
    out["node_sets"] = sets
    return out


def _merge_resources(bodies: list[Any]) -> Any:
    first = next((b for b in bodies if isinstance(b, dict)), None)
    if first is None:
        return bodies[0]
    nodes = [n for b in bodies if isinstance(b, dict) for n in b.get("resources") or []]
    return {**first, "resources": _unique(nodes)}


# -- faults --------------------------------------------------------------------------------------------------


def _served(snapshot: dict[str, Any], read: _Read) -> int | None:
    """The status the sandbox answers ``read`` with from ``snapshot`` alone (no faults); None when unknown."""
    path = read.path
    if read.rec.system == "kubernetes":
        kube = snapshot.get("kubernetes") or {}
        pods = {_name_of(p) for p in kube.get("pods") or []}
        if m := _K8S_LOG.match(path):
            if f"{m['ns']}/{m['name']}" not in pods:
                return 404
            container, previous = read.param("container"), (read.param("previous") or "").lower() == "true"
            listed = any(
                lg.get("pod") == m["name"]
                and lg.get("namespace", m["ns"]) == m["ns"]
                and (container is None or lg.get("container") == container)
                and bool(lg.get("previous")) == previous
                for lg in kube.get("logs") or []
            )
            return 200 if listed else 400
        if m := _K8S_POD.match(path):
            return 200 if f"{m['ns']}/{m['name']}" in pods else 404
        if _K8S_EVENTS.match(path) or _K8S_PODS.match(path):
            return 200
        if m := _K8S_NODE.match(path):
            names = {(n.get("metadata") or {}).get("name") for n in kube.get("nodes") or []}
            return 200 if m["name"] in names else 404
        return None
    if path.startswith(_OSMO_PREFIXES):
        return _served_osmo(snapshot.get("osmo") or {}, read)
    runai = snapshot.get("runai") or {}
    by_id = {str(e["workload"].get("id")): e for e in runai.get("workloads") or []}
    if path in ("/api/v1/clusters", "/api/v1/org-unit/projects", "/api/v1/workloads", _ALL_PODS):
        return 200
    if m := _SPEC.match(path):
        entry = by_id.get(unquote(m["id"]))
        if entry is None or entry.get("spec") is None:
            return 404
        kind = re.sub(r"[-_ ]", "", str(entry["workload"].get("type") or "")).lower().removesuffix("workload")
        kind = "workspace" if kind == "interactive" else kind
        return 200 if kind == _SPEC_SEGMENTS[m["seg"]] else 404
    if m := _SPEC_V2.match(path):
        entry = by_id.get(unquote(m["id"]))
        if entry is None or not isinstance(entry.get("spec"), dict):
            return 404
        return 200 if entry["workload"].get("sourceApi") == "WorkloadsV2" else 404
    if m := _SUB.match(path):
        entry = by_id.get(unquote(m["id"]))
        if entry is None:
            return 404
        if m["sub"] == "events" and "events" not in entry:
            return 200
        return 500 if entry.get(m["sub"]) is None else 200
    if m := _WORKLOAD.match(path):
        return 200 if unquote(m["id"]) in by_id else 404
    return None


def _served_osmo(osmo: dict[str, Any], read: _Read) -> int | None:
    path = read.path
    if path == "/api/workflow" or path == "/api/task":
        return 200
    if path in ("/api/pool_quota", "/api/resources"):
        return 500 if osmo.get(path.rsplit("/", 1)[1]) is None else 200
    by_id: dict[str, dict[str, Any]] = {}
    for entry in osmo.get("workflows") or []:
        query = entry.get("query") or {}
        for key in (query.get("name"), query.get("uuid")):
            if key:
                by_id[str(key)] = entry
    m = _OSMO_WF.match(path) or _OSMO_SUB.match(path) or _OSMO_TASK.match(path)
    if m is None:
        return None
    entry = by_id.get(unquote(m["id"]))
    if entry is None:
        return 400
    groups = m.groupdict()
    if "task" in groups:
        if isinstance(entry.get("tasks"), list):
            names = {t.get("task_name") or t.get("name") for t in entry["tasks"] if isinstance(t, dict)}
            return 200 if unquote(m["task"]) in names else 400
        return None  # derived from the spec template
    sub = groups.get("sub")
    if sub is None:
        return 200
    if sub == "logs":
        task = read.param("task_name")
        if task and task in (entry.get("task_logs") or {}):
            return 200
        return 500 if entry.get("logs") is None else 200
    if sub == "events":
        return 500 if entry.get("events") is None else 200
    if sub == "error_logs":
        texts = entry.get("error_logs")
        if not isinstance(texts, dict):
            return 200  # the sandbox lets the task's log stand in for its error log
        task, retry = read.param("task_name") or "", read.param("retry_id")
        return 200 if task in texts or f"{task} retry-{retry}" in texts else 400
    template = (read.param("use_template") or "").lower() == "true"
    text = entry.get("spec_template") if template else entry.get("spec", entry.get("spec_template"))
    return 500 if text is None else 200


def _glob(path: str) -> str:
    """``path`` as an fnmatch pattern that matches only itself."""
    return re.sub(r"([*?\[])", r"[\1]", path)


def _faults(snapshot: dict[str, Any], reads: list[_Read], notes: _Notes) -> list[dict[str, Any]]:
    """Faults that make the sandbox answer every attempt of every read with the status it had, in order."""
    by_path: OrderedDict[str, list[int]] = OrderedDict()
    failing: set[str] = set()
    for read in reads:
        served = _served(snapshot, read)
        attempts = read.attempts()
        if served is None:
            if any(a >= 300 for a in attempts):
                notes.add(f"GET {read.path} answered HTTP {attempts[-1]}, which the snapshot cannot reproduce")
            continue
        tokens = [_PASS if a == served else a for a in attempts]
        by_path.setdefault(read.path, []).extend(tokens)
        if any(tokens):
            failing.add(read.path)
        if read.rec.status is None:
            notes.add(
                f"GET {read.path} failed without an HTTP answer ({read.rec.error or 'transport error'}): "
                f"the snapshot answers HTTP {TRANSPORT_ERROR_STATUS} instead"
            )
    faults: list[dict[str, Any]] = []
    for path, tokens in by_path.items():
        if path not in failing:
            continue
        while tokens and tokens[-1] == _PASS:
            tokens.pop()
        runs: list[list[int]] = []
        for token in tokens:
            if runs and runs[-1][0] == token:
                runs[-1][1] += 1
            else:
                runs.append([token, 1])
        for token, times in runs:
            if token == _PASS:
                faults.append({"path": _glob(path), "delay_ms": 0, "times": times})
            else:
                faults.append({"path": _glob(path), "status": token, "times": times})
    return faults


# -- the snapshot ------------------------------------------------------------------------------------------


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "question"


_NO_QUOTE = re.compile(r"://|127\.0\.0\.1|localhost|\[REDACTED\]|withheld|^\d{4}-\d\d-\d\d[T ]\d", re.I)
#: A value worth quoting: it holds a digit, a CamelCase reason (OOMKilled, ImagePullBackOff) or a name's punctuation.
_QUOTABLE = re.compile(r"\d|[a-z][A-Z]|[-./:]")


def expect_from(report: Report) -> dict[str, Any]:
    """``expect`` from today's answer: outcome, category, recurring, and up to three short evidence values
    (exit codes, reasons, quantities, names) quoted verbatim in the report, in the report's order."""
    from diagnosis.render import render_text

    out: dict[str, Any] = {"outcome": report.outcome.value}
    if report.category is not None:
        out["category"] = report.category.value
    if report.recurring is not None:
        out["recurring"] = report.recurring
    text = render_text(report)
    candidates = [
        v
        for v in (e.value.strip() for e in report.evidence)
        if 2 <= len(v) <= 60 and v in text and _QUOTABLE.search(v) and not _NO_QUOTE.search(v)
    ]
    mentions = _unique(candidates)[:3]
    if mentions:
        out["mentions"] = mentions
    return out


def _subject(ask: dict[str, Any]) -> str:
    parts = []
    if ask.get("workflow_id"):
        parts.append(f"OSMO workflow {ask['workflow_id']}")
    if ask.get("workload_name"):
        parts.append(f"workload {ask['workload_name']}")
    if ask.get("workload_id"):
        parts.append(f"workload id {ask['workload_id']}")
    if ask.get("project"):
        parts.append(f"project {ask['project']}")
    if ask.get("cluster_id"):
        parts.append(f"cluster {ask['cluster_id']}")
    keys = ", ".join(parts)
    if ask.get("text"):
        return f'"{ask["text"]}"' + (f" ({keys})" if keys else "")
    return keys or "a question"


def _describe(ask: dict[str, Any], report: Report, reads: list[_Read], notes: _Notes, captured_at: datetime) -> str:
    verdict = report.outcome.value + (f" {report.category.value}" if report.category else "")
    headline = " ".join(report.headline.split())
    if len(headline) > 240:
        headline = headline[:239] + "…"
    kube = sum(1 for r in reads if r.rec.system == "kubernetes")
    failed = sum(1 for r in reads if not r.ok)
    text = (
        f"Captured by workload-doctor capture on {captured_at:%Y-%m-%d}: {_subject(ask)}. "
        f"Today's answer: {verdict}: {headline} "
        f"({len(reads) - kube} API and {kube} Tier 2 responses recorded; {failed} answered an error.)"
    )
    if notes.items:
        text += " Not exactly reproducible: " + "; ".join(notes.items) + "."
    return text


def _tier2_available(kube: Any, report: Report) -> bool:
    if kube is None:
        return False
    ident = report.identity
    for_cluster = getattr(kube, "for_cluster", None)
    if callable(for_cluster) and ident is not None and ident.cluster_id:
        try:
            return bool(for_cluster(ident.cluster_id, ident.cluster_name).available)
        except Exception:
            return bool(kube.available)
    return bool(kube.available)


def build_snapshot(
    responses: Sequence[RecordedResponse],
    *,
    ask: dict[str, Any],
    report: Report,
    now: datetime,
    system: str,
    tier2: bool,
    captured_at: datetime,
) -> dict[str, Any]:
    """The snapshot of one captured diagnosis (pure: no I/O). ``system`` is ``"runai"`` or ``"osmo"``;
    ``tier2`` whether Tier 2 was configured for it (a ``kubernetes`` section is written then, or when any Tier 2
    read was made); ``captured_at`` the wall clock of the capture (``source``)."""
    reads = [_Read(r) for r in usable(responses)]
    notes = _Notes()
    http = [r for r in reads if r.rec.system != "kubernetes"]
    kube = [r for r in reads if r.rec.system == "kubernetes"]
    osmo_reads = [r for r in http if r.path.startswith(_OSMO_PREFIXES)]
    runai_reads = [r for r in http if not r.path.startswith(_OSMO_PREFIXES)]
    keys = OSMO_ASK_KEYS if system == "osmo" else RUNAI_ASK_KEYS
    clean_ask = {k: ask[k] for k in keys if ask.get(k) not in (None, "")}
    named = report.identity
    ident = (
        clean_ask.get("workflow_id")
        or clean_ask.get("workload_name")
        or (named.workflow_id or named.workload_name if named is not None else None)
        or clean_ask.get("workload_id")
    )
    snapshot: dict[str, Any] = {
        "format": "snapshot/1",
        "id": f"captured-{_slug(str(ident or clean_ask.get('text') or system))}-{now.astimezone(UTC):%Y%m%d-%H%M%S}",
        "description": "",
        "source": f"captured by workload-doctor capture {captured_at:%Y-%m-%d}",
        "now": _iso(now),
    }
    if system == "runai" or runai_reads:
        snapshot["runai"] = _runai(runai_reads, notes, now)
    if tier2 or kube:
        snapshot["kubernetes"] = _kube(kube, notes)
    if system == "osmo" or osmo_reads:
        snapshot["osmo"] = _osmo(osmo_reads, notes)
    faults = _faults(snapshot, reads, notes)
    if faults:
        snapshot["faults"] = faults
    snapshot["ask"] = clean_ask
    snapshot["expect"] = expect_from(report)
    snapshot["description"] = _describe(clean_ask, report, reads, notes, captured_at)
    return _with_binary_logs(sanitize_tree(snapshot))


def _with_binary_logs(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Logs that are not valid UTF-8 (kept with surrogate escapes through redaction) become ``text_b64``."""
    for log in (snapshot.get("kubernetes") or {}).get("logs") or []:
        text = log.get("text")
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                log.pop("text")
                log["text_b64"] = base64.b64encode(text.encode("utf-8", errors="surrogateescape")).decode("ascii")
    return snapshot


def ask_of(question: Any) -> dict[str, Any]:
    """The ``ask`` keys of a :class:`~diagnosis.question.Question` as a conversation built it (explicit values,
    the text, the channel's defaults): what a replay of its snapshot is asked. A cluster known only by name is
    given as ``cluster_id`` (the CLI takes an exact name there too)."""
    intent = question.intent or (question.effective_intent() if question.kind == "runai" else None)
    return {
        "text": question.text,
        "cluster_id": question.cluster_id or question.cluster,
        "workload_id": question.workload_id,
        "workload_name": question.workload_name,
        "project": question.project,
        "intent": getattr(intent, "value", intent),
        "lookback": question.lookback,
        "workflow_id": question.workflow_id,
    }


def world_of(
    responses: Sequence[RecordedResponse], question: Any, report: Report, backends: Any, now: datetime
) -> dict[str, Any]:
    """The redacted snapshot of one diagnosis already made (pure: no new read): the ``responses`` it recorded,
    ``question`` as its ``ask``, ``now`` its clock. What ``capture`` writes; the bot keeps it with an answer
    (issue 28)."""
    system = backends.system_for(question)
    return build_snapshot(
        responses,
        ask=ask_of(question),
        report=report,
        now=now,
        system=system,
        tier2=system == "runai" and _tier2_available(backends.kube, report),
        captured_at=datetime.now(UTC),
    )


async def capture_world(question: Any, ask: dict[str, Any], backends: Any) -> tuple[dict[str, Any], Report]:
    """Answer ``question`` (a :class:`~diagnosis.question.Question`) with ``backends`` while recording every
    response, and return the snapshot of what was read with the report. ``ask`` holds the keys the question
    was given (written as the snapshot's ``ask``); the diagnosis clock is ``backends.now()``, read once."""
    from diagnosis.answer import answer

    now = backends.now()
    backends.now = lambda: now
    with recording() as recorder:
        report = await answer(question, backends)
    system = backends.system_for(question)
    snapshot = build_snapshot(
        recorder.responses,
        ask=ask,
        report=report,
        now=now,
        system=system,
        tier2=system == "runai" and _tier2_available(backends.kube, report),
        captured_at=datetime.now(UTC),
    )
    return snapshot, report
