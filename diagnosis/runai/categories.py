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


@dataclass(frozen=True)
class DetailFacts:
    """What the verdict sentence's detail may cite. ``primary``: the signals the finding rests on; ``explain``:
    log error lines of the final window; ``exit_codes`` sorted; ``limit_raw`` the memory limit as written
    ("32Gi"); ``peak_bytes``/``limit_bytes`` the measured peak and the limit in bytes, when known."""

    primary: Sequence[Signal]
    explain: Sequence[Signal] = ()
    exit_codes: Sequence[int] = ()
    limit_raw: str | None = None
    peak_bytes: float | None = None
    limit_bytes: float | None = None
    #: the sidecar or init container whose own limit was the OOM ceiling (None: the main container)
    container: str | None = None
    init: bool = False

    @property
    def texts(self) -> str:
        return " ".join(s.text for s in self.primary)


Detail = Callable[[DetailFacts], str]


@dataclass(frozen=True)
class RunaiCategory:
    """One Run:ai category. ``headline`` follows the workload's name ("<name> could not pull its container
    image"); ``detail`` gives the concrete cause appended after a colon ("" when the evidence names none);
    ``next_action`` is the default step (the report fits it to the evidence); ``tier2`` says whether spec
    Step 4 asks for container-level Kubernetes evidence; ``plain`` is the category in plain language, one clause;
    ``analyzers`` are the :mod:`~diagnosis.runai.classify` analyzers that give it (empty for UNKNOWN, what
    remains)."""

    category: Category
    analyzers: tuple[cls.Analyzer, ...]
    headline: str
    detail: Detail
    next_action: str
    tier2: bool
    plain: str


def _no_detail(facts: DetailFacts) -> str:
    return ""


def _oom_detail(f: DetailFacts) -> str:
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


def _image_detail(f: DetailFacts) -> str:
    m = IMAGE_REF.search(f.texts)
    pulls = [s.text for s in f.primary if IMAGE_REF.search(s.text) and "Back-off" not in s.text]
    why = cause(pulls[-1]) if pulls else ""
    if m:
        return f'image "{m.group(1)}"' + (f" ({why})" if why and why not in m.group(1) else "")
    return why


def _mount_detail(f: DetailFacts) -> str:
    missing = list(dict.fromkeys(missing_objects(f.texts)))  # every missing object named, once each
    return "; ".join(missing) if missing else (cause(f.primary[-1].text) if f.primary else "")


def _init_detail(f: DetailFacts) -> str:
    containers = sorted(
        {s.container for s in f.primary if s.container and s.init} or {s.container for s in f.primary if s.container}
    )
    what = f"init container {', '.join(containers)}" if containers else "an init container"
    codes = f" exited with code {', '.join(str(c) for c in f.exit_codes)}" if f.exit_codes else " failed"
    lines = [s for s in f.explain if s.container in containers]
    return what + codes + (f"; its log ends with `{short(lines[-1].text, 160)}`" if lines else "")


def _crash_detail(f: DetailFacts) -> str:
    starts = [c for s in f.primary if s.kind == Kind.START_ERROR_APP for c in [start_error_cause(s.text)] if c]
    if starts:
        return f"the container runtime could not start its command ({starts[-1]})"
    if f.explain:
        return f"the log ends with `{short(f.explain[-1].text, 160)}`"
    if f.exit_codes:
        return f"exit code {', '.join(str(c) for c in f.exit_codes)}"
    return ""


def _node_detail(f: DetailFacts) -> str:
    faults = [x for s in f.primary for x in [gpu_hardware_fault(s.text)] if x]
    return f"GPU hardware fault {faults[-1]}" if faults else ""


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
    ),
    RunaiCategory(
        Category.CRASH_APP_ERROR,
        (cls.app_crash,),
        headline="failed because its own program exited with an error",
        detail=_crash_detail,
        next_action="Fix the application error shown in the container log (or the command/arguments), then resubmit.",
        tier2=True,
        plain="the workload's own program exited with an error",
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
    ),
)

#: Every Run:ai category by its enum value.
CATEGORIES: Mapping[Category, RunaiCategory] = MappingProxyType({e.category: e for e in _ENTRIES})


def entry(category: Category) -> RunaiCategory:
    """The entry of ``category``; raises ``KeyError`` for a category Run:ai does not give (an OSMO-only one)."""
    return CATEGORIES[category]
