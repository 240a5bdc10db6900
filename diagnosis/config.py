"""Settings of the diagnosis core, and the one reader of the environment (every external endpoint is a setting).

:func:`environment` is the product's one read of ``os.environ`` (tests/test_env_reader.py fails on any other):
every ``from_env`` here and :meth:`bot.settings.Settings.from_env` take a mapping in its place (tests, ``doctor``,
the sandbox's Tier 2) and read the process environment through it when given none. The typed models (pydantic-settings:
:class:`CoreEnv` here, :class:`bot.settings.BotEnv`, on :class:`diagnosis.envsettings.MappingSettings`) document
every variable and read only the mapping they are given.

``RUNAI_BASE_URL``, ``RUNAI_CLIENT_ID``, ``RUNAI_CLIENT_SECRET``, ``RUNAI_CONSOLE_URL`` (links;
defaults to the base URL), ``RUNAI_WORKLOAD_URL_TEMPLATE`` (a deep link to one workload in your
console, e.g. ``https://acme.run.ai/workloads/{workload_id}``; without it only the console is linked),
``KUBECONFIG`` (Tier 2; optional), ``WD_KUBE_CONTEXTS`` (a YAML or JSON map of Run:ai cluster id or name to
a kubeconfig context or file: one Kubernetes API per cluster; optional), ``WD_IN_CLUSTER_ID`` (the one cluster
that in-cluster config serves; optional), ``OSMO_URL``, ``OSMO_TOKEN``,
``WD_REQUEST_TIMEOUT`` (seconds per request, default 10), ``WD_DEADLINE`` (seconds per
diagnosis, default 60), ``WD_MAX_BODY_BYTES`` (the most bytes of one response or request body read, default
16 MiB: :func:`max_body_bytes`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar


class ConfigError(ValueError):
    """A required setting is missing or malformed; the message names it."""


def environment() -> Mapping[str, str]:
    """The process environment, read-only: the product's one read of ``os.environ``.

    A live view, never a cached copy: a test's ``monkeypatch.setenv`` is seen by the next read."""
    return MappingProxyType(os.environ)


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number of seconds, not {raw!r}") from exc
    if value <= 0:
        raise ConfigError(f"{name} must be positive")
    return value


#: ``WD_MAX_BODY_BYTES`` unset: the most bytes of one body any reader takes (Run:ai, OSMO and Kubernetes answers,
#: Slack requests and Web API answers). Real answers are far smaller (a 500-item page is a few MiB); the cap is
#: what keeps a server that never stops sending from costing the process its memory (issue 15 §1).
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
#: The smallest cap accepted: below it even a token reply or an error message could not be read.
MIN_MAX_BODY_BYTES = 1024


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError as exc:
        raise ConfigError(f"{name} must be a whole number of bytes, not {raw!r}") from exc
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}")
    return value


def max_body_bytes(env: Mapping[str, str] | None = None) -> int:
    """``WD_MAX_BODY_BYTES`` of ``env`` (:func:`environment` by default), in bytes: every body read (HTTP clients in
    :mod:`diagnosis.http`, Tier 2 in :mod:`diagnosis.k8s`, the Slack HTTP mode) stops there with a named gap.
    Raises :class:`ConfigError` for a value that is not a whole number of at least :data:`MIN_MAX_BODY_BYTES`."""
    env = environment() if env is None else env
    return _int(env, "WD_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, MIN_MAX_BODY_BYTES)


def body_seconds(env: Mapping[str, str] | None = None) -> float:
    """The wall-clock seconds one Run:ai or OSMO body may take to arrive after its headers: ``WD_DEADLINE``
    (the diagnosis deadline; a diagnosis waits no longer for anything). Raises :class:`ConfigError`."""
    env = environment() if env is None else env
    return _float(env, "WD_DEADLINE", 60.0)


@dataclass(frozen=True)
class RunaiConfig:
    """Run:ai control plane: base URL (no trailing slash), service-account credentials, timeouts in seconds."""

    base_url: str
    client_id: str
    client_secret: str
    console_url: str
    request_timeout: float = 10.0
    deadline: float = 60.0
    workload_url_template: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunaiConfig:
        """Raises :class:`ConfigError` naming the first missing variable."""
        env = environment() if env is None else env
        missing = [n for n in ("RUNAI_BASE_URL", "RUNAI_CLIENT_ID", "RUNAI_CLIENT_SECRET") if not env.get(n)]
        if missing:
            raise ConfigError(
                "missing setting(s) " + ", ".join(missing) + " (or use --snapshot FILE to run on the sandbox)"
            )
        base = env["RUNAI_BASE_URL"].rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ConfigError(f"RUNAI_BASE_URL must start with http:// or https://, not {base!r}")
        max_body_bytes(env)  # a malformed cap fails here, with one line, before any request
        return cls(
            base_url=base,
            client_id=env["RUNAI_CLIENT_ID"],
            client_secret=env["RUNAI_CLIENT_SECRET"],
            console_url=(env.get("RUNAI_CONSOLE_URL") or base).rstrip("/"),
            workload_url_template=env.get("RUNAI_WORKLOAD_URL_TEMPLATE") or None,
            request_timeout=_float(env, "WD_REQUEST_TIMEOUT", 10.0),
            deadline=_float(env, "WD_DEADLINE", 60.0),
        )


#: What :meth:`KubeConfig.for_cluster` says when a cluster has no Tier 2 and nothing more specific applies.
NO_CREDENTIALS = "no Kubernetes credentials configured (KUBECONFIG)"
_EXAMPLE = '{"<cluster uuid>": "prod-context", "staging": "/etc/kube/staging.yaml"}'
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".conf", ".config", ".kubeconfig")


