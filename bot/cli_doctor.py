"""``workload-doctor doctor``: check an installation end to end and print a table.

Rows: each setting (the bot's for the mode, Run:ai, OSMO, Tier 2), the access policy (a warning while it
allows nobody, as the deployed default does), Redis, the Run:ai token and a read of the
clusters, OSMO (token exchange and one read), each Tier 2 context (``SelfSubjectAccessReview`` for the reads the
bot needs and for what it must never be able to do; ``SelfSubjectRulesReview`` of the context's namespace) and
the Slack token's scopes (``auth.test``'s ``x-oauth-scopes`` header) against what the bot uses.

``ok``, ``warn`` (works, but look: e.g. credentials that can write or read Secrets, loudly), ``fail`` (the bot
cannot work this way), ``skip`` (not configured). Exits 1 when a row fails (``--strict``: also on a warning),
else 0. Everything it prints is redacted.

The two reviews are POSTs that change nothing; the Tier 2 client made here is the only one allowed to send them
(:data:`ACCESS_REVIEWS`, exact paths, through :class:`diagnosis.k8s.ReadOnlyGuard`): the diagnosis clients
keep an empty allow-list.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from diagnosis.config import DEFAULT_MAX_BODY_BYTES, ConfigError, environment, max_body_bytes

#: The only non-GET requests a Tier 2 client may send, and only this command's client.
ACCESS_REVIEWS: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"),
    }
)
#: The bot scopes deploy/slack-app-manifest.yaml grants (tests/bot/test_cli_doctor.py keeps them equal).
REQUIRED_SCOPES = frozenset(
    {
        "commands",
        "app_mentions:read",
        "chat:write",
        "channels:history",
        "groups:history",
        "files:write",
        "usergroups:read",
    }
)
#: (verb, resource, subresource, group) the bot needs in each project namespace it reads (issue 22 §1)
NEEDED = (
    ("get", "pods", "", ""),
    ("get", "pods", "log", ""),
    ("list", "pods", "", ""),
    ("list", "events", "", ""),
)
#: ... at the cluster scope (node descriptions)
NEEDED_CLUSTER = (("get", "nodes", "", ""),)
#: ... in the namespace where node events are recorded (diagnosis.k8s.NODE_EVENTS_NAMESPACE)
NEEDED_NODE_EVENTS = (("list", "events", "", ""),)
#: At most this many project namespaces are reviewed per context (four reviews each).
MAX_NAMESPACES = 25
#: (verb, resource, subresource, group) the bot must never be able to do
DANGEROUS = (
    ("get", "secrets", "", ""),
    ("list", "secrets", "", ""),
    ("create", "pods", "", ""),
    ("delete", "pods", "", ""),
    ("create", "pods", "exec", ""),
    ("patch", "deployments", "", "apps"),
    ("delete", "namespaces", "", ""),
    ("*", "*", "", "*"),
)
READ_VERBS = frozenset({"get", "list", "watch"})
SECRET_NAMES = ("TOKEN", "SECRET", "PASSWORD")


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str


def _line(exc: BaseException) -> str:
    from diagnosis.backends import error_line
    from diagnosis.redact import sanitize

    return sanitize(error_line(exc))


# -- settings -------------------------------------------------------------------------------------------------


def check_settings(env: Mapping[str, str], mode: str | None) -> list[Check]:
    from bot.settings import BotEnv, Settings, SettingsError, shown_url
    from diagnosis.backends import REGISTRY
    from diagnosis.config import ConfigError, CoreEnv, KubeConfig
    from diagnosis.redact import sanitize

    rows: list[Check] = []
    for model in (BotEnv, CoreEnv):
        for name in model.model_fields:
            raw = env.get(name)
            if raw in (None, ""):
                continue
            # a URL's password is never shown, however a parser would split it (issue 23)
            shown = "set" if any(s in name for s in SECRET_NAMES) else sanitize(shown_url(str(raw)))[:60]
            try:
                model.read({name: str(raw)})
            except (ConfigError, ValueError) as exc:
                rows.append(Check(f"setting {name}", "fail", sanitize(str(exc).splitlines()[0])))
                continue
            rows.append(Check(f"setting {name}", "ok", shown))
    if mode is not None:
        try:
            settings = Settings.from_env(mode, env)  # type: ignore[arg-type]
            rows.append(Check(f"settings for {mode} mode", "ok", f"Redis key prefix {settings.key_prefix!r}"))
        except SettingsError as exc:
            rows.append(Check(f"settings for {mode} mode", "fail", str(exc)))
    for backend in REGISTRY.values():  # each system's settings, in its words
        label, names = backend.label, backend.settings_names
        if not any(env.get(n) for n in names):
            rows.append(Check(f"settings: {label}", "skip", "not configured: " + ", ".join(names)))
            continue
        try:
            backend.read_settings(env)
            rows.append(Check(f"settings: {label}", "ok", "complete"))
        except ConfigError as exc:
            rows.append(Check(f"settings: {label}", "fail", str(exc)))
    try:
        kube = KubeConfig.from_env(env)
        detail = kube.describe() if kube.available else "no Tier 2 (pod logs, events, nodes unavailable)"
        rows.append(Check("settings: Tier 2", "ok" if kube.available else "skip", detail))
    except ConfigError as exc:
        rows.append(Check("settings: Tier 2", "fail", str(exc)))
    systems = [f"settings: {b.label}" for b in REGISTRY.values()]
    if not any(r.status != "skip" for r in rows if r.name in systems):
        labels = [b.label for b in REGISTRY.values()]
        rows.append(Check("backends", "fail", "neither " + " nor ".join(labels) + " is configured"))
    return rows


def check_policy(env: Mapping[str, str], mode: str | None) -> Check:
    """The access policy (``WD_POLICY_FILE``): who may ask. The deployed default allows nobody, said loudly."""
    from bot.policy import Policy
    from bot.settings import SettingsError

    path = env.get("WD_POLICY_FILE")
    if not path:
        if mode is None:
            return Check("access policy", "skip", "WD_POLICY_FILE is not set (the Slack bot's access policy)")
        return Check("access policy", "warn", "WD_POLICY_FILE is not set: every Slack user may diagnose everything")
    try:
        policy = Policy.load(path)
    except SettingsError as exc:
        return Check("access policy", "fail", str(exc))
    except Exception as exc:  # a shape the loader did not expect (a list where a mapping goes)
        return Check("access policy", "fail", f"cannot read policy file {path}: {_line(exc)}")
    status = "warn" if policy.allows_nobody or not policy.enabled else "ok"
    return Check("access policy", status, policy.describe())


# -- services -------------------------------------------------------------------------------------------------


async def check_redis(env: Mapping[str, str]) -> Check:
    from bot.settings import redis_url_problem
    from bot.state import Store

    url = env.get("REDIS_URL")
    if not url:
        return Check("Redis", "skip", "REDIS_URL is not set (serve needs it)")
    problem = redis_url_problem(url)
    if problem:  # what redis-py would make of it, never the URL (its error quotes part of the password)
        return Check("Redis", "fail", problem)
    store = Store(url, prefix=env.get("WD_REDIS_PREFIX") or "wd:")
    try:
        ok = await store.ping()
    finally:
        await store.close()
    return Check("Redis", "ok" if ok else "fail", "PING answered" if ok else "unreachable (REDIS_URL)")


async def check_backend(backend: Any, settings: Any) -> Check:
    """One system's row: its health probe (:meth:`diagnosis.backends.Backend.probe`) with ``settings``, skipped
    when they are None (not configured)."""
    from diagnosis.redact import sanitize

    if settings is None:
        return Check(backend.label, "skip", "not configured")
    status, detail = await backend.probe(settings)
    return Check(backend.label, status, sanitize(detail))


def _targets(kube: Any) -> list[tuple[str, Any, str | None]]:
    """``(label, config, cluster)`` of each Tier 2 context: ``cluster`` the Run:ai cluster id or name it serves
    (None unrouted: every cluster)."""
    if not kube.available:
        return []
    if not kube.routed:
        return [(kube.describe(), kube, None)]
    out = [(f"cluster {name}", kube.for_cluster(name, name), name) for name in kube.contexts]
    if kube.in_cluster_id:
        ref = kube.in_cluster_id
        out.append((f"cluster {ref} (in-cluster)", kube.for_cluster(ref), ref))
    return out


async def project_namespaces(config: Any) -> dict[str, list[str]] | None:
    """The namespaces of the Run:ai projects (``status.namespace``, else ``runai-<name>``: where the bot reads
    pods and events), by cluster id and by cluster name, ``""`` holding all; None when Run:ai is not configured
    or its projects cannot be read."""
    from diagnosis.runai.client import RunaiClient

    if config is None:
        return None
    try:
        async with RunaiClient(config) as client:
            clusters = await client.list_clusters()
            projects = await client.list_all_projects()
    except Exception:
        return None
    names = {str(getattr(c, "uuid", "")): str(getattr(c, "name", "") or "") for c in clusters}
    out: dict[str, list[str]] = {"": []}
    for project in projects:
        status = getattr(project, "status", None)
        ns = (getattr(status, "namespace", None) if status else None) or f"runai-{project.name}"
        cluster = str(getattr(project, "cluster_id", "") or "")
        for key in {"", cluster, names.get(cluster, "")}:
            if ns not in out.setdefault(key, []):
                out[key].append(ns)
    return out


def _missing(can: Any, namespaces: list[str]) -> list[str]:
    """The reads the bot needs that the reviews refuse, named with where: ``get pods/log in runai-nlp``,
    ``list events in default``, ``get nodes (cluster-wide)``."""
    from diagnosis.k8s import NODE_EVENTS_NAMESPACE

    wanted: list[tuple[str, str, str, str, str | None]] = [
        (v, r, s, g, ns) for ns in namespaces for v, r, s, g in NEEDED
    ]
    wanted += [(v, r, s, g, NODE_EVENTS_NAMESPACE) for v, r, s, g in NEEDED_NODE_EVENTS]
    wanted += [(v, r, s, g, None) for v, r, s, g in NEEDED_CLUSTER]
    out = []
    for verb, resource, sub, group, ns in dict.fromkeys(wanted):
        if not can(verb, resource, sub, group, ns):
            what = f"{verb} {resource}/{sub}" if sub else f"{verb} {resource}"
            out.append(f"{what} in {ns}" if ns else f"{what} (cluster-wide)")
    return out


def _context_namespace(config: Any) -> str:
    """The namespace of the kubeconfig context ``config`` uses (``default`` when it names none)."""
    try:
        from kubernetes import config as k8s_config

        _, active = k8s_config.list_kube_config_contexts(config_file=config.kubeconfig)
        if config.context:
            contexts, _ = k8s_config.list_kube_config_contexts(config_file=config.kubeconfig)
            active = next((c for c in contexts if c["name"] == config.context), active)
        return str((active or {}).get("context", {}).get("namespace") or "default")
    except Exception:
        return "default"


def review_context(config: Any, namespaces: list[str] | None = None) -> Check:
    """Access reviews of one Tier 2 context (blocking: call in a thread): every read the bot needs in each of
    ``namespaces`` (the project namespaces it reads; default: the context's own namespace), node events where
    Kubernetes records them, nodes cluster-wide; what it must never be able to do; the rules of the context's
    namespace (writes)."""
    from kubernetes import client as k8s

    from diagnosis.k8s import build_api_client

    api_client = build_api_client(config, allow=ACCESS_REVIEWS)
    try:
        auth = k8s.AuthorizationV1Api(api_client)

        def can(verb: str, resource: str, sub: str, group: str, namespace: str | None = None) -> bool:
            attrs = k8s.V1ResourceAttributes(
                verb=verb, resource=resource, subresource=sub or None, group=group or None, namespace=namespace
            )
            body = k8s.V1SelfSubjectAccessReview(spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs))
            raw: Any = auth.create_self_subject_access_review(body, _preload_content=False)
            return bool((json.loads(raw.data or b"{}").get("status") or {}).get("allowed"))

        danger = [
            (f"{v} {r}/{s}" if s else f"{v} {r}") + (f" ({g})" if g and g != "*" else "")
            for v, r, s, g in DANGEROUS
            if can(v, r, s, g)
        ]
        namespace = _context_namespace(config)
        reviewed = list(namespaces or [namespace])
        missing = _missing(can, reviewed[:MAX_NAMESPACES])
        raw: Any = auth.create_self_subject_rules_review(
            k8s.V1SelfSubjectRulesReview(spec=k8s.V1SelfSubjectRulesReviewSpec(namespace=namespace)),
            _preload_content=False,
        )
        rules = (json.loads(raw.data or b"{}").get("status") or {}).get("resourceRules") or []
        writes = sorted(
            {
                f"{verb} {res}"
                for rule in rules
                for verb in rule.get("verbs") or []
                for res in rule.get("resources") or ["*"]
                if verb not in READ_VERBS
                # every authenticated user may create these reviews: not a write
                and res not in ("selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews")
            }
        )
    except Exception as exc:
        if getattr(exc, "status", None) == 404:  # not a Kubernetes API server (a sandbox, a proxy without it)
            return Check("", "warn", f"this API answers no access reviews: {_line(exc)}")
        return Check("", "fail", f"access review failed: {_line(exc)}")
    finally:
        api_client.close()
    notes = []
    if danger or writes:
        secrets = any("secrets" in d for d in danger) or any("secrets" in w for w in writes)
        head = "!!! CREDENTIALS CAN " + (
            "READ SECRETS AND WRITE"
            if secrets and (writes or len(danger) > 2)
            else "READ SECRETS"
            if secrets
            else "WRITE"
        )
        notes.append(f"{head}: {', '.join(danger + writes[:8])} — give the bot a read-only identity")
    if missing:
        notes.append("cannot " + ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else ""))
        notes[-1] += " (that evidence will be missing)"
    if len(reviewed) > MAX_NAMESPACES:
        notes.append(f"reviewed {MAX_NAMESPACES} of {len(reviewed)} project namespaces")
    if notes:
        return Check("", "warn", "; ".join(notes))
    where = f"namespace {reviewed[0]}" if len(reviewed) == 1 else f"{len(reviewed)} project namespaces"
    return Check("", "ok", f"read-only: pods, logs and events in {where}; node events; nodes")


async def check_tier2(kube: Any, namespaces: dict[str, list[str]] | None = None) -> list[Check]:
    """One row per Tier 2 context; ``namespaces`` (:func:`project_namespaces`) says which namespaces each context
    must grant its reads in (None: the context's own namespace)."""
    targets = _targets(kube)
    if not targets:
        return [Check("Tier 2", "skip", kube.why_unavailable)]
    rows = []
    for label, config, cluster in targets:
        if not config.available:
            rows.append(Check(f"Tier 2 {label}", "fail", config.why_unavailable))
            continue
        wanted = (namespaces or {}).get(cluster or "") or None
        row = await asyncio.to_thread(review_context, config, wanted)
        row.name = f"Tier 2 {label}"
        rows.append(row)
    return rows


async def check_slack(env: Mapping[str, str]) -> Check:
    import httpx

    from diagnosis.redact import sanitize

    token = env.get("SLACK_BOT_TOKEN")
    if not token:
        return Check("Slack", "skip", "SLACK_BOT_TOKEN is not set")
    base = env.get("SLACK_API_URL") or "https://slack.com/api/"
    base = base if base.endswith("/") else base + "/"
    try:
        cap = max_body_bytes(env)
    except ConfigError:  # the settings check reports the bad value; this check still runs, with the default
        cap = DEFAULT_MAX_BODY_BYTES
    try:
        async with (
            httpx.AsyncClient(timeout=10) as client,
            client.stream("POST", base + "auth.test", headers={"Authorization": f"Bearer {token}"}) as resp,
        ):
            # a bounded read (issue 15 §1): an endless answer is cut at WD_MAX_BODY_BYTES, not read whole
            raw = bytearray()
            async for chunk in resp.aiter_bytes():
                raw += chunk
                if len(raw) > cap:
                    raise ValueError(f"the answer was cut at {cap} bytes (WD_MAX_BODY_BYTES)")
        data = json.loads(bytes(raw))
    except Exception as exc:
        return Check("Slack", "fail", f"auth.test failed: {_line(exc)}")
    if not data.get("ok"):
        return Check("Slack", "fail", f"auth.test: {sanitize(str(data.get('error') or resp.status_code))}")
    header = resp.headers.get("x-oauth-scopes")
    who = sanitize(f"{data.get('user') or '?'} in {data.get('team') or '?'}")
    if header is None:
        return Check("Slack", "warn", f"token ok ({who}); Slack sent no x-oauth-scopes header to compare")
    scopes = {s.strip() for s in header.split(",") if s.strip()}
    missing = sorted(REQUIRED_SCOPES - scopes)
    if missing:
        return Check("Slack", "fail", f"token ok ({who}) but missing scope(s) {', '.join(missing)}: reinstall the app")
    extra = sorted(scopes - REQUIRED_SCOPES)
    if extra:
        return Check("Slack", "warn", f"token ok ({who}); scopes beyond what the bot uses: {', '.join(extra)}")
    return Check("Slack", "ok", f"token ok ({who}); every scope the bot uses")


async def run_checks(env: Mapping[str, str], mode: str | None, backends: Any | None = None) -> list[Check]:
    """Every row. ``backends`` (a :class:`diagnosis.answer.Backends`) replaces the environment's (``--snapshot``)."""
    from diagnosis.backends import REGISTRY
    from diagnosis.config import ConfigError, KubeConfig

    rows = check_settings(env, mode) if backends is None else []
    rows.append(check_policy(env, mode))
    rows.append(await check_redis(env))
    if backends is None:

        def config(backend: Any) -> Any:
            if not any(env.get(n) for n in backend.settings_names):
                return None
            try:
                return backend.read_settings(env)
            except ConfigError:
                return None

        settings = {name: config(b) for name, b in REGISTRY.items()}
        try:
            kube = KubeConfig.from_env(env)
        except ConfigError:
            kube = KubeConfig()
    else:
        settings = {name: b.settings(backends) for name, b in REGISTRY.items()}
        kube = backends.kube
    for name, backend in REGISTRY.items():
        rows.append(await check_backend(backend, settings[name]))
    # Tier 2 reads the pods of Run:ai's projects: their namespaces are where it must be allowed to read
    runai = settings.get("runai")
    rows.extend(await check_tier2(kube, await project_namespaces(runai) if kube.available else None))
    rows.append(await check_slack(env))
    return rows


def table(rows: list[Check]) -> str:
    from diagnosis.redact import sanitize

    width = max([len(r.name) for r in rows] + [5])
    marks = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
    out = [f"{'CHECK':<{width}}  {'STATUS':<6}  DETAIL", f"{'-' * width}  {'-' * 6}  {'-' * 40}"]
    out += [f"{r.name:<{width}}  {marks.get(r.status, r.status):<6}  {sanitize(r.detail)}" for r in rows]
    return "\n".join(out) + "\n"


def register(app: typer.Typer) -> None:
    @app.command()
    def doctor(
        socket: Annotated[bool, typer.Option("--socket", help="Check the settings for Socket Mode.")] = False,
        http: Annotated[bool, typer.Option("--http", help="Check the settings for HTTP mode.")] = False,
        snapshot: Annotated[
            str | None, typer.Option("--snapshot", help="Check against a sandbox serving this snapshot.")
        ] = None,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on a warning too.")] = False,
        debug: Annotated[bool, typer.Option("--debug", help="Debug logs.")] = False,
    ) -> None:
        """Check every setting, Redis, Run:ai, OSMO, each Tier 2 context and the Slack token; print a table."""
        import logging

        from bot.cli_app import UserError, backends_for, run_guarded
        from diagnosis.logs import setup_logging

        setup_logging(logging.DEBUG if debug else logging.ERROR)
        if socket and http:
            run_guarded(lambda: (_ for _ in ()).throw(UserError("choose one of --socket or --http")))
        env = dict(environment())
        mode = "socket" if socket else "http" if http else None
        if mode is None and env.get("SLACK_BOT_TOKEN"):
            mode = "socket" if env.get("SLACK_APP_TOKEN") else "http"

        def run() -> list[Check]:
            if snapshot is None:
                return asyncio.run(run_checks(env, mode))
            with backends_for(snapshot) as (backends, _ask):
                return asyncio.run(run_checks(env, mode, backends))

        rows = run_guarded(run, debug)
        typer.echo(table(rows), nl=False)
        failed = [r for r in rows if r.status == "fail"] + ([r for r in rows if r.status == "warn"] if strict else [])
        summary = f"{sum(r.status == 'ok' for r in rows)} ok, {sum(r.status == 'warn' for r in rows)} warning(s), "
        summary += f"{sum(r.status == 'fail' for r in rows)} failure(s)"
        typer.echo(summary)
        if failed:
            raise typer.Exit(1)
