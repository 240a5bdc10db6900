"""One entry per Run:ai category (issue 10 §1): its analyzers, headline, detail, next action, Tier 2 need and
plain-language text, in one place. The report (:mod:`diagnosis.runai.reporting`) and the procedure's Tier 2
decision (:mod:`diagnosis.runai.procedure`) read them from :data:`CATEGORIES`.

Adding a Run:ai category is its :class:`~diagnosis.report.Category` value, an analyzer in
:mod:`diagnosis.runai.classify` (placed in ``PRECEDENCE``) and one :class:`RunaiCategory` here;
``tests/diagnosis/test_category_registry.py`` fails when an entry lacks any of its texts. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from diagnosis.report import Category
from diagnosis.runai import classify as cls
from diagnosis.runai.phrases import IMAGE_REF, cause, short
from diagnosis.runai.signals import Kind, Signal, gpu_hardware_fault, missing_objects, start_error_cause
from diagnosis.units import gib
from diagnosis.untrusted import in_code


@dataclass(frozen=True)
class VerdictFacts:
    """What a verdict (headline, detail, next action) may cite, decided before any word is chosen.

    ``primary``: the signals the finding rests on; ``explain``: log error lines of the final window; ``exit_codes``
    sorted; ``limit_raw`` the memory limit as written ("32Gi"); ``peak_bytes``/``limit_bytes`` the measured peak
    and the limit in bytes, when known; ``container``/``init`` the sidecar or init container whose own limit was
    the OOM ceiling (None: the main container). ``name``/``phase`` the workload's; ``reason`` the finding's own
    reason (an UNKNOWN that says why); ``nodes`` the nodes the evidence names; ``pod``/``namespace`` the inspected
    pod; ``unseen_replica`` the replica that failed first when it cannot be seen (``""``: its name is not known,
    None: it was seen or there is one pod)."""

    primary: Sequence[Signal]
    explain: Sequence[Signal] = ()
    exit_codes: Sequence[int] = ()
    limit_raw: str | None = None
    peak_bytes: float | None = None
    limit_bytes: float | None = None
    container: str | None = None
    init: bool = False
    name: str = "the workload"
    phase: str = "Failed"
    reason: str | None = None
    nodes: Sequence[str] = ()
    pod: str | None = None
    namespace: str | None = None
    unseen_replica: str | None = None

    @property
    def texts(self) -> str:
        return " ".join(s.text for s in self.primary)

    @property
    def liveness(self) -> bool:
        """The kubelet killed the container because its liveness probe failed (a CRASH_APP_ERROR of its own)."""
        return any(s.kind == Kind.LIVENESS_KILL for s in self.primary)


Detail = Callable[[VerdictFacts], str]
Variant = Callable[[VerdictFacts], str | None]
Action = Callable[[VerdictFacts, str], str]


def _no_variant(facts: VerdictFacts) -> str | None:
    return None


def _default_action(facts: VerdictFacts, action: str) -> str:
    return action


@dataclass(frozen=True)
class RunaiCategory:
    """One Run:ai category, everything a report says about it (OSMO's shape, :mod:`diagnosis.osmo.categories`).

    ``headline`` follows the workload's name ("<name> could not pull its container image"); ``variant`` gives a
    whole headline sentence instead when the facts call for one (None otherwise); ``detail`` gives the concrete
    cause appended after a colon ("" when the evidence names none); ``next_action`` is the default step and
    ``fit`` fits it to the evidence (the registry's refusal, the log not read, a sidecar's own limit); ``tier2``
    says whether spec Step 4 asks for container-level Kubernetes evidence; ``plain`` is the category in plain
    language, one clause; ``emoji``/``title`` are its words on the card's header and the text's first line;
    ``analyzers`` are the :mod:`~diagnosis.runai.classify` analyzers that give it (empty for UNKNOWN, what
    remains; their order among all categories is ``classify.PRECEDENCE``, tested against these entries)."""

    category: Category
    analyzers: tuple[cls.Analyzer, ...]
    headline: str
    detail: Detail
    next_action: str
    tier2: bool
    plain: str
    emoji: str
    title: str
    variant: Variant = _no_variant
    fit: Action = _default_action

    def verdict(self, f: VerdictFacts) -> str:
        """The verdict sentence without its recurrence: the headline (or its variant), then the detail after a
        colon. ``"train-7 was killed by the kernel ... (OOMKilled): peak 31.9 GiB of its 32Gi memory limit."``"""
        special = self.variant(f)
        headline = special if special is not None else f"{f.name} {self.headline}."
        detail = self.detail(f)
        return headline.rstrip(".") + f": {detail}." if detail else headline

    def action(self, f: VerdictFacts) -> str:
        """The next action that fits the evidence (issue 13 §3)."""
        return self.fit(f, self.next_action)


def _no_detail(facts: VerdictFacts) -> str:
    return ""


def _oom_detail(f: VerdictFacts) -> str:
    if f.container:
        role = "init container" if f.init else "sidecar container"
        limit = f" at its own {f.limit_raw} memory limit" if f.limit_raw else ""
        return f"{role} {f.container} was OOMKilled{limit}, not the main container"
    if not f.limit_raw:
        return ""
    if f.peak_bytes is not None and f.limit_bytes:
        pct = 100 * f.peak_bytes / f.limit_bytes
        return f"peak {gib(f.peak_bytes)} of its {f.limit_raw} memory limit ({pct:.1f}%)"
    return f"its memory limit is {f.limit_raw}"


def _image_detail(f: VerdictFacts) -> str:
    m = IMAGE_REF.search(f.texts)
    pulls = [s.text for s in f.primary if IMAGE_REF.search(s.text) and "Back-off" not in s.text]
    why = cause(pulls[-1]) if pulls else ""
    # the container whose image it is, when the pod status names it (an init container's pull, not the workload's)
    named = sorted({s.container for s in f.primary if s.kind == Kind.IMAGE_PULL and s.container})
    init = any(s.init or s.text.startswith("Init:") for s in f.primary)  # the pod status says Init:ImagePullBackOff
    whose = f"{'init container' if init else 'container'} {', '.join(named)}: " if named else ""
    if m:
        return whose + f'image "{m.group(1)}"' + (f" ({why})" if why and why not in m.group(1) else "")
    return whose + why


def _mount_detail(f: VerdictFacts) -> str:
    missing = list(dict.fromkeys(missing_objects(f.texts)))  # every missing object named, once each
    return "; ".join(missing) if missing else (cause(f.primary[-1].text) if f.primary else "")


def _init_detail(f: VerdictFacts) -> str:
    containers = sorted(
        {s.container for s in f.primary if s.container and s.init} or {s.container for s in f.primary if s.container}
    )
    what = f"init container {', '.join(containers)}" if containers else "an init container"
    codes = f" exited with code {', '.join(str(c) for c in f.exit_codes)}" if f.exit_codes else " failed"
    lines = [s for s in f.explain if s.container in containers]
    return what + codes + (f"; its log ends with `{in_code(short(lines[-1].text, 160))}`" if lines else "")


def _crash_detail(f: VerdictFacts) -> str:
    if f.liveness:
        return ""  # the liveness variant says it all
    if any(s.kind == Kind.START_ERROR_APP and s.reason == "FailedPostStartHook" for s in f.primary):
        return "its postStart hook failed (FailedPostStartHook) and the kubelet killed the container"
    starts = [c for s in f.primary if s.kind == Kind.START_ERROR_APP for c in [start_error_cause(s.text)] if c]
    if starts:
        return f"the container runtime could not start its command ({starts[-1]})"
    if f.explain:
        return f"the log ends with `{in_code(short(f.explain[-1].text, 160))}`"
    if f.exit_codes:
        return f"exit code {', '.join(str(c) for c in f.exit_codes)}"
    return ""


def _node_detail(f: VerdictFacts) -> str:
    faults = [x for s in f.primary for x in [gpu_hardware_fault(s.text)] if x]
    return f"GPU hardware fault {faults[-1]}" if faults else ""


# -- headline variants and fitted next actions -----------------------------------------------------------------


def _unknown_variant(f: VerdictFacts) -> str | None:
    if not f.reason:
        return None
    return f"{f.name} failed ({f.phase}), but the cause is UNKNOWN: {f.reason}."


def _crash_variant(f: VerdictFacts) -> str | None:
    if not f.liveness:
        return None
    return (
        f"{f.name} was killed by the kubelet because its liveness probe failed "
        "(the program did not answer its health check in time)."
    )


def _node_variant(f: VerdictFacts) -> str | None:
    return f"{f.name} failed because its node {', '.join(sorted(set(f.nodes)))} failed." if f.nodes else None


def _oom_fit(f: VerdictFacts, action: str) -> str:
    if not f.container:
        return action
    role = "init container" if f.init else "sidecar container"
    now = f" (now {f.limit_raw})" if f.limit_raw else ""
    return (
        f"Raise the memory limit of the {role} {f.container}{now} where it is set (the pod template, "
        "or the injector's settings or annotations for an injected sidecar), or cut what it holds in memory; "
        "the workload's cpuMemory limit does not cover it. Then resubmit."
    )


def _image_fit(f: VerdictFacts, action: str) -> str:
    """The registry's own refusal decides the step: a rate limit, refused credentials, a missing image."""
    m = IMAGE_REF.search(f.texts)
    image = f"`{in_code(m.group(1))}`" if m else "the image"
    low = f.texts.lower()
    if "toomanyrequests" in low or "rate limit" in low or " 429" in low:
        return (
            f"The registry rate-limited the pull of {image} (toomanyrequests): pull through a registry "
            "mirror or authenticate the pulls (a pull secret for that registry), then resubmit."
        )
    if any(w in low for w in ("unauthorized", "denied", "authentication required", "403 forbidden")):
        return (
            f"The registry refused {image}: add or fix the pull secret (imagePullSecrets / the project's "
            "registry credential) for that registry, then resubmit."
        )
    if any(w in low for w in ("not found", "manifest unknown", "does not exist", "no such host")):
        return (
            f"The registry has no {image}: check the repository name and tag (typo, tag never pushed or "
            "deleted), fix the image in the workload, then resubmit."
        )
    return action.replace("the image reference", f"the image reference {image}") if m else action


def _no_log_fit(what: str) -> Action:
    """With no log read, the step is the commands that would show the error (never "fix the error shown")."""

    def fit(f: VerdictFacts, action: str) -> str:
        if f.explain:
            return action
        pod, ns = f.pod or "<pod>", f.namespace or "<namespace>"
        return (
            f"No {what} log was read, so the error itself is not shown here: read it with "
            f"`kubectl logs {pod} -n {ns} --previous` (add `-c <container>` for the {what}) and "
            f"`kubectl describe pod {pod} -n {ns}`, fix what it shows, then resubmit."
        )

    return fit


_container_no_log = _no_log_fit("container")


def _crash_fit(f: VerdictFacts, action: str) -> str:
    if f.liveness:
        return (
            "Give the program time to start: raise the liveness probe's initialDelaySeconds or "
            "failureThreshold, or add a startupProbe, then resubmit."
        )
    return _container_no_log(f, action)


def _unknown_fit(f: VerdictFacts, action: str) -> str:
    if f.unseen_replica is not None:
        replica = f.unseen_replica or "first failing"
        return (
            f"Find why the {replica} replica failed: its pod is gone, so read its logs from your log store, or "
            "keep failed pods for next time (the job's runPolicy.cleanPodPolicy: None) and rerun. The peers' "
            "later exits (SIGTERM, collective timeouts) are consequences, not the cause."
        )
    if f.pod and f.namespace:
        return action.replace("<pod>", f.pod).replace("<namespace>", f.namespace)
    return action


_ENTRIES: tuple[RunaiCategory, ...] = (
    RunaiCategory(
        Category.OOM_KILLED,
        (cls.oom,),
        headline="was killed by the kernel for exceeding its memory limit (OOMKilled)",
        detail=_oom_detail,
        next_action=(
            "Raise the container memory limit (cpuMemory limit) or cut peak host memory use "
            "(smaller batch or sequence length, fewer data-loader workers, no in-memory dataset cache), then "
            "resubmit."
        ),
        tier2=True,
        plain="the container used more memory than its limit and the kernel killed it",
        emoji="💥",
        title="OOM killed",
        fit=_oom_fit,
    ),
    RunaiCategory(
        Category.IMAGE_PULL_FAILED,
        (cls.image_pull,),
        headline="could not pull its container image",
        detail=_image_detail,
        next_action=(
            "Check the image reference and tag exist in the registry and that the project has pull credentials "
            "(imagePullSecrets / a registry credential) for it, then resubmit."
        ),
        tier2=False,
        plain="the container image could not be pulled, so the program never ran",
        emoji="📦",
        title="Image pull failed",
        fit=_image_fit,
    ),
    RunaiCategory(
        Category.INIT_FAILED,
        (cls.init_failed,),
        headline="failed in an init container before the main container started",
        detail=_init_detail,
        next_action=(
            "Fix what the init container needs (see its log: permissions, data source, command), then resubmit."
        ),
        tier2=True,
        plain="an init container failed before the main program started",
        emoji="🧰",
        title="Init container failed",
        fit=_no_log_fit("init container"),
    ),
    RunaiCategory(
        Category.DATASOURCE_MOUNT_FAILED,
        (cls.missing_object, cls.mount_failed),
        headline="could not mount one of its data sources",
        detail=_mount_detail,
        next_action=(
            "Create the missing data source (PVC, Secret or ConfigMap) in the workload's namespace, or fix its "
            "name in the workload's data sources, then resubmit."
        ),
        tier2=False,
        plain="a data source it mounts (PVC, Secret or ConfigMap) is missing or could not be mounted",
        emoji="💾",
        title="Data source mount failed",
    ),
    RunaiCategory(
        Category.CRASH_APP_ERROR,
        (cls.app_crash,),
        headline="failed because its own program exited with an error",
        detail=_crash_detail,
        next_action="Fix the application error shown in the container log (or the command/arguments), then resubmit.",
        tier2=True,
        plain="the workload's own program exited with an error",
        emoji="🔥",
        title="Crashed (application error)",
        variant=_crash_variant,
        fit=_crash_fit,
    ),
    RunaiCategory(
        Category.NODE_FAILURE,
        (cls.node_failure,),
        headline="failed because its node failed",
        detail=_node_detail,
        next_action=(
            "The workload was not at fault: resubmit it (it will be placed on a healthy node) and report the node "
            "to the cluster administrators."
        ),
        tier2=True,
        plain="the node it ran on failed, not the workload",
        emoji="🖥️",
        title="Node failure",
        variant=_node_variant,
    ),
    RunaiCategory(
        Category.SCHEDULING_POLICY_TERMINATED,
        (cls.policy_stop,),
        headline="was stopped by a scheduling policy",
        detail=_no_detail,
        next_action=(
            "The workload was stopped by a scheduling policy, not by an error: adjust the policy limit with the "
            "project administrator, or keep the workload busy / shorter, then resubmit."
        ),
        tier2=False,
        plain="a scheduling policy stopped it (a deadline, an idle or duration limit, or a requested stop)",
        emoji="⛔",
        title="Stopped by a scheduling policy",
    ),
    RunaiCategory(
        Category.UNKNOWN,
        (),
        headline="failed, but the evidence does not name a cause",
        detail=_no_detail,
        next_action=(
            "Gather container-level evidence: kubectl describe pod <pod> -n <namespace>; kubectl logs <pod> -n "
            "<namespace> --previous; kubectl get events -n <namespace> --field-selector involvedObject.name=<pod>."
        ),
        tier2=True,
        plain="the evidence does not name a cause",
        emoji="❓",
        title="Failed, cause unknown",
        variant=_unknown_variant,
        fit=_unknown_fit,
    ),
)

#: Every Run:ai category by its enum value.
CATEGORIES: Mapping[Category, RunaiCategory] = MappingProxyType({e.category: e for e in _ENTRIES})


def entry(category: Category) -> RunaiCategory:
    """The entry of ``category``; raises ``KeyError`` for a category Run:ai does not give (an OSMO-only one)."""
    return CATEGORIES[category]