def _kube_contexts(env: Mapping[str, str]) -> dict[str, str | tuple[str | None, str | None]] | None:
    """``WD_KUBE_CONTEXTS`` parsed (None when unset): cluster id or name -> context name, or
    ``(kubeconfig file, context or None)``. Raises :class:`ConfigError` with one line saying what is wrong."""
    raw = (env.get("WD_KUBE_CONTEXTS") or "").strip()
    if not raw:
        return None

    def bad(problem: str) -> ConfigError:
        return ConfigError(
            "WD_KUBE_CONTEXTS must be a YAML or JSON map of Run:ai cluster id or name to a kubeconfig context "
            f"or a kubeconfig file, e.g. {_EXAMPLE}: {problem}"
        )

    text = raw
    if "\n" not in raw and ":" not in raw and raw[0] not in "{[\"'":
        # No map can be written without a colon: this is the path of a file that holds the map.
        try:
            text = Path(raw).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise bad(f"{raw!r} is neither a map nor a readable file ({exc.strerror or type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except ValueError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
            raise bad(f"it is not valid YAML or JSON{where}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise bad(f"got a {type(data).__name__}, not a map")
    out: dict[str, str | tuple[str | None, str | None]] = {}
    for key, value in data.items():
        if isinstance(key, bool) or not isinstance(key, (str, int)) or not str(key).strip():
            raise bad(f"the key {key!r} is not a cluster id or name")
        name = str(key).strip()
        if isinstance(value, str) and value.strip():
            out[name] = value.strip()
        elif isinstance(value, dict) and set(value) <= {"kubeconfig", "context"} and value:
            path, context = value.get("kubeconfig"), value.get("context")
            if not all(v is None or (isinstance(v, str) and v.strip()) for v in (path, context)):
                raise bad(f"cluster {name!r}: 'kubeconfig' and 'context' must be non-empty strings")
            out[name] = (path.strip() if path else None, context.strip() if context else None)
        else:
            raise bad(
                f"cluster {name!r} maps to {value!r}; give a context name, a kubeconfig file, "
                "or {kubeconfig: FILE, context: NAME}"
            )
    return out


def _is_file(value: str) -> bool:
    """Whether a ``WD_KUBE_CONTEXTS`` value names a kubeconfig file rather than a context of ``KUBECONFIG``."""
    if value.startswith(("/", "~", "./", "../")) or value.lower().endswith(_FILE_SUFFIXES):
        return True
    return os.path.isfile(value)


@dataclass(frozen=True)
class KubeConfig:
    """Tier 2 Kubernetes access.

    Unrouted (neither ``WD_KUBE_CONTEXTS`` nor ``WD_IN_CLUSTER_ID`` set, as before those settings existed):
    ``kubeconfig`` (its current context, or ``context``) or in-cluster config serves every Run:ai cluster.

    Routed: ``contexts`` maps a Run:ai cluster id or name to a context of ``kubeconfig`` (``KUBECONFIG``, else
    ``~/.kube/config``) or to a kubeconfig file, and ``in_cluster_id`` is the one cluster (id or name) that
    in-cluster config serves; any other cluster has no Tier 2. :meth:`for_cluster` gives the unrouted config of
    one cluster, or an unavailable one whose ``why_unavailable`` is the gap to name.
    """

    kubeconfig: str | None = None
    in_cluster: bool = False
    context: str | None = None
    contexts: Mapping[str, str | tuple[str | None, str | None]] = field(default_factory=dict, hash=False)
    in_cluster_id: str | None = None
    routed: bool = False
    why_unavailable: str = NO_CREDENTIALS

    @property
    def available(self) -> bool:
        """Whether Tier 2 may be read (routed: for some cluster; :meth:`for_cluster` says which)."""
        if self.routed:
            return bool(self.contexts) or bool(self.in_cluster_id)
        return bool(self.kubeconfig) or bool(self.context) or self.in_cluster

    def describe(self) -> str:
        """Which credentials these are, for a gap: "context 'prod' of /etc/kubeconfig", "in-cluster config"."""
        if self.routed:
            return "WD_KUBE_CONTEXTS"
        if self.kubeconfig or self.context:
            where = self.kubeconfig or "the default kubeconfig"
            return f"context {self.context!r} of {where}" if self.context else f"kubeconfig {where}"
        return "in-cluster config" if self.in_cluster else "no Kubernetes credentials"

    def for_cluster(self, cluster_id: str | None, name: str | None = None, *, names_known: bool = True) -> KubeConfig:
        """The Tier 2 access of the Run:ai cluster ``cluster_id`` (named ``name``): unrouted, this config itself;
        routed, its mapping by id first, then by exact name (then by name ignoring case), else an unavailable
        config naming the gap. ``names_known=False``: the clusters list could not be read, so a mapping by
        name cannot be matched (said in the gap)."""
        if not self.routed:
            return self
        target: str | tuple[str | None, str | None] | None = None
        in_cluster = False
        for ref in (cluster_id, name):
            if not ref:
                continue
            if ref in self.contexts:
                target = self.contexts[ref]
            elif ref == self.in_cluster_id:
                in_cluster = True
            else:
                folded = [k for k in self.contexts if k.casefold() == ref.casefold()]
                if len(folded) == 1:
                    target = self.contexts[folded[0]]
                elif self.in_cluster_id and self.in_cluster_id.casefold() == ref.casefold():
                    in_cluster = True
            if target is not None or in_cluster:
                break
        if in_cluster:
            return KubeConfig(in_cluster=True)
        if isinstance(target, tuple):
            path, context = target
            return KubeConfig(kubeconfig=os.path.expanduser(path) if path else self.kubeconfig, context=context)
        if isinstance(target, str):
            if _is_file(target):
                return KubeConfig(kubeconfig=os.path.expanduser(target))
            return KubeConfig(kubeconfig=self.kubeconfig, context=target)
        label = f"{name} ({cluster_id})" if name and cluster_id else (name or cluster_id or "of this workload")
        why = f"no Kubernetes context is configured for cluster {label} (WD_KUBE_CONTEXTS)"
        by_name = [k for k in (*self.contexts, self.in_cluster_id or "") if k and not _UUID.fullmatch(k)]
        if not names_known and not name and by_name:
            why += "; the clusters list could not be read, so a mapping by cluster name could not be matched"
        return KubeConfig(why_unavailable=why)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> KubeConfig:
        """``KUBECONFIG``, ``WD_KUBE_CONTEXTS``, ``WD_IN_CLUSTER_ID`` (see the class); raises :class:`ConfigError`
        with one line naming the setting that is malformed."""
        env = environment() if env is None else env
        path = env.get("KUBECONFIG") or None
        in_pod = bool(env.get("KUBERNETES_SERVICE_HOST"))
        contexts = _kube_contexts(env)
        in_cluster_id = (env.get("WD_IN_CLUSTER_ID") or "").strip() or None
        if contexts is None and in_cluster_id is None:
            return cls(kubeconfig=path, in_cluster=in_pod and not path)
        if in_cluster_id is not None:
            if not in_pod:
                raise ConfigError(
                    f"WD_IN_CLUSTER_ID is set ({in_cluster_id!r}) but this process does not run in a Kubernetes pod "
                    "(KUBERNETES_SERVICE_HOST is unset), so there is no in-cluster config to serve it"
                )
            if in_cluster_id in (contexts or {}):
                raise ConfigError(
                    f"cluster {in_cluster_id!r} is in WD_KUBE_CONTEXTS and is WD_IN_CLUSTER_ID: give it one of them"
                )
        return cls(kubeconfig=path, contexts=contexts or {}, in_cluster_id=in_cluster_id, routed=True)


@dataclass(frozen=True)
class OsmoConfig:
    """OSMO service: URL (no trailing slash) and the access token exchanged for a JWT."""

    url: str
    token: str
    request_timeout: float = 10.0
    deadline: float = 60.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OsmoConfig:
        env = environment() if env is None else env
        missing = [n for n in ("OSMO_URL", "OSMO_TOKEN") if not env.get(n)]
        if missing:
            raise ConfigError(
                "missing setting(s) " + ", ".join(missing) + " (or use --snapshot FILE to run on the sandbox)"
            )
        url = env["OSMO_URL"].rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"OSMO_URL must start with http:// or https://, not {url!r}")
        max_body_bytes(env)
        return cls(
            url=url,
            token=env["OSMO_TOKEN"],
            request_timeout=_float(env, "WD_REQUEST_TIMEOUT", 10.0),
            deadline=_float(env, "WD_DEADLINE", 60.0),
        )


def __getattr__(name: str) -> Any:
    """``CoreEnv`` is built on first use: the CLI's diagnoses never pay for importing pydantic-settings."""
    if name == "CoreEnv":
        globals()["CoreEnv"] = _core_env()
        return globals()["CoreEnv"]
    raise AttributeError(name)


def _core_env() -> Any:
    from pydantic import Field, ValidationInfo, field_validator

    from diagnosis.envsettings import MappingSettings

    class CoreEnv(MappingSettings):
        """The diagnosis core's environment, typed and documented (docs/configuration.md is generated from it).

        :meth:`RunaiConfig.from_env`, :meth:`OsmoConfig.from_env` and :meth:`KubeConfig.from_env` read these
        variables with their one-line errors; this model is their reference (tests check both agree)."""

        read_error: ClassVar[type[ValueError]] = ConfigError

        RUNAI_BASE_URL: str | None = Field(
            None, description="Run:ai control plane URL, e.g. `https://acme.run.ai`. Required for Run:ai."
        )
        RUNAI_CLIENT_ID: str | None = Field(None, description="Run:ai application (service account) client id.")
        RUNAI_CLIENT_SECRET: str | None = Field(None, description="Run:ai application client secret.")
        RUNAI_CONSOLE_URL: str | None = Field(None, description="Console URL for links (default: RUNAI_BASE_URL).")
        RUNAI_WORKLOAD_URL_TEMPLATE: str | None = Field(
            None, description="Deep link to one workload, e.g. `https://acme.run.ai/workloads/{workload_id}`."
        )
        OSMO_URL: str | None = Field(None, description="OSMO service URL. Required for OSMO workflows.")
        OSMO_TOKEN: str | None = Field(None, description="OSMO access token (exchanged for a JWT).")
        KUBECONFIG: str | None = Field(None, description="Tier 2 kubeconfig (optional; in a pod: in-cluster config).")
        WD_KUBE_CONTEXTS: str | None = Field(
            None,
            description="YAML/JSON map (or a file holding it) of Run:ai cluster id or name to a kubeconfig "
            "context or file: one Kubernetes API per cluster.",
        )
        WD_IN_CLUSTER_ID: str | None = Field(
            None, description="The one Run:ai cluster (id or name) the pod's in-cluster config serves."
        )
        WD_REQUEST_TIMEOUT: float = Field(10.0, description="Seconds per HTTP request to Run:ai or OSMO.")
        WD_DEADLINE: float = Field(60.0, description="Seconds per diagnosis.")
        WD_MAX_BODY_BYTES: int = Field(
            DEFAULT_MAX_BODY_BYTES,
            description="Most bytes of one body read (Run:ai, OSMO, Kubernetes, Slack); a longer one is cut and "
            "named as a gap (Slack: HTTP 413).",
        )

        @field_validator("WD_MAX_BODY_BYTES", mode="before")
        @classmethod
        def _bytes(cls, value: Any) -> int:
            return max_body_bytes({"WD_MAX_BODY_BYTES": value})

        @field_validator("WD_REQUEST_TIMEOUT", "WD_DEADLINE", mode="before")
        @classmethod
        def _seconds(cls, value: Any, info: ValidationInfo) -> float:
            name = info.field_name or ""
            return _float({name: value}, name, float(cls.model_fields[name].default))

    return CoreEnv
