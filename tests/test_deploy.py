"""The deployment manifests keep the bot read-only: RBAC grants only get/list/watch."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
READ_VERBS = {"get", "list", "watch"}


def _docs() -> list[dict[str, object]]:
    docs: list[dict[str, object]] = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return docs


def test_rbac_rules_are_read_only() -> None:
    roles = [d for d in _docs() if d.get("kind") in {"ClusterRole", "Role"}]
    assert roles, "deploy/ declares the RBAC the bot runs with"
    for role in roles:
        for rule in role.get("rules") or []:  # type: ignore[attr-defined]
            verbs = set(rule.get("verbs") or [])
            assert verbs <= READ_VERBS, f"{role['metadata']}: {verbs - READ_VERBS}"
            assert "secrets" not in (rule.get("resources") or []), "the bot never reads Secrets"


def test_rbac_covers_tier2_reads() -> None:
    resources = {
        r
        for d in _docs()
        if d.get("kind") in {"ClusterRole", "Role"}
        for rule in d.get("rules") or []
        for r in rule.get("resources") or []  # type: ignore[attr-defined]
    }
    assert {"pods", "pods/log", "events", "nodes"} <= resources
