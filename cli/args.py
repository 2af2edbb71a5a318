"""Argument types of the command lines (benchmarks and CLI): counts and limits are checked when parsed."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping
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
        values = [item(part.strip()) for part in nonempty(text).split(",") if part.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"{text!r} names no value")
        return values
    return parse


def int_list(low: int) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated integers, each >= `low` (at least one)."""
    return comma_list(bounded_int(low))


def number(text: str) -> float:
    """A float, or an argparse usage error naming the text (what every numeric argparse type reads first)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def interval(lo: float, hi: float, closed: str = "") -> Callable[[str], float]:
    """An argparse type: a number between `lo` and `hi`, each excluded unless `closed` names it ("lo", "hi" or
    "lo,hi"); the message names the value and the interval."""
    lo_in, hi_in = "lo" in closed.split(","), "hi" in closed.split(",")
    if hi == math.inf:
        rule = "be positive" if (lo, lo_in) == (0.0, False) else f"be {'>=' if lo_in else '>'} {lo:g}"
        rule += " and finite"
    elif not (lo_in or hi_in):
        rule = f"lie strictly between {lo:g} and {hi:g}"
    else:
        rule = f"lie in {'[' if lo_in else '('}{lo:g}, {hi:g}{']' if hi_in else ')'}"

    def parse(text: str) -> float:
        value = number(text)
        if not ((lo <= value if lo_in else lo < value) and (value <= hi if hi_in else value < hi)):
            raise argparse.ArgumentTypeError(f"{value} must {rule}")
        return value
    return parse


positive_float = interval(0.0, math.inf)  # a finite number above 0
nonnegative_float = interval(0.0, math.inf, closed="lo")  # a finite number, 0 or above
probability = interval(0.0, 1.0)  # strictly between 0 and 1
unit_float = interval(0.0, 1.0, closed="lo,hi")  # a share, 0 and 1 included


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
        float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number nor 'fit'") from None
    return interval(0.0, 1.0, closed="lo")(text)


def nonempty(text: str) -> str:
    """An argparse type: a value that is not empty. An optional value's empty string (often a quoted shell variable
    that is unset) would otherwise read as the option left out."""
    if not text:
        raise argparse.ArgumentTypeError("the value is empty (leave the option out for its default)")
    return text


def choice_list(names: tuple[str, ...]) -> Callable[[str], list[str]]:
    """An argparse type: comma-separated names, each one of `names`, none twice (at least one)."""
    def item(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(names)}")
        return text

    def parse(text: str) -> list[str]:
        values = comma_list(item)(text)
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"{text!r} names a value twice")
        return values
    return parse


def usage_errors(command: str, body: Callable[[argparse.Namespace], int],
                 flags: Mapping[str, str] | None = None) -> Callable[[argparse.Namespace], int]:
    """The command lines' one usage-error wrapper: bad input (OSError, ValueError) out of `body` is one line
    `sowsched COMMAND: message` on stderr and exit 2. A FieldError names the flag `flags` maps its field to (by
    default --the-field-name), so models name their fields and only the command line knows its flags."""
    def run(args: argparse.Namespace) -> int:
        try:
            return int(body(args))
        except (OSError, ValueError) as exc:
            print(f"sowsched {command}: {usage_message(exc, flags)}", file=sys.stderr)
            return 2
    return run


def usage_message(exc: Exception, flags: Mapping[str, str] | None = None) -> str:
    """The error's message, a FieldError's field named by its flag."""
    from mechanism.validation import FieldError  # here, not at the top: a client verb's parser loads no model

    if isinstance(exc, FieldError):
        return exc.named((flags or {}).get(exc.field, "--" + exc.field.replace("_", "-")))
    return str(exc)


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
