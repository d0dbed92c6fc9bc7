"""Models of the third-party kinds dsf renders whose CRDs are not available offline.

Each is a JSON Schema of the fields the project's documentation lists (External Secrets
``ExternalSecret`` v1beta1, Prometheus Operator ``PrometheusRule`` v1), closed with
``additionalProperties: false`` so that a misspelt or misplaced field fails, as the API
server's pruning would otherwise hide it.
"""

from __future__ import annotations

from typing import Any

import jsonschema


def _obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_STR = {"type": "string"}
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_DNS = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"}
_METADATA = _obj(
    {"name": _DNS, "namespace": _DNS, "labels": _STR_MAP, "annotations": _STR_MAP},
    ("name", "namespace"),
)
_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}

_REMOTE_REF = _obj(
    {
        "key": {"type": "string", "minLength": 1},
        "property": _STR,
        "version": _STR,
        "metadataPolicy": {"enum": ["None", "Fetch"]},
        "conversionStrategy": {"enum": ["Default", "Unicode"]},
        "decodingStrategy": {"enum": ["Auto", "Base64", "Base64URL", "None"]},
    },
    ("key",),
)
_STORE_REF = _obj(
    {"name": _DNS, "kind": {"enum": ["SecretStore", "ClusterSecretStore"]}}, ("name",)
)

EXTERNAL_SECRET = _obj(
    {
        "apiVersion": {"const": "external-secrets.io/v1beta1"},
        "kind": {"const": "ExternalSecret"},
        "metadata": _METADATA,
        "spec": _obj(
            {
                "secretStoreRef": _STORE_REF,
                "refreshInterval": _DURATION,
                "target": _obj(
                    {
                        "name": _DNS,
                        "creationPolicy": {"enum": ["Owner", "Orphan", "Merge", "None"]},
                        "deletionPolicy": {"enum": ["Delete", "Merge", "Retain"]},
                        "immutable": {"type": "boolean"},
                        "template": _obj(
                            {
                                "type": _STR,
                                "engineVersion": {"enum": ["v1", "v2"]},
                                "mergePolicy": {"enum": ["Replace", "Merge"]},
                                "metadata": _obj({"labels": _STR_MAP, "annotations": _STR_MAP}),
                                "data": _STR_MAP,
                            }
                        ),
                    }
                ),
                "data": {
                    "type": "array",
                    "items": _obj(
                        {"secretKey": {"type": "string", "minLength": 1}, "remoteRef": _REMOTE_REF},
                        ("secretKey", "remoteRef"),
                    ),
                },
                "dataFrom": {
                    "type": "array",
                    "items": _obj(
                        {
                            "extract": _REMOTE_REF,
                            "find": _obj(
                                {"path": _STR, "name": _obj({"regexp": _STR}), "tags": _STR_MAP}
                            ),
                        }
                    ),
                },
            },
            ("secretStoreRef", "target"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)

_RULE = {
    "type": "object",
    "properties": {
        "record": {"type": "string", "pattern": r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"},
        "alert": {"type": "string", "minLength": 1},
        "expr": {"type": "string", "minLength": 1},
        "for": _DURATION,
        "keep_firing_for": _DURATION,
        "labels": _STR_MAP,
        "annotations": _STR_MAP,
    },
    "required": ["expr"],
    "additionalProperties": False,
    # exactly one of record and alert; a recording rule has no for/annotations
    "oneOf": [
        {
            "required": ["record"],
            "not": {
                "anyOf": [
                    {"required": ["alert"]},
                    {"required": ["for"]},
                    {"required": ["annotations"]},
                ]
            },
        },
        {"required": ["alert"], "not": {"required": ["record"]}},
    ],
}

PROMETHEUS_RULE = _obj(
    {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": _obj(
            {
                "groups": {
                    "type": "array",
                    "minItems": 1,
                    "items": _obj(
                        {
                            "name": {"type": "string", "minLength": 1},
                            "interval": _DURATION,
                            "query_offset": _DURATION,
                            "limit": {"type": "integer"},
                            "partial_response_strategy": _STR,
                            "labels": _STR_MAP,
                            "rules": {"type": "array", "minItems": 1, "items": _RULE},
                        },
                        ("name", "rules"),
                    ),
                }
            },
            ("groups",),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)

MODELS = {
    ("external-secrets.io/v1beta1", "ExternalSecret"): EXTERNAL_SECRET,
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE,
}


def model_errors(obj: dict[str, Any]) -> list[str]:
    """What is wrong with ``obj`` against its model ([] when it conforms)."""
    schema = MODELS[(obj["apiVersion"], obj["kind"])]
    validator = jsonschema.Draft202012Validator(schema)
    return sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    )
