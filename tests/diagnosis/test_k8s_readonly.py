"""The Kubernetes read-only guard, proven on the path the installed ``kubernetes`` package really takes.

A loopback HTTP server records every request that reaches it. Writes are attempted through the real
``CoreV1Api`` objects the product builds (:class:`diagnosis.k8s.Tier2Source` from a kubeconfig file), and the
server must see none of them; companion tests take the guard away and show the same write arriving, so
these tests are known to be able to fail.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client as k8s
from kubernetes.stream import stream

from diagnosis import k8s as tier2
from diagnosis.config import KubeConfig
from diagnosis.http import ReadOnlyViolation

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "status": {}}
SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@dataclass
class Recorder:
    """What the loopback server saw: ``(method, path)`` of every request, and statuses to answer with."""

    seen: list[tuple[str, str]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def writes(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(m, p) for m, p in self.seen if m != "GET"]

    def all(self) -> list[tuple[str, str]]:
        with self.lock:
            return list(self.seen)


def _handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            with recorder.lock:
                recorder.seen.append((self.command, self.path.split("?", 1)[0]))
                status = recorder.statuses.pop(0) if recorder.statuses else 200
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = json.dumps(POD if status == 200 else {"kind": "Status", "code": status}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def server() -> Iterator[Recorder]:
    recorder = Recorder()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(recorder))
    httpd.daemon_threads = True
    recorder.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def write_kubeconfig(path: Path, server_url: str) -> KubeConfig:
    """A kubeconfig with one context pointing at ``server_url`` (token auth), as a product :class:`KubeConfig`."""
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters:
- name: loopback
  cluster:
    server: {server_url}
users:
- name: reader
  user:
    token: test-token
contexts:
- name: loopback
  context:
    cluster: loopback
    user: reader
    namespace: ns
current-context: loopback
"""
    )
    return KubeConfig(kubeconfig=str(path))


@pytest.fixture
def kube(server: Recorder, tmp_path: Path) -> KubeConfig:
    return write_kubeconfig(tmp_path / "kubeconfig", server.url)


@pytest.fixture
def source(kube: KubeConfig) -> Iterator[tier2.Tier2Source]:
    """The Tier 2 source exactly as the product builds it from a kubeconfig file."""
    src = tier2.Tier2Source(kube)
    try:
        yield src
    finally:
        src.close()


def _pod() -> k8s.V1Pod:
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="p", namespace="ns"))


#: One write per verb, each as a call on a generated API object built on a given ``ApiClient``.
WRITES: dict[str, Callable[[Any], Any]] = {
    "DELETE pod": lambda api: k8s.CoreV1Api(api).delete_namespaced_pod("p", "ns"),
    "DELETE pods (collection)": lambda api: k8s.CoreV1Api(api).delete_collection_namespaced_pod("ns"),
    "PATCH pod": lambda api: k8s.CoreV1Api(api).patch_namespaced_pod("p", "ns", {"metadata": {"labels": {"a": "b"}}}),
    "PATCH node (cordon)": lambda api: k8s.CoreV1Api(api).patch_node("n", {"spec": {"unschedulable": True}}),
    "POST pod": lambda api: k8s.CoreV1Api(api).create_namespaced_pod("ns", _pod()),
    "POST eviction": lambda api: k8s.CoreV1Api(api).create_namespaced_pod_eviction(
        "p", "ns", k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="p", namespace="ns"))
    ),
    "PUT pod": lambda api: k8s.CoreV1Api(api).replace_namespaced_pod("p", "ns", _pod()),
    "DELETE pod (async_req)": lambda api: cast(
        Any, k8s.CoreV1Api(api).delete_namespaced_pod("p", "ns", async_req=True)
    ).get(5),
    "DELETE pod (raw)": lambda api: k8s.CoreV1Api(api).delete_namespaced_pod(
        "p", "ns", _preload_content=False, _request_timeout=tier2.REQUEST_TIMEOUT
    ),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_writes_through_the_product_client_raise_and_never_reach_the_server(
    write: str, server: Recorder, source: tier2.Tier2Source
) -> None:
    with pytest.raises(ReadOnlyViolation):
        WRITES[write](source.api_client)
    assert server.writes() == []
    assert server.all() == []  # refused before any connection, not after a round trip


