"""Benchmark arguments are checked when parsed: counts, lists and limits name the value and the bound."""

from __future__ import annotations

import argparse

import pytest

from cli.args import (
    bounded_int,
    choice_list,
    int_list,
    interval,
    positive_float,
    probability,
    usage_errors,
    usage_message,
)
from cli.main import main
from mechanism.validation import FieldError


def test_bounded_ints_lists_and_positive_floats_parse_what_they_accept() -> None:
    assert bounded_int(1)("3") == 3 and int_list(1)("100, 1000") == [100, 1000] and positive_float("0.5") == 0.5
    assert [interval(0, 1, closed="lo,hi")(t) for t in ("0", "1")] == [0.0, 1.0] and probability("0.5") == 0.5
    assert choice_list(("a", "b"))("b, a") == ["b", "a"]


def test_a_field_error_is_named_by_the_flag_the_command_maps_its_field_to(capsys: pytest.CaptureFixture[str]) -> None:
    error = FieldError("capacity_fit_rows", 400, "the series has 336 rows")
    assert str(error) == "capacity_fit_rows 400: the series has 336 rows"
    assert usage_message(error) == "--capacity-fit-rows 400: the series has 336 rows"
    assert usage_message(error, {"capacity_fit_rows": "--fit-rows"}) == "--fit-rows 400: the series has 336 rows"
    assert usage_message(ValueError("plain")) == "plain"

    def body(args: argparse.Namespace) -> int:
        raise error

    assert usage_errors("capacity-fit", body, {"capacity_fit_rows": "--fit-rows"})(argparse.Namespace()) == 2
    assert capsys.readouterr().err == "sowsched capacity-fit: --fit-rows 400: the series has 336 rows\n"
    assert usage_errors("x", lambda args: 0)(argparse.Namespace()) == 0


@pytest.mark.parametrize(("parse", "text", "match"), [
    (bounded_int(1), "0", "0 is below the bound 1"),
    (bounded_int(0), "x", "'x' is not an integer"),
    (int_list(1), "100,-1", "-1 is below the bound 1"),
    (int_list(1), ",", "',' names no value"),
    (positive_float, "0", "0.0 must be positive and finite"),
    (positive_float, "inf", "inf must be positive and finite"),
    (positive_float, "soon", "'soon' is not a number"),
    (bounded_int(1, 3), "4", "4 is above the bound 3"),
    (probability, "1", "1.0 must lie strictly between 0 and 1"),
    (probability, "0", "0.0 must lie strictly between 0 and 1"),
    (probability, "half", "'half' is not a number"),
    (interval(0, 100, closed="lo,hi"), "100.5", r"100.5 must lie in \[0, 100\]"),
    (interval(0, 1, closed="lo"), "1", r"1.0 must lie in \[0, 1\)"),
    (interval(0, 1, closed="hi"), "0", r"0.0 must lie in \(0, 1\]"),
    (interval(2, float("inf"), closed="lo"), "1", "1.0 must be >= 2 and finite"),
    (choice_list(("a", "b")), "a,c", "'c' is not one of a, b"),
    (choice_list(("a", "b")), "a,a", "'a,a' names a value twice"),
    (choice_list(("a", "b")), "", r"the value is empty \(leave the option out for its default\)"),
])
def test_bad_benchmark_arguments_are_refused_naming_the_value(parse: object, text: str, match: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        parse(text)  # type: ignore[operator]


@pytest.mark.parametrize(("argv", "match"), [
    (["bench", "core", "--jobs", "-1"], "argument --jobs: -1 is below the bound 1"),
    (["bench", "solvers", "--time-limit", "-1"], "argument --time-limit: -1.0 must be positive and finite"),
    (["bench", "solvers", "--capacity", "8"], "argument --capacity: 8 is below the bound 16"),
])
def test_the_bench_command_refuses_them_before_running(argv: list[str], match: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and match in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "match"), [
    (["bench", "core", "--out", "{tmp}/missing/x.json"], "its directory {tmp}/missing does not exist"),
    (["bench", "core", "--out", "{tmp}"], "is a directory"),
    (["bench", "welfare", "--workload", "toy", "--out", "{tmp}/file.txt"], "exists and is not a directory"),
])
def test_an_out_path_that_cannot_be_written_is_refused_before_the_benchmark_runs(
        argv: list[str], match: str, tmp_path: object, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import benchmarks.core as core
    from cli.commands import welfare

    (tmp_path / "file.txt").write_text("x")  # type: ignore[operator]
    for module in (core, welfare):
        monkeypatch.setattr(module, "run", lambda args: pytest.fail("the benchmark ran"))
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    assert match.replace("{tmp}", str(tmp_path)) in capsys.readouterr().err
