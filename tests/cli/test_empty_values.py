"""An option's empty value (often a quoted shell variable that is unset) is a usage error that names the option, not
the option left out: `--events ""` must not run the simulation without writing the events."""

from __future__ import annotations

import pytest

from cli.main import main

EMPTY = [
    ["simulate", "--workload", "toy", "--events"], ["simulate", "--workload", "toy", "--write-workload"],
    ["simulate", "--workload", "toy", "--capacity-series"], ["simulate", "--workload-file"],
    ["simulate", "--workload", "toy", "--server"], ["calibrate", "--workload-file"],
    ["calibrate", "--capacity-series"], ["hpc-study", "--trace", "t.swf", "--schedulers"],
    ["forecast", "evaluate", "--series", "m.csv", "--all", "--model", "ar1", "--cutoff", "0.01", "--average"],
    ["forecast", "compare", "--series", "m.csv", "--all", "--out"], ["cuc-study", "--vm-types"],
    ["cuc-study", "--p-levels"], ["capacity-plan", "--workload-file"], ["capacity-plan", "--write-example"],
    ["capacity-study", "--out"], ["predict", "sows", "--trace", "t.swf", "--out"],
    ["predict", "tradeoff", "--trace", "t.swf", "--plot"], ["serve", "--config", "p.toml", "--store"],
    ["serve", "--config", "p.toml", "--store", "s.db", "--metrics-listen"], ["backup", "--store", "s.db", "--out"],
    ["state-digest", "--store"], ["bench", "welfare", "--workload", "toy", "--workload-file"],
    ["bench", "welfare", "--workload", "toy", "--address"], ["bench", "cuc_jobs", "--vm-types"],
    ["bench", "core", "--out"], ["bench", "capacity", "--against"], ["bench", "capacity", "--series"],
]


@pytest.mark.parametrize("argv", EMPTY, ids=[" ".join(a[:1] + a[-1:]) for a in EMPTY])
def test_an_empty_value_is_a_usage_error_naming_the_option(argv: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match=r"^2$"):
        main([*argv, ""])
    assert f"argument {argv[-1]}: the value is empty (leave the option out for its default)" in \
        capsys.readouterr().err
