"""The access policy and per-channel defaults, from a YAML settings file (``WD_POLICY_FILE``).

.. code-block:: yaml

    groups:                      # named groups of Slack user ids
      ml-platform: [U0AAAAAAA, U0BBBBBBB]
    access:                      # who may diagnose which clusters / projects ("*" = any)
      - who: ["@ml-platform"]    # user ids, "@group", Slack user-group ids (S…), or "*"
        clusters: ["*"]          # cluster names or ids
        projects: ["*"]
      - who: [U0CCCCCCC]
        clusters: [dgx-prod]
        projects: [nlp]
    channels:                    # defaults for questions asked in a channel
      C0123456789:
        cluster: dgx-prod        # or cluster_id: <uuid>
        project: nlp
        digests:                 # scheduled digests posted in this channel (bot.scheduler)
          - name: morning
            cron: "0 9 * * 1-5"  # croniter syntax; a sixth field is seconds
            tz: Europe/Berlin
            max_window: 7d       # a digest covers the time since the previous one, at most this
            cluster: dgx-prod    # null: every cluster the control plane lists
            projects: [nlp]      # null: every project
            pools: []            # OSMO pools; null: every pool only where projects is null (else none)
            min_failures: 0      # post only when at least this many failed

Without a file everyone may diagnose everything (logged at startup). A file whose ``access`` names nobody (the
deployed default, ``deploy/base/policy.yaml``) refuses everyone: :attr:`Policy.allows_nobody`, said at startup,
by ``workload-doctor doctor`` and in the bot's refusal (:data:`handlers.messages.NOBODY_ALLOWED`), so the first
person to ask learns why rather than "not allowed". A check with a value still
unknown (the cluster before the core resolved it) passes that dimension; the bot checks again
against the report's identity before showing anything, with the same refusal either way, so a
refusal never tells whether the workload exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bot.settings import SettingsError


@dataclass(frozen=True)
class Rule:
    who: frozenset[str]
    clusters: frozenset[str]
    projects: frozenset[str]


@dataclass(frozen=True)
class DigestSchedule:
    """One scheduled digest of a channel (``channels.<channel>.digests[i]``): ``cron`` in time zone ``tz``,
    covering the time since that channel's previous digest of this ``name``, at most ``max_window`` seconds."""

    channel: str
    name: str
    cron: str
    tz: str = "UTC"
    max_window: int = 7 * 86400
    cluster: str | None = None
    projects: tuple[str, ...] | None = None
    pools: tuple[str, ...] | None = None
    min_failures: int = 0


def _pools(pools: tuple[str, ...] | None, projects: Sequence[str] | None) -> tuple[str, ...] | None:
    """A digest's OSMO pools: ``null`` is every pool only in a digest of every project; a project-scoped one
    (``projects: [nlp]``) names its pools, or has none (issue 23: it must not add every pool)."""
    return () if pools is None and projects is not None else pools


def _digest_schedules(channel: str, raw: Any, name: str) -> list[DigestSchedule]:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from croniter import croniter

    from diagnosis.digests import parse_since
    from diagnosis.question import QuestionError

    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SettingsError(f"{name}: channels.{channel}.digests must be a list")
    out: list[DigestSchedule] = []
    for i, item in enumerate(raw):
        where = f"{name}: channels.{channel}.digests[{i}]"
        if not isinstance(item, dict) or not item.get("cron"):
            raise SettingsError(f"{where} needs a 'cron'")
        cron = str(item["cron"])
        if not croniter.is_valid(cron):
            raise SettingsError(f"{where}: {cron!r} is not a valid cron expression")
        tz = str(item.get("tz") or "UTC")
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise SettingsError(f"{where}: unknown time zone {tz!r}") from None
        try:
            window = parse_since(str(item.get("max_window") or "7d"))
        except QuestionError as exc:
            raise SettingsError(f"{where}: max_window: {exc}") from None

        def names(key: str, item: dict[str, Any] = item, where: str = where) -> tuple[str, ...] | None:
            value = item.get(key)
            if value is None:
                return None
            if not isinstance(value, list):
                raise SettingsError(f"{where}: {key} must be a list or null")
            return tuple(map(str, value))

        out.append(
            DigestSchedule(
                channel=channel,
                name=str(item.get("name") or f"digest-{i + 1}"),
                cron=cron,
                tz=tz,
                max_window=int(window.total_seconds()),
                cluster=str(item["cluster"]) if item.get("cluster") else None,
                projects=names("projects"),
                pools=_pools(names("pools"), names("projects")),
                min_failures=int(item.get("min_failures") or 0),
            )
        )
    if len({d.name for d in out}) != len(out):
        raise SettingsError(f"{name}: channels.{channel}.digests: names must be unique")
    return out


