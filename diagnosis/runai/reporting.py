"""Building the :class:`~diagnosis.report.Report` of a Run:ai diagnosis (spec Step 5).

Verdict first, then identity, quantified evidence citing the call it came from, recurrence,
the recommended next action (never performed), what could not be seen, and console links.
Requested or limited memory is never presented as a measured peak.

The parts accumulate on :class:`diagnosis.builder.ReportBuilder` (shared with OSMO); a category's headline,
detail and next action come from its entry in :mod:`diagnosis.runai.categories`; every source is named by the
client's call (:class:`~diagnosis.runai.client.Calls`, :class:`~diagnosis.k8s.KubeCalls`). Pending is decided
purely (:func:`pending_facts`) and then phrased (:func:`pending_reasons`, :func:`pending_step`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from diagnosis import kube_objects as kube
from diagnosis.builder import ReportBuilder as BaseReportBuilder
from diagnosis.builder import System
from diagnosis.k8s import KubeCalls, Tier2Evidence
from diagnosis.question import Question, asked_name, first_sentence
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
    Report,
    recurrence_phrase,
)
from diagnosis.runai import incident
from diagnosis.runai.categories import CATEGORIES, VerdictFacts
from diagnosis.runai.classify import Finding, PodOrder, confidence, signal_phrases, unresolved_exit
from diagnosis.runai.client import Calls
from diagnosis.runai.decision import Decision
from diagnosis.runai.memory import memory_evidence
from diagnosis.runai.models import Cluster, Pod, Records, Workload
from diagnosis.runai.neighbours import neighbours_of
from diagnosis.runai.phrases import short
from diagnosis.runai.resolve import ago
from diagnosis.runai.routing import Routed
from diagnosis.runai.signals import (
    Kind,
    Signal,
    log_error_lines,
)
from diagnosis.runai.state import Diagnosis, Nearby
from diagnosis.runai.tier1 import Tier1
from diagnosis.timeline import Entry
from diagnosis.units import bytes_text, quantity_bytes

MAX_EVIDENCE = 14
LOG_EXCERPT_LINES = 20


@dataclass(kw_only=True)
class ReportBuilder(BaseReportBuilder):
    """The Run:ai parts of a report on top of :class:`diagnosis.builder.ReportBuilder`: identity and console
    links, Pending and pod-order evidence, memory, Tier 2, and the verdicts of every Run:ai outcome."""

    console_url: str
    workload_url_template: str | None = None
    system: System = "runai"
    limit_raw: str | None = None
    #: the sidecar or init container that was OOMKilled (FORMAT.md: its own limit is the OOM ceiling), if not main
    oom_container: str | None = None
    oom_container_init: bool = False
    #: the measured peak and the limit in bytes, for the verdict sentence ("peak 32.0 GiB of … (99.8%)")
    peak_bytes: float | None = None
    limit_bytes: float | None = None
    order: PodOrder | None = None

    # -- parts ----------------------------------------------------------------------------------------

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
            self.links.append(Link(label="Open in Run:ai", url=url))
            return
        # without a template the link only opens the console, and says so (issue 13 §3)
        self.links.append(Link(label="Run:ai console", url=self.console_url))

    def pods_running(self, workload: Workload) -> None:
        """``runningPods`` of ``requestedPods`` (issue 9 §5): a distributed workload partly running says so."""
        wanted = workload.requested_pods.number or workload.requested_pods.min if workload.requested_pods else None
        if wanted is None or workload.running_pods is None:
            return
        partly = " (partly running)" if 0 < workload.running_pods < wanted else ""
        self.add(
            "pods running",
            f"{workload.running_pods} of {wanted} requested{partly}",
            Calls.workload(workload.id).cite("runningPods, requestedPods"),
        )

    def pending_time(self, workload: Workload) -> None:
        """How long the workload has been Pending in total and which node pools it asked for (issue 9 §5)."""
        seconds = workload.total_pending_time_seconds
        if seconds is not None:
            hours, rest = divmod(seconds, 3600)
            self.add(
                "time spent Pending (total)",
                f"{seconds} s ({hours} h {rest // 60} min)",
                Calls.workload(workload.id).cite("totalPendingTimeSeconds"),
            )
        if workload.requested_node_pools:
            self.add(
                "node pools requested",
                ", ".join(workload.requested_node_pools),
                Calls.workload(workload.id).cite("requestedNodePools"),
            )

    def pod_order(self, order: PodOrder, context: Sequence[Entry] = ()) -> None:
        """Several failing pods: which failed first and which later terminations are consequences; the incident
        timeline with ``context`` (the workload's phase updates of the run) in time order among them."""
        if not order.several:
            return
        self.order = order
        self.timeline(order.timeline.with_context(context))
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
            value = short(text)
            reasons = sorted({m.reason for m in members if m.reason and m.reason not in label and m.reason not in text})
            if reasons:
                value += f" [reason {', '.join(reasons)}]"
            if len(times) > 1:
                value += f" (x{len(times)}" + (
                    f", first {times[0]:%Y-%m-%d %H:%M:%S}, last {times[-1]:%Y-%m-%d %H:%M:%S} UTC)" if times else ")"
                )
            self.add(label, value, first.source, times[-1] if len(times) == 1 else None)

    def killed_container_limit(
        self, workload: Workload, finding: Finding, tier2: Tier2Evidence | None, pods: Sequence[Pod] = ()
    ) -> bool:
        """FORMAT.md "the OOM ceiling is the limit of the container that was killed": when the OOMKilled container
        is a sidecar or an init container, name it and quote its own memory limit; True then (the workload's
        cpuMemory limit and its measured peak apply only to the main container). The pod spec (Tier 2) tells the
        roles and holds the limit; without it, an ``init container`` kill, or a kill of a container other than the
        one the Run:ai pods list names like the workload (``pods``), is named, and its limit is a gap."""
        killed = [s for s in finding.signals if s.kind == Kind.OOM_KILLED and s.container]
        if not killed:
            return False
        first = min(killed, key=lambda s: (s.at is None, s.at or datetime.min))
        if tier2 is None or not isinstance(tier2.pod, dict):
            return self._killed_container_tier1(workload, first, pods)
        spec = next((c for c in kube.container_specs(tier2.pod) if c.name == first.container), None)
        main = kube.main_container(tier2.pod, workload.name)
        if spec is None or (not spec.init and spec.name == main):
            return False
        role = self._killed_container(spec.name, spec.init, main)
        src = KubeCalls.pod(tier2.namespace, tier2.pod_name).cite(
            "spec.initContainers" if spec.init else "spec.containers"
        )
        if spec.memory_limit:
            size = quantity_bytes(spec.memory_limit)
            value = spec.memory_limit + (f" = {int(size)} bytes" if size else "") + f" (container {spec.name})"
            self.add(f"memory limit of {role} {spec.name} (the OOM ceiling)", value, src)
            self.limit_raw = spec.memory_limit
        else:
            self.gap(f"memory limit of {role} {spec.name}", f"none in the pod spec [{src}]")
        return True

    def _killed_container_tier1(self, workload: Workload, killed: Signal, pods: Sequence[Pod]) -> bool:
        """Without the pod spec: the killed container is not the main one when its message says ``init
        container``, or when the Run:ai pods list names another container of its pod like the workload."""
        name = str(killed.container)
        pod = next((p for p in pods if p.name == killed.pod), None) if killed.pod else None
        listed = [c.name for c in pod.containers] if pod is not None else []
        main = workload.name if workload.name in listed else None
        if not killed.init and (main is None or name == main):
            return False
        role = self._killed_container(name, killed.init, main)
        self.gap(f"memory limit of {role} {name}", "its own limit is in the pod spec, which could not be read")
        return True

    def _killed_container(self, name: str, init: bool, main: str | None) -> str:
        """Records that ``name`` (a sidecar, or an init container) was OOMKilled, not ``main``; returns its role."""
        self.oom_container, self.oom_container_init = name, init
        role = "init container" if init else "sidecar container"
        self.note(
            f"The {role} {name} was OOMKilled, not the workload's main container"
            + (f" {main}" if main else "")
            + ": the workload's cpuMemory limit and its memory usage are not this container's."
        )
        return role

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
                Calls.workload(workload.id).cite(),
            )
        metrics_src = Calls.metrics(workload.id).cite("CPU_MEMORY_USAGE_BYTES")
        if tier1.metrics.value is None:
            self.gap("memory usage metrics", "the metrics call failed; no peak can be stated")
            return
        if ev.peak is None:
            self.add("peak memory usage", "no peak observed (the usage series is empty in the lookback)", metrics_src)
            return
        text = bytes_text(ev.peak.bytes)
        self.peak_bytes = ev.peak.bytes
        self.limit_bytes = lim.bytes if lim else None
        if lim and lim.bytes:
            text += f", {100 * ev.peak.bytes / lim.bytes:.1f}% of the limit"
        if ev.series > 1:
            text += f"{of_pod}; {ev.series} per-pod series read"
        else:
            text += of_pod
        self.add("peak memory usage (measured)", text, ev.peak.source, ev.peak.at)

    def neighbours(self, near: Nearby, workload: Workload) -> None:
        """Other workloads' pods failed on the first failure's node around it (supporting evidence, never the
        cause by itself); a failed read is a gap naming its call."""
        what = f"other workloads' pods on node {near.anchor.node} (supporting evidence)"
        if self.fetched(near.got, what, with_call=True):
            self.nearby = neighbours_of(near, workload)

    def tier2(self, t2: Tier2Evidence) -> None:
        """Tier 2 failures as gaps; the most telling log as an excerpt; restart counts as evidence."""
        for failure in t2.failures:
            self.fetched(failure)
        if t2.pod is not None:
            for container, count in kube.restart_counts(t2.pod):
                self.add(
                    f"restart count (container {container})",
                    str(count),
                    KubeCalls.pod(t2.namespace, t2.pod_name).source,
                )
        terminated_now = kube.terminated_now(t2.pod) if t2.pod is not None else set()
        best: tuple[int, str, str, tuple[str, bool]] | None = None
        for (container, previous), text in t2.logs.items():
            if not text.strip():
                continue
            # The container that ended the run: its current log if it is terminated now, else the previous one.
            latest = (not previous) if container in terminated_now else previous
            score = len(log_error_lines(text)) * 2 + (1 if latest else 0)
            cmd = KubeCalls.log(t2.namespace, t2.pod_name, container, previous).source
            if best is None or score > best[0]:
                best = (score, cmd, text, (container, previous))
        if best is not None:
            lines = best[2].rstrip("\n").splitlines()[-LOG_EXCERPT_LINES:]
            self.excerpts.append(Excerpt(title=f"Last {len(lines)} log lines", text="\n".join(lines), source=best[1]))
        elif not any(g.what.startswith("logs") for g in self.gaps):
            self.gap("container logs", "no log could be read (the container may never have run)")
        # a log tail not read whole (issue 22 §2): how much of it was skipped, and why
        shown = [best[3]] if best is not None else list(t2.log_cuts)
        for key in shown:
            cut = t2.log_cuts.get(key)
            note = cut.note(*key) if cut is not None else None
            if note:
                self.note(note)

    # -- finished reports ---------------------------------------------------------------------------

    def _report(self, outcome: Outcome, headline: str, **kw: Any) -> Report:
        return self.build(outcome, headline, **kw)

    def needs_input(self, q: Question, missing: list[str], question: str, choices: list[Choice]) -> Report:
        """A follow-up question. Its first sentence is the headline, so the first line of the message (the push
        notification) says what is needed (issue 21)."""
        return self._report(
            Outcome.NEEDS_INPUT,
            first_sentence(question),
            question=question,
            missing=missing,
            choices=choices,
            subject=asked_name(q),
        )

    def not_found(
        self,
        q: Question,
        cluster_id: str,
        by_id: bool,
        tried: Sequence[str] = (),
        suggestions: Sequence[tuple[str, str]] = (),
        projects: Sequence[str] = (),
        cluster_name: str | None = None,
        elsewhere: dict[str, list[str]] | None = None,
    ) -> Report:
        """Nothing by that id or name. ``elsewhere`` maps a name to the other projects of this cluster that have
        it (offered first, as a project choice); ``suggestions`` (name, label) are the closest existing names in that
        project, closest first, offered as choices; ``projects`` the real ones when the project named does not
        exist. The cluster is named by ``cluster_name`` when known (its id only in the evidence); the question
        appears once (no next action repeating it)."""
        choices: list[Choice] = []
        cluster = cluster_name or cluster_id
        self.add("cluster", f"{cluster_name} ({cluster_id})" if cluster_name else cluster_id, "question")
        next_action: str | None = None
        if by_id:
            what = f"No workload with id {q.workload_id} exists on cluster {cluster}"
            ask = "Check the workload id (Run:ai console, Workloads) and the cluster, and ask again."
            next_action = ask
        elif projects:
            what = f"There is no project named '{q.project}' on cluster {cluster}"
            ask = "Which project is it in? " + ", ".join(f"`{p}`" for p in projects[:10])
            choices = [Choice(label=p, field="project", value=p) for p in projects[:10]]
        else:
            names = list(dict.fromkeys(tried)) or [q.workload_name or "?"]
            named = " or ".join(f"'{n}'" for n in names)
            what = f"No workload named {named} exists in project '{q.project}' on cluster {cluster}, live or deleted"
            other = next(((n, ps) for n, ps in (elsewhere or {}).items() if ps), None)
            if other is not None:
                # the name exists in another project of this cluster: offered first, never diagnosed silently
                name, held = other
                ask = f"`{name}` is in project {', '.join(f'`{p}`' for p in held[:5])}: is that the one?"
                choices = [Choice(label=f"{name} in project {p}", field="project", value=p) for p in held[:5]]
            elif suggestions:
                first, label = suggestions[0]
                detail = label.split(" (", 1)[-1].rstrip(")")
                ask = f"Did you mean `{first}` ({detail})?"
                if len(suggestions) > 1:
                    ask += " Or " + ", ".join(f"`{n}`" for n, _ in suggestions[1:]) + "?"
                choices = [Choice(label=label, field="workload_name", value=n) for n, label in suggestions]
            else:
                ask = (
                    "Which workload do you mean? Send its workload id (Run:ai console, Workloads), "
                    "or check the name and project."
                )
                next_action = ask
        return self._report(
            Outcome.NOT_FOUND,
            what + ". " + ask,
            question=ask,
            next_action=next_action,
            choices=choices,
            subject=asked_name(q),
        )

    def cluster_mismatch(
        self, q: Question, workload: Workload, cluster_id: str, clusters: list[Cluster] | None
    ) -> Report:
        self.set_identity(workload, None)
        self.add("asked cluster", cluster_id, "question")
        self.add("workload's clusterId", workload.cluster_id or "?", Calls.workload(workload.id).cite())
        names = {c.uuid.lower(): c.name for c in clusters or [] if c.name}
        theirs = names.get((workload.cluster_id or "").lower()) or workload.cluster_id
        asked = names.get(cluster_id.lower()) or cluster_id
        who = workload.name or workload.id  # the name people use; the id is in the evidence
        return self._report(
            Outcome.CLUSTER_MISMATCH,
            f"Workload {who} belongs to cluster {theirs}, not to the cluster you asked about ({asked}). "
            "I stopped rather than diagnose a workload from another cluster.",
            next_action="Ask again with the right cluster, or check the workload id.",
        )

    def route_preempted(
        self, workload: Workload, signals: Sequence[Signal], spec: dict[str, Any] | None = None
    ) -> Report:
        """A preemption answered (issue 11 §3): who preempted it when the events say, whether it will be requeued,
        and what to do. ``spec`` is the submitted spec's ``spec`` (``terminateAfterPreemption``), when read."""
        self.signal_evidence(signals, 4)
        by = _preemptor(signals)
        src = Calls.workload(workload.id).cite()
        if by:
            self.add("preempted by", by, "events (scheduler eviction message)")
        if workload.priority_class_name:
            self.add("priority class", workload.priority_class_name, f"{src} (priorityClassName)")
        if workload.preemptible is not None:
            self.add("preemptible", str(workload.preemptible).lower(), f"{src} (preemptible)")
        terminate = (spec or {}).get("terminateAfterPreemption")
        if workload.phase in {"Pending", "Running", "Initializing", "Creating"}:
            requeue = f"It is back in the queue (phase {workload.phase}) and runs again when resources free up."
        elif terminate is True:
            requeue = "It will not be requeued: its spec sets terminateAfterPreemption, so it was terminated."
        elif terminate is False:
            requeue = "It is requeued (terminateAfterPreemption is false) and resumes when resources free up."
        else:
            requeue = (
                f"Its phase is now {workload.phase}, so it is not running again by itself; resubmit it if you need it."
            )
        who = f" by {by}" if by else " to free resources for another workload"
        return self._report(
            Outcome.ROUTE_PREEMPTED,
            f"{workload.name} was preempted{who} (phase {workload.phase}): the scheduler took its GPUs back. "
            f"Preemption is not a failure, so no failure category is given. {requeue}",
            confidence=Confidence(level="direct", signals=signal_phrases(signals)),
            next_action=(
                "To avoid being preempted again, run within the project's GPU quota (deserved GPUs), submit it as "
                "non-preemptible (it then waits for quota instead of borrowing GPUs), or ask the project "
                "administrator for a higher priority or more quota. Save checkpoints so a preempted run can resume."
            ),
        )

    def succeeded(self, workload: Workload) -> Report:
        self.add("phase", workload.phase, Calls.workload(workload.id).cite(), workload.phase_updated_at)
        return self._report(
            Outcome.SUCCEEDED,
            f"{workload.name} did not fail: its phase is {workload.phase} (finished successfully).",
            next_action="Nothing to fix. If you meant another run, send its workload id.",
        )

    def out_of_scope(self, workload: Workload) -> Report:
        self.add("phase", workload.phase, Calls.workload(workload.id).cite(), workload.phase_updated_at)
        if workload.phase_message:
            self.add("phaseMessage", workload.phase_message, Calls.workload(workload.id).cite())
        return self._report(
            Outcome.OUT_OF_SCOPE,
            f"{workload.name} is {workload.phase}: it is paused, not failed, so failure diagnosis does not apply.",
            next_action="Resume it from the Run:ai console or CLI when you want it to run (I never change workloads).",
        )

    def route_pending(
        self,
        workload: Workload,
        scheduling: Sequence[Signal],
        project: dict[str, Any] | None = None,
        *,
        stuck: bool = False,
    ) -> Report:
        """Pending with scheduling-only evidence, diagnosed (issue 11 §3): the project's GPU quota against what is
        allocated and requested, the node pool, the scheduler's newest message in plain language, the next step.
        ``project`` is the raw ``GET /api/v1/org-unit/projects`` item of the workload's project, when read;
        ``stuck``: the question asked whether it is stuck, so the verdict answers that first ("Yes — … has been
        Pending for 3 h 12 min, …"; issue 11)."""
        src = Calls.workload(workload.id).cite()
        self.add("phase", workload.phase, src, workload.phase_updated_at)
        self.signal_evidence(scheduling, 4)
        self.pending_time(workload)
        self.pods_running(workload)
        got = pending_facts(workload, scheduling, project)
        if got.requested is not None:
            self.add("GPUs requested", _num(got.requested), src + " (requested GPUs / scheduler message)")
        if got.quota is not None:
            self.add(f"project {got.project} GPU quota", _num(got.quota), Calls.projects().cite("or scheduler message"))
        if got.allocated is not None:
            self.add(
                f"project {got.project} GPUs allocated",
                _num(got.allocated),
                Calls.projects().cite("or scheduler message"),
            )
        facts = pending_reasons(got)
        step = pending_step(got, workload.preemptible)
        why = ("; ".join(facts) + ".") if facts else "the scheduler has not given a reason yet."
        verdict = f"{workload.name} is Pending: no pod has failed, it is waiting to be scheduled."
        if stuck:
            waited = pending_for(workload, self.now)
            verdict = (
                f"Yes — {workload.name} has been Pending{f' for {waited}' if waited else ''}, waiting to be "
                "scheduled (no pod has failed)."
            )
        return self._report(
            Outcome.ROUTE_PENDING,
            f"{verdict} Why: {why}",
            confidence=Confidence(level="inferred", signals=signal_phrases(scheduling))
            if scheduling
            else Confidence(level="none"),
            next_action=step,
        )

    def ask_past_run(self, workload: Workload, past: Sequence[Workload] = ()) -> Report:
        """Running and healthy. ``past``: failed runs of the same name that were found, offered as choices."""
        self.add("phase", workload.phase, Calls.workload(workload.id).cite(), workload.phase_updated_at)
        self.pods_running(workload)
        failed = [w for w in past if w.id != workload.id and w.phase in {"Failed", "Crashed", "Stopped"}]
        failed.sort(key=lambda w: w.phase_updated_at or w.created_at or self.now, reverse=True)
        choices = [
            Choice(
                label=f"the failed run I found ({w.phase} {_ago(w.phase_updated_at, self.now)}, {w.id[:8]})",
                field="workload_id",
                value=w.id,
            )
            for w in failed[:5]
        ]
        if choices:
            question = (
                f"{workload.name} is Running with no crash loop or failure signal. Did you mean the failed run I "
                "found? Press its button (or send another run's workload id)."
            )
        else:
            question = (
                f"{workload.name} is Running with no crash loop or failure signal. Did you mean a past run? "
                "Send that run's workload id."
            )
        return self._report(Outcome.ASK_PAST_RUN, question, question=question, choices=choices)

    def phase_only(self, workload: Workload, signals: Sequence[Signal]) -> Report:
        self.add("phase", workload.phase, Calls.workload(workload.id).cite(), workload.phase_updated_at)
        self.pods_running(workload)
        if workload.phase_message:
            self.add("phaseMessage", workload.phase_message, Calls.workload(workload.id).cite())
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
        """A category was given (spec Step 5): the deciding evidence first, then the verdict sentence (the
        category's headline and detail, see :mod:`diagnosis.runai.categories`) and the next action that fits.
        ``final`` are the signals of the diagnosed termination; ``pod_name``/``namespace`` the inspected pod."""
        cat = finding.category
        primary = list(finding.signals)
        explain = [s for s in final if s.kind == Kind.LOG_ERROR]
        exit_codes, nodes = self.verdict_evidence(workload, tier1, primary, final, explain)
        if cat == Category.UNKNOWN and finding.reason and not kube_available:
            self.note("UNKNOWN rather than a guess: without Tier 2 the Tier 1 evidence names no cause.")
        facts = self.verdict_facts(workload, finding, explain, exit_codes, nodes, pod_name, namespace)
        entry = CATEGORIES[cat]
        headline = entry.verdict(facts)
        if self.rec is not None and self.rec.recurring:
            headline += f" It {recurrence_phrase(self.rec)}."
        next_action = entry.action(facts)
        level, basis = confidence(finding)
        return self._report(
            Outcome.DIAGNOSED,
            headline,
            category=cat,
            next_action=next_action,
            confidence=Confidence(level=level, signals=basis),  # type: ignore[arg-type]
        )

    def verdict_evidence(
        self,
        workload: Workload,
        tier1: Tier1,
        primary: Sequence[Signal],
        final: Sequence[Signal],
        explain: Sequence[Signal],
    ) -> tuple[list[int], list[str]]:
        """Put the evidence the verdict rests on before everything added so far: the finding's signals, the
        controller's verdict, exit codes, node, pod phases, log error lines, the phase. Returns the exit codes
        (sorted) and the node names named (unsorted, possibly repeated) for the verdict sentence."""
        head: list[EvidenceItem] = []
        saved, self.evidence = self.evidence, head
        self.signal_evidence(primary)
        # The controller's verdict (BackoffLimitExceeded, DeadlineExceeded, "Worker replica(s) failed") is quoted
        # verbatim whatever the category (FORMAT.md "Quote the decisive Tier 1 reasons").
        reports = [s for s in final if s.kind == Kind.FAILURE_REPORT and s not in primary and s.reason]
        if reports:
            self.signal_evidence(reports, 3)
        exit_codes = sorted(
            {
                s.exit_code
                for s in list(primary) + [s for s in final if s.kind == Kind.EXIT_SIGNAL]
                if s.exit_code is not None
            }
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
            self.add("node", ", ".join(sorted(set(nodes))), Calls.pods(workload.id).cite("nodeName"))
        for p in pods:
            if p.name in pod_names or len(pods) == 1:
                if p.k8s_phase:
                    self.add(f"k8sPhase of pod {p.name}", p.k8s_phase, Calls.pods(workload.id).cite())
        seen_lines: set[str] = set()
        for s in reversed(explain):
            if s.text in seen_lines or len(seen_lines) >= 4:
                continue
            seen_lines.add(s.text)
            self.add(f"log error line (container {s.container})", short(s.text, 300), s.source)
        quoted = any(s.text == workload.phase_message for s in primary)
        self.add(
            "phase",
            workload.phase + (f": {workload.phase_message}" if workload.phase_message and not quoted else ""),
            Calls.workload(workload.id).cite(),
            workload.phase_updated_at,
        )
        self.pods_running(workload)
        self.evidence = head + saved
        return exit_codes, nodes

    def verdict_facts(
        self,
        workload: Workload,
        finding: Finding,
        explain: Sequence[Signal],
        exit_codes: Sequence[int],
        nodes: Sequence[str],
        pod_name: str | None,
        namespace: str | None,
    ) -> VerdictFacts:
        """Everything the category's entry phrases its verdict and next action from (decided here, worded there:
        :mod:`diagnosis.runai.categories`)."""
        order = self.order
        unseen = None
        if finding.category == Category.UNKNOWN and order is not None and order.first is None and order.consequences:
            unseen = order.missing_replica or ""
        return VerdictFacts(
            primary=finding.signals,
            explain=explain,
            exit_codes=exit_codes,
            limit_raw=self.limit_raw,
            peak_bytes=self.peak_bytes,
            limit_bytes=self.limit_bytes,
            container=self.oom_container,
            init=self.oom_container_init,
            name=workload.name,
            phase=workload.phase,
            reason=finding.reason if finding.category == Category.UNKNOWN else None,
            nodes=tuple(nodes),
            pod=pod_name,
            namespace=namespace or (self.identity.namespace if self.identity else None),
            unseen_replica=unseen,
        )


# -- Pending and preemption, in plain language (issue 11 §3) -----------------------------------------------------

_QUOTA_MSG = re.compile(
    r"(?i)requested\s+(?P<requested>[0-9.]+)\s+GPUs?.*?quota\s+is\s+(?P<quota>[0-9.]+)\s+GPUs?"
    r"(?:.*?(?P<allocated>[0-9.]+)\s+GPUs?\s+(?:are|is)\s+already\s+allocated)?"
)
_LIMIT_MSG = re.compile(r"(?i)quota has reached the allowable limit of GPUs\.?\s*Limit is\s+(?P<quota>[0-9.]+)")
_PREEMPTOR = re.compile(r"(?i)preempted by (?:higher priority )?workload\s+([A-Za-z0-9._/-]+?)\.?(?:\s|$)")
_PLAIN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)non-preemptible.*over quota|NonPreemptibleOverQuota"),
     "as a non-preemptible workload it may not go over its project's GPU quota, and the quota is used up"),
    (re.compile(r"(?i)reached the allowable limit|OverLimit|over limit"),
     "its project has reached its GPU limit"),
    (re.compile(r"(?i)insufficient nvidia\.com/gpu|enough resources: GPU|not enough (?:gpu|resources)|"
                r"no nodes? with enough|Not enough resources"),
     "the node pool is out of free GPUs (physical capacity, not quota)"),
    (re.compile(r"(?i)node affinity|node selector|didn't match|taint|untolerated"),
     "no nodes match the workload's hardware requirements (selector, affinity or taints)"),
    (re.compile(r"(?i)preemption is not helpful"), "no lower-priority workloads can be evicted to free GPUs"),
    (re.compile(r"(?i)queue ?does ?not ?exist"), "its project's scheduling queue does not exist on this cluster"),
)  # fmt: skip


