"""The shipped RBAC, enforced by the sandbox's Kubernetes API (issue 22 §1): a forgiving imitation hides the
requests a real API server would refuse.

:data:`RBAC_FILE` is what ``kubectl kustomize deploy/base`` renders for the product's ServiceAccount (``make
rbac`` keeps it; ``tests/sandbox/test_sandbox_rbac.py`` checks it). :class:`Rbac` answers, as the API server's
RBAC authorizer does, whether that ServiceAccount may do a request (a verb on a resource, a subresource, in a
namespace or at the cluster scope). One liberty, the only one: the per-project role (:data:`PROJECT_ROLE`) is
bound in every project namespace of the snapshot, as the install binds it in each Run:ai project's namespace
(``deploy/base/project-namespaces.yaml``); every other binding counts literally.

A request it refuses gets a real ``403 Forbidden`` ``Status`` body, worded as the API server words it
(:func:`forbidden`), so the product's gap can name the missing permission.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from starlette.responses import JSONResponse

#: The rendered RBAC of ``deploy/base`` (a YAML stream of Roles, ClusterRoles and their bindings).
RBAC_FILE = Path(__file__).with_name("rbac.yaml")
#: The product's ServiceAccount (namespace, name), the subject every request is authorized as.
SUBJECT = ("workload-doctor", "workload-doctor")
#: The ClusterRole the install binds in each project namespace.
PROJECT_ROLE = "workload-doctor-project-read"
USER = f"system:serviceaccount:{SUBJECT[0]}:{SUBJECT[1]}"


@dataclass(frozen=True)
class Attributes:
    """One request as the authorizer sees it: ``namespace`` None is the cluster scope (a cluster-scoped object,
    or a list across every namespace); ``group`` ``""`` is the core API group."""

    verb: str
    resource: str
    subresource: str = ""
    namespace: str | None = None
    name: str = ""
    group: str = ""

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def describe(self) -> str:
        """``list events in namespace default``, ``get nodes at the cluster scope``."""
        where = f"in namespace {self.namespace}" if self.namespace else "at the cluster scope"
        return f"{self.verb} {self.full_resource} {where}"


_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?(?:/(?P<rest>.*))?$"
)
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def attributes_of(method: str, path: str, query: dict[str, str]) -> Attributes | None:
    """The authorizer's view of ``method path?query`` on the Kubernetes API (None: not a resource request).

    ``/api/v1/namespaces/ns/pods/p/log`` is ``get pods/log`` in ``ns``; ``/api/v1/events`` is ``list events`` at
    the cluster scope; ``/api/v1/namespaces/ns`` is ``get namespaces`` (cluster-scoped, named ``ns``)."""
    m = _PATH.match(path.rstrip("/") or "/")
    if m is None:
        return None
    group = m.group("group") or ""
    parts = [p for p in (m.group("rest") or "").split("/") if p]
    ns = m.group("ns")
    if ns is not None and not parts:  # the namespace object itself
        parts, ns = ["namespaces", ns], None
    if not parts:
        return None
    resource, name, sub = parts[0], parts[1] if len(parts) > 1 else "", "/".join(parts[2:])
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("1", "true") else "list")
    else:
        verb = _VERBS.get(method, method.lower())
    return Attributes(verb=verb, resource=resource, subresource=sub, namespace=ns, name=name, group=group)


@dataclass(frozen=True)
class Rule:
    """One ``PolicyRule`` of a role (resource rules only)."""

    groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]
    names: frozenset[str]

    def allows(self, attrs: Attributes) -> bool:
        return (
            ("*" in self.groups or attrs.group in self.groups)
            and ("*" in self.resources or attrs.full_resource in self.resources)
            and ("*" in self.verbs or attrs.verb in self.verbs)
            and (not self.names or attrs.name in self.names)
        )

    def as_resource_rule(self) -> dict[str, Any]:
        """The rule as a ``SelfSubjectRulesReview`` lists it."""
        rule: dict[str, Any] = {
            "verbs": sorted(self.verbs),
            "apiGroups": sorted(self.groups),
            "resources": sorted(self.resources),
        }
        if self.names:
            rule["resourceNames"] = sorted(self.names)
        return rule


def _rules(role: dict[str, Any]) -> list[Rule]:
    return [
        Rule(
            groups=frozenset(r.get("apiGroups") or []),
            resources=frozenset(r.get("resources") or []),
            verbs=frozenset(r.get("verbs") or []),
            names=frozenset(r.get("resourceNames") or []),
        )
        for r in role.get("rules") or []
        if r.get("resources")
    ]


def _binds_subject(binding: dict[str, Any]) -> bool:
    return any(
        s.get("kind") == "ServiceAccount" and (s.get("namespace"), s.get("name")) == SUBJECT
        for s in binding.get("subjects") or []
    )


class Rbac:
    """What the product's ServiceAccount may do, from RBAC objects and the project namespaces of a snapshot."""

    def __init__(self, objects: Iterable[dict[str, Any]], project_namespaces: Iterable[str] = ()) -> None:
        objects = list(objects)
        cluster_roles = {o["metadata"]["name"]: _rules(o) for o in objects if o.get("kind") == "ClusterRole"}
        roles = {
            (o["metadata"].get("namespace"), o["metadata"]["name"]): _rules(o)
            for o in objects
            if o.get("kind") == "Role"
        }
        #: rules that hold everywhere (ClusterRoleBindings), and the rules of each namespace (RoleBindings)
        self.cluster: list[Rule] = []
        self.namespaced: dict[str, list[Rule]] = {}
        for o in objects:
            if o.get("kind") not in ("ClusterRoleBinding", "RoleBinding") or not _binds_subject(o):
                continue
            ref = o.get("roleRef") or {}
            if o["kind"] == "ClusterRoleBinding":
                self.cluster += cluster_roles.get(ref.get("name"), []) if ref.get("kind") == "ClusterRole" else []
                continue
            ns = o["metadata"].get("namespace")
            rules = (
                cluster_roles.get(ref.get("name"), [])
                if ref.get("kind") == "ClusterRole"
                else roles.get((ns, ref.get("name")), [])
            )
            targets = [ns]
            if ref.get("kind") == "ClusterRole" and ref.get("name") == PROJECT_ROLE:
                targets += list(project_namespaces)
            for target in targets:
                self.namespaced.setdefault(target, []).extend(rules)

    @classmethod
    def shipped(cls, project_namespaces: Iterable[str] = ()) -> Rbac:
        """The RBAC of :data:`RBAC_FILE` with the per-project role bound in ``project_namespaces``."""
        objects = [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if isinstance(d, dict)]
        return cls(objects, project_namespaces)

    def rules_in(self, namespace: str | None) -> list[Rule]:
        """Every rule that holds in ``namespace`` (None: at the cluster scope only)."""
        return self.cluster + (self.namespaced.get(namespace, []) if namespace else [])

    def allows(self, attrs: Attributes) -> bool:
        """Whether the ServiceAccount may do ``attrs``. Every authenticated identity may ask about itself
        (``selfsubjectaccessreviews``, ``selfsubjectrulesreviews``), as the API server's default role grants."""
        if (
            attrs.group == "authorization.k8s.io"
            and attrs.resource.startswith("selfsubject")
            and attrs.verb == "create"
        ):
            return True
        return any(rule.allows(attrs) for rule in self.rules_in(attrs.namespace))


