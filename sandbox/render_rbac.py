"""Keep the RBAC objects of a rendered kustomization (stdin) and print them as one YAML stream (``make rbac``).

The sandbox enforces exactly these (``sandbox/rbac.yaml``); ``tests/sandbox/test_sandbox_rbac.py`` renders
``deploy/base`` with ``kubectl kustomize`` and checks that the kept file is what this script makes of it.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
HEADER = "# Rendered from deploy/base by `make rbac`: do not edit (the sandbox enforces it).\n"


def rbac_objects(rendered: str) -> list[dict[str, Any]]:
    """The RBAC objects of a multi-document YAML text, in a stable order (kind, namespace, name)."""
    docs = [d for d in yaml.safe_load_all(rendered) if isinstance(d, dict) and d.get("kind") in RBAC_KINDS]
    return sorted(docs, key=lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]))


def render(rendered: str) -> str:
    """The text of ``sandbox/rbac.yaml`` for a rendered kustomization."""
    return HEADER + yaml.safe_dump_all(rbac_objects(rendered), sort_keys=True)


if __name__ == "__main__":
    sys.stdout.write(render(sys.stdin.read()))
