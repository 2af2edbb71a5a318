"""Argument types of the command lines (benchmarks and CLI): counts and limits are checked when parsed."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class BenchInputError(ValueError):
    """Bad input to a benchmark found before it runs (an unreadable or mismatched file): one line on stderr, exit 2."""


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer >= `low` (and <= `high` when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below the bound {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{value} is above the bound {high}")
        return value
    return parse


def comma_list(item: Callable[[str], T]) -> Callable[[str], list[T]]:
    """An argparse type: comma-separated values, each read by the argparse type `item` (at least one)."""
    def parse(text: str) -> list[T]:
        values = [item(part.strip()) for part in text.split(",") if part.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"{text!r} names no value")
        return values
    return parse


def int_list(low: int) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated integers, each >= `low` (at least one)."""
    return comma_list(bounded_int(low))


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0."""
    value = number(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{value} must be positive and finite")
    return value


def nonnegative_float(text: str) -> float:
    """An argparse type: a finite number, 0 or above."""
    value = number(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{value} must be >= 0 and finite")
    return value


def number(text: str) -> float:
    """A float, or an argparse usage error naming the text (what every numeric argparse type reads first)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    value = number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value} must lie strictly between 0 and 1")
    return value


def quantile_or_fit(text: str) -> float | str:
    """An argparse type: a capacity quantile strictly between 0 and 1, or 'fit'."""
    if text == "fit":
        return text
    try:
        float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number nor 'fit'") from None
    return probability(text)


def level_weight(text: str) -> float | str:
    """An argparse type: a capacity level weight lam in [0, 1), or 'fit'."""
    if text == "fit":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number nor 'fit'") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{value} must lie in [0, 1)")
    return value


def nonempty(text: str) -> str:
    """An argparse type: a value that is not empty. An optional value's empty string (often a quoted shell variable
    that is unset) would otherwise read as the option left out."""
    if not text:
        raise argparse.ArgumentTypeError("the value is empty (leave the option out for its default)")
    return text


def output_format(text: str) -> bool:
    """`-o text|json` as the `json` flag the commands read."""
    if text not in ("text", "json"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an output format (text, json)")
    return text == "json"


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """`-o/--output text|json` and its short form `--json`: one JSON document on stdout, everything else on stderr."""
    p.add_argument("-o", "--output", dest="json", type=output_format, default=False, metavar="{text,json}",
                   help="output format (default text; json: exactly one JSON document on stdout)")
    p.add_argument("--json", dest="json", action="store_true", help="the same as -o json")