def test_writes_through_the_products_own_core_api_object_are_refused(
    server: Recorder, source: tier2.Tier2Source
) -> None:
    """The very ``CoreV1Api`` instance the product reads with, not one built for the test."""
    core = source.core
    attempts: list[Callable[[], Any]] = [
        lambda: core.delete_namespaced_pod("p", "ns"),
        lambda: core.patch_namespaced_pod("p", "ns", {"metadata": {"labels": {"a": "b"}}}),
        lambda: core.create_namespaced_pod("ns", _pod()),
        lambda: core.replace_namespaced_pod("p", "ns", _pod()),
    ]
    for attempt in attempts:
        with pytest.raises(ReadOnlyViolation):
            attempt()
    assert server.writes() == []
    core.read_namespaced_pod("p", "ns")
    assert server.all() == [("GET", "/api/v1/namespaces/ns/pods/p")]


async def test_reads_through_the_product_client_reach_the_server(server: Recorder, source: tier2.Tier2Source) -> None:
    pod = source.core.read_namespaced_pod("p", "ns")
    assert pod.metadata is not None and pod.metadata.name == "p"
    assert (await source.read_pod("ns", "p"))["metadata"]["name"] == "p"
    await source.pod_events("ns", "p")
    await source.read_log("ns", "p", "main", previous=True)
    await source.read_node("n")
    assert server.all() == [
        ("GET", "/api/v1/namespaces/ns/pods/p"),
        ("GET", "/api/v1/namespaces/ns/pods/p"),
        ("GET", "/api/v1/namespaces/ns/events"),
        ("GET", "/api/v1/namespaces/ns/pods/p/log"),
        ("GET", "/api/v1/nodes/n"),
    ]


async def test_reads_keep_their_retries_on_5xx(server: Recorder, source: tier2.Tier2Source) -> None:
    server.statuses = [503, 429]
    assert (await source.read_pod("ns", "p"))["metadata"]["name"] == "p"
    assert server.all() == [("GET", "/api/v1/namespaces/ns/pods/p")] * 3
    retries = source.api_client.rest_client.pool_manager.connection_pool_kw["retries"]
    assert retries.total == 3 and retries.allowed_methods == frozenset({"GET"})


def test_exec_and_proxy_are_refused_even_as_get(server: Recorder, source: tier2.Tier2Source) -> None:
    core = source.core
    with pytest.raises(ReadOnlyViolation):
        core.connect_get_namespaced_pod_exec("p", "ns", command=["sh", "-c", "true"])
    with pytest.raises(ReadOnlyViolation):
        core.connect_get_namespaced_service_proxy_with_path("svc", "ns", "admin/reset")
    with pytest.raises(ReadOnlyViolation):
        core.connect_get_node_proxy_with_path("n", "configz")
    assert server.all() == []
    core.read_namespaced_pod("exec", "ns")  # a pod named like a subresource is still readable
    assert server.all() == [("GET", "/api/v1/namespaces/ns/pods/exec")]