def project_namespaces(snapshot: dict[str, Any]) -> set[str]:
    """The namespaces of the snapshot's Run:ai projects (``status.namespace``, else ``runai-<name>``) and of its
    workloads (a workload runs in its project's namespace)."""
    section = snapshot.get("runai")
    runai: dict[str, Any] = section if isinstance(section, dict) else {}
    out: set[str] = set()
    for project in runai.get("projects") or []:
        if not isinstance(project, dict):
            continue
        given = project.get("status")
        status: dict[str, Any] = given if isinstance(given, dict) else {}
        if status.get("namespace"):
            out.add(str(status["namespace"]))
        if project.get("name"):
            out.add(f"runai-{project['name']}")
    for entry in runai.get("workloads") or []:
        workload = entry.get("workload") if isinstance(entry, dict) else None
        if isinstance(workload, dict) and workload.get("namespace"):
            out.add(str(workload["namespace"]))
    return out


def forbidden(attrs: Attributes) -> JSONResponse:
    """The API server's ``403 Forbidden`` ``Status`` for ``attrs`` (its message names the user, the verb, the
    resource, its API group and the namespace or the cluster scope)."""
    what = f'{attrs.resource} "{attrs.name}"' if attrs.name else attrs.full_resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    message = (
        f'{what} is forbidden: User "{USER}" cannot {attrs.verb} resource "{attrs.full_resource}" '
        f'in API group "{attrs.group}" {where}'
    )
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.group:
        details["group"] = attrs.group
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }
    return JSONResponse(body, status_code=403)
