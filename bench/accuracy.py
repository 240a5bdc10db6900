"""Accuracy bench: every snapshot case of the given folders through the public CLI, in parallel.

Prints pass counts by folder, by expected outcome and by expected category, and the number of
confident-wrong answers: the product answered outcome ``diagnosed``/``failed`` with a specific
category (not UNKNOWN) while the case expects another category, UNKNOWN, or a non-diagnosed outcome.
A deterministic tool is trusted when it is right or says "unknown"; confident-wrong is the number to
drive to zero.

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
    "tests/field/cases",
]
DIAGNOSED = ("diagnosed", "failed")

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
    r = Result(folder, path, case.get("id", path.stem), str(exp.get("outcome")), str(exp.get("category") or "-"))
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


def table(title: str, rows: dict[str, list[Result]]) -> list[str]:
    width = max([len(title), *(len(k) for k in rows)])
    lines = [f"{title:<{width}}  pass / total    %   confident-wrong"]
    for key in sorted(rows):
        rs = rows[key]
        ok = sum(r.passed for r in rs)
        cw = sum(r.confident_wrong for r in rs)
        lines.append(f"{key:<{width}}  {ok:>4} / {len(rs):<5} {100 * ok / len(rs):5.1f}   {cw}")
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
    by_outcome: dict[str, list[Result]] = defaultdict(list)
    by_category: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_folder[r.folder].append(r)
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