def test_exec_over_a_websocket_stream_is_refused(server: Recorder, source: tier2.Tier2Source) -> None:
    """``kubernetes.stream`` swaps the client's ``call_api`` for a WebSocket that never touches urllib3."""
    with pytest.raises(ReadOnlyViolation):
        stream(
            source.core.connect_get_namespaced_pod_exec,
            "p",
            "ns",
            command=["sh", "-c", "rm -rf /data"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
    assert server.all() == []
    source.core.read_namespaced_pod("p", "ns")  # the client still works afterwards, through the guard
    assert server.all() == [("GET", "/api/v1/namespaces/ns/pods/p")]
    assert isinstance(source.api_client.rest_client, tier2._ReadOnlyRESTClient)


def test_an_explicit_allow_list_lets_only_that_request_through(server: Recorder, tmp_path: Path) -> None:
    """The hook a later client (``doctor``'s access reviews) may use; nothing passes it by default."""
    kube = write_kubeconfig(tmp_path / "kubeconfig", server.url + "/k8s/clusters/c1")
    body = k8s.V1SelfSubjectAccessReview(
        spec=k8s.V1SelfSubjectAccessReviewSpec(
            resource_attributes=k8s.V1ResourceAttributes(verb="get", resource="pods")
        )
    )
    plain = tier2.build_api_client(kube)
    with pytest.raises(ReadOnlyViolation):
        k8s.AuthorizationV1Api(plain).create_self_subject_access_review(body)
    assert server.all() == []

    allowed = tier2.build_api_client(kube, allow=[("POST", SSAR_PATH)])
    k8s.AuthorizationV1Api(allowed).create_self_subject_access_review(body, _preload_content=False)
    assert server.all() == [("POST", "/k8s/clusters/c1" + SSAR_PATH)]
    for write in ("POST pod", "DELETE pod", "PUT pod"):
        with pytest.raises(ReadOnlyViolation):
            WRITES[write](allowed)
    assert server.writes() == [("POST", "/k8s/clusters/c1" + SSAR_PATH)]
    k8s.CoreV1Api(allowed).read_namespaced_pod("p", "ns")
    assert server.all()[-1] == ("GET", "/k8s/clusters/c1/api/v1/namespaces/ns/pods/p")


# -- companions: without the guard the same writes arrive, so the assertions above can fail ----------------


def test_companion_the_same_delete_reaches_the_server_on_a_plain_client(server: Recorder, kube: KubeConfig) -> None:
    with k8s.ApiClient(configuration=tier2.build_configuration(kube)) as api:
        WRITES["DELETE pod"](api)
    assert server.writes() == [("DELETE", "/api/v1/namespaces/ns/pods/p")]


@pytest.mark.parametrize("write", ["DELETE pod", "PATCH pod", "POST pod", "PUT pod"])
def test_companion_every_verb_reaches_the_server_with_the_guard_switched_off(
    write: str, server: Recorder, kube: KubeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tier2.ReadOnlyGuard, "check", lambda self, method, url: None)
    src = tier2.Tier2Source(kube)
    WRITES[write](src.api_client)
    src.close()
    method = write.split()[0]
    assert [m for m, _ in server.writes()] == [method]


@pytest.mark.parametrize("layer", ["rest_client.request", "pool_manager.urlopen"])
def test_each_layer_alone_holds_on_the_real_path(
    layer: str, server: Recorder, kube: KubeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one of the two checks removed, the other still stops the DELETE: both are on the path taken."""
    if layer == "rest_client.request":
        monkeypatch.setattr(tier2._ReadOnlyRESTClient, "request", k8s.rest.RESTClientObject.request)
    src = tier2.Tier2Source(kube)
    if layer == "pool_manager.urlopen":
        pool = src.api_client.rest_client.pool_manager
        del pool.urlopen  # back to urllib3's own method
    with pytest.raises(ReadOnlyViolation):
        WRITES["DELETE pod"](src.api_client)
    src.close()
    assert server.all() == []


def test_companion_exec_stream_reaches_the_server_on_a_plain_client(server: Recorder, kube: KubeConfig) -> None:
    core = k8s.CoreV1Api(k8s.ApiClient(configuration=tier2.build_configuration(kube)))
    with pytest.raises(Exception) as caught:  # the loopback server does not speak WebSocket
        stream(core.connect_get_namespaced_pod_exec, "p", "ns", command=["true"], stdout=True, tty=False)
    assert not isinstance(caught.value, ReadOnlyViolation)
    assert server.all() == [("GET", "/api/v1/namespaces/ns/pods/p/exec")]


def test_no_kubeconfig_means_no_tier2() -> None:
    assert KubeConfig().available is False


def test_doctors_allow_list_lets_only_the_two_reviews_through_on_the_real_path(
    server: Recorder, tmp_path: Path
) -> None:
    """``workload-doctor doctor``'s client (bot.cli_doctor.ACCESS_REVIEWS): the two review POSTs reach the
    server; every write of WRITES, a (non-self) SubjectAccessReview and a TokenReview do not."""
    from bot.cli_doctor import ACCESS_REVIEWS

    kube = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    api = tier2.build_api_client(kube, allow=ACCESS_REVIEWS)
    auth = k8s.AuthorizationV1Api(api)
    attrs = k8s.V1ResourceAttributes(verb="get", resource="secrets")
    auth.create_self_subject_access_review(
        k8s.V1SelfSubjectAccessReview(spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs)),
        _preload_content=False,
    )
    auth.create_self_subject_rules_review(
        k8s.V1SelfSubjectRulesReview(spec=k8s.V1SelfSubjectRulesReviewSpec(namespace="ns")), _preload_content=False
    )
    refused: dict[str, Callable[[Any], Any]] = {
        **WRITES,
        "POST subjectaccessreview": lambda a: k8s.AuthorizationV1Api(a).create_subject_access_review(
            k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(user="admin", resource_attributes=attrs))
        ),
        "POST localsubjectaccessreview": lambda a: k8s.AuthorizationV1Api(
            a
        ).create_namespaced_local_subject_access_review(
            "ns",
            k8s.V1LocalSubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(user="admin", resource_attributes=attrs)),
        ),
        "POST tokenreview": lambda a: k8s.AuthenticationV1Api(a).create_token_review(
            k8s.V1TokenReview(spec=k8s.V1TokenReviewSpec(token="t"))
        ),
    }
    for name, write in refused.items():
        with pytest.raises(ReadOnlyViolation):
            write(api)
        assert len(server.writes()) == 2, name
    assert server.writes() == [
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"),
    ]


def _get(source: tier2.Tier2Source, path: str) -> Any:
    """A GET of ``path`` through the product's ``ApiClient`` (its REST client, guard and urllib3 pool)."""
    api = source.core.api_client
    return api.call_api("GET", api.configuration.host + path)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/ns/pods/p//proxy",  # a doubled slash
        "/api/v1/namespaces/ns/pods/p/PROXY",  # upper case
        "/api/v1/namespaces/ns/pods/p/Exec",
        "/api/v1/namespaces/ns/pods/p/%70roxy",  # percent-encoded
        "/api/v1/namespaces/ns/pods/p/%2570roxy",  # encoded twice
        "/api/v1//namespaces//ns/services/svc/%50ROXY/admin",
        "/api/v1/nodes/n/%2e%2e/n/proxy",  # an encoded dot segment
    ],
)
def test_issue23_disguised_acting_subresources_are_refused_on_the_real_path(
    server: Recorder, source: tier2.Tier2Source, path: str
) -> None:
    """Issue 23 §Authorization: the guard compares the decoded, normalized path, in any letter case."""
    with pytest.raises(ReadOnlyViolation):
        _get(source, path)
    assert server.all() == []


def test_issue23_an_encoded_slash_in_a_name_is_refused_on_the_real_path(
    server: Recorder, source: tier2.Tier2Source
) -> None:
    """A pod name holding ``/`` is sent by the client as ``pods/x%2Fproxy``: refused, never sent."""
    with pytest.raises(ReadOnlyViolation):
        source.core.read_namespaced_pod("x/proxy", "ns")
    with pytest.raises(ReadOnlyViolation):
        source.core.read_namespaced_pod_log("x%2Fproxy", "ns")
    assert server.all() == []
    source.core.read_namespaced_pod("proxy", "ns")  # a pod named like a subresource is still readable
    _get(source, "/api/v1/namespaces/ns/pods/p")
    assert server.all() == [("GET", "/api/v1/namespaces/ns/pods/proxy"), ("GET", "/api/v1/namespaces/ns/pods/p")]