@dataclass
class Policy:
    rules: list[Rule] = field(default_factory=list)
    groups: dict[str, frozenset[str]] = field(default_factory=dict)
    channels: dict[str, dict[str, str]] = field(default_factory=dict)
    enabled: bool = False
    digests: dict[str, list[DigestSchedule]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | None) -> Policy:
        if not path:
            return cls()
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise SettingsError(f"cannot read policy file {path}: {exc}") from exc
        return cls.from_dict(data, path)

    @classmethod
    def from_dict(cls, data: dict[str, Any], name: str = "policy") -> Policy:
        if not isinstance(data, dict):
            raise SettingsError(f"{name}: the top level must be a mapping")
        groups = {str(k): frozenset(map(str, v or [])) for k, v in (data.get("groups") or {}).items()}
        rules: list[Rule] = []
        for i, raw in enumerate(data.get("access") or []):
            if not isinstance(raw, dict) or not raw.get("who"):
                raise SettingsError(f"{name}: access[{i}] needs a 'who' list")
            for g in raw["who"]:
                if str(g).startswith("@") and str(g)[1:] not in groups:
                    raise SettingsError(f"{name}: access[{i}] names unknown group {g}")
            rules.append(
                Rule(
                    who=frozenset(map(str, raw["who"])),
                    clusters=frozenset(map(str, raw.get("clusters") or ["*"])),
                    projects=frozenset(map(str, raw.get("projects") or ["*"])),
                )
            )
        channels: dict[str, dict[str, str]] = {}
        digests: dict[str, list[DigestSchedule]] = {}
        for ch, defaults in (data.get("channels") or {}).items():
            if not isinstance(defaults, dict):
                raise SettingsError(f"{name}: channels.{ch} must be a mapping")
            channels[str(ch)] = {k: str(v) for k, v in defaults.items() if k in ("cluster", "cluster_id", "project")}
            schedules = _digest_schedules(str(ch), defaults.get("digests"), name)
            if schedules:
                digests[str(ch)] = schedules
        enabled = "access" in data
        return cls(rules=rules, groups=groups, channels=channels, enabled=enabled, digests=digests)

    @property
    def allows_nobody(self) -> bool:
        """A policy file with an ``access`` list that names no one (``access: []``): every request is refused."""
        return self.enabled and not self.rules

    def describe(self) -> str:
        """One line for ``workload-doctor doctor``: who the rules name, the channel defaults and digests."""
        if not self.enabled:
            return "no 'access' list: every Slack user may diagnose every cluster and project"
        if self.allows_nobody:
            return (
                "allows nobody: its 'access' list names no one, so every request is refused; add a rule "
                "(deploy/policy.example.yaml)"
            )
        who = sorted({w for rule in self.rules for w in rule.who})
        everyone = "*" in who
        shown = ", ".join(who[:6]) + (f" and {len(who) - 6} more" if len(who) > 6 else "")
        text = f"{len(self.rules)} access rule(s) naming " + ("everyone (*)" if everyone else shown)
        text += f"; {len(self.channels)} channel default(s); {len(self.schedules())} scheduled digest(s)"
        return text

    def schedules(self) -> list[DigestSchedule]:
        """Every scheduled digest of every channel."""
        return [d for channel in sorted(self.digests) for d in self.digests[channel]]

    def defaults_for(self, channel: str | None) -> dict[str, str]:
        return dict(self.channels.get(channel or "", {}))

    def _rules_for(self, user: str, user_groups: set[str]) -> list[Rule]:
        out = []
        for rule in self.rules:
            for who in rule.who:
                if who == "*" or who == user or who in user_groups:
                    out.append(rule)
                    break
                if who.startswith("@") and user in self.groups.get(who[1:], frozenset()):
                    out.append(rule)
                    break
        return out

    def subteams(self) -> set[str]:
        """Slack user-group ids (S…) the policy names: their members are looked up at check time."""
        return {w for r in self.rules for w in r.who if w.startswith("S") and w[1:].isalnum()}

    def allows(
        self,
        user: str,
        *,
        clusters: set[str] | None = None,
        project: str | None = None,
        user_groups: set[str] | None = None,
        whole: bool = False,
    ) -> bool:
        """May ``user`` diagnose in a cluster known by any of ``clusters`` (names/ids) and ``project``?

        Unknown values (None / empty) do not refuse, unless ``whole``: then an unknown cluster or project means
        every one (a "not found" across a scope tells what exists there, so the asker must be allowed all of
        it). A user no rule names is always refused."""
        if not self.enabled:
            return True
        known = {c for c in (clusters or set()) if c}
        for rule in self._rules_for(user, user_groups or set()):
            cluster_ok = "*" in rule.clusters or (bool(known & rule.clusters) if known else not whole)
            project_ok = "*" in rule.projects or (project in rule.projects if project else not whole)
            if cluster_ok and project_ok:
                return True
        return False
