"""The AddOnTemplate's variables: which exist, and a check that nothing else is written.

OCM replaces every ``{{NAME}}`` in an AddOnTemplate when it installs the agent, and an
unknown name silently with an empty string. The only variables the compiler writes are
:data:`TEMPLATE_VARIABLES`; :func:`check_template_variables` refuses anything else
between double braces, naming the ``dsf.yaml`` field it came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dsf_compile.inputs.agent_settings import TEMPLATE_VARIABLE_RE
from dsf_compile.inputs.settings import Settings
from dsf_contract import agent_cli
from dsf_contract.bounded_yaml import Pointer, format_pointer
from dsf_contract.problem import Problem

#: The variables OCM fills in; ``CLUSTER_NAME`` cannot be overridden by any config.
OCM_VARIABLES = ("CLUSTER_NAME", "HUB_KUBECONFIG", "INSTALL_NAMESPACE")
#: Our own variables, set per cluster by an AddOnDeploymentConfig's ``customizedVariables``.
#: Where no config sets them OCM writes an empty string, which the template is built to
#: read as "nothing for this cluster": each is used only where empty is harmless.
#: The per-cluster aggregations are the agent's own ``--aggregate`` variable, filled in.
AGGREGATE_VARIABLE = agent_cli.AGGREGATE.env
CA_FILE_VARIABLE = "DSF_CA_FILE"
TEMPLATE_VARIABLES = (*OCM_VARIABLES, AGGREGATE_VARIABLE, CA_FILE_VARIABLE)


def variable(name: str) -> str:
    """``{{NAME}}``: where OCM writes the variable's value."""
    return "{{" + name + "}}"


def _strings(value: Any, pointer: Pointer = ()) -> Iterator[tuple[Pointer, str]]:
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _strings(key, (*pointer, key))
            yield from _strings(child, (*pointer, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _strings(child, (*pointer, index))


def _setting_origins(settings: Settings) -> list[tuple[str, str]]:
    """(``dsf.yaml`` field, value) of every setting string that reaches the template."""
    origins = [("agent.image", settings.agent.image)]
    for part in ("requests", "limits"):
        values = getattr(settings.agent.resources, part)
        for key, value in (values.model_dump(exclude_none=True) if values else {}).items():
            origins.append((f"agent.resources.{part}.{key}", value))
    return origins


def check_template_variables(template: dict[str, Any], settings: Settings) -> list[Problem]:
    """Every ``{{…}}`` in ``template`` that OCM does not define, named by where it came from.

    A string that came from ``dsf.yaml`` is reported at that field; anything else (a bug
    of the compiler) at the template's own field path.
    """
    origins = _setting_origins(settings)
    problems: set[Problem] = set()
    for pointer, text in _strings(template):
        for match in TEMPLATE_VARIABLE_RE.finditer(text):
            if match.group(1) in TEMPLATE_VARIABLES:
                continue
            found = match.group(0)
            message = (
                f"{found} would be an OCM template variable in the AddOnTemplate; only "
                + ", ".join(variable(v) for v in TEMPLATE_VARIABLES)
                + " are allowed"
            )
            fields = [name for name, value in origins if found in value]
            if fields:
                problems.update(Problem("dsf.yaml", 0, 0, name, message) for name in fields)
            else:
                where = f"AddOnTemplate {template['metadata']['name']}: {format_pointer(pointer)}"
                problems.add(Problem("rendered/hub/addon/addontemplate.yaml", 0, 0, where, message))
    return sorted(problems)
