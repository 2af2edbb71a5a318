"""`sowsched bench`: a target's benchmark module is imported only when that target is parsed, and every target
still parses with its own options and help."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli.commands.bench import BENCHMARKS
from cli.main import build_parser


def _loaded_after(words: list[str]) -> list[str]:
    probe = ("import json, sys; from cli.main import build_parser; p = build_parser(['bench']); "
             f"p.parse_args({words!r}) if {bool(words)!r} else None; "
             f"print(json.dumps(sorted(m for m in {[m for m, _ in BENCHMARKS.values()]!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return list(json.loads(out.stdout))


def test_the_bench_parser_imports_no_benchmark_until_a_target_is_parsed() -> None:
    assert _loaded_after([]) == []


def test_parsing_a_target_imports_its_module_and_no_other_benchmark() -> None:
    assert _loaded_after(["bench", "capacity", "--seeds", "2"]) == ["benchmarks.capacity"]


REQUIRED = {"welfare": ["--workload", "toy"], "capacity_pool": ["a.json"]}  # a target's own required arguments


@pytest.mark.parametrize("target", sorted(BENCHMARKS))
def test_every_target_parses_with_the_common_options_and_runs_its_module(target: str) -> None:
    words = ["bench", target, "--json", "--out", "x.json", *REQUIRED.get(target, [])]
    args = build_parser(["bench"]).parse_args(words)
    assert args.json and args.out == "x.json" and callable(args.func)


def test_the_target_help_lists_each_target_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(["bench"]).parse_args(["bench", "--help"])
    out = capsys.readouterr().out
    for name, (_, summary) in BENCHMARKS.items():
        assert name in out and summary.split()[0] in out
