"""`sowsched bench TARGET` refuses a bad option when it parses it (exit 2, naming the option, the value and the
bound), before anything runs."""

from __future__ import annotations

import re

import pytest

from cli.main import main


@pytest.mark.parametrize(("argv", "message"), [
    (["cli", "--runs", "0"], "argument --runs: 0 is below the bound 1"),
    (["grpc", "--clients", "1,0"], "argument --clients: 0 is below the bound 1"),
    (["grpc", "--active", "-1"], "argument --active: -1 is below the bound 0"),
    (["grpc", "--echo-seconds", "nan"], "argument --echo-seconds: nan must be positive and finite"),
    (["grpc", "--samples", "0"], "argument --samples: 0 is below the bound 1"),
    (["history", "--seed", "-1"], "argument --seed: -1 is below the bound 0"),
    (["capacity", "--quantile", "1"], "argument --quantile: 1.0 must lie strictly between 0 and 1"),
    (["capacity", "--quantile", "best"], "argument --quantile: 'best' is neither a number nor 'fit'"),
    (["cuc", "--p", "2"], "argument --p: 2.0 must lie strictly between 0 and 1"),
    (["cuc", "--repeats", "0"], "argument --repeats: 0 is below the bound 1"),
    (["cuc", "--max-share", "0"], "argument --max-share: 0.0 must lie strictly between 0 and 1"),
    (["cuc_bound", "--every", "0"], "argument --every: 0 is below the bound 1"),
    (["cuc_bound", "--time-limit", "-1"], "argument --time-limit: -1.0 must be positive and finite"),
    (["cuc_jobs", "--hours", "-1"], "argument --hours: -1 is below the bound 1"),
    (["cuc_jobs", "--train-hours", "0"], "argument --train-hours: 0 is below the bound 1"),
    (["cuc_jobs", "--shares", "0.05,2"], "argument --shares: 2.0 must lie in \\(0, 1\\]"),
    (["cuc_jobs", "--demand-multiples", "5,0"], "argument --demand-multiples: 0.0 must be > 0"),
    (["cuc_bound", "--demand-multiple", "0"], "argument --demand-multiple: 0.0 must be positive and finite"),
    (["cuc_jobs", "--shares", "0.05,x"], "argument --shares: 'x' is not a number"),
    (["forecast", "--vms", "0"], "argument --vms: 0 is below the bound 1"),
    (["forecast", "--window-minutes", "7"], "argument --window-minutes: 7 is not a multiple of 5"),
    (["planning", "--cases", "cospis:0"], "argument --cases: entry 'cospis:0' is not method:jobs"),
    (["planning", "--alpha", "2"], "argument --alpha: 2.0 must lie strictly between 0 and 1"),
    (["planning", "--workers", "0"], "argument --workers: 0 is below the bound 1"),
])
def test_a_bad_option_is_a_usage_error_that_names_it(argv: list[str], message: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match=r"^2$"):
        main(["bench", *argv])
    assert re.search(message, capsys.readouterr().err)


def test_too_few_hours_for_the_split_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "cuc_jobs", "--hours", "200", "--vm-types", "t1str"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "with --hours 200 --train-hours 144: the series has 200 hours; the split needs at least 336" in err
