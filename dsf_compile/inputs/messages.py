"""What the inputs add to the one wording of pydantic's errors
(:mod:`dsf_contract.validation_errors`): the input models' field names, which an unknown
field is compared with for a did-you-mean hint.
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel


@cache
def input_field_names() -> tuple[str, ...]:
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
