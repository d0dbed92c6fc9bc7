"""A validated model and the document it came from: every problem points at its field."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel

from dsf_contract.bounded_yaml import Document, Pointer, format_pointer
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

M = TypeVar("M", bound=BaseModel)


@frozen
class Located(Generic[M]):
    """A validated model and the document it was read from (to point at its fields)."""

    model: M
    document: Document
    base: Pointer = ()

    def problem(self, pointer: Pointer, message: str, severity: str = "error") -> Problem:
        """A problem at ``pointer`` (relative to this model) in the model's file."""
        full = (*self.base, *pointer)
        line, column = self.document.locate(full)
        return Problem(self.document.path, line, column, format_pointer(full), message, severity)
