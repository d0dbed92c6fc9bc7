"""The ``metadata`` of a document written in Git, checked as Kubernetes checks it.

Each kind takes :class:`ObjectMeta` as it is or narrows one field: the
DynamicScoringConfig's name is fixed, an object written for the hub names its namespace.
"""

from __future__ import annotations

from dsf_contract.fields import Annotations, DnsLabel, DnsSubdomain, Frozen, Labels


# No docstring: the JSON Schemas would carry it (schemas/ is generated from these models).
class ObjectMeta(Frozen):
    name: DnsSubdomain
    namespace: DnsLabel | None = None
    labels: Labels | None = None
    annotations: Annotations | None = None
