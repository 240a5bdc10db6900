"""Settings of the Slack bot, read from the environment; every missing one is named at startup.

``SLACK_BOT_TOKEN`` (always), ``SLACK_SIGNING_SECRET`` (HTTP mode), ``SLACK_APP_TOKEN`` (Socket
Mode), ``REDIS_URL``, ``SLACK_API_URL`` (default ``https://slack.com/api/``; tests point it at a
mock), ``WD_POLICY_FILE`` (access policy and per-channel defaults, YAML; optional),
``WD_RATE_LIMIT`` (diagnoses per user per minute, default 10), ``WD_CONVERSATION_TTL`` (seconds a
follow-up question waits for its answer, default 3600), ``WD_WATCH_MIN_INTERVAL`` (a watch never
polls faster than this many seconds, even with a user's cadence; default 5), ``WD_WATCH_SCALE``
(multiplies every watch interval — the spec's 10–15 s / 30 s / 60 s cadence, the minimum and
the sweep for orphaned watches; default 1, tests and demos use e.g. 0.01), ``WD_DIGEST_TICK`` (seconds
between checks for a due scheduled digest, default 30) and ``WD_DIGEST_LEASE`` (seconds a replica's claim
of a digest slot lasts without renewal, default 120), ``WD_REDIS_PREFIX`` (the prefix of every Redis key,
default ``wd:``, so two bots can share one Redis).

The backends' settings (Run:ai, OSMO, and Tier 2: ``KUBECONFIG``, ``WD_KUBE_CONTEXTS``, ``WD_IN_CLUSTER_ID``)
are read by :mod:`diagnosis.config`, at start-up too: a malformed one is named there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from diagnosis.config import ConfigError

Mode = Literal["http", "socket", "chat"]
DEFAULT_API_URL = "https://slack.com/api/"


class SettingsError(ConfigError):
    """A required bot setting is missing or malformed; the message names it."""


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError as exc:
        raise SettingsError(f"{name} must be a whole number, not {raw!r}") from exc
    if value <= 0:
        raise SettingsError(f"{name} must be positive")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = float(str(raw))
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number, not {raw!r}") from exc
    if not value > 0 or value != value or value == float("inf"):
        raise SettingsError(f"{name} must be a positive number")
    return value


@dataclass(frozen=True)
class Settings:
    bot_token: str = ""
    signing_secret: str | None = None
    app_token: str | None = None
    redis_url: str | None = None
    api_url: str = DEFAULT_API_URL
    policy_file: str | None = None
    rate_limit: int = 10
    conversation_ttl: int = 3600
    key_prefix: str = "wd:"
    watch_min_interval: float = 5.0
    watch_scale: float = 1.0
    digest_tick: float = 30.0
    digest_lease: float = 120.0

    @classmethod
    def from_env(cls, mode: Mode, env: Mapping[str, str] | None = None) -> Settings:
        """Settings for ``mode``; raises :class:`SettingsError` naming every missing variable."""
        env = os.environ if env is None else env
        needed = ["SLACK_BOT_TOKEN", "REDIS_URL"]
        if mode == "http":
            needed.append("SLACK_SIGNING_SECRET")
        elif mode == "socket":
            needed.append("SLACK_APP_TOKEN")
        else:
            needed = []
        missing = [n for n in needed if not env.get(n)]
        if missing:
            raise SettingsError(f"missing setting(s) for {mode} mode: " + ", ".join(missing))
        api_url = env.get("SLACK_API_URL") or DEFAULT_API_URL
        if not api_url.startswith(("http://", "https://")):
            raise SettingsError(f"SLACK_API_URL must start with http:// or https://, not {api_url!r}")
        if not api_url.endswith("/"):
            api_url += "/"
        token = env.get("SLACK_BOT_TOKEN", "")
        if mode != "chat" and not token.startswith("xoxb-"):
            raise SettingsError("SLACK_BOT_TOKEN must be a bot token (xoxb-…)")
        app_token = env.get("SLACK_APP_TOKEN") or None
        if mode == "socket" and app_token and not app_token.startswith("xapp-"):
            raise SettingsError("SLACK_APP_TOKEN must be an app-level token (xapp-…)")
        redis_url = env.get("REDIS_URL") or None
        if redis_url and not redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise SettingsError(f"REDIS_URL must start with redis://, rediss:// or unix://, not {redis_url!r}")
        policy = env.get("WD_POLICY_FILE") or None
        if policy and not os.path.exists(policy):
            raise SettingsError(f"WD_POLICY_FILE {policy!r} does not exist")
        return cls(
            bot_token=token,
            signing_secret=env.get("SLACK_SIGNING_SECRET") or None,
            app_token=app_token,
            redis_url=redis_url,
            api_url=api_url,
            policy_file=policy,
            rate_limit=_int(env, "WD_RATE_LIMIT", 10),
            conversation_ttl=_int(env, "WD_CONVERSATION_TTL", 3600),
            key_prefix=env.get("WD_REDIS_PREFIX") or "wd:",
            digest_tick=_float(env, "WD_DIGEST_TICK", 30.0),
            digest_lease=_float(env, "WD_DIGEST_LEASE", 120.0),
            watch_min_interval=_float(env, "WD_WATCH_MIN_INTERVAL", 5.0),
            watch_scale=_float(env, "WD_WATCH_SCALE", 1.0),
        )
