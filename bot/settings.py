"""Settings of the Slack bot; every missing one is named at startup.

They are read from :func:`diagnosis.config.environment` (the one reader of the environment) or the mapping a
caller gives; nothing here reads ``os.environ``. The variables:

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
default ``wd:``, so two bots can share one Redis), ``WD_MAX_IN_FLIGHT`` (diagnoses one replica works on at once,
default 64; beyond it the asker is told to try again), ``WD_EVENT_LEASE`` (seconds an event claim lasts without
renewal, default 30), ``WD_ACK_REDIS_BUDGET`` (seconds an ack waits for Redis, default 0.2), ``WD_WATCH_TTL``
(seconds before an unfinished OSMO watch expires, default 604800 = 7 days), ``WD_LOG_FORMAT`` (``text`` or ``json``),
``WD_HOST`` (the address ``serve`` listens on, default ``127.0.0.1``; ``--host`` wins).

:class:`BotEnv` (pydantic-settings) is the typed, documented list; ``docs/configuration.md`` is generated from it
and from :class:`diagnosis.config.CoreEnv` (``python -m bot.settings``; tests/bot/test_settings_reference.py checks it).

The backends' settings (Run:ai, OSMO, and Tier 2: ``KUBECONFIG``, ``WD_KUBE_CONTEXTS``, ``WD_IN_CLUSTER_ID``)
are read by :mod:`diagnosis.config`, at start-up too: a malformed one is named there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from diagnosis.config import ConfigError, environment
from diagnosis.envsettings import MappingSettings

Mode = Literal["http", "socket", "worker", "chat"]
#: what stands for a password in a URL shown to a person
HIDDEN = "****"


def redis_url_problem(url: str) -> str | None:
    """Why redis-py would not connect where ``url`` says (None: it would), in words that never hold the URL.

    ``url`` is read as redis-py reads it (``redis.connection.parse_url``, behind ``from_url``: the standard
    library's ``urlparse``), so a ``#`` starts a fragment that redis-py drops: ``redis://:pa#ss@host`` is
    ``redis://:pa`` to it (its port "pa" fails; its error names that part of the password). Such a URL is
    refused here with the fix, the characters to percent-encode."""
    from urllib.parse import urlparse

    from redis.connection import parse_url

    encode = "a '#', '?', '/' or '@' in the password must be percent-encoded (%23, %3F, %2F, %40)"
    if not url.lower().startswith(("redis://", "rediss://", "unix://")):
        return "REDIS_URL must start with redis://, rediss:// or unix://"
    try:
        fragment = urlparse(url).fragment
        parse_url(url)
    except ValueError:
        return f"REDIS_URL cannot be read as redis-py reads it (host, port, database or options): {encode}"
    if fragment or url.endswith("#"):
        return f"REDIS_URL holds a '#', which redis-py reads as the end of the URL: {encode}"
    return None


def shown_url(url: str) -> str:
    """``url`` as it may be shown: everything between ``://`` and the last ``@`` but the user name is
    :data:`HIDDEN` (a password with ``#``, ``?`` or ``/`` included, whatever a parser would make of it)."""
    scheme, sep, rest = url.partition("://")
    at = rest.rfind("@")
    if not sep or at < 0:
        return url
    user, colon, _password = rest[:at].partition(":")
    if not colon:
        return f"{scheme}://{HIDDEN}@{rest[at + 1 :]}" if user else url
    return f"{scheme}://{user.split('/')[0].split('?')[0].split('#')[0]}:{HIDDEN}@{rest[at + 1 :]}"


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


class BotEnv(MappingSettings):
    """The bot's environment, typed and documented (docs/configuration.md is generated from these fields).

    Field names are the environment variables. Every value is read as given; :meth:`Settings.from_env`
    turns an invalid one into one clear line naming the variable (the validators below)."""

    read_error: ClassVar[type[ValueError]] = SettingsError

    SLACK_BOT_TOKEN: str = Field("", description="Bot token (`xoxb-…`, OAuth & Permissions). Required by `serve`.")
    SLACK_SIGNING_SECRET: str | None = Field(
        None, description="Signing secret (Basic Information). Required in HTTP mode (`serve --http`)."
    )
    SLACK_APP_TOKEN: str | None = Field(
        None, description="App-level token (`xapp-…`, scope `connections:write`). Required in Socket Mode."
    )
    REDIS_URL: str | None = Field(
        None, description="`redis://`, `rediss://` or `unix://` URL of the shared state. Required by `serve`."
    )
    SLACK_API_URL: str = Field(DEFAULT_API_URL, description="Slack Web API base URL (tests point it at a mock).")
    WD_POLICY_FILE: str | None = Field(
        None, description="Access policy and per-channel defaults and digests (YAML). Unset: everyone may ask."
    )
    WD_RATE_LIMIT: int = Field(10, description="Diagnoses per user per minute, shared by every replica.")
    WD_CONVERSATION_TTL: int = Field(3600, description="Seconds a follow-up question waits for its answer.")
    WD_REDIS_PREFIX: str = Field("wd:", description="Prefix of every Redis key (two bots can share one Redis).")
    WD_WATCH_MIN_INTERVAL: float = Field(
        5.0, description="A watch never polls faster than this many seconds, even with a user's cadence."
    )
    WD_WATCH_SCALE: float = Field(
        1.0, description="Multiplies every watch interval (cadence, minimum, sweep); tests and demos use 0.01."
    )
    WD_WATCH_TTL: float = Field(
        604800.0, description="Seconds after which an OSMO watch expires unfinished (default 7 days)."
    )
    WD_WATCH_LEASE: float = Field(
        90.0,
        description="Seconds a replica's hold on a watch outlasts its next poll; a killed replica's watches are "
        "carried on by another replica once it expires.",
    )
    WD_DIGEST_TICK: float = Field(30.0, description="Seconds between checks for a due scheduled digest.")
    WD_DIGEST_LEASE: float = Field(
        120.0, description="Seconds a replica's claim of a digest slot lasts without renewal."
    )
    WD_MAX_IN_FLIGHT: int = Field(
        64,
        description="Diagnoses (commands, mentions, buttons) one replica works on at once; beyond it the asker is "
        "told the bot is busy and to try again in a minute.",
    )
    WD_EVENT_LEASE: float = Field(
        30.0,
        description="Seconds a replica's claim of a Slack event lasts without renewal; a redelivery of an event "
        "whose replica died mid-answer is answered once it expires.",
    )
    WD_JOB_QUEUE: bool = Field(
        False,
        description="`true`: the Slack-facing process verifies, acks and enqueues each request on the job queue "
        "in Redis, and worker processes answer it (`workload-doctor worker`; `serve` runs one in process unless "
        "given `--ack-only`). Needs REDIS_URL. `false`: every replica answers what it acks.",
    )
    WD_QUEUE_MAX: int = Field(
        1000,
        description="Requests waiting on the job queue at most; beyond it the asker is told the bot is busy and to "
        "try again in a minute (never dropped silently).",
    )
    WD_JOB_HEARTBEAT: float = Field(
        10.0,
        description="Seconds a worker's job may go without a sign of life before another worker takes it over "
        "(a worker that died mid-answer); the takeover also waits for the event's claim to expire.",
    )
    WD_WORKER_CONCURRENCY: int = Field(
        32,
        description="Requests one worker process answers at once (a diagnosis mostly waits on the APIs: 32 keep a "
        "core busy where 16 left questions queued behind idle waits).",
    )
    WD_ACK_REDIS_BUDGET: float = Field(
        0.2,
        description="Seconds the ack of a request waits for Redis (event dedup, user groups) before it goes on "
        "without it; the event claim catches a duplicate once Redis answers.",
    )
    WD_FEEDBACK_RETENTION_DAYS: int = Field(
        30,
        description="Days an answer people voted on (Right / Wrong on its card) is kept with its redacted world "
        "and the votes, from the last vote; `workload-doctor feedback purge` deletes it all.",
    )
    WD_FEEDBACK_MAX_WORLD_BYTES: int = Field(
        2_000_000,
        description="Largest redacted world (snapshot JSON) kept with an answer for feedback; a larger one is not "
        "kept (the vote still is).",
    )
    WD_FEEDBACK_MAX_ANSWERS: int = Field(
        20_000, description="Answers per system kept for feedback at most; the oldest go first, with their votes."
    )
    WD_LOG_FORMAT: Literal["text", "json"] = Field(
        "text", description="`json`: one JSON object per log line (the container image sets it)."
    )
    WD_HOST: str = Field(
        "127.0.0.1",
        description="Address `serve` listens on (the HTTP port, or Socket Mode's health port); `--host` wins. "
        "The manifests and the image pass `--host 0.0.0.0`.",
    )

    @field_validator(
        "WD_RATE_LIMIT",
        "WD_CONVERSATION_TTL",
        "WD_MAX_IN_FLIGHT",
        "WD_FEEDBACK_RETENTION_DAYS",
        "WD_FEEDBACK_MAX_WORLD_BYTES",
        "WD_FEEDBACK_MAX_ANSWERS",
        "WD_QUEUE_MAX",
        "WD_WORKER_CONCURRENCY",
        mode="before",
    )
    @classmethod
    def _whole(cls, value: Any, info: ValidationInfo) -> int:
        return _int(
            {info.field_name or "": value}, info.field_name or "", int(cls.model_fields[info.field_name or ""].default)
        )

    @field_validator(
        "WD_WATCH_MIN_INTERVAL",
        "WD_WATCH_SCALE",
        "WD_WATCH_TTL",
        "WD_WATCH_LEASE",
        "WD_DIGEST_TICK",
        "WD_DIGEST_LEASE",
        "WD_EVENT_LEASE",
        "WD_ACK_REDIS_BUDGET",
        "WD_JOB_HEARTBEAT",
        mode="before",
    )
    @classmethod
    def _positive(cls, value: Any, info: ValidationInfo) -> float:
        name = info.field_name or ""
        return _float({name: value}, name, float(cls.model_fields[name].default))

    @field_validator("REDIS_URL")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        problem = redis_url_problem(value) if value else None
        if problem:
            raise SettingsError(problem)
        return value

    @field_validator("WD_LOG_FORMAT", mode="before")
    @classmethod
    def _log_format(cls, value: Any) -> str:
        text = str(value or "text").strip().lower()
        if text not in ("text", "json"):
            raise SettingsError(f"WD_LOG_FORMAT must be text or json, not {value!r}")
        return text


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
    watch_ttl: float = 604800.0
    watch_lease: float = 90.0
    log_format: str = "text"
    max_in_flight: int = 64
    event_lease: float = 30.0
    ack_redis_budget: float = 0.2
    host: str = "127.0.0.1"
    feedback_retention_days: int = 30
    feedback_max_world_bytes: int = 2_000_000
    feedback_max_answers: int = 20_000
    job_queue: bool = False
    queue_max: int = 1000
    job_heartbeat: float = 10.0
    worker_concurrency: int = 32

    @classmethod
    def from_env(cls, mode: Mode, env: Mapping[str, str] | None = None) -> Settings:
        """Settings for ``mode`` from ``env`` (default :func:`diagnosis.config.environment`); raises
        :class:`SettingsError` naming every missing variable."""
        env = environment() if env is None else env
        needed = ["SLACK_BOT_TOKEN", "REDIS_URL"]
        if mode == "http":
            needed.append("SLACK_SIGNING_SECRET")
        elif mode == "socket":
            needed.append("SLACK_APP_TOKEN")
        elif mode == "worker":
            pass  # a worker answers through the Web API; Slack never calls it
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
        problem = redis_url_problem(redis_url) if redis_url else None
        if problem:
            raise SettingsError(problem)
        policy = env.get("WD_POLICY_FILE") or None
        if policy and not os.path.exists(policy):
            raise SettingsError(f"WD_POLICY_FILE {policy!r} does not exist")
        typed = BotEnv.read(env)
        if mode == "worker" and not typed.WD_JOB_QUEUE:
            raise SettingsError("a worker answers queued requests: set WD_JOB_QUEUE=true (and REDIS_URL)")
        return cls(
            bot_token=token,
            signing_secret=typed.SLACK_SIGNING_SECRET,
            app_token=app_token,
            redis_url=redis_url,
            api_url=api_url,
            policy_file=policy,
            rate_limit=typed.WD_RATE_LIMIT,
            conversation_ttl=typed.WD_CONVERSATION_TTL,
            key_prefix=typed.WD_REDIS_PREFIX,
            digest_tick=typed.WD_DIGEST_TICK,
            digest_lease=typed.WD_DIGEST_LEASE,
            watch_min_interval=typed.WD_WATCH_MIN_INTERVAL,
            watch_scale=typed.WD_WATCH_SCALE,
            watch_ttl=typed.WD_WATCH_TTL,
            watch_lease=typed.WD_WATCH_LEASE,
            log_format=typed.WD_LOG_FORMAT,
            max_in_flight=typed.WD_MAX_IN_FLIGHT,
            event_lease=typed.WD_EVENT_LEASE,
            ack_redis_budget=typed.WD_ACK_REDIS_BUDGET,
            host=typed.WD_HOST.strip() or "127.0.0.1",
            feedback_retention_days=typed.WD_FEEDBACK_RETENTION_DAYS,
            feedback_max_world_bytes=typed.WD_FEEDBACK_MAX_WORLD_BYTES,
            feedback_max_answers=typed.WD_FEEDBACK_MAX_ANSWERS,
            job_queue=typed.WD_JOB_QUEUE,
            queue_max=typed.WD_QUEUE_MAX,
            job_heartbeat=typed.WD_JOB_HEARTBEAT,
            worker_concurrency=typed.WD_WORKER_CONCURRENCY,
        )


def _kind(annotation: Any) -> str:
    """A field's type for the reference table: ``text``, ``whole number``, ``number``, ``text or json``…"""
    import typing

    names = {str: "text", int: "whole number", float: "number", bool: "true/false"}
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is Literal:
        return " or ".join(f"`{a}`" for a in args)
    if args:
        return _kind(args[0])
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def reference_markdown() -> str:
    """docs/configuration.md: one table of every setting (bot and core), generated from the two models."""
    from diagnosis.config import CoreEnv

    lines = [
        "# Configuration reference",
        "",
        "<!-- generated by `python -m bot.settings > docs/configuration.md`; "
        "tests/bot/test_settings_reference.py checks it -->",
        "",
        "Every setting is an environment variable. Secrets (tokens, client secrets) belong in the Kubernetes "
        "Secret `workload-doctor`; the rest in the ConfigMap `workload-doctor-settings` (deploy/base/settings.env). "
        "An invalid value stops the bot at start-up with one line naming the variable; "
        "`workload-doctor doctor` checks them all.",
        "",
        "| Variable | Type | Default | Used by | Description |",
        "|---|---|---|---|---|",
    ]
    for used_by, model in (("bot", BotEnv), ("core", CoreEnv)):
        for name, info in model.model_fields.items():
            kind = _kind(info.annotation)
            default = "—" if info.default in (None, "") else f"`{info.default}`"
            lines.append(f"| `{name}` | {kind} | {default} | {used_by} | {info.description} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
