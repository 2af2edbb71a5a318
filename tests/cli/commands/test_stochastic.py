"""`sowsched simulate --pricing stochastic` and `sowsched stochastic lp|sweep`: one JSON document, clear refusals."""

from __future__ import annotations

import json

import pytest

from cli.main import main


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_with_stochastic_pricing_is_one_document_and_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("simulate", "--workload", "stochastic", "--pricing", "stochastic", "--seed", "1", "--load", "0.3",
            "--json", "--no-offline")
    first = run_json(capsys, *argv)
    assert first["pricing"] == "stochastic" and first["jobs"] > 0
    lp = first["stochastic_pricing"]["lp"]
    assert lp["rows"] > 0 and lp["cols"] > 0 and lp["nonzeros"] >= lp["cols"]
    assert 0 < first["stochastic_pricing"]["allocation"]["kept"] <= 1.0 + 1e-12
    assert run_json(capsys, *argv) == first
    exponential = run_json(capsys, *argv[:4], "exponential", *argv[5:])
    assert "stochastic_pricing" not in exponential and exponential["jobs"] == first["jobs"]


@pytest.mark.parametrize("workload", ["toy", "pipelines"])
def test_stochastic_pricing_needs_a_prior(workload: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", workload, "--pricing", "stochastic", "--json", "--no-offline"]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert "--pricing stochastic: pricing 'stochastic' needs a workload with a prior" in err.err


def test_stochastic_pricing_is_refused_with_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--workload", "stochastic", "--pricing", "stochastic", "--server", "x:1"]) == 2
    assert "--pricing stochastic does not apply with --server x:1" in capsys.readouterr().err


def test_lp_reports_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "stochastic", "lp", "--load", "0.5", "--rounds", "4", "--json")
    assert out["jobs"] > 0 and out["lp"]["rows"] > 0 and out["allocation"]["bundles"] > 0
    assert out["prices"]["min"] <= out["prices"]["median"] <= out["prices"]["max"]


def test_sweep_compares_both_pricings_with_the_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "stochastic", "sweep", "--loads", "0.5", "--seeds", "0,1", "--rounds", "3",
                   "--offline-time-limit", "1", "--json")
    assert len(out["rows"]) == 2 and out["per_load"][0]["load"] == 0.5
    for row in out["rows"]:
        for name in ("exponential", "stochastic"):
            assert row["offline"] >= row[name]["welfare"] - 1e-6
    assert set(out["overall"]) >= {"exponential", "stochastic", "stochastic_better", "offline_mean"}
    assert main(["stochastic", "sweep", "--loads", "0.5", "--seeds", "0", "--rounds", "3",
                 "--offline-time-limit", "1"]) == 0
    assert "ratio sto" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["stochastic", "sweep", "--loads", "0"], "0.0 must be positive and finite"),
    (["stochastic", "sweep", "--loads", "101"], "101.0 exceeds the bound 100"),
    (["stochastic", "lp", "--rounds", "0"], "0 is below the bound 1"),
    (["stochastic", "lp", "--rounds", "201"], "201 is above the bound 200"),
    (["stochastic", "sweep", "--seeds", "-1"], "-1 is below the bound 0"),
])
def test_bad_options_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err
