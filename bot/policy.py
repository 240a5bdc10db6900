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
      C0123456789: {cluster: dgx-prod, project: nlp}   # or cluster_id: <uuid>

Without a file everyone may diagnose everything (logged at startup). A check with a value still
unknown (the cluster before the core resolved it) passes that dimension; the bot checks again
against the report's identity before showing anything, with the same refusal either way, so a
refusal never tells whether the workload exists.
"""

from __future__ import annotations

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


@dataclass
class Policy:
    rules: list[Rule] = field(default_factory=list)
    groups: dict[str, frozenset[str]] = field(default_factory=dict)
    channels: dict[str, dict[str, str]] = field(default_factory=dict)
    enabled: bool = False

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
        for ch, defaults in (data.get("channels") or {}).items():
            if not isinstance(defaults, dict):
                raise SettingsError(f"{name}: channels.{ch} must be a mapping")
            channels[str(ch)] = {
                k: str(v) for k, v in defaults.items() if k in ("cluster", "cluster_id", "project")
            }
        enabled = "access" in data
        return cls(rules=rules, groups=groups, channels=channels, enabled=enabled)

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
    ) -> bool:
        """May ``user`` diagnose in a cluster known by any of ``clusters`` (names/ids) and ``project``?

        Unknown values (None / empty) do not refuse; a user no rule names is always refused."""
        if not self.enabled:
            return True
        known = {c for c in (clusters or set()) if c}
        for rule in self._rules_for(user, user_groups or set()):
            cluster_ok = not known or "*" in rule.clusters or bool(known & rule.clusters)
            project_ok = not project or "*" in rule.projects or project in rule.projects
            if cluster_ok and project_ok:
                return True
        return False
