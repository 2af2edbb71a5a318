"""clients/errors.py: pydantic errors as one line naming the field, the value and the rule."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from mechanism.validation import validation_message


class _Box(BaseModel):
    size: int = Field(ge=1)
    name: str


def _message(data: dict, prefix: str = "") -> str:
    with pytest.raises(ValidationError) as info:
        _Box.model_validate(data)
    return validation_message(info.value, prefix)


def test_a_bound_names_the_field_the_value_and_the_bound() -> None:
    assert _message({"size": 0, "name": "a"}) == "size (value 0): Input should be greater than or equal to 1"


def test_the_prefix_leads_every_field_and_errors_join_on_one_line() -> None:
    assert _message({"size": "x"}, "box") == ("box.size (value 'x'): Input should be a valid integer, unable to "
                                              "parse string as an integer; box.name: Field required")


def test_a_container_value_is_not_repeated() -> None:
    assert _message({"size": [1, 2], "name": "a"}) == "size: Input should be a valid integer"


class _Shelf(BaseModel):
    boxes: list[_Box]


def test_list_positions_are_shown_as_indices() -> None:
    with pytest.raises(ValidationError) as info:
        _Shelf.model_validate({"boxes": [{"size": 1, "name": "a"}, {"size": 0, "name": "b"}]})
    assert validation_message(info.value) == "boxes[1].size (value 0): Input should be greater than or equal to 1"
