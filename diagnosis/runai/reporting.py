"""Building the :class:`~diagnosis.report.Report` of a Run:ai diagnosis (spec Step 5).

Verdict first, then identity, quantified evidence citing the call it came from, recurrence,
the recommended next action (never performed), what could not be seen, and console links.
Requested or limited memory is never presented as a measured peak.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from diagnosis.k8s import Tier2Evidence
from diagnosis.question import Question
from diagnosis.redact import sanitize
from diagnosis.report import (
    Category,
    Choice,
    Confidence,
    EvidenceItem,
    Excerpt,
    Gap,
    Identity,
    Link,
    Outcome,
    Recurrence,
    Report,
)
from diagnosis.runai.classify import Finding, PodOrder, confidence, signal_phrases
from diagnosis.runai.memory import memory_evidence
from diagnosis.runai.models import Cluster, Workload
from diagnosis.runai.signals import (
    Kind,
    Signal,
    gpu_hardware_fault,
    log_error_lines,
    missing_objects,
    start_error_cause,
)
from diagnosis.units import bytes_text, quantity_bytes

if TYPE_CHECKING:
    from diagnosis.runai.procedure import Tier1

MAX_EVIDENCE = 14
_IMAGE_REF = re.compile(r'(?i)(?:pull(?:ing)?|back-off pulling) image "([^"]+)"')
LOG_EXCERPT_LINES = 20

_NEXT_ACTIONS: dict[Category, str] = {
    Category.OOM_KILLED: (
        "Raise the container memory limit (cpuMemory limit) or cut peak host memory use "
        "(smaller batch or sequence length, fewer data-loader workers, no in-memory dataset cache), then resubmit."
    ),
    Category.IMAGE_PULL_FAILED: (
        "Check the image reference and tag exist in the registry and that the project has pull credentials "
        "(imagePullSecrets / a registry credential) for it, then resubmit."
    ),
    Category.INIT_FAILED: (
        "Fix what the init container needs (see its log: permissions, data source, command), then resubmit."
    ),
    Category.DATASOURCE_MOUNT_FAILED: (
        "Create the missing data source (PVC, Secret or ConfigMap) in the workload's namespace, or fix its name "
        "in the workload's data sources, then resubmit."
    ),
    Category.CRASH_APP_ERROR: (
        "Fix the application error shown in the container log (or the command/arguments), then resubmit."
    ),
    Category.NODE_FAILURE: (
        "The workload was not at fault: resubmit it (it will be placed on a healthy node) and report the node "
        "to the cluster administrators."
    ),
    Category.SCHEDULING_POLICY_TERMINATED: (
        "The workload was stopped by a scheduling policy, not by an error: adjust the policy limit with the "
        "project administrator, or keep the workload busy / shorter, then resubmit."
    ),
    Category.UNKNOWN: (
        "Gather container-level evidence: kubectl describe pod <pod> -n <namespace>; kubectl logs <pod> -n "
        "<namespace> --previous; kubectl get events -n <namespace> --field-selector involvedObject.name=<pod>."
    ),
}

_HEADLINES: dict[Category, str] = {
    Category.OOM_KILLED: "was killed by the kernel for exceeding its memory limit (OOMKilled)",
    Category.IMAGE_PULL_FAILED: "could not pull its container image",
    Category.INIT_FAILED: "failed in an init container before the main container started",
    Category.DATASOURCE_MOUNT_FAILED: "could not mount one of its data sources",
    Category.CRASH_APP_ERROR: "failed because its own program exited with an error",
    Category.NODE_FAILURE: "failed because its node failed",
    Category.SCHEDULING_POLICY_TERMINATED: "was stopped by a scheduling policy",
    Category.UNKNOWN: "failed, but the evidence does not name a cause",
}


def _short(text: str, limit: int = 700) -> str:
    """Whitespace folded; a long text keeps its head and its tail (where kubelet messages put the cause).
    Sanitized first, so a cut never splits a credential that the whole text would have masked."""
    text = " ".join(sanitize(text).split())
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    return text[:head] + " … " + text[-(limit - head - 3) :]


_EMPTY_CLAUSES = frozenset({"unknown", "error", "failed", "exit status 1", ""})


def _cause(text: str) -> str:
    """The last meaningful clause of a runtime message ("...: not found", "...: 401 Unauthorized"); runtimes end
    many messages with a bare ": unknown", which names nothing and is never the verdict's cause."""
    clauses = [c.strip() for c in text.rstrip(" .").split(": ")]
    while len(clauses) > 1 and clauses[-1].lower() in _EMPTY_CLAUSES:
        clauses.pop()
    return _short(clauses[-1], 160)


