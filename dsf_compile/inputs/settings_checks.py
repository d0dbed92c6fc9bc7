"""Rules between ``dsf.yaml`` and the other inputs that a single model cannot check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dsf_compile.inputs.agent_settings import ResourceList, Resources
from dsf_compile.inputs.quantity import parse_quantity
from dsf_compile.inputs.scorer import Auth, DynamicScorer
from dsf_compile.inputs.selectors import selects_cluster
from dsf_compile.inputs.settings import Settings
from dsf_contract.bounded_yaml import Document, Pointer, format_pointer
from dsf_contract.problem import Problem


def scorer_secret_names(scorers: Iterable[DynamicScorer]) -> set[str]:
    """Every Secret a scorer's ``source.auth`` or ``scoring.auth`` names."""
    names: set[str] = set()
    for scorer in scorers:
        for part in (scorer.spec.source, scorer.spec.scoring):
            auth: Auth | None = part.auth if part is not None else None
            if auth is not None:
                names.add(auth.tokenSecretRef.name)
    return names


def check_external_secrets(
    settings: Settings, document: Document | None, scorers: Iterable[DynamicScorer]
) -> list[Problem]:
    """Every Secret the fleet uses has a remote key, and every remote key names such a Secret."""
    external = settings.externalSecrets
    if external is None:
        return []

    def problem(pointer: Pointer, message: str) -> Problem:
        if document is None:
            return Problem("dsf.yaml", 0, 0, format_pointer(pointer), message)
        return document.problem(pointer, message)

    used = scorer_secret_names(scorers)
    pulls = set(settings.agent.imagePullSecrets)
    problems = []
    for name in sorted((used | pulls) - set(external.secrets)):
        why = "agent.imagePullSecrets names it" if name in pulls else "a scorer's auth names it"
        problems.append(
            problem(
                ("externalSecrets", "secrets"),
                f"no remote key for Secret {name!r} ({why}); add secrets.{name}.remoteKey",
            )
        )
    for name in sorted(set(external.secrets) - used - pulls):
        problems.append(
            problem(
                ("externalSecrets", "secrets", name),
                "no scorer's auth and no agent.imagePullSecrets names this Secret (a typo?)",
            )
        )
    return problems


# ------------------------------------------------------------ agent resources

#: Where a resource amount was set last: ``("agent", "resources", …)`` or an override's.
_Source = tuple[str | int, ...]
_PARTS = ("requests", "limits")


def _apply_resources(
    effective: dict[tuple[str, str], tuple[str, _Source]],
    resources: Resources | None,
    base: _Source,
) -> None:
    """Merge ``resources`` key by key over ``effective`` (part, resource) → (amount, where)."""
    if resources is None:
        return
    for part in _PARTS:
        values: ResourceList | None = getattr(resources, part)
        for name, amount in (values.model_dump(exclude_none=True) if values else {}).items():
            effective[(part, name)] = (amount, (*base, "resources", part, name))


def _over_limit(
    effective: dict[tuple[str, str], tuple[str, _Source]],
) -> list[tuple[_Source, str, str, str]]:
    """``(where, resource, request, limit)`` of every request above its limit."""
    found = []
    for (part, name), (request, request_at) in sorted(effective.items()):
        if part != "requests" or ("limits", name) not in effective:
            continue
        limit, limit_at = effective[("limits", name)]
        if parse_quantity(request).value > parse_quantity(limit).value:
            # located where the later of the two was set: that setting made them conflict
            where = max(request_at, limit_at, key=lambda at: (at[:2] == ("agent", "overrides"), at))
            found.append((where, name, request, limit))
    return found


def check_agent_resources(
    settings: Settings,
    document: Document | None,
    clusters: Iterable[tuple[str, Mapping[str, str]]],
) -> list[Problem]:
    """Requests above limits, as Kubernetes compares them: the fleet's, and each cluster's
    after the overrides that select it merge in (Kubernetes refuses such a Deployment)."""
    fleet: dict[tuple[str, str], tuple[str, _Source]] = {}
    _apply_resources(fleet, settings.agent.resources, ("agent",))
    fleet_wide = _over_limit(fleet)
    found: dict[tuple[_Source, str, str, str], list[str]] = {key: [] for key in fleet_wide}
    overrides = [
        (index, o) for index, o in enumerate(settings.agent.overrides) if o.resources is not None
    ]
    for name, labels in clusters if overrides else ():
        effective = dict(fleet)
        for index, override in overrides:
            if selects_cluster(override, name, labels):
                _apply_resources(effective, override.resources, ("agent", "overrides", index))
        for key in _over_limit(effective):
            if key not in fleet_wide:  # the fleet's own conflict is reported once, as such
                found.setdefault(key, []).append(name)
    return [_resource_problem(document, key, names) for key, names in found.items()]


def _resource_problem(
    document: Document | None, key: tuple[_Source, str, str, str], clusters: list[str]
) -> Problem:
    where, name, request, limit = key
    on = ""
    if clusters:
        more = f" and {len(clusters) - 3} more" if len(clusters) > 3 else ""
        on = f" on {', '.join(clusters[:3])}{more} (after the overrides that select it)"
    message = (
        f"the agent would request {request} of {name} over its limit of {limit}{on}: "
        "Kubernetes refuses a container whose request is above its limit, so the agent "
        "would not be deployed there"
    )
    if document is None:
        return Problem("dsf.yaml", 0, 0, format_pointer(where), message)
    return document.problem(where, message)


def check_resolve_entries(document: Document) -> list[Problem]:
    """``sync.resolve``: what ``sync`` would refuse, said by ``validate`` at its line.

    Read from the document, so that it is checked even when another setting is wrong;
    an entry that is not a string to a string is the model's to report.
    """
    sync = document.data.get("sync") if isinstance(document.data, dict) else None
    entries = sync.get("resolve") if isinstance(sync, dict) else None
    if not isinstance(entries, dict):
        return []
    # loaded only for a dsf.yaml that maps addresses: its patterns cost every validate
    from dsf_transport.connect_to import parse_resolve_entry

    problems = []
    targets: dict[tuple[str, int], tuple[str, int]] = {}
    for key in sorted(entries):
        value = entries[key]
        if not isinstance(value, str):
            continue
        pointer: Pointer = ("sync", "resolve", key)
        try:
            address, target = parse_resolve_entry(key, value)
        except ValueError as err:
            problems.append(document.problem(pointer, str(err)))
            continue
        if targets.setdefault(address, target) != target:
            message = f"{address[0]}:{address[1]} is mapped twice to different addresses"
            problems.append(document.problem(pointer, message))
    return problems
