"""Issue 9 §2 (OSMO half): spec-valid generated answers through the real OSMO client and the CLI.

Runs ``bench/osmo_fuzz.py``: bodies generated from the service's OpenAPI schemas for the workflow
query, ``/api/task``, ``TaskEntry``, ``/api/pool_quota`` and ``/api/resources`` (plus the workflow
list), served from a loopback server, each round a ``workload-doctor diagnose --format json`` run.
No crash, no exit 1, no spec-valid body rejected by a model; every odd answer a named gap.
Prints the figures (``pytest -s`` shows them).
"""

from __future__ import annotations

import pytest

from bench import osmo_fuzz


@pytest.mark.skipif(not osmo_fuzz.SPEC_PATH.exists(), reason="../shared/reference/specs is absent")
def test_spec_valid_osmo_answers_never_crash_or_exit_1() -> None:
    figures = osmo_fuzz.run(bodies=440, odd=2 * len(osmo_fuzz.ODDITIES), seed=9)
    print("\n" + figures.summary())
    assert figures.crashes == 0 and figures.exits.get(1, 0) == 0
    assert figures.problems == [], "\n".join(figures.problems[:20])
    for endpoint in ("workflow", "task_list", "task_entry", "pool_quota", "resources"):
        assert figures.bodies[endpoint] >= 200, (endpoint, figures.bodies)
    assert figures.odd_gaps >= len(osmo_fuzz.ODDITIES)  # odd answers were read, and each became a gap
    assert figures.exits.get(2, 0) <= 2 * 3  # only the three odd workflow-query answers, twice each
