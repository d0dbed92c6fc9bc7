"""Rules between ``dsf.yaml`` and the other inputs that a single model cannot check."""

from __future__ import annotations

from collections.abc import Iterable

from dsf_compile.inputs.scorer import Auth, DynamicScorer
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
