"""The forecast benchmark module runs on the real Azure files and prints its table."""

import argparse

from benchmarks import forecast


def test_bench_forecast_reports_fit_and_predict_time_per_vm() -> None:
    parser = argparse.ArgumentParser()
    forecast.add_arguments(parser)
    result = forecast.run(parser.parse_args(["--vms", "1", "--models", "ar1,autopilot"]))
    assert [r["model"] for r in result["rows"]] == ["ar1", "autopilot"]
    assert all(r["fit_s_per_vm"] >= 0 and r["predict_s_per_vm"] > 0 for r in result["rows"])
    assert "fit ms/VM" in forecast.table(result)  # bad options: tests/benchmarks/test_arguments.py