@dataclass(frozen=True)
class PendingFacts:
    """What a Pending answer rests on (decided purely from the workload, its scheduling signals and its project's
    item): GPUs ``requested``, the project's GPU ``quota`` and ``allocated`` GPUs (None when unknown), the
    scheduler's newest message in plain language with the workload's reason (``plain``) and alone (``latest``),
    the requested node ``pools`` (comma-joined), ``over_quota``, and the ``project`` as named in the answer."""

    requested: float | None
    quota: float | None
    allocated: float | None
    plain: str | None
    latest: str | None
    pools: str | None
    over_quota: bool
    project: str


def pending_facts(
    workload: Workload, scheduling: Sequence[Signal], project: dict[str, Any] | None = None
) -> PendingFacts:
    """Decide the facts of a Pending answer: numbers from the projects API first, else from the scheduler's
    messages (the newest first), the GPUs requested from the workload when no message names them."""
    newest = _newest_scheduler_text(scheduling, workload)
    numbers: dict[str, float] = {}
    for text in [newest, workload.phase_message, *(s.text for s in scheduling)]:
        for key, value in _quota_numbers(text or "").items():
            numbers.setdefault(key, value)
    quota, allocated = _project_gpus(project or {}, workload.requested_node_pools or [])
    requested = numbers.get("requested")
    if requested is None:
        requested = _requested_gpus(workload)
    if quota is None:
        quota = numbers.get("quota")
    if allocated is None:
        allocated = numbers.get("allocated")
    over_quota = (
        requested is not None and quota is not None and allocated is not None and allocated + requested > quota
    ) or (workload.phase_reason in {"NonPreemptibleOverQuota", "OverLimit"})
    return PendingFacts(
        requested=requested,
        quota=quota,
        allocated=allocated,
        plain=plain_scheduler(newest or "", workload),
        latest=plain_scheduler(newest or "", None),
        pools=", ".join(workload.requested_node_pools or []) or None,
        over_quota=over_quota,
        project=workload.project_name or "the project",
    )


