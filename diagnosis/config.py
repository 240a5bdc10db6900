"""Settings of the diagnosis core, read from the environment (every external endpoint is a setting).

``RUNAI_BASE_URL``, ``RUNAI_CLIENT_ID``, ``RUNAI_CLIENT_SECRET``, ``RUNAI_CONSOLE_URL`` (links;
defaults to the base URL), ``RUNAI_WORKLOAD_URL_TEMPLATE`` (a deep link to one workload in your
console, e.g. ``https://acme.run.ai/workloads/{workload_id}``; without it only the console is linked),
``KUBECONFIG`` (Tier 2; optional), ``OSMO_URL``, ``OSMO_TOKEN``,
``WD_REQUEST_TIMEOUT`` (seconds per request, default 10), ``WD_DEADLINE`` (seconds per
diagnosis, default 60).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


class ConfigError(ValueError):
    """A required setting is missing or malformed; the message names it."""


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
        env = os.environ if env is None else env
        missing = [n for n in ("RUNAI_BASE_URL", "RUNAI_CLIENT_ID", "RUNAI_CLIENT_SECRET") if not env.get(n)]
        if missing:
            raise ConfigError(
                "missing setting(s) " + ", ".join(missing) + " (or use --snapshot FILE to run on the sandbox)"
            )
        base = env["RUNAI_BASE_URL"].rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ConfigError(f"RUNAI_BASE_URL must start with http:// or https://, not {base!r}")
        return cls(
            base_url=base,
            client_id=env["RUNAI_CLIENT_ID"],
            client_secret=env["RUNAI_CLIENT_SECRET"],
            console_url=(env.get("RUNAI_CONSOLE_URL") or base).rstrip("/"),
            workload_url_template=env.get("RUNAI_WORKLOAD_URL_TEMPLATE") or None,
            request_timeout=_float(env, "WD_REQUEST_TIMEOUT", 10.0),
            deadline=_float(env, "WD_DEADLINE", 60.0),
        )


@dataclass(frozen=True)
class KubeConfig:
    """Tier 2 Kubernetes access: a kubeconfig path, or in-cluster config; None fields mean unavailable."""

    kubeconfig: str | None = None
    in_cluster: bool = False

    @property
    def available(self) -> bool:
        return bool(self.kubeconfig) or self.in_cluster

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> KubeConfig:
        env = os.environ if env is None else env
        path = env.get("KUBECONFIG") or None
        in_cluster = bool(env.get("KUBERNETES_SERVICE_HOST")) and not path
        return cls(kubeconfig=path, in_cluster=in_cluster)


@dataclass(frozen=True)
class OsmoConfig:
    """OSMO service: URL (no trailing slash) and the access token exchanged for a JWT."""

    url: str
    token: str
    request_timeout: float = 10.0
    deadline: float = 60.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OsmoConfig:
        env = os.environ if env is None else env
        missing = [n for n in ("OSMO_URL", "OSMO_TOKEN") if not env.get(n)]
        if missing:
            raise ConfigError(
                "missing setting(s) " + ", ".join(missing) + " (or use --snapshot FILE to run on the sandbox)"
            )
        url = env["OSMO_URL"].rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"OSMO_URL must start with http:// or https://, not {url!r}")
        return cls(
            url=url,
            token=env["OSMO_TOKEN"],
            request_timeout=_float(env, "WD_REQUEST_TIMEOUT", 10.0),
            deadline=_float(env, "WD_DEADLINE", 60.0),
        )
