"""Accuracy bench: every snapshot case of the given folders through the public CLI, in parallel.

Prints pass counts by folder, by kind of case, by expected outcome and by expected category, and the
number of confident-wrong answers: the product answered outcome ``diagnosed``/``failed`` with a specific
category (not UNKNOWN) while the case expects another category, UNKNOWN, or a non-diagnosed outcome.
A deterministic tool is trusted when it is right or says "unknown"; confident-wrong is the number to
drive to zero.

Kinds (``case_kind``): ``single pod``, ``distributed``, ``multi-container``, ``OSMO``, ``hostile``. A case's
own ``kind`` label (the field cases carry one) decides; otherwise the kind is read from the snapshot: a
``never_mentions`` list or injected ``faults`` make it hostile, an ``osmo`` section without ``runai`` makes it
OSMO, a Distributed workload or more than one pod makes it distributed, a pod with an init container or more
than one container makes it multi-container, and everything else is single pod. Pass rate and confident-wrong
are reported for each kind.

Each folder counts only its own *.json files (not its subfolders), so ../shared/cases/runai and
../shared/cases/runai/real are reported separately. Cases are checked with the shared run-cases
comparison (../shared/tools/run-cases) when it is there.

Usage: python bench/accuracy.py [--cli CMD] [--jobs 3] [--timeout 120] [--verbose] [FOLDER ...]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import shlex
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_FOLDERS = [
    "../shared/cases/runai",
    "../shared/cases/runai/real",
    "../shared/cases/osmo",
    "../shared/cases/osmo/real",
    "../shared/cases/runai/phrasing",
    "tests/field/cases",
]
DIAGNOSED = ("diagnosed", "failed")
KINDS = ("single pod", "distributed", "multi-container", "OSMO", "hostile")
#: The ``kind`` labels written in case files, mapped to the names of KINDS.
KIND_LABELS = {
    "single-pod": "single pod",
    "single pod": "single pod",
    "distributed": "distributed",
    "multi-container": "multi-container",
    "osmo": "OSMO",
    "hostile": "hostile",
}

Check = Callable[[dict[str, Any], str, str], list[str]]


def _builtin_check(case: dict[str, Any], out: str, err: str) -> list[str]:
    """The run-cases comparison for single-workload cases, used when ../shared/tools/run-cases is absent."""
    exp = case["expect"]
    try:
        got = json.loads(out)
    except ValueError:
        return ["stdout is not one JSON object"]
    if not isinstance(got, dict):
        return ["stdout JSON is not an object"]
    problems = []
    for key in ("outcome", "category", "recurring"):
        if key in exp and got.get(key) != exp[key]:
            problems.append(f"{key} {got.get(key)!r} != {exp[key]!r}")
    text = got.get("report_text") or ""
    problems += [f"report_text lacks {m!r}" for m in exp.get("mentions", []) if m not in text]
    problems += [f"output contains forbidden {m!r}" for m in exp.get("never_mentions", []) if m in out or m in err]
    return problems


def case_kind(case: dict[str, Any]) -> str:
    """The kind of a snapshot case (one of KINDS): its ``kind`` label, else read from its content.

    Shapes: ``case`` is a snapshot/1 document (../shared/cases/FORMAT.md). An unknown label is returned as
    written, so a typo shows up as its own row instead of being folded into another kind.
    """
    label = case.get("kind")
    if isinstance(label, str) and label:
        return KIND_LABELS.get(label.lower(), label)
    exp = case.get("expect") or {}
    if exp.get("never_mentions") or case.get("faults"):
        return "hostile"
    if case.get("osmo") and not case.get("runai"):
        return "OSMO"
    workloads = (case.get("runai") or {}).get("workloads") or []
    k8s_pods = list((case.get("kubernetes") or {}).get("pods") or [])
    for per_cluster in (case.get("kubernetes_by_cluster") or {}).values():
        k8s_pods += (per_cluster or {}).get("pods") or []
    for w in workloads:
        if (w.get("workload") or {}).get("type") == "Distributed" or len(w.get("pods") or []) > 1:
            return "distributed"
    if len(k8s_pods) > 1 and len(workloads) == 1:
        return "distributed"
    for pod in k8s_pods:
        spec = pod.get("spec") or {}
        if spec.get("initContainers") or len(spec.get("containers") or []) > 1:
            return "multi-container"
    for w in workloads:
        if any(len(p.get("containers") or []) > 1 for p in w.get("pods") or []):
            return "multi-container"
    return "single pod"


def load_check() -> Check:
    path = SHARED / "tools" / "run-cases"
    if not path.is_file():
        return _builtin_check
    loader = importlib.machinery.SourceFileLoader("run_cases", str(path))
    spec = importlib.util.spec_from_loader("run_cases", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    check: Check = module.check
    return check


@dataclass
class Result:
    folder: str
    path: Path
    case_id: str
    exp_outcome: str
    exp_category: str
    kind: str = "single pod"
    got_outcome: str | None = None
    got_category: str | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def confident_wrong(self) -> bool:
        """A specific category stated as fact where the case expects something else."""
        if self.got_outcome not in DIAGNOSED or self.got_category in (None, "UNKNOWN"):
            return False
        if self.exp_outcome not in DIAGNOSED or self.exp_category == "UNKNOWN":
            return True
        return self.got_category != self.exp_category


def run_one(cli: list[str], folder: str, path: Path, timeout: float, check: Check) -> Result:
    case = json.loads(path.read_text())
    exp = case.get("expect") or {}
    r = Result(
        folder,
        path,
        case.get("id", path.stem),
        str(exp.get("outcome")),
        str(exp.get("category") or "-"),
        case_kind(case),
    )
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [*cli, "diagnose", "--snapshot", str(path), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except FileNotFoundError:
        r.problems = [f"cannot run {shlex.join(cli)!r}"]
        return r
    except subprocess.TimeoutExpired:
        r.problems = [f"no answer in {timeout:g} s"]
        r.seconds = timeout
        return r
    r.seconds = time.perf_counter() - t0
    r.problems = check(case, proc.stdout, proc.stderr)
    if proc.returncode != 0 and not r.problems:
        r.problems = [f"exit status {proc.returncode}"]
    try:
        got = json.loads(proc.stdout)
        if isinstance(got, dict):
            r.got_outcome, r.got_category = got.get("outcome"), got.get("category")
    except ValueError:
        pass
    return r


def table(title: str, rows: dict[str, list[Result]], order: list[str] | None = None) -> list[str]:
    """Rows of pass / total, pass rate (%) and confident-wrong count per key (sorted, or in ``order``)."""
    width = max([len(title), *(len(k) for k in rows)])
    lines = [f"{title:<{width}}  pass / total    %   confident-wrong"]
    for key in order or sorted(rows):
        rs = rows.get(key, [])
        ok = sum(r.passed for r in rs)
        cw = sum(r.confident_wrong for r in rs)
        rate = f"{100 * ok / len(rs):5.1f}" if rs else "    -"
        lines.append(f"{key:<{width}}  {ok:>4} / {len(rs):<5} {rate}   {cw}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("folders", nargs="*", help=f"case folders (default: {' '.join(DEFAULT_FOLDERS)})")
    ap.add_argument("--cli", help="command that runs the product CLI (default: the venv's workload-doctor)")
    ap.add_argument("--jobs", type=int, default=3, help="cases run at once")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--verbose", action="store_true", help="list every failing case with its problems")
    a = ap.parse_args()

    venv_cli = Path(sys.executable).parent / "workload-doctor"
    cli = shlex.split(a.cli) if a.cli else [str(venv_cli) if venv_cli.exists() else "workload-doctor"]
    check = load_check()

    jobs: list[tuple[str, Path]] = []
    for folder in a.folders or DEFAULT_FOLDERS:
        base = Path(folder)
        resolved = base if base.is_absolute() or base.exists() else ROOT / base
        if not resolved.is_dir():
            print(f"skipped {folder}: not a folder")
            continue
        files = sorted(resolved.glob("*.json"))
        if not files:
            print(f"skipped {folder}: no *.json cases")
        jobs += [(folder, f) for f in files]
    if not jobs:
        print("no cases found", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(lambda j: run_one(cli, j[0], j[1], a.timeout, check), jobs))
    wall = time.perf_counter() - t0

    by_folder: dict[str, list[Result]] = defaultdict(list)
    by_kind: dict[str, list[Result]] = {k: [] for k in KINDS}
    by_outcome: dict[str, list[Result]] = defaultdict(list)
    by_category: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_folder[r.folder].append(r)
        by_kind.setdefault(r.kind, []).append(r)
        by_outcome[r.exp_outcome].append(r)
        by_category[r.exp_category].append(r)

    passed = sum(r.passed for r in results)
    wrong = [r for r in results if r.confident_wrong]
    out = [
        f"accuracy: {passed} / {len(results)} cases pass ({100 * passed / len(results):.1f}%), "
        f"{len(wrong)} confident-wrong, {wall:.1f} s with {a.jobs} jobs",
        "",
    ]
    out += [*table("by folder", by_folder), ""]
    out += [*table("by kind", by_kind, order=[*KINDS, *sorted(set(by_kind) - set(KINDS))]), ""]
    out += [*table("by expected outcome", by_outcome), ""]
    out += [*table("by expected category", by_category), ""]
    if wrong:
        out.append("confident-wrong answers (a specific category where the case expects another answer):")
        for r in sorted(wrong, key=lambda r: (r.folder, r.case_id)):
            want = r.exp_outcome if r.exp_category == "-" else f"{r.exp_outcome}/{r.exp_category}"
            out.append(f"  {r.folder}/{r.path.name}: answered {r.got_outcome}/{r.got_category}, expected {want}")
        out.append("")
    failing = [r for r in results if not r.passed]
    if failing:
        out.append(f"failing cases ({len(failing)}):")
        for r in sorted(failing, key=lambda r: (r.folder, r.case_id)):
            line = f"  {r.folder}/{r.path.name}"
            out.append(line + (": " + "; ".join(r.problems) if a.verbose else ""))
        out.append("")
    counts = Counter(r.got_outcome for r in results)
    out.append("answered outcomes: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items(), key=str)))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
