"""``GET /api/v1/workloads/pods`` in the sandbox (issue 19 §2): every workload's pods from the snapshot, held to the
2.24 spec's ``list_pods``: ``filterBy`` on the ``PodsFilter`` fields (dates compared as instants), ``deleted``,
``completed``, ``sortBy``, ``offset``/``limit``, ``verbosity=full``; a malformed query answers 400."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox.server import Sandbox
from tests import builders as b


def _pod(name: str, node: str, completed: str | None, phase: str = "Failed", **kw: Any) -> dict[str, Any]:
    p = b.pod(name, k8s_phase=phase, node=node)
    p["completedAt"] = completed
    p.update(kw)
    return p


def _snapshot() -> dict[str, Any]:
    a = b.workload("train-7")
    c = b.workload("other-a", project="vision")
    d = b.workload("other-b")
    return b.snapshot(
        b.entry(a, pods=[_pod("train-7-0-0", "dgx-01", b.ago(minutes=60))]),
        b.entry(
            c,
            pods=[
                _pod("other-a-0", "dgx-01", "2026-11-28T11:00:30+00:00"),  # 11:00:30Z written with an offset
                _pod("other-a-1", "dgx-01", b.ago(minutes=50), deletedAt=b.ago(minutes=40)),
                _pod("other-a-2", "dgx-02", b.ago(minutes=61)),
            ],
        ),
        b.entry(d, pods=[_pod("other-b-0", "dgx-01", None, phase="Running"), None]),
        b.entry(b.workload("no-pods"), pods=None),
    )


@pytest.fixture(scope="module")
def get() -> Iterator[Any]:
    with Sandbox(_snapshot()) as sb:
        headers = {"Authorization": f"Bearer {sb.state.issue_token()}"}

        def call(**params: Any) -> httpx.Response:
            return httpx.get(f"{sb.url}/api/v1/workloads/pods", params=params, headers=headers, timeout=10)

        yield call


def _names(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [p["name"] for p in r.json()["pods"] if p is not None]


def test_every_workloads_live_pods_with_their_workload_id(get: Any) -> None:
    r = get()
    assert _names(r) == ["train-7-0-0", "other-a-0", "other-a-2", "other-b-0"]
    assert None in r.json()["pods"]  # a null item is served as it is when nothing filters
    ids = {p["name"]: p["workloadId"] for p in r.json()["pods"] if p}
    assert ids["other-a-0"] == b.workload("other-a", project="vision")["id"]
    assert all(p["clusterId"] == b.CLUSTER for p in r.json()["pods"] if p)


def test_deleted_pods_only_with_deleted_true(get: Any) -> None:
    assert _names(get(deleted="true")) == ["other-a-1"]


def test_node_and_workload_filters(get: Any) -> None:
    me = b.workload("train-7")["id"]
    assert _names(get(filterBy="nodeName==dgx-01")) == ["train-7-0-0", "other-a-0", "other-b-0"]
    assert _names(get(filterBy=f"nodeName==dgx-01,workloadId!={me}")) == ["other-a-0", "other-b-0"]
    assert _names(get(filterBy="nodeName!=dgx-01")) == ["other-a-2"]
    assert _names(get(filterBy="nodeName=^dgx-0,nodeName=$2")) == ["other-a-2"]


def test_dates_are_compared_as_instants(get: Any) -> None:
    # other-a-0 completed at 11:00:30Z, written 2026-11-28T11:00:30+00:00 in the snapshot
    assert _names(get(filterBy="completedAt==2026-11-28T13:00:30+02:00")) == ["other-a-0"]
    window = "completedAt>=2026-11-28T10:55:00Z,completedAt<=2026-11-28T11:05:00Z"
    assert _names(get(filterBy="nodeName==dgx-01," + window)) == ["train-7-0-0", "other-a-0"]
    # a pod that has not completed (completedAt null) is neither before nor after any instant
    assert "other-b-0" not in _names(get(filterBy="completedAt<=2030-01-01T00:00:00Z"))
    assert "other-b-0" in _names(get(filterBy="completedAt!=2030-01-01T00:00:00Z"))


def test_verbosity_full_adds_the_workload_name_and_project(get: Any) -> None:
    full = {p["name"]: p for p in get(verbosity="full", filterBy="nodeName==dgx-01").json()["pods"]}
    assert (full["other-a-0"]["workloadName"], full["other-a-0"]["projectName"]) == ("other-a", "vision")
    brief = get(filterBy="nodeName==dgx-01").json()["pods"]
    assert all("workloadName" not in p and "projectName" not in p for p in brief)


def test_limit_offset_and_sort(get: Any) -> None:
    first = get(limit=2)
    assert _names(first) == ["train-7-0-0", "other-a-0"] and first.json()["next"] == 2
    assert _names(get(limit=2, offset=2)) == ["other-a-2", "other-b-0"]
    assert _names(get(filterBy="nodeName==dgx-01", sortBy="completedAt", sortOrder="desc"))[0] == "other-a-0"
    assert _names(get(completed="false")) == ["other-b-0"]


@pytest.mark.parametrize(
    "params",
    [
        {"filterBy": "name==train-7-0-0"},  # not a PodsFilter field
        {"filterBy": "nodeName~dgx-01"},  # not an operator
        {"filterBy": "completedAt>=yesterday"},  # a date that is not ISO 8601
        {"filterBy": "completedAt>=2026-11-28T11:00:00"},  # RFC 3339 needs a zone
        {"filterBy": "completedAt=@2026"},  # dates take only ==, !=, <=, >=
        {"filterBy": "nodeName==a", "limit": "0"},
        {"limit": "501"},
        {"offset": "x"},
        {"verbosity": "loud"},
        {"sortBy": "name"},
        {"deleted": "yes"},
    ],
)
def test_a_malformed_query_answers_400(get: Any, params: dict[str, str]) -> None:
    r = get(**params)
    assert r.status_code == 400, r.text


def test_the_filter_is_one_comma_joined_value(get: Any) -> None:
    r = httpx.get(
        str(get(limit=1).request.url).split("?")[0] + "?filterBy=nodeName==dgx-01&filterBy=nodeName==dgx-02",
        headers=get(limit=1).request.headers,
    )
    assert r.status_code == 400 and "filterBy" in r.json()["message"]


def test_unauthorized_without_a_token() -> None:
    with Sandbox(_snapshot()) as sb:
        assert httpx.get(f"{sb.url}/api/v1/workloads/pods", timeout=10).status_code == 401
