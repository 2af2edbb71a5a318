"""One-line messages for pydantic validation errors: each names the field, the value given and the rule it breaks."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


def number(v: Any) -> Any:
    """A number field's input as given, refusing true/false and text, which pydantic's lax mode would read as 1, 0
    and the number written (a JSON or TOML file saying `true` or "3" is a mistake, not a count)."""
    if isinstance(v, (bool, str)):
        raise ValueError(f"{v!r} is {'a boolean' if isinstance(v, bool) else 'text'}, not a number")
    return v


def validation_message(exc: ValidationError, prefix: str = "") -> str:
    """`prefix.field[i].field (value v): rule` per error, joined by "; " (no URLs, no line breaks)."""
    parts = []
    for err in exc.errors():
        loc = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in (prefix, *err["loc"]) if x != "")
        loc = loc.removeprefix(".")
        rule = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        shown = f" (value {value!r})" if value is None or isinstance(value, (bool, int, float, str)) else ""
        if err["type"] == "missing":
            shown = ""
        parts.append(f"{loc}{shown}: {rule}" if loc else rule)
    return "; ".join(parts)
