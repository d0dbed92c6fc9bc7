"""Kubernetes RBAC as the API server applies it, for the emulated APIs of the tests.

The managed cluster's API authorizes the agent's service account against the Role and
RoleBinding of the rendered AddOnTemplate; the hub authorizes the agent's hub identity
against the rendered ClusterRole, bound in the cluster's namespace only, as OCM's addon
framework binds a ``hubPermissions`` entry of type ``CurrentCluster``
(open-cluster-management-io/ocm ``pkg/addon/templateagent/registration.go``).

Request attributes follow the API server's ``RequestInfoFactory``
(k8s.io/apiserver ``pkg/endpoints/request/requestinfo.go``): a GET without a name is
``list``, or ``watch`` with ``watch=true``; a list or watch whose field selector requires
``metadata.name`` to equal one name is authorized as a request for that name, so a rule
with ``resourceNames`` allows it; ``resource/subresource`` is matched as one string.
Rules follow ``k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update"}
_VERBS |= {"PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class Identity:
    """Who a bearer token authenticates as."""

    user: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do, in RBAC's terms."""

    verb: str
    api_group: str
    resource: str
    subresource: str
    name: str
    namespace: str

    def describe(self, who: Identity) -> str:
        """The API server's 403 message."""
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        where = f' in the namespace "{self.namespace}"' if self.namespace else ""
        return (
            f'{what} "{self.name}" is forbidden: User "{who.user}" cannot {self.verb} '
            f'resource "{what}" in API group "{self.api_group}"{where}'
        )


def _exact_name(field_selector: str) -> str:
    """The name a field selector requires ``metadata.name`` to equal, or ``""``."""
    for term in field_selector.split(","):
        key, equals, value = term.partition("==") if "==" in term else term.partition("=")
        if equals and not key.endswith("!") and key.strip() == "metadata.name":
            return value.strip()
    return ""


def request_attributes(method: str, path: str, query: Mapping[str, list[str]]) -> Attributes | None:
    """The attributes of a resource request; ``None`` for anything else (``/version``...)."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    verb = _VERBS.get(method, "")
    if not name and verb == "get":
        watch = query.get("watch", ["false"])[0].lower() not in ("false", "0")
        verb = "watch" if watch else "list"
        name = _exact_name(query.get("fieldSelector", [""])[0])
    elif not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, group, resource, subresource, name, namespace)


def rule_allows(rule: Mapping[str, Any], request: Attributes) -> bool:
    """Whether one PolicyRule allows ``request``."""
    verbs, groups = rule.get("verbs") or [], rule.get("apiGroups") or []
    resources, names = rule.get("resources") or [], rule.get("resourceNames") or []
    combined = (
        f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    )
    return (
        ("*" in verbs or request.verb in verbs)
        and ("*" in groups or request.api_group in groups)
        and (
            "*" in resources
            or combined in resources
            or (bool(request.subresource) and f"*/{request.subresource}" in resources)
        )
        and (not names or request.name in names)
    )


@dataclass(frozen=True)
class Grant:
    """The rules of one binding: in its namespace (RoleBinding) or everywhere ("")."""

    namespace: str
    subjects: tuple[Mapping[str, Any], ...]
    rules: tuple[Mapping[str, Any], ...]

    def applies_to(self, who: Identity) -> bool:
        for subject in self.subjects:
            kind, name = subject.get("kind"), subject.get("name")
            if kind == "User" and name == who.user:
                return True
            if kind == "Group" and name in who.groups:
                return True
            if kind == "ServiceAccount":
                namespace = subject.get("namespace") or self.namespace
                if who.user == f"system:serviceaccount:{namespace}:{name}":
                    return True
        return False


class Rbac:
    """An authorizer over bindings: a request is allowed when one rule of one binding that
    applies to the caller (and, for a RoleBinding, to the request's namespace) allows it."""

    def __init__(self, grants: Iterable[Grant]) -> None:
        self.grants = tuple(grants)

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> Rbac:
        """Resolve the RoleBindings and ClusterRoleBindings of ``objects`` to their roles."""
        objects = list(objects)
        roles = {
            (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in objects
            if o.get("kind") in ("Role", "ClusterRole")
        }
        grants = []
        for binding in objects:
            if binding.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            namespace = (
                binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
            )
            ref = binding["roleRef"]
            role = roles.get((ref["kind"], namespace if ref["kind"] == "Role" else "", ref["name"]))
            if role is not None:  # a binding to a missing role grants nothing
                grants.append(
                    Grant(namespace, tuple(binding.get("subjects") or ()), tuple(role["rules"]))
                )
        return cls(grants)

    def allows(self, who: Identity, request: Attributes) -> bool:
        return any(
            grant.applies_to(who)
            and (not grant.namespace or grant.namespace == request.namespace)
            and any(rule_allows(rule, request) for rule in grant.rules)
            for grant in self.grants
        )


# ------------------------------------------------- the rendered RBAC, as OCM applies it


def service_account(namespace: str, name: str) -> Identity:
    """The identity of a service account's token."""
    return Identity(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


def addon_agent(cluster: str, addon: str) -> Identity:
    """The hub identity OCM registers for an addon's agent (``agent.DefaultUser`` and
    ``agent.DefaultGroups`` of the addon framework; the template agent is named
    ``<addon>-agent``)."""
    return Identity(
        f"system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:{addon}-agent",
        (
            f"system:open-cluster-management:cluster:{cluster}:addon:{addon}",
            f"system:open-cluster-management:addon:{addon}",
            "system:authenticated",
        ),
    )


def addon_template(rendered: Path) -> dict[str, Any]:
    template: dict[str, Any] = yaml.safe_load(
        (rendered / "hub" / "addon" / "addontemplate.yaml").read_text(encoding="utf-8")
    )
    return template


def managed_cluster_rbac(template: Mapping[str, Any]) -> Rbac:
    """The managed cluster's RBAC: the Roles and bindings the AddOnTemplate installs."""
    return Rbac.from_objects(template["spec"]["agentSpec"]["workload"]["manifests"])


def rendered_cluster_roles(rendered: Path) -> list[dict[str, Any]]:
    """The ClusterRoles ``rendered/hub/`` applies to the hub."""
    return [
        document
        for path in sorted((rendered / "hub").rglob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if isinstance(document, dict) and document.get("kind") == "ClusterRole"
    ]


def hub_rbac(
    template: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]], cluster: str
) -> Rbac:
    """The hub's RBAC for the agent of ``cluster``: each ``CurrentCluster`` hub permission
    bound by a RoleBinding in the cluster's namespace to the agent's hub identity, as
    ``createPermissionBinding`` does."""
    addon = template["spec"]["addonName"]
    who = addon_agent(cluster, addon)
    subjects = [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": who.user}]
    subjects += [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": group}
        for group in who.groups[:2]
    ]
    bindings = [
        {
            "kind": "RoleBinding",
            "metadata": {
                "name": f"open-cluster-management:{addon}:clusterrole:agent",
                "namespace": cluster,
            },
            "roleRef": {
                "kind": "ClusterRole",
                "name": permission["currentCluster"]["clusterRoleName"],
            },
            "subjects": subjects,
        }
        for registration in template["spec"].get("registration", [])
        if registration.get("type") == "KubeClient"
        for permission in registration["kubeClient"].get("hubPermissions", [])
        if permission.get("type") == "CurrentCluster"
    ]
    return Rbac.from_objects([*cluster_roles, *bindings])