@dataclass
class ReportBuilder:
    """Accumulates the parts of one report; the terminal methods return the finished :class:`Report`."""

    now: datetime
    lookback: timedelta
    console_url: str
    workload_url_template: str | None = None
    identity: Identity | None = None
    evidence: list[EvidenceItem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    excerpts: list[Excerpt] = field(default_factory=list)
    rec: Recurrence | None = None
    limit_raw: str | None = None
    order: PodOrder | None = None

    # -- parts ----------------------------------------------------------------------------------------

    def gap(self, what: str, why: str) -> None:
        if not any(g.what == what and g.why == why for g in self.gaps):
            self.gaps.append(Gap(what=what, why=why))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def add(self, label: str, value: str, source: str, at: datetime | None = None) -> None:
        self.evidence.append(EvidenceItem(label=label, value=value, source=source, at=at))

    def set_identity(self, workload: Workload, tier1: Tier1 | None) -> None:
        cluster_name = None
        if tier1 is not None:
            cluster_name = next((c.name for c in tier1.clusters.value or [] if c.uuid == workload.cluster_id), None)
        self.identity = Identity(
            system="runai",
            cluster_name=cluster_name,
            cluster_id=workload.cluster_id,
            project=workload.project_name,
            namespace=workload.namespace,
            workload_name=workload.name,
            workload_id=workload.id,
            workload_type=workload.type,
            phase=workload.phase,
            phase_updated_at=workload.phase_updated_at,
        )
        # No console route is invented: a deep link only from the configured template.
        if self.workload_url_template:
            url = self.workload_url_template.replace("{workload_id}", workload.id).replace(
                "{cluster_id}", workload.cluster_id or ""
            )
            self.links.append(Link(label="Run:ai workload", url=url))
        label = f"Run:ai console (Workload manager, workload {workload.name})"
        self.links.append(Link(label=label, url=self.console_url))

    def recurrence(self, category: Category, times: list[datetime]) -> None:
        self.rec = Recurrence(
            category=category.value,
            count=len(times),
            lookback_seconds=int(self.lookback.total_seconds()),
            occurrences=times,
        )

    def pods_running(self, workload: Workload) -> None:
        """``runningPods`` of ``requestedPods`` (issue 9 §5): a distributed workload partly running says so."""
        wanted = workload.requested_pods.number or workload.requested_pods.min if workload.requested_pods else None
        if wanted is None or workload.running_pods is None:
            return
        partly = " (partly running)" if 0 < workload.running_pods < wanted else ""
        self.add(
            "pods running",
            f"{workload.running_pods} of {wanted} requested{partly}",
            f"GET /api/v1/workloads/{workload.id} (runningPods, requestedPods)",
        )

    def pending_time(self, workload: Workload) -> None:
        """How long the workload has been Pending in total and which node pools it asked for (issue 9 §5)."""
        seconds = workload.total_pending_time_seconds
        if seconds is not None:
            hours, rest = divmod(seconds, 3600)
            self.add(
                "time spent Pending (total)",
                f"{seconds} s ({hours} h {rest // 60} min)",
                f"GET /api/v1/workloads/{workload.id} (totalPendingTimeSeconds)",
            )
        if workload.requested_node_pools:
            self.add(
                "node pools requested",
                ", ".join(workload.requested_node_pools),
                f"GET /api/v1/workloads/{workload.id} (requestedNodePools)",
            )

    def pod_order(self, order: PodOrder) -> None:
        """Several failing pods: which failed first and which later terminations are consequences."""
        if not order.several:
            return
        self.order = order
        if order.first is not None:
            at = order.ended.get(order.first)
            self.add(
                "first failing pod (decides the category)",
                order.first + (f", ended {at:%Y-%m-%d %H:%M:%S} UTC" if at else ""),
                "pod termination times (pods, container states, events)",
            )
        for pod in order.consequences:
            at = order.ended.get(pod)
            cause = f"after pod {order.first} failed first" if order.first else "after the first failure"
            self.add(
                f"consequence (pod {pod})",
                (f"ended {at:%Y-%m-%d %H:%M:%S} UTC, " if at else "")
                + f"{cause}: stopped by the cleanup or timed out waiting for the failed peer (not its own fault)",
                "pod termination times (pods, container states, events)",
            )

    def signal_evidence(self, signals: Sequence[Signal], limit: int = MAX_EVIDENCE) -> None:
        """Group identical messages (count, first and last time) and add them, newest group last."""
        groups: OrderedDict[tuple[str, str], list[Signal]] = OrderedDict()
        for s in signals:
            groups.setdefault((s.kind.value, s.text), []).append(s)
        for (_, text), members in list(groups.items())[-limit:]:
            first = members[0]
            times = sorted({m.at for m in members if m.at})
            label = first.label or first.reason or first.kind.value
            if first.container:
                label += f" (container {first.container}{', init' if first.init else ''})"
            if first.pod:
                label += f" on pod {first.pod}"
            value = _short(text)
            reasons = sorted({m.reason for m in members if m.reason and m.reason not in label and m.reason not in text})
            if reasons:
                value += f" [reason {', '.join(reasons)}]"
            if len(times) > 1:
                value += f" (x{len(times)}" + (
                    f", first {times[0]:%Y-%m-%d %H:%M:%S}, last {times[-1]:%Y-%m-%d %H:%M:%S} UTC)" if times else ")"
                )
            self.add(label, value, first.source, times[-1] if len(times) == 1 else None)

    def memory(self, workload: Workload, tier1: Tier1, tier2: Tier2Evidence | None, pod: str | None = None) -> None:
        """Peak CPU-memory usage vs the memory *limit* of the same pod (spec Step 4; every per-pod series is
        read, see :mod:`diagnosis.runai.memory`); ``pod`` is the diagnosed pod. Never a request or limit as a peak."""
        ev = memory_evidence(
            workload,
            tier1.pods.value or [],
            tier1.spec.value,
            tier1.metrics.value,
            tier2_pod=tier2.pod if tier2 else None,
            tier2_pod_name=tier2.pod_name if tier2 else None,
            prefer_pod=pod,
        )
        of_pod = f" (pod {ev.pod})" if ev.named else ""
        lim = ev.limit
        self.limit_raw = lim.raw if lim else None
        if lim and lim.bytes is not None:
            self.add("memory limit (the OOM ceiling)", f"{lim.raw} = {bytes_text(lim.bytes)}{of_pod}", lim.source)
        elif lim:
            self.add("memory limit (the OOM ceiling)", lim.raw + of_pod, lim.source)
        else:
            self.gap("memory limit", "no cpuMemory limit in the pods, workload, spec or metrics" + of_pod)
        if ev.request and ev.request != self.limit_raw:
            req_b = quantity_bytes(ev.request)
            self.add(
                "memory request (reservation floor, not usage)",
                ev.request + (f" = {bytes_text(req_b)}" if req_b else ""),
                f"GET /api/v1/workloads/{workload.id}",
            )
        metrics_src = f"GET /api/v1/workloads/{workload.id}/metrics (CPU_MEMORY_USAGE_BYTES)"
        if tier1.metrics.value is None:
            self.gap("memory usage metrics", "the metrics call failed; no peak can be stated")
            return
        if ev.peak is None:
            self.add("peak memory usage", "no peak observed (the usage series is empty in the lookback)", metrics_src)
            return
        text = bytes_text(ev.peak.bytes)
        if lim and lim.bytes:
            text += f", {100 * ev.peak.bytes / lim.bytes:.1f}% of the limit"
        if ev.series > 1:
            text += f"{of_pod}; {ev.series} per-pod series read"
        else:
            text += of_pod
        self.add("peak memory usage (measured)", text, ev.peak.source, ev.peak.at)

    def tier2(self, t2: Tier2Evidence) -> None:
        """Tier 2 failures as gaps; the most telling log as an excerpt; restart counts as evidence."""
        for failure in t2.failures:
            self.gap(failure.what, failure.why)
        if t2.pod is not None:
            status = t2.pod.get("status") or {}
            for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
                if cs.get("restartCount"):
                    self.add(
                        f"restart count (container {cs.get('name')})",
                        str(cs.get("restartCount")),
                        f"kubectl describe pod {t2.pod_name} -n {t2.namespace}",
                    )
        terminated_now: set[str] = set()
        if t2.pod is not None:
            status = t2.pod.get("status") or {}
            for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
                if (cs.get("state") or {}).get("terminated"):
                    terminated_now.add(str(cs.get("name")))
        best: tuple[int, str, str] | None = None
        for (container, previous), text in t2.logs.items():
            if not text.strip():
                continue
            # The container that ended the run: its current log if it is terminated now, else the previous one.
            latest = (not previous) if container in terminated_now else previous
            score = len(log_error_lines(text)) * 2 + (1 if latest else 0)
            flag = " --previous" if previous else ""
            cmd = f"kubectl logs {t2.pod_name} -n {t2.namespace} -c {container}{flag}"
            if best is None or score > best[0]:
                best = (score, cmd, text)
        if best is not None:
            lines = best[2].rstrip("\n").splitlines()[-LOG_EXCERPT_LINES:]
            self.excerpts.append(Excerpt(title=f"Last {len(lines)} log lines", text="\n".join(lines), source=best[1]))
        elif not any(g.what.startswith("logs") for g in self.gaps):
            self.gap("container logs", "no log could be read (the container may never have run)")

    def headline_detail(
        self, cat: Category, primary: Sequence[Signal], explain: Sequence[Signal], exit_codes: Sequence[int]
    ) -> str:
        """The concrete cause for the verdict sentence: the limit, the image, the missing object, the error line."""
        texts = " ".join(s.text for s in primary)
        if cat == Category.OOM_KILLED and self.limit_raw:
            return f"its memory limit is {self.limit_raw}"
        if cat == Category.IMAGE_PULL_FAILED:
            m = _IMAGE_REF.search(texts)
            pulls = [s.text for s in primary if _IMAGE_REF.search(s.text) and "Back-off" not in s.text]
            cause = _cause(pulls[-1]) if pulls else ""
            if m:
                return f'image "{m.group(1)}"' + (f" ({cause})" if cause and cause not in m.group(1) else "")
            return cause
        if cat == Category.DATASOURCE_MOUNT_FAILED:
            missing = list(dict.fromkeys(missing_objects(texts)))  # every missing object named, once each
            return "; ".join(missing) if missing else (_cause(primary[-1].text) if primary else "")
        if cat == Category.INIT_FAILED:
            containers = sorted(
                {s.container for s in primary if s.container and s.init}
                or {s.container for s in primary if s.container}
            )
            what = f"init container {', '.join(containers)}" if containers else "an init container"
            codes = f" exited with code {', '.join(str(c) for c in exit_codes)}" if exit_codes else " failed"
            lines = [s for s in explain if s.container in containers]
            return what + codes + (f"; its log ends with `{_short(lines[-1].text, 160)}`" if lines else "")
        starts = [c for s in primary if s.kind == Kind.START_ERROR_APP for c in [start_error_cause(s.text)] if c]
        if cat == Category.CRASH_APP_ERROR and starts:
            return f"the container runtime could not start its command ({starts[-1]})"
        if cat == Category.NODE_FAILURE:
            faults = [f for s in primary for f in [gpu_hardware_fault(s.text)] if f]
            if faults:
                return f"GPU hardware fault {faults[-1]}"
        if cat == Category.CRASH_APP_ERROR and explain:
            return f"the log ends with `{_short(explain[-1].text, 160)}`"
        if cat == Category.CRASH_APP_ERROR and exit_codes:
            return f"exit code {', '.join(str(c) for c in exit_codes)}"
        return ""

    # -- finished reports ---------------------------------------------------------------------------

    def _report(self, outcome: Outcome, headline: str, **kw: Any) -> Report:
        return Report(
            system="runai",
            outcome=outcome,
            headline=headline,
            identity=self.identity,
            evidence=self.evidence,
            gaps=self.gaps,
            notes=self.notes,
            links=self.links,
            excerpts=self.excerpts,
            recurrence=self.rec,
            generated_at=self.now,
            **kw,
        )

    def needs_input(self, q: Question, missing: list[str], question: str, choices: list[Choice]) -> Report:
        return self._report(
            Outcome.NEEDS_INPUT,
            "I need more information before I can look.",
            question=question,
            missing=missing,
            choices=choices,
        )

    def not_found(self, q: Question, cluster_id: str, by_id: bool) -> Report:
        if by_id:
            what = f"No workload with id {q.workload_id} exists on cluster {cluster_id}"
            ask = "Check the workload id (Run:ai console, Workloads) and the cluster, and ask again."
        else:
            what = (
                f"No workload named '{q.workload_name}' exists in project '{q.project}' on cluster {cluster_id}, "
                "live or deleted"
            )
            ask = (
                "Which workload do you mean? Send its workload id (Run:ai console, Workloads), "
                "or check the name and project."
            )
        return self._report(Outcome.NOT_FOUND, what + ". " + ask, question=ask, next_action=ask)

    def cluster_mismatch(
        self, q: Question, workload: Workload, cluster_id: str, clusters: list[Cluster] | None
    ) -> Report:
        self.set_identity(workload, None)
        self.add("asked cluster", cluster_id, "question")
        self.add("workload's clusterId", workload.cluster_id or "?", f"GET /api/v1/workloads/{workload.id}")
        return self._report(
            Outcome.CLUSTER_MISMATCH,
            f"Workload {workload.id} belongs to cluster {workload.cluster_id}, not to the cluster you asked about "
            f"({cluster_id}). I stopped rather than diagnose a workload from another cluster.",
            next_action="Ask again with the right cluster, or check the workload id.",
        )

    def route_preempted(self, workload: Workload, signals: Sequence[Signal]) -> Report:
        self.signal_evidence(signals, 4)
        return self._report(
            Outcome.ROUTE_PREEMPTED,
            f"{workload.name} was preempted (phase {workload.phase}): Run:ai stopped it to free resources for "
            "another workload. Preemption is not a failure, so no failure category is given.",
            confidence=Confidence(level="direct", signals=signal_phrases(signals)),
            next_action=(
                "Use the preempted-workload diagnosis (runai-diagnose-preempted-workload). To avoid preemption, "
                "run within the project's quota, as non-preemptible, or at a higher priority."
            ),
        )

    def succeeded(self, workload: Workload) -> Report:
        self.add("phase", workload.phase, f"GET /api/v1/workloads/{workload.id}", workload.phase_updated_at)
        return self._report(
            Outcome.SUCCEEDED,
            f"{workload.name} did not fail: its phase is {workload.phase} (finished successfully).",
            next_action="Nothing to fix. If you meant another run, send its workload id.",
        )

    def out_of_scope(self, workload: Workload) -> Report:
        self.add("phase", workload.phase, f"GET /api/v1/workloads/{workload.id}", workload.phase_updated_at)
        if workload.phase_message:
            self.add("phaseMessage", workload.phase_message, f"GET /api/v1/workloads/{workload.id}")
        return self._report(
            Outcome.OUT_OF_SCOPE,
            f"{workload.name} is {workload.phase}: it is paused, not failed, so failure diagnosis does not apply.",
            next_action="Resume it from the Run:ai console or CLI when you want it to run (I never change workloads).",
        )

    def route_pending(self, workload: Workload, scheduling: Sequence[Signal]) -> Report:
        self.add("phase", workload.phase, f"GET /api/v1/workloads/{workload.id}", workload.phase_updated_at)
        self.signal_evidence(scheduling, 4)
        self.pending_time(workload)
        self.pods_running(workload)
        return self._report(
            Outcome.ROUTE_PENDING,
            f"{workload.name} is Pending with only scheduling evidence (waiting for resources or quota); "
            "no pod has failed.",
            confidence=Confidence(level="inferred", signals=signal_phrases(scheduling))
            if scheduling
            else Confidence(level="none"),
            next_action="Use the pending-workload diagnosis: check the project's quota, the node pool's free GPUs, "
            "and whether the workload could run as preemptible.",
        )

    def ask_past_run(self, workload: Workload) -> Report:
        self.add("phase", workload.phase, f"GET /api/v1/workloads/{workload.id}", workload.phase_updated_at)
        self.pods_running(workload)
        question = (
            f"{workload.name} is Running with no crash loop or failure signal. Did you mean a past run? "
            "Send that run's workload id."
        )
        return self._report(Outcome.ASK_PAST_RUN, question, question=question)

    def phase_only(self, workload: Workload, signals: Sequence[Signal]) -> Report:
        self.add("phase", workload.phase, f"GET /api/v1/workloads/{workload.id}", workload.phase_updated_at)
        self.pods_running(workload)
        if workload.phase_message:
            self.add("phaseMessage", workload.phase_message, f"GET /api/v1/workloads/{workload.id}")
        return self._report(
            Outcome.PHASE_ONLY,
            f"{workload.name} is {workload.phase}; that is not a terminal failure, so no category is assigned.",
            next_action="Ask again once it reaches a terminal phase, or if it shows a crash loop.",
        )

    def diagnosed(
        self,
        workload: Workload,
        tier1: Tier1,
        finding: Finding,
        final: Sequence[Signal],
        tier2: Tier2Evidence | None,
        kube_available: bool,
        pod_name: str | None = None,
        namespace: str | None = None,
    ) -> Report:
        cat = finding.category
        primary = list(finding.signals)
        explain = [s for s in final if s.kind == Kind.LOG_ERROR]
        head: list[EvidenceItem] = []
        saved, self.evidence = self.evidence, head
        self.signal_evidence(primary)
        # The controller's verdict (BackoffLimitExceeded, DeadlineExceeded, "Worker replica(s) failed") is quoted
        # verbatim whatever the category (FORMAT.md "Quote the decisive Tier 1 reasons").
        reports = [s for s in final if s.kind == Kind.FAILURE_REPORT and s not in primary and s.reason]
        if reports:
            self.signal_evidence(reports, 3)
        exit_codes = sorted(
            {s.exit_code for s in primary + [s for s in final if s.kind == Kind.EXIT_SIGNAL] if s.exit_code is not None}
        )
        if exit_codes:
            self.add("exit code", ", ".join(str(c) for c in exit_codes), primary[0].source if primary else "events")
        nodes = sorted({s.node for s in primary if s.node})
        pods = tier1.pods.value or []
        pod_names = {s.pod for s in primary if s.pod}
        for p in pods:
            if p.name in pod_names and p.node_name:
                nodes.append(p.node_name)
        if not nodes and len(pods) == 1 and pods[0].node_name:
            nodes.append(pods[0].node_name)
        if nodes:
            self.add("node", ", ".join(sorted(set(nodes))), f"GET /api/v1/workloads/{workload.id}/pods (nodeName)")
        for p in pods:
            if p.name in pod_names or len(pods) == 1:
                if p.k8s_phase:
                    self.add(f"k8sPhase of pod {p.name}", p.k8s_phase, f"GET /api/v1/workloads/{workload.id}/pods")
        seen_lines: set[str] = set()
        for s in reversed(explain):
            if s.text in seen_lines or len(seen_lines) >= 4:
                continue
            seen_lines.add(s.text)
            self.add(f"log error line (container {s.container})", _short(s.text, 300), s.source)
        quoted = any(s.text == workload.phase_message for s in primary)
        self.add(
            "phase",
            workload.phase + (f": {workload.phase_message}" if workload.phase_message and not quoted else ""),
            f"GET /api/v1/workloads/{workload.id}",
            workload.phase_updated_at,
        )
        self.pods_running(workload)
        self.evidence = head + saved
        name = workload.name
        headline = f"{name} {_HEADLINES[cat]}."
        if cat == Category.UNKNOWN and finding.reason:
            headline = f"{name} failed ({workload.phase}), but the cause is UNKNOWN: {finding.reason}."
            if not kube_available:
                self.note("UNKNOWN rather than a guess: without Tier 2 the Tier 1 evidence names no cause.")
        elif cat == Category.CRASH_APP_ERROR and any(s.kind == Kind.LIVENESS_KILL for s in primary):
            headline = (
                f"{name} was killed by the kubelet because its liveness probe failed "
                "(the program did not answer its health check in time)."
            )
        elif cat == Category.NODE_FAILURE and nodes:
            headline = f"{name} failed because its node {', '.join(sorted(set(nodes)))} failed."
        liveness = any(s.kind == Kind.LIVENESS_KILL for s in primary)
        detail = "" if liveness else self.headline_detail(cat, primary, explain, exit_codes)
        if detail:
            headline = headline.rstrip(".") + f": {detail}."
        next_action = _NEXT_ACTIONS[cat]
        if cat == Category.UNKNOWN and self.order is not None and self.order.first is None and self.order.consequences:
            replica = self.order.missing_replica or "first failing"
            next_action = (
                f"Find why the {replica} replica failed: its pod is gone, so read its logs from your log store, or "
                "keep failed pods for next time (the job's runPolicy.cleanPodPolicy: None) and rerun. The peers' "
                "later exits (SIGTERM, collective timeouts) are consequences, not the cause."
            )
        elif cat == Category.UNKNOWN and pod_name and namespace:
            next_action = next_action.replace("<pod>", pod_name).replace("<namespace>", namespace)
        if cat == Category.CRASH_APP_ERROR and any(s.kind == Kind.LIVENESS_KILL for s in primary):
            next_action = (
                "Give the program time to start: raise the liveness probe's initialDelaySeconds or "
                "failureThreshold, or add a startupProbe, then resubmit."
            )
        if self.rec is not None and self.rec.recurring:
            headline += f" It recurred: {self.rec.count} times in the lookback."
        level, basis = confidence(finding)
        return self._report(
            Outcome.DIAGNOSED,
            headline,
            category=cat,
            next_action=next_action,
            confidence=Confidence(level=level, signals=basis),  # type: ignore[arg-type]
        )
