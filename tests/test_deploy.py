"""The deployment (issue 14 §1): every kustomize overlay renders, validates against the Kubernetes schemas and
keeps the bot read-only; the image is non-root with a read-only root filesystem, built from a pinned lock file;
the Slack app manifest grants what the code uses."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("socket", "http", "redis", "workers")
READ_VERBS = {"get", "list", "watch"}
FORBIDDEN_RESOURCES = {"secrets", "pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "nodes/proxy", "*"}
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@cache
def render(overlay: str) -> tuple[dict[str, Any], ...]:
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY / "overlays" / overlay)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return tuple(d for d in yaml.safe_load_all(out.stdout) if isinstance(d, dict))


def of(docs: tuple[dict[str, Any], ...], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def bot_container(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    (deployment,) = [d for d in of(docs, "Deployment") if d["metadata"]["name"] == "workload-doctor"]
    return deployment["spec"]["template"]["spec"]["containers"][0]


def test_the_single_manifest_is_replaced_by_the_kustomize_layout() -> None:
    assert not (DEPLOY / "kubernetes.yaml").exists()
    for overlay in OVERLAYS:
        assert (DEPLOY / "overlays" / overlay / "kustomization.yaml").is_file()


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_and_every_object_validates(overlay: str) -> None:
    import kubernetes_validate

    docs = render(overlay)
    assert {"Namespace", "ServiceAccount", "ClusterRole", "Deployment", "ConfigMap"} <= {d["kind"] for d in docs}
    for doc in docs:
        kubernetes_validate.validate(doc, "1.30", strict=True)  # raises on a schema error or an unknown field


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rbac_is_get_list_watch_only_without_secrets_exec_or_write(overlay: str) -> None:
    docs = render(overlay)
    roles = of(docs, "ClusterRole") + of(docs, "Role")
    assert roles
    for role in roles:
        assert not role.get("aggregationRule"), "an aggregated role could pick up any rule"
        for rule in role.get("rules") or []:
            verbs = set(rule.get("verbs") or [])
            assert verbs <= READ_VERBS, f"{role['metadata']['name']}: {verbs - READ_VERBS}"
            resources = set(rule.get("resources") or [])
            assert not resources & FORBIDDEN_RESOURCES, f"{role['metadata']['name']}: {resources}"
            assert "*" not in (rule.get("apiGroups") or []) and not rule.get("nonResourceURLs")
    names = {r["metadata"]["name"] for r in roles}
    for binding in of(docs, "RoleBinding") + of(docs, "ClusterRoleBinding"):
        assert binding["roleRef"]["name"] in names, "bound only to the roles declared here"
    resources = {r for role in roles for rule in role.get("rules") or [] for r in rule.get("resources") or []}
    assert {"pods", "pods/log", "events", "nodes"} <= resources


@needs_kubectl
def test_pod_logs_are_readable_only_in_the_listed_project_namespaces() -> None:
    docs = render("socket")
    cluster_wide = {b["roleRef"]["name"] for b in of(docs, "ClusterRoleBinding")}
    for role in of(docs, "ClusterRole"):
        if role["metadata"]["name"] in cluster_wide:
            granted = {r for rule in role["rules"] for r in rule["resources"]}
            assert granted == {"nodes"}, "cluster-wide: node descriptions only"
    namespaces = {b["metadata"]["namespace"] for b in of(docs, "RoleBinding")}
    assert namespaces and "workload-doctor" not in namespaces


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_deployment_is_non_root_read_only_probed_and_bounded(overlay: str) -> None:
    docs = render(overlay)
    (deployment,) = [d for d in of(docs, "Deployment") if d["metadata"]["name"] == "workload-doctor"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    c = bot_container(docs)
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
    assert {"secretRef": {"name": "workload-doctor"}} in c["envFrom"], "credentials come from a Secret reference"
    assert not of(docs, "Secret"), "no Secret in the repository"
    policy = [
        v for v in pod["volumes"] if "configMap" in v and v["configMap"]["name"].startswith("workload-doctor-policy")
    ]
    assert policy, "the access policy is a ConfigMap"
    (cm,) = [d for d in of(docs, "ConfigMap") if d["metadata"]["name"] == policy[0]["configMap"]["name"]]
    rules = yaml.safe_load(cm["data"]["policy.yaml"])["access"]
    assert all("*" not in r["who"] for r in rules), "no allow-everyone policy"
    port = int(deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"])
    assert port in {p["containerPort"] for p in c["ports"]}, "Prometheus scrapes the port that serves /metrics"


@needs_kubectl
def test_http_overlay_exposes_only_slack_events() -> None:
    docs = render("http")
    assert "--http" in bot_container(docs)["args"]
    (ingress,) = of(docs, "Ingress")
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/slack/events", "Exact")]
    assert of(docs, "Service")
    assert not of(render("socket"), "Ingress") and not of(render("socket"), "Service")


@needs_kubectl
def test_workers_overlay_acks_in_one_deployment_and_answers_in_another() -> None:
    """Issue 26: the Slack-facing pods only ack and enqueue; a Deployment of workers, same image, settings, Secret,
    policy and security, answers; both on the job queue."""
    docs = render("workers")
    ack = bot_container(docs)
    assert ack["args"][:3] == ["serve", "--http", "--ack-only"]
    (deployment,) = [d for d in of(docs, "Deployment") if d["metadata"]["name"] == "workload-doctor-worker"]
    pod = deployment["spec"]["template"]["spec"]
    (worker,) = pod["containers"]
    assert worker["args"][0] == "worker" and worker["image"] == ack["image"]
    for container in (ack, worker):
        assert {"name": "WD_JOB_QUEUE", "value": "true"} in container["env"]
    assert worker["envFrom"] == ack["envFrom"], "the same settings ConfigMap (hashed) and Secret"
    assert worker["securityContext"] == ack["securityContext"] and pod["securityContext"]["runAsNonRoot"] is True
    assert worker["livenessProbe"]["httpGet"]["path"] == "/healthz"
    policy = {v["name"]: v for v in pod["volumes"]}["policy"]["configMap"]["name"]
    assert policy.startswith("workload-doctor-policy-"), "the generated policy ConfigMap, by its hashed name"
    selected = {d["spec"]["selector"]["app"] for d in of(docs, "Service")}
    assert selected == {"workload-doctor"}, "Slack's requests reach the ack tier only"
    guarded = {d["spec"]["podSelector"]["matchLabels"]["app"] for d in of(docs, "NetworkPolicy")}
    assert "workload-doctor-worker" in guarded
    budgets = {d["spec"]["selector"]["matchLabels"]["app"] for d in of(docs, "PodDisruptionBudget")}
    assert "workload-doctor-worker" in budgets


@needs_kubectl
def test_redis_overlay_adds_a_redis_and_points_the_bot_at_it() -> None:
    docs = render("redis")
    assert [s["metadata"]["name"] for s in of(docs, "StatefulSet")] == ["workload-doctor-redis"]
    env = {e["name"]: e.get("value") for e in bot_container(docs).get("env") or []}
    assert env["REDIS_URL"] == "redis://workload-doctor-redis:6379/0"


# -- image ---------------------------------------------------------------------------------------------------


def test_dockerfile_runs_non_root_from_the_lock_file() -> None:
    text = (ROOT / "Dockerfile").read_text()
    users = re.findall(r"(?m)^USER\s+(\S+)", text)
    assert users and users[-1].split(":")[0] not in {"0", "root"}, "the final stage runs as a non-root user"
    assert "--require-hashes -r requirements.lock" in text
    assert not re.search(r"(?m)^(VOLUME|RUN .*chmod 777)", text)
    # read-only root fs: nothing at run time writes outside /tmp (the Deployment mounts an emptyDir there)
    assert "PYTHONDONTWRITEBYTECODE=1" in text


def test_dockerignore_keeps_the_virtualenv_and_tests_out_of_the_context() -> None:
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip()]
    assert lines[lines.index("*")] == "*", "deny everything, then allow the source"
    allowed = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    assert not allowed & {".venv", "tests", ".git", ".env"}
    copied = set(re.findall(r"(?m)^COPY (?!--from)(\S+)", (ROOT / "Dockerfile").read_text()))
    copied |= {
        w
        for line in re.findall(r"(?m)^COPY (?!--from)(.+) \./?$", (ROOT / "Dockerfile").read_text())
        for w in line.split()
    }
    assert {c.rstrip("/") for c in copied} <= allowed


def test_lock_file_pins_every_dependency_with_hashes() -> None:
    text = (ROOT / "requirements.lock").read_text()
    assert "autogenerated by uv" in text
    pins = dict(re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+) \\$", text))
    assert pins and text.count("--hash=sha256:") >= len(pins)
    norm = {re.sub(r"[-_.]+", "-", k).lower() for k in pins}
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        name = re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0]).lower()
        assert name in norm, f"{name} is in pyproject.toml but not in requirements.lock (re-run its header command)"


# -- Slack app manifest --------------------------------------------------------------------------------------

#: Web API method (as the code calls it) -> the bot scopes that allow it (any one suffices)
METHOD_SCOPES = {
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "chat_postEphemeral": {"chat:write"},
    "files_upload_v2": {"files:write"},
    "conversations_history": {"channels:history", "groups:history"},
    "conversations_replies": {"channels:history", "groups:history"},
    "usergroups_users_list": {"usergroups:read"},
    "auth_test": set(),
    "chat_getPermalink": set(),  # Slack: "no scope required"
}
EVENT_SUBSCRIPTIONS = {"app_mention": {"app_mention"}, "message": {"message.channels", "message.groups"}}


def _source() -> str:
    return "\n".join(p.read_text() for d in ("bot", "handlers") for p in sorted((ROOT / d).rglob("*.py")))


def test_slack_manifest_grants_every_scope_event_and_component_the_bot_uses() -> None:
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text())
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    source = _source()
    called = set(
        re.findall(
            r"client\.(chat_\w+|files_\w+|conversations_\w+|usergroups_\w+|users_\w+|auth_\w+|views_\w+|reactions_\w+)\(",
            source,
        )
    )
    assert called, "the Web API calls are found"
    for method in called:
        assert method in METHOD_SCOPES, f"{method}: add its scope to METHOD_SCOPES and the manifest"
        need = METHOD_SCOPES[method]
        assert not need or need & scopes, f"{method} needs one of {need}"
    assert {"channels:history", "groups:history"} <= scopes, "digests are found by conversations.history in both"
    if re.search(r"app\.command\(", source):
        assert "commands" in scopes
        assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/diagnose"]
    hint = manifest["features"]["slash_commands"][0]["usage_hint"]
    for sub in ("digest", "watch", "unwatch", "watches", "help"):
        assert sub in hint
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    for event in re.findall(r"app\.event\(\"(\w+)\"\)", source):
        assert EVENT_SUBSCRIPTIONS[event] <= events, event
    if "app_mention" in events:
        assert "app_mentions:read" in scopes
    if re.search(r"app\.action\(", source):
        assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert "im:history" not in scopes and "channels:read" not in scopes, "no scope the code does not use"


# -- an install with no guessing (issue 22 §3) ---------------------------------------------------------------


def _version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_the_image_tag_and_the_changelog_carry_the_version_of_pyproject() -> None:
    version = _version()
    kustomization = yaml.safe_load((DEPLOY / "base" / "kustomization.yaml").read_text())
    assert [(i["name"], i["newTag"]) for i in kustomization["images"]] == [("workload-doctor", version)]
    (first,) = re.findall(r"(?m)^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text())[:1]
    assert first == version, "the newest CHANGELOG.md section is the version in pyproject.toml"
    readme = (ROOT / "README.md").read_text()
    assert set(re.findall(r"workload-doctor:(\d+\.\d+\.\d+)", readme)) <= {version}, "README's image tags"
    for path in DEPLOY.rglob("*.yaml"):
        tags = re.findall(r"image:\s*\S*workload-doctor:(\S+)", path.read_text())
        assert not tags, f"{path}: the tag is set once, in deploy/base/kustomization.yaml"


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_runs_the_image_of_this_version(overlay: str) -> None:
    assert bot_container(render(overlay))["image"] == f"workload-doctor:{_version()}"


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_serve_listens_on_every_address_in_the_pod_only_because_the_manifest_says_so(overlay: str) -> None:
    args = bot_container(render(overlay))["args"]
    assert args[args.index("--host") + 1] == "0.0.0.0"
    cmd = re.search(r"(?m)^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text())
    assert cmd and "0.0.0.0" in yaml.safe_load(cmd.group(1)), "the image's own command too"


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_cluster_routing_is_in_the_settings_config_map_and_kubeconfigs_come_from_a_secret(overlay: str) -> None:
    from bot.settings import BotEnv
    from diagnosis.config import CoreEnv

    docs = render(overlay)
    c = bot_container(docs)
    refs = [e["configMapRef"]["name"] for e in c["envFrom"] if "configMapRef" in e]
    (settings,) = [d for d in of(docs, "ConfigMap") if d["metadata"]["name"] in refs]
    assert settings["metadata"]["name"].startswith("workload-doctor-settings")
    data = settings["data"]
    assert {"WD_IN_CLUSTER_ID", "WD_KUBE_CONTEXTS", "WD_POLICY_FILE"} <= set(data)
    known = set(BotEnv.model_fields) | set(CoreEnv.model_fields)
    assert set(data) <= known, f"not settings: {set(data) - known}"
    assert not {k for k in data if any(s in k for s in ("TOKEN", "SECRET", "PASSWORD"))}, "secrets go in the Secret"
    pod = next(d for d in of(docs, "Deployment") if d["metadata"]["name"] == "workload-doctor")["spec"]["template"]
    (kube,) = [v for v in pod["spec"]["volumes"] if "secret" in v]
    assert kube["secret"] == {"secretName": "workload-doctor-kubeconfigs", "optional": True, "defaultMode": 0o440}
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == kube["name"]]
    assert mount["readOnly"] is True
    # the example in settings.env points into that mount, and the mount is not inside another volume's
    example = (DEPLOY / "base" / "settings.env").read_text()
    assert re.search(r"WD_KUBE_CONTEXTS=\{.*: " + re.escape(mount["mountPath"]) + "/", example)
    others = [m["mountPath"] for m in c["volumeMounts"] if m is not mount]
    assert not any(mount["mountPath"].startswith(o.rstrip("/") + "/") for o in others)


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_deployed_policy_allows_nobody_and_says_so(overlay: str) -> None:
    from bot.cli_doctor import check_policy
    from bot.policy import Policy

    docs = render(overlay)
    (cm,) = [d for d in of(docs, "ConfigMap") if d["metadata"]["name"].startswith("workload-doctor-policy")]
    policy = Policy.from_dict(yaml.safe_load(cm["data"]["policy.yaml"]))
    assert policy.allows_nobody and not policy.allows("U0AAAAAAA")
    assert "allows nobody" in policy.describe()
    example = Policy.load(str(DEPLOY / "policy.example.yaml"))
    assert example.rules and not example.allows_nobody, "the commented example is a valid policy"
    row = check_policy({"WD_POLICY_FILE": str(DEPLOY / "base" / "policy.yaml")}, "socket")
    assert (row.status, row.detail.split(":")[0]) == ("warn", "allows nobody")


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policy_lets_in_only_the_served_port_and_out_only_what_the_bot_dials(overlay: str) -> None:
    docs = render(overlay)
    c = bot_container(docs)
    (deployment,) = [d for d in of(docs, "Deployment") if d["metadata"]["name"] == "workload-doctor"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    (policy,) = [p for p in of(docs, "NetworkPolicy") if p["metadata"]["name"] == "workload-doctor"]
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"].items() <= labels.items()
    assert set(spec["policyTypes"]) == {"Ingress", "Egress"}
    served = {p["containerPort"] for p in c["ports"]}
    ingress = {(p["protocol"], p["port"]) for rule in spec["ingress"] for p in rule["ports"]}
    assert ingress == {("TCP", port) for port in served}, "in: the port of /healthz, /metrics (and /slack/events)"
    scraped = int(deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"])
    assert ("TCP", scraped) in ingress
    egress = {(p["protocol"], p["port"]) for rule in spec["egress"] for p in rule["ports"]}
    assert egress == {("UDP", 53), ("TCP", 53), ("TCP", 6379), ("TCP", 6380), ("TCP", 6443), ("TCP", 443)}
    assert all(rule.get("ports") for rule in spec["egress"]), "no rule opens every port"
    if overlay == "redis":
        (redis_policy,) = [p for p in of(docs, "NetworkPolicy") if p["metadata"]["name"] == "workload-doctor-redis"]
        (rule,) = redis_policy["spec"]["ingress"]
        assert rule["from"] == [{"podSelector": {"matchLabels": {"app": "workload-doctor"}}}]
        assert redis_policy["spec"]["egress"] == []


@needs_kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pod_disruption_budget_keeps_one_replica_through_a_drain(overlay: str) -> None:
    docs = render(overlay)
    (deployment,) = [d for d in of(docs, "Deployment") if d["metadata"]["name"] == "workload-doctor"]
    (pdb,) = [d for d in of(docs, "PodDisruptionBudget") if d["metadata"]["name"] == "workload-doctor"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1 < deployment["spec"]["replicas"]
    assert "minAvailable" not in pdb["spec"], "scaled to one replica, a drain still proceeds"


def test_the_install_guide_leaves_no_step_to_work_out() -> None:
    """README "Install" names every object and setting the manifests expect from the person installing."""
    readme = (ROOT / "README.md").read_text()
    guide = readme[readme.index("## Install") : readme.index("## Operating it")]
    for needed in (
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "WD_IN_CLUSTER_ID",
        "WD_KUBE_CONTEXTS",
        "deploy/base/settings.env",
        "workload-doctor-kubeconfigs",
        "deploy/base/policy.yaml",
        "deploy/policy.example.yaml",
        "project-namespaces.yaml",
        "NetworkPolicy",
        "FQDN",
        "PodDisruptionBudget",
        "workload-doctor doctor",
        "--from-literal=SLACK_SIGNING_SECRET",
    ):
        assert needed in guide, needed