def pending_reasons(f: PendingFacts) -> list[str]:
    """The "Why:" clauses of a Pending answer: the plain reason, the newest message when it says something else,
    and the project's quota arithmetic."""
    facts: list[str] = []
    if f.quota is not None and f.allocated is not None:
        free = f.quota - f.allocated
        facts.append(
            f"project {f.project} has {_num(f.quota)} GPUs of quota with {_num(f.allocated)} allocated, so "
            f"{_num(max(free, 0))} free"
            + (f" for the {_num(f.requested)} it asks for" if f.requested is not None else "")
        )
    if f.plain:
        facts.insert(0, f.plain)
    if f.latest and f.latest != f.plain:
        facts.insert(1, f"the scheduler's newest message says {f.latest}")
    return facts


def pending_step(f: PendingFacts, preemptible: bool | None) -> str:
    """The next step for a Pending workload: over quota (non-preemptible or not), out of capacity, no fitting
    node, else where to look."""
    plain = f.plain or ""
    if f.over_quota and preemptible is False:
        return (
            "Submit it as preemptible (it may then borrow idle GPUs over quota), lower its GPU request to fit the "
            "free quota, wait for the project's other non-preemptible workloads to finish, or ask the project "
            "administrator for more quota."
        )
    if f.over_quota:
        return (
            "Lower its GPU request to fit the free quota, wait for the project's running workloads to finish, or "
            "ask the project administrator for more quota."
        )
    if "capacity" in plain or "free GPUs" in plain:
        return (
            f"Wait for GPUs in node pool {f.pools or 'requested'} to free up, request fewer GPUs, or allow more node "
            "pools; the cluster administrators can tell you when capacity is added."
        )
    if "node" in plain:
        return (
            "Relax the node selector, affinity or tolerations so that some node qualifies, or ask the cluster "
            "administrators which nodes carry the hardware it asks for."
        )
    return (
        "Check the project's quota and the node pool's free GPUs in the Run:ai console (Projects, Nodes); "
        "if both suffice, ask the cluster administrators why the scheduler does not place it."
    )


