"""One-line messages for pydantic validation errors: each names the field, the value given and the rule it breaks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError


def number(v: Any) -> Any:
    """A number field's input as given, refusing true/false and text, which pydantic's lax mode would read as 1, 0
    and the number written (a JSON or TOML file saying `true` or "3" is a mistake, not a count)."""
    if isinstance(v, (bool, str)):
        raise ValueError(f"{v!r} is {'a boolean' if isinstance(v, bool) else 'text'}, not a number")
    return v


def error_rule(err: Mapping[str, object]) -> str:
    """One pydantic error's rule as the validator wrote it: without the "Value error, " pydantic puts before a
    ValueError raised in a (field or model) validator."""
    return str(err["msg"]).removeprefix("Value error, ")


def field_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """A pydantic error's location as every message names a field: `prefix.field[i].field`."""
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in (prefix, *loc) if x != "").removeprefix(".")


def validation_message(exc: ValidationError, prefix: str = "") -> str:
    """`prefix.field[i].field (value v): rule` per error, joined by "; " (no URLs, no line breaks)."""
    parts = []
    for err in exc.errors():
        loc = field_path(err["loc"], prefix)
        value = err.get("input")
        shown = f" (value {value!r})" if value is None or isinstance(value, (bool, int, float, str)) else ""
        if err["type"] == "missing":
            shown = ""
        parts.append(f"{loc}{shown}: {error_rule(err)}" if loc else error_rule(err))
    return "; ".join(parts)


class FieldError(ValueError):
    """A value refused by a model: it names the field, the value and the bound. Front ends name the field their own
    way (the command line by its flag: cli/args.usage_message)."""

    def __init__(self, field: str, value: object, bound: str) -> None:
        self.field, self.value, self.bound = field, value, bound
        super().__init__(self.named(field))

    def named(self, name: str) -> str:
        """The message with the field called `name`."""
        return f"{name} {self.value}: {self.bound}"
