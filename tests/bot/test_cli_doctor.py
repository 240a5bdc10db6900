"""``workload-doctor doctor`` (issue 14 §2): the access reviews are the only non-GET a Tier 2 client may send, and
only doctor's; the reviews warn loudly about write or Secret access; the Slack scopes come from auth.test's
``x-oauth-scopes``; the table and the exit status."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from bot import cli_doctor
from bot.cli_doctor import ACCESS_REVIEWS, REQUIRED_SCOPES, Check, check_slack, review_context, table
from diagnosis import k8s as tier2
from diagnosis.http import ReadOnlyViolation
from tests.diagnosis.test_k8s_readonly import Recorder, server, write_kubeconfig
from tests.paths import ROOT

__all__ = ["server"]  # the fixture
CLI = str(Path(sys.executable).parent / "workload-doctor")
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"


def test_the_allow_list_is_exactly_the_two_review_posts() -> None:
    assert ACCESS_REVIEWS == {("POST", SSAR), ("POST", SSRR)}


def test_no_other_non_get_passes_the_doctor_guard() -> None:
    guard = tier2.ReadOnlyGuard("https://k8s.example:6443/k8s/clusters/c1", ACCESS_REVIEWS)
    base = "https://k8s.example:6443/k8s/clusters/c1"
    for _, path in ACCESS_REVIEWS:
        guard.check("POST", base + path)  # allowed
        guard.check("post", base + path + "?dryRun=All")  # the query does not matter
    refused = [
        ("POST", "/api/v1/namespaces/ns/pods"),
        ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"),  # not *self*
        ("POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews"),
        ("POST", "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews"),
        ("POST", SSAR + "/x"),
        ("POST", SSAR + "/"),
        ("POST", "/apis/authorization.k8s.io/v1beta1/selfsubjectaccessreviews"),
        ("POST", "/api/v1/namespaces/ns/pods/p/exec"),
        ("POST", "/api/v1/namespaces/ns/pods/p/eviction"),
        ("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
    ]
    for _, path in ACCESS_REVIEWS:
        refused += [(verb, path) for verb in ("PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT")]
    refused += [("GET", "/api/v1/namespaces/ns/pods/p/exec")]
    for method, path in refused:
        with pytest.raises(ReadOnlyViolation):
            guard.check(method, base + path)
    # without the prefix of the configured host, the allowed path is another path
    with pytest.raises(ReadOnlyViolation):
        tier2.ReadOnlyGuard("https://k8s.example/k8s/clusters/c1", ACCESS_REVIEWS).check(
            "POST", "https://k8s.example/other" + SSAR
        )


def test_only_doctor_builds_a_client_with_an_allow_list(server: Recorder, tmp_path: Path) -> None:
    kube = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    source = tier2.Tier2Source(kube)
    try:
        assert source.api_client.guard.allow == frozenset()
    finally:
        source.close()
    callers = [
        p.relative_to(ROOT)
        for d in ("bot", "handlers", "diagnosis")
        for p in (ROOT / d).rglob("*.py")
        if "allow=ACCESS_REVIEWS" in p.read_text() or "build_api_client(config, allow" in p.read_text()
    ]
    assert callers == [Path("bot/cli_doctor.py")]
    body = k8s.V1SelfSubjectAccessReview(
        spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=k8s.V1ResourceAttributes(verb="get"))
    )
    with pytest.raises(ReadOnlyViolation):
        k8s.AuthorizationV1Api(source.api_client).create_self_subject_access_review(body)
    assert server.writes() == []


class FakeApiServer:
    """Answers access reviews: ``allowed`` (verb, resource) pairs; rules of the rules review."""

    def __init__(self, allowed: set[tuple[str, str]], rules: list[dict[str, Any]]) -> None:
        self.seen: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.seen.append((self.command, self.path))
                if self.path.startswith(SSAR):
                    attrs = body["spec"]["resourceAttributes"]
                    resource = attrs["resource"] + ("/" + attrs["subresource"] if attrs.get("subresource") else "")
                    status = {"allowed": (attrs["verb"], resource) in allowed}
                else:
                    status = {"resourceRules": rules, "nonResourceRules": [], "incomplete": False}
                data = json.dumps({"apiVersion": "authorization.k8s.io/v1", "kind": "X", "status": status}).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def apiserver() -> Iterator[Any]:
    made: list[FakeApiServer] = []

    def make(allowed: set[tuple[str, str]], rules: list[dict[str, Any]]) -> FakeApiServer:
        made.append(FakeApiServer(allowed, rules))
        return made[-1]

    yield make
    for s in made:
        s.close()


READS = {("get", "pods"), ("get", "pods/log"), ("list", "pods"), ("list", "events"), ("get", "nodes")}


def test_read_only_credentials_pass(apiserver: Any, tmp_path: Path) -> None:
    api = apiserver(READS, [{"verbs": ["get", "list", "watch"], "resources": ["pods", "pods/log", "events"]}])
    row = review_context(write_kubeconfig(tmp_path / "k", api.url))
    assert row.status == "ok", row.detail
    assert {m for m, _ in api.seen} == {"POST"} and {p for _, p in api.seen} == {SSAR, SSRR}


def test_credentials_that_read_secrets_or_write_are_warned_loudly(apiserver: Any, tmp_path: Path) -> None:
    api = apiserver(
        READS | {("get", "secrets"), ("delete", "pods")},
        [{"verbs": ["get", "list", "watch"], "resources": ["*"]}, {"verbs": ["create"], "resources": ["pods"]}],
    )
    row = review_context(write_kubeconfig(tmp_path / "k", api.url))
    assert row.status == "warn"
    assert row.detail.startswith("!!! CREDENTIALS CAN READ SECRETS AND WRITE")
    assert "get secrets" in row.detail and "delete pods" in row.detail and "create pods" in row.detail


def test_missing_reads_are_named(apiserver: Any, tmp_path: Path) -> None:
    api = apiserver({("get", "pods")}, [])
    row = review_context(write_kubeconfig(tmp_path / "k", api.url))
    assert row.status == "warn"
    want = "cannot get pods/log in ns, list pods in ns, list events in ns, list events in default, get nodes"
    assert want in row.detail


class FakeSlack:
    def __init__(self, scopes: str | None, ok: bool = True) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = json.dumps({"ok": ok, "user": "workload-doctor", "team": "Acme", "error": "invalid_auth"})
                self.send_response(200)
                if scopes is not None:
                    self.send_header("x-oauth-scopes", scopes)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/api/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


async def test_slack_scopes_come_from_auth_test() -> None:
    full = FakeSlack(",".join(sorted(REQUIRED_SCOPES)))
    row = await check_slack({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": full.url})
    assert row.status == "ok", row.detail
    short = FakeSlack("commands,chat:write")
    row = await check_slack({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": short.url})
    assert row.status == "fail" and "missing scope(s) app_mentions:read, channels:history" in row.detail
    extra = FakeSlack(",".join(sorted(REQUIRED_SCOPES | {"channels:manage"})))
    row = await check_slack({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": extra.url})
    assert row.status == "warn" and "channels:manage" in row.detail
    bad = FakeSlack(None, ok=False)
    row = await check_slack({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": bad.url})
    assert row.status == "fail" and "invalid_auth" in row.detail


def test_required_scopes_match_the_app_manifest() -> None:
    manifest = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == REQUIRED_SCOPES


def test_table_lines_up_and_redacts() -> None:
    out = table([Check("Redis", "ok", "PING answered"), Check("Slack", "fail", "token xoxb-1234-5678-abcdefgh")])
    lines = out.splitlines()
    assert lines[0].split() == ["CHECK", "STATUS", "DETAIL"]
    assert lines[2].split()[:2] == ["Redis", "ok"] and lines[3].split()[:2] == ["Slack", "FAIL"]
    assert "abcdefgh" not in out


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    import os

    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "RUNAI_", "OSMO_", "WD_", "REDIS_"))}
    keep.pop("KUBECONFIG", None)
    return subprocess.run([CLI, "doctor", *args], env={**keep, **env}, capture_output=True, text=True, timeout=120)


def test_doctor_exits_non_zero_on_a_failure_and_names_the_setting() -> None:
    out = _run({"WD_RATE_LIMIT": "lots", "RUNAI_BASE_URL": "https://runai.example"})
    assert out.returncode == 1, out.stderr
    assert "WD_RATE_LIMIT must be a whole number, not 'lots'" in out.stdout
    assert "missing setting(s) RUNAI_CLIENT_ID, RUNAI_CLIENT_SECRET" in out.stdout
    assert out.stdout.splitlines()[-1].endswith("failure(s)") and "Traceback" not in out.stderr


def test_doctor_on_the_sandbox_reads_run_ai(tmp_path: Path) -> None:
    out = _run({}, "--snapshot", str(ROOT / "sandbox" / "snapshots" / "demo.json"))
    assert "Run:ai" in out.stdout and "token ok; 2 cluster(s)" in out.stdout, out.stdout + out.stderr
    assert out.returncode == 0, out.stdout


def test_doctor_is_registered() -> None:
    assert hasattr(cli_doctor, "register")
    out = subprocess.run([CLI, "--help"], capture_output=True, text=True, timeout=60)
    assert "doctor" in out.stdout


async def test_an_endless_auth_test_answer_is_cut_at_the_body_cap() -> None:
    """Issue 15 §1: the doctor's Slack read is bounded too; a server that never stops is one failed row."""

    class Endless(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                self.wfile.write(b'{"ok": true, "pad": "')
                for _ in range(10_000):  # 640 MB at most; the client hangs up after 1 MiB
                    self.wfile.write(b"x" * 65536)
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        env = {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_API_URL": f"http://127.0.0.1:{httpd.server_address[1]}/api/",
            "WD_MAX_BODY_BYTES": str(1024 * 1024),
        }
        row = await check_slack(env)
    finally:
        httpd.shutdown()
    assert row.status == "fail" and "cut at 1048576 bytes (WD_MAX_BODY_BYTES)" in row.detail, row.detail


def _reviewed_on_sandbox(namespaces: list[str], rbac: Any = None) -> Check:
    """``review_context`` of a sandbox's kubeconfig, its Kubernetes API enforcing ``rbac`` (default: shipped)."""
    from diagnosis.config import KubeConfig
    from sandbox.server import Sandbox
    from tests import builders as b

    snap = b.snapshot(b.entry(b.workload()), kubernetes={"pods": [], "events": [], "nodes": []})
    with Sandbox(snap, **({"rbac": rbac} if rbac is not None else {})) as sb:
        return review_context(KubeConfig.from_env(sb.kube_env()), namespaces)


def test_an_install_granting_reads_per_project_namespace_passes() -> None:
    """The shipped RBAC grants pods and events per project namespace only: reviewed there, it is complete
    (issue 22 §1: a review without a namespace called a correct install incomplete)."""
    row = _reviewed_on_sandbox(["runai-nlp"])
    assert row.status == "ok", row.detail
    assert "namespace runai-nlp" in row.detail


def test_each_namespace_the_bot_reads_is_reviewed_and_a_gap_named_where() -> None:
    from sandbox.rbac import RBAC_FILE, Rbac

    objects = [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if isinstance(d, dict)]
    narrower = Rbac([d for d in objects if d["metadata"]["name"] != "workload-doctor-node-events"], {"runai-nlp"})
    row = _reviewed_on_sandbox(["runai-nlp", "runai-speech"], narrower)
    assert row.status == "warn"
    assert "get pods in runai-speech" in row.detail and "list events in default" in row.detail
    assert "in runai-nlp" not in row.detail  # granted there


def test_doctor_on_the_sandbox_reviews_the_project_namespaces() -> None:
    out = _run({}, "--snapshot", str(ROOT / "sandbox" / "snapshots" / "demo.json"))
    tier2 = next(line for line in out.stdout.splitlines() if line.startswith("Tier 2"))
    assert " ok " in tier2 and "pods, logs and events in namespace runai-nlp" in tier2, out.stdout