def pending_for(workload: Workload, now: datetime) -> str | None:
    """How long ``workload`` has been Pending, as "3 h 12 min" (or "12 min"): since its ``phaseUpdatedAt`` (the
    current wait), else its ``totalPendingTimeSeconds``; None when neither is known (or it is negative)."""
    seconds: float | None = None
    if workload.phase_updated_at is not None:
        seconds = (now - workload.phase_updated_at).total_seconds()
    elif workload.total_pending_time_seconds is not None:
        seconds = workload.total_pending_time_seconds
    if seconds is None or seconds < 0:
        return None
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min"


def plain_scheduler(text: str, workload: Workload | None) -> str | None:
    """The scheduler's message in plain language (the translation table of the OSMO procedure, for Run:ai)."""
    reason = workload.phase_reason if workload is not None else None
    for pattern, plain in _PLAIN:
        if pattern.search(text) or (reason and pattern.search(reason)):
            return plain
    return None


def _newest_scheduler_text(signals: Sequence[Signal], workload: Workload) -> str | None:
    dated = [s for s in signals if s.at is not None]
    if dated:
        return max(dated, key=lambda s: s.at or datetime.min).text
    if signals:
        return signals[-1].text
    return workload.phase_message


def _quota_numbers(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    m = _QUOTA_MSG.search(text)
    if m:
        for key in ("requested", "quota", "allocated"):
            if m.group(key) is not None:
                out[key] = float(m.group(key))
    m2 = _LIMIT_MSG.search(text)
    if m2 and "quota" not in out:
        out["quota"] = float(m2.group("quota"))
    return out


def _gpu(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        for key in ("deserved", "gpu", "gpus", "value", "quota"):
            got = _gpu(value.get(key))
            if got is not None:
                return got
    return None


def _project_gpus(project: dict[str, Any], pools: Sequence[str]) -> tuple[float | None, float | None]:
    """(quota, allocated) GPUs of a project item, per requested node pool when the item has them."""
    quota = allocated = None
    for res in project.get("resources") or []:
        if isinstance(res, dict) and (not pools or ((res.get("nodePool") or {}).get("name") in pools)):
            got = _gpu(res.get("gpu"))
            quota = got if quota is None else (quota + got if got is not None else quota)
    if quota is None:
        quota = _gpu((project.get("totalResources") or {}).get("gpuQuota")) or _gpu(project.get("totalGpuQuota"))
    status = project.get("status") or {}
    for st in status.get("nodePoolQuotaStatuses") or []:
        if isinstance(st, dict) and (not pools or st.get("nodePoolName") in pools):
            got = _gpu((st.get("allocated") or {}).get("gpu") if isinstance(st.get("allocated"), dict) else None)
            allocated = got if allocated is None else (allocated + got if got is not None else allocated)
    if allocated is None:
        qs = status.get("quotaStatus") or {}
        allocated = _gpu((qs.get("allocated") or {}).get("gpu") if isinstance(qs.get("allocated"), dict) else None)
    if allocated is None:
        allocated = _gpu(project.get("gpuAllocated"))
    return quota, allocated


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _preemptor(signals: Sequence[Signal]) -> str | None:
    """The workload that preempted this one, when an eviction message names it."""
    for s in reversed(list(signals)):
        m = _PREEMPTOR.search(s.text or "")
        if m:
            ref = m.group(1).rstrip(".")
            namespace, _, group = ref.rpartition("/")
            # a pod group is named pg-<workload>-<n>-<uid>: the workload is what a person knows
            wl = re.fullmatch(r"pg-(.+?)-\d+-[0-9a-f-]{36}", group)
            if wl:
                where = f" in namespace {namespace}" if namespace else ""
                return f"workload {wl.group(1)}{where} (pod group {ref})"
            return ref
    return None


def _requested_gpus(workload: Workload) -> float | None:
    res = workload.pods_requested_resources
    if res is None or res.gpu is None:
        return None
    try:
        return float(res.gpu.request) if res.gpu.request is not None else None
    except (TypeError, ValueError):
        return None


def _ago(at: datetime | None, now: datetime) -> str:
    return ago(at, now)


# -- Phrase: the fourth job of a diagnosis ------------------------------------------------------------------------


def run_phases(workload: Workload, tier1: Tier1, now: datetime) -> list[Entry]:
    """The workload's phase updates of the run that ended (from its start to a minute after its end) as timeline
    context: ``"12:04:02 train-7 Failed"``, each citing the history."""
    start = incident.run_start(workload, tier1, now)
    end = incident.termination_time(workload) or now
    history = Calls.history(workload.id).source
    return [
        Entry(workload.name, r.meta.creation_timestamp, r.spec.phase_update.phase, source=history)
        for r in tier1.history.value or []
        if r.spec.phase_update is not None
        and r.spec.phase_update.phase
        and r.meta.creation_timestamp is not None
        and (start is None or r.meta.creation_timestamp >= start)
        and r.meta.creation_timestamp <= end + incident.FINAL_SLACK
    ]


def builder(d: Diagnosis, gaps: list[Gap] | None = None) -> ReportBuilder:
    """A report builder for ``d`` carrying ``gaps`` (default: the gaps found so far, a name lookup that paged
    wrongly for instance)."""
    b = ReportBuilder(
        now=d.now,
        lookback=d.lookback,
        console_url=d.config.console_url,
        workload_url_template=d.config.workload_url_template,
    )
    for g in d.gaps if gaps is None else gaps:
        b.gap(g.what, g.why)
    return b


def phrase(d: Diagnosis, workload: Workload, tier1: Tier1, found: Routed | Decision, early: int) -> Report:
    """The report of one diagnosis from what the route or decide job found (spec Step 5): identity, what Tier 1
    could not show, then the route's answer, or the decision's evidence (Tier 2, the pod order and timeline,
    recurrence, memory) and its verdict. ``early``: how many of ``d.gaps`` were known before the route job (the
    later ones are the decision's and are added after Tier 2's evidence)."""
    b = builder(d, d.gaps[:early])
    b.set_identity(workload, tier1)
    tier1_gaps(b, workload, tier1)
    spec = tier1.spec.value.spec if tier1.spec.value else None
    if not isinstance(found, Decision):
        return routed_report(b, workload, found, spec, d.found)
    if found.preempted:
        return b.route_preempted(workload, found.preempted, spec)
    finding, tier2 = found.finding, found.tier2
    if tier2 is not None:
        b.tier2(tier2)
    elif not d.kube.available:
        b.gap(
            "Tier 2 Kubernetes evidence (previous logs, pod description, namespace events, node)",
            d.kube.why_unavailable,
        )
    b.pod_order(found.order, run_phases(workload, tier1, d.now))
    for g in d.gaps:
        b.gap(g.what, g.why)
    if found.nearby is not None:
        b.neighbours(found.nearby, workload)
    b.recurrence(finding.category, found.occurrences)
    if not tier1.history.ok:
        b.gap(
            "recurrence",
            "history could not be read, so earlier occurrences were counted from the events call only"
            if tier1.events.ok
            else "neither history nor events could be read: only the diagnosed failure is counted",
        )
    # Step 4: memory peak vs the limit when OOM or an unexplained exit 137 is involved.
    sidecar = finding.category == Category.OOM_KILLED and b.killed_container_limit(
        workload, finding, tier2, tier1.pods.value or []
    )
    if not sidecar and (finding.category == Category.OOM_KILLED or unresolved_exit(found.final)):
        b.memory(workload, tier1, tier2, pod=found.pod)  # the peak and the limit of the diagnosed pod
    return b.diagnosed(workload, tier1, finding, found.final, tier2, d.kube.available, found.pod, found.namespace)


def routed_report(b: ReportBuilder, workload: Workload, routed: Routed, spec: Any, past: Sequence[Workload]) -> Report:
    """The answer of a workload the phase rules routed out (spec Steps 1.4-1.5)."""
    if routed.outcome == Outcome.ROUTE_PREEMPTED:
        return b.route_preempted(workload, routed.preempted, spec)
    if routed.outcome == Outcome.SUCCEEDED:
        return b.succeeded(workload)
    if routed.outcome == Outcome.OUT_OF_SCOPE:
        return b.out_of_scope(workload)
    if routed.outcome == Outcome.ROUTE_PENDING:
        return b.route_pending(workload, routed.scheduling, routed.project_item, stuck=routed.stuck)
    if routed.outcome == Outcome.ASK_PAST_RUN:
        return b.ask_past_run(workload, past)
    return b.phase_only(workload, routed.signals)


def tier1_gaps(b: ReportBuilder, workload: Workload, tier1: Tier1) -> None:
    """What Tier 1 could not show: each failed call (``why [GET path]``), skipped list items, an unread
    spec of a Stopped workload, failed events, an empty pods list."""
    for got in tier1.evidence_reads:
        if not b.fetched(got, with_call=True):
            continue
        if isinstance(got.value, Records) and got.value.skipped:
            b.gap(got.what, f"{got.value.skipped_text()} [{got.path}]")
    if workload.phase == "Stopped" and tier1.spec.value is None:
        b.gap("stop requested (desiredPhase)", "not known: the submitted spec could not be read")
    if not tier1.events.ok and tier1.history.ok:
        b.note("The events call failed; that is not proof that no events occurred. History events were used instead.")
    if tier1.pods.ok and not tier1.pods.value:
        asked = isinstance(tier1.pods.value, Records) and tier1.pods.value.asked_deleted
        both = ", live or deleted (asked again with deleted=true)" if asked else ""
        b.gap("pods", f"the pods endpoint returned no pods{both} (deleted or not yet created)")
