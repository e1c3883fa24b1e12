"""``true`` / ``false`` is not a number: a shared validator for the input models.

pydantic's lax mode reads ``True`` as 1 for an int field and 1.0 for a float field, so ``rollout.n=true`` or
``train_batch_size: true`` in a verl YAML would silently become a group of one. Every input model mixes in
:class:`NoBoolNumbers`: a boolean given for a number is a validation error naming the field.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator


def _is_number(annotation: Any) -> bool:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_number(a) for a in typing.get_args(annotation))
    return annotation in (int, float)


@functools.cache
def _number_fields(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(name for name, info in model.model_fields.items() if _is_number(info.annotation))


class NoBoolNumbers(BaseModel):
    """Base for input models whose int / float fields must not accept a boolean."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name in _number_fields(cls):
            raise ValueError(f"a number is expected, got {str(value).lower()}")
        return value
