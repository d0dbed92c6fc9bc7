"""The emulated APIs' RBAC decides as the API server does (the judge of test_agent_rbac)."""

from __future__ import annotations

from tests.agent.kube_rbac import Attributes, Rbac, request_attributes, service_account

CM_PATH = "/api/v1/namespaces/ns/configmaps"
SCORES = "/apis/cluster.open-cluster-management.io/v1alpha1/namespaces/c1/addonplacementscores"


def attributes(method: str, path: str, **query: str) -> Attributes:
    found = request_attributes(method, path, {k: [v] for k, v in query.items()})
    assert found is not None
    return found


def test_requests_map_to_verbs_resources_and_names() -> None:
    assert attributes("GET", CM_PATH) == Attributes("list", "", "configmaps", "", "", "ns")
    assert attributes("GET", CM_PATH, watch="true").verb == "watch"
    assert attributes("GET", CM_PATH, watch="false").verb == "list"
    # a single-name field selector makes the list or watch a request for that name
    assert attributes("GET", CM_PATH, fieldSelector="metadata.name=cfg").name == "cfg"
    assert attributes("GET", CM_PATH, fieldSelector="metadata.name==cfg").name == "cfg"
    assert attributes("GET", CM_PATH, fieldSelector="metadata.name!=cfg").name == ""
    assert attributes("GET", f"{CM_PATH}/cfg").verb == "get"
    assert attributes("PUT", f"{SCORES}/s1/status") == Attributes(
        "update", "cluster.open-cluster-management.io", "addonplacementscores", "status", "s1", "c1"
    )
    assert attributes("POST", SCORES).verb == "create"
    assert attributes("DELETE", SCORES).verb == "deletecollection"
    assert request_attributes("GET", "/version", {}) is None


def role_binding(namespace: str, rules: list[dict[str, object]]) -> Rbac:
    return Rbac.from_objects(
        [
            {"kind": "Role", "metadata": {"name": "r", "namespace": namespace}, "rules": rules},
            {
                "kind": "RoleBinding",
                "metadata": {"name": "b", "namespace": namespace},
                "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "agent"}],
            },
        ]
    )


def test_resource_names_need_a_single_name_selector_on_list_and_watch() -> None:
    rbac = role_binding(
        "ns",
        [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg"], "verbs": ["list", "watch"]}],
    )  # fmt: skip
    agent = service_account("ns", "agent")
    assert rbac.allows(agent, attributes("GET", CM_PATH, fieldSelector="metadata.name=cfg"))
    assert rbac.allows(
        agent, attributes("GET", CM_PATH, watch="1", fieldSelector="metadata.name=cfg")
    )
    assert not rbac.allows(agent, attributes("GET", CM_PATH))  # every ConfigMap: no
    assert not rbac.allows(agent, attributes("GET", CM_PATH, fieldSelector="metadata.name=other"))
    assert not rbac.allows(agent, attributes("GET", f"{CM_PATH}/cfg"))  # get is not granted
    # another namespace, another service account
    assert not rbac.allows(
        agent,
        attributes("GET", "/api/v1/namespaces/x/configmaps", fieldSelector="metadata.name=cfg"),
    )
    assert not rbac.allows(
        service_account("ns", "other"),
        attributes("GET", CM_PATH, fieldSelector="metadata.name=cfg"),
    )


def test_a_subresource_is_its_own_resource() -> None:
    group = "cluster.open-cluster-management.io"
    rbac = role_binding(
        "c1",
        [{"apiGroups": [group], "resources": ["addonplacementscores/status"], "verbs": ["update"]}],
    )
    agent = service_account("c1", "agent")
    assert rbac.allows(agent, attributes("PUT", f"{SCORES}/s1/status"))
    assert not rbac.allows(agent, attributes("PUT", f"{SCORES}/s1"))
    assert not rbac.allows(agent, attributes("PATCH", f"{SCORES}/s1/status"))
