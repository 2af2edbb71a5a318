"""The CUC study: VM types run as independent seeded tasks, so a process pool pools the same numbers; the baselines
alone give the whole study's baseline rows."""

from pathlib import Path

import numpy as np
import pytest

from models.cuc.jobs import JobConfig
from models.cuc.study import StudyConfig, run_study


def two_types(tmp_path: Path) -> Path:
    """14 days of a noisy daily season for two VM types (the real files take minutes in the study)."""
    rng = np.random.default_rng(1)
    t = np.arange(336)
    lines = ["TimeStamp,Column1,TotalCores"]
    for vm, level in (("t1", 1000), ("t2", 3000)):
        y = np.round(level * (1 + 0.08 * np.sin(2 * np.pi * t / 24)) + rng.normal(0, 0.015 * level, t.size))
        lines += [f"h{k:04d},{vm},{v:.0f}" for k, v in enumerate(y)]
    path = tmp_path / "cap.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(path: Path, **changes: object) -> StudyConfig:
    fields: dict[str, object] = {"datasets": {"cap": str(path)}, "bo_steps": 2, "p_levels": (0.05,),
                                 "exact_time_limit": 0.0, "jobs": JobConfig(max_share=0.2), "refit_every": 24}
    return StudyConfig(**(fields | changes))  # type: ignore[arg-type]


def test_a_pool_of_processes_pools_each_type_run_alone(tmp_path: Path) -> None:
    path = two_types(tmp_path)
    pooled = run_study(config(path, refit_every=96), processes=2)["cap"]
    each = [run_study(config(path, vm_types=(vm,), refit_every=96), processes=1)["cap"] for vm in ("t1", "t2")]
    assert set(pooled) == set(each[0]) == set(each[1])
    for method, row in pooled.items():
        assert row["samples"] == 50  # 25 test samples of each type
        for key in ("util", "violation"):
            assert row[key] == pytest.approx((each[0][method][key] + each[1][method][key]) / 2, rel=1e-12, abs=1e-12)


def test_the_baselines_alone_are_the_whole_studys_baseline_rows(tmp_path: Path) -> None:
    path = two_types(tmp_path)
    whole = run_study(config(path, vm_types=("t1",)))["cap"]
    alone = run_study(config(path, vm_types=("t1",), baselines_only=True))["cap"]
    assert set(alone) == {"TSDEC+HiGHS", "AR1+HiGHS", "W/o uncertainty", "Alg. 3 with the true capacity"}
    for method, row in alone.items():
        assert (row["util"], row["violation"], row["samples"]) == (
            whole[method]["util"], whole[method]["violation"], whole[method]["samples"])


def test_an_unknown_vm_type_is_refused_before_any_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"vm-type='t9' is not in the data \(known: t1, t2\)"):
        run_study(config(two_types(tmp_path), vm_types=("t1", "t9")))


@pytest.mark.parametrize(("forecasters", "match"), [
    ((), r"forecasters=\(\) must name at least one point forecaster"),
    (("tsdec", "x"), r"'x' is not one of"),
    (("ar1", "ar1"), r"names a forecaster twice"),
])
def test_the_forecasters_are_checked_when_the_study_is_configured(tmp_path: Path, forecasters: tuple[str, ...],
                                                                   match: str) -> None:
    with pytest.raises(ValueError, match=match):
        config(tmp_path / "cap.csv", forecasters=forecasters)


def test_the_first_forecaster_is_the_untrained_rows_point_forecast(tmp_path: Path) -> None:
    from models.cuc.data import load_capacity
    from models.cuc.protocol import Split
    from models.cuc.run import Evaluator, Theta, on_test_samples

    path = two_types(tmp_path)
    row = run_study(config(path, vm_types=("t1",), forecasters=("ar1", "tsdec")))["cap"]["W/o uncertainty"]
    y = load_capacity(path).of("t1")
    ev = Evaluator(y, Split(len(y)), JobConfig(max_share=0.2), 0, 24)
    outcome, _ = on_test_samples(ev, Theta(forecaster="ar1"), 0.5, uncertain=False)
    assert (row["util"], row["violation"]) == pytest.approx((100 * outcome.util, 100 * outcome.vio), rel=1e-12)


def test_a_select_study_counts_the_law_chosen_on_each_type(tmp_path: Path) -> None:
    rows = run_study(config(two_types(tmp_path), errors="select"))["cap"]
    for method in ("CUC (p = 5 %)", "W/o BO (p = 0.1 %)"):
        assert rows[method]["chose_newest"] + rows[method]["chose_moments"] == 2  # one law per type
    assert "chose_newest" not in rows["TSDEC+HiGHS"]  # the rows without a law choose none
