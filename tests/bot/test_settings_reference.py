"""Settings (issue 14 §2): typed through pydantic-settings, every name and default kept, one-line errors, and
docs/configuration.md generated from the models and in step with the code."""

from __future__ import annotations

import dataclasses
import re

import pytest

from bot.settings import BotEnv, Settings, SettingsError, reference_markdown
from diagnosis.config import ConfigError, CoreEnv, OsmoConfig, RunaiConfig
from tests.paths import ROOT

BASE = {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": "redis://r:6379/0", "SLACK_SIGNING_SECRET": "s"}


def test_docs_configuration_is_generated_from_the_code() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert text == reference_markdown(), "regenerate: .venv/bin/python -m bot.settings > docs/configuration.md"


def test_every_variable_the_code_reads_is_documented() -> None:
    documented = set(BotEnv.model_fields) | set(CoreEnv.model_fields)
    read: set[str] = set()
    for d in ("bot", "handlers", "diagnosis"):
        for path in (ROOT / d).rglob("*.py"):
            text = path.read_text()
            read |= set(re.findall(r"env(?:iron)?(?:\.get\(|\[)\"([A-Z][A-Z0-9_]+)\"", text))
            read |= set(re.findall(r"_(?:int|float)\(env, \"([A-Z][A-Z0-9_]+)\"", text))
    read -= {"KUBERNETES_SERVICE_HOST"}  # set by Kubernetes itself in every pod
    assert read, "the scan finds the settings"
    assert read <= documented, read - documented
    readme = (ROOT / "README.md").read_text()
    assert "docs/configuration.md" in readme


def test_defaults_are_the_same_in_the_model_and_the_settings() -> None:
    s = Settings.from_env("http", BASE)
    pairs = {
        "WD_RATE_LIMIT": s.rate_limit,
        "WD_CONVERSATION_TTL": s.conversation_ttl,
        "WD_REDIS_PREFIX": s.key_prefix,
        "WD_WATCH_MIN_INTERVAL": s.watch_min_interval,
        "WD_WATCH_SCALE": s.watch_scale,
        "WD_WATCH_TTL": s.watch_ttl,
        "WD_DIGEST_TICK": s.digest_tick,
        "WD_DIGEST_LEASE": s.digest_lease,
        "SLACK_API_URL": s.api_url,
    }
    for name, value in pairs.items():
        assert BotEnv.model_fields[name].default == value, name
    defaults = {f.name: f.default for f in dataclasses.fields(Settings)}
    assert defaults["rate_limit"] == 10 and defaults["conversation_ttl"] == 3600 and defaults["key_prefix"] == "wd:"
    assert (s.watch_ttl, s.digest_tick, s.digest_lease) == (604800.0, 30.0, 120.0)
    config = RunaiConfig.from_env({"RUNAI_BASE_URL": "https://r", "RUNAI_CLIENT_ID": "i", "RUNAI_CLIENT_SECRET": "s"})
    assert config.request_timeout == CoreEnv.model_fields["WD_REQUEST_TIMEOUT"].default
    assert config.deadline == CoreEnv.model_fields["WD_DEADLINE"].default


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("WD_RATE_LIMIT", "many", "WD_RATE_LIMIT must be a whole number, not 'many'"),
        ("WD_RATE_LIMIT", "0", "WD_RATE_LIMIT must be positive"),
        ("WD_CONVERSATION_TTL", "1.5", "WD_CONVERSATION_TTL must be a whole number, not '1.5'"),
        ("WD_DIGEST_TICK", "-1", "WD_DIGEST_TICK must be a positive number"),
        ("WD_WATCH_SCALE", "nan", "WD_WATCH_SCALE must be a positive number"),
        ("WD_WATCH_TTL", "x", "WD_WATCH_TTL must be a number, not 'x'"),
        ("WD_LOG_FORMAT", "xml", "WD_LOG_FORMAT must be text or json, not 'xml'"),
        ("SLACK_API_URL", "ftp://x", "SLACK_API_URL must start with http:// or https://, not 'ftp://x'"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as exc:
        Settings.from_env("http", {**BASE, name: value})
    assert str(exc.value) == message


def test_missing_settings_keep_their_message() -> None:
    with pytest.raises(SettingsError, match=r"^missing setting\(s\) for socket mode: SLACK_APP_TOKEN$"):
        Settings.from_env("socket", {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": "redis://r"})
    with pytest.raises(ConfigError, match=r"^WD_DEADLINE must be a number of seconds, not 'soon'$"):
        OsmoConfig.from_env({"OSMO_URL": "https://o", "OSMO_TOKEN": "t", "WD_DEADLINE": "soon"})
    with pytest.raises(ConfigError, match=r"^WD_DEADLINE must be a number of seconds, not 'soon'$"):
        CoreEnv.read({"WD_DEADLINE": "soon"})


def test_the_models_read_only_the_mapping_they_are_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WD_RATE_LIMIT", "not-a-number")
    assert Settings.from_env("http", BASE).rate_limit == 10
    assert BotEnv.read({"WD_RATE_LIMIT": "7"}).WD_RATE_LIMIT == 7
