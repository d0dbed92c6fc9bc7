"""The inputs' wording of pydantic's validation errors: the contract's
(:mod:`dsf_contract.validation_errors`, one table for every reader), with the input
models' field names for the did-you-mean hint of an unknown field.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

from dsf_contract import validation_errors


def error_message(error: Mapping[str, Any], plain_text: str | None = None) -> str:
    """One short line for a pydantic error; ``plain_text`` is the unquoted YAML the value was."""
    return validation_errors.error_message(error, plain_text, _all_fields())


@cache
def _all_fields() -> tuple[str, ...]:
    """Every field name of every input model: the did-you-mean hints of unknown fields."""
    from dsf_compile.inputs import inventory, optimization, placements, scorer, settings

    return tuple(
        sorted(
            {
                name
                for module in (scorer, inventory, settings, placements, optimization)
                for model in vars(module).values()
                if isinstance(model, type)
                and issubclass(model, BaseModel)
                and model is not BaseModel
                for name in model.model_fields
            }
        )
    )
