"""The client fault suite (issue 15 §1 and §5) through the installed ``workload-doctor`` binary, one process per
fault: the slow variant of ``tests/diagnosis/test_client_faults.py``.

The test runs the CLI in-process (Typer's runner); this runs the real executable in a process of its own, as a
person or a cron job does, against the same loopback
:class:`~tests.diagnosis.test_client_faults.FaultServer` and the same table
(:data:`~tests.diagnosis.test_client_faults.FAULTS`), judged by the same rules (a named gap or one clear line; exit
1, a traceback, a Python error name in a gap, or a count built from repeated records is lost). Prints
``faults tried / answered / lost`` and each loss; exits 1 when anything was lost.

Usage: python bench/faults_clients.py [--binary .venv/bin/workload-doctor] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))
from tests.diagnosis.test_client_faults import (  # noqa: E402
    _LOGINS,
    FAULTS,
    SNAPSHOTS,
    Fault,
    FaultServer,
    Figures,
    Run,
    judge,
)


def run_binary(binary: str, server: FaultServer, fault: Fault) -> Run:
    """``<binary> <command> <args> --format json`` in a process of its own against ``server``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNAI_", "OSMO_", "WD_", "KUBE"))}
    env |= {"KUBECONFIG": server.kubeconfig, "WD_DEADLINE": "20", "WD_REQUEST_TIMEOUT": "5"}
    if fault.system == "runai":
        env |= {"RUNAI_BASE_URL": server.url, "RUNAI_CLIENT_ID": f"faults-{next(_LOGINS)}", "RUNAI_CLIENT_SECRET": "s"}
    else:
        env |= {"OSMO_URL": server.url, "OSMO_TOKEN": "faults-access-token"}
    done = subprocess.run(
        [binary, fault.command, *fault.args, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    run = Run(done.returncode, done.stdout, done.stderr)
    if done.returncode == 0:
        try:
            run.data = json.loads(done.stdout)
        except ValueError:
            return run
        run.gaps = [f"{g.get('what')}: {g.get('why')}" for g in run.data.get("gaps") or []]
    return run


def run(binary: str, only: str = "") -> Figures:
    """Every fault of the table (those whose name holds ``only``) through ``binary``."""
    figures = Figures()
    healthy: dict[str, Run] = {}
    for fault in FAULTS:
        if only and only not in fault.name:
            continue
        if fault.same_count and fault.snapshot not in healthy:
            with FaultServer(copy.deepcopy(SNAPSHOTS[fault.snapshot]), {}) as server:
                healthy[fault.snapshot] = run_binary(binary, server, fault)
        with FaultServer(copy.deepcopy(SNAPSHOTS[fault.snapshot]), fault.routes) as server:
            result = run_binary(binary, server, fault)
        figures.tried += 1
        figures.runs[fault.name] = result
        lost = judge(fault, result, healthy.get(fault.snapshot))
        if lost:
            figures.lost[fault.name] = lost
        else:
            figures.answered += 1
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / ".venv" / "bin" / "workload-doctor"))
    parser.add_argument("--only", default="", help="only the faults whose name holds this text")
    args = parser.parse_args()
    started = time.monotonic()
    figures = run(args.binary, args.only)
    print(figures.summary() + f" ({time.monotonic() - started:.1f} s, one process per fault)")
    for name, why in figures.lost.items():
        print(f"  lost: {name}: {why}")
    sys.exit(1 if figures.lost else 0)


if __name__ == "__main__":
    main()
