"""Capacity series and their fit: reading both CSV shapes, scaling, the AR(1) + mixture fit against independent
estimates, and the hindsight optimum with per-round capacity against brute force."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from models.capacity_fit import (
    discretise_mixture,
    fit_capacity_model,
    persistence,
    read_series,
    scaled_rows,
    upper_bound,
    with_capacity,
)
from models.offline.brute import solve_brute
from models.offline.cpsat import CpSatParams, solve_cpsat
from models.offline.greedy import density_greedy
from models.offline.hindsight import HindsightInstance, HindsightJob
from models.offline.milp import MilpParams, lp_bound, solve_milp
from models.simulation import run_simulation
from models.workloads import make_workload

AZURE = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "azure-capacity" / "capacity_azure2017.csv"


def write(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_long_format_selects_the_vm_type_in_row_order(tmp_path: Path) -> None:
    p = write(tmp_path, "TimeStamp,Column1,TotalCores\n0,a,10\n0,b,7\n1,a,12\n1,b,9\n2,a,14\n2,b,5\n")
    assert read_series(f"{p}:a").raw.tolist() == [10.0, 12.0, 14.0]
    assert read_series(f"{p}:b").raw.tolist() == [7.0, 9.0, 5.0]
    with pytest.raises(ValueError, match=r"name a VM type of .* one of a, b"):
        read_series(str(p))


def test_wide_format_selects_a_column_or_its_only_one(tmp_path: Path) -> None:
    p = write(tmp_path, "t,x,y\n0,1,4\n1,2,5\n2,3,6\n")
    assert read_series(f"{p}:y").raw.tolist() == [4.0, 5.0, 6.0]
    with pytest.raises(ValueError, match="has columns x, y: name one after a colon"):
        read_series(str(p))
    with pytest.raises(ValueError, match="has no column 'z'"):
        read_series(f"{p}:z")
    one = write(tmp_path, "t,cores\n0,8\n1,9\n2,7\n", "one.csv")
    assert read_series(str(one)).raw.tolist() == [8.0, 9.0, 7.0]


def test_a_gzip_series_reads_as_its_plain_csv(tmp_path: Path) -> None:
    text = "TimeStamp,Column1,TotalCores\n0,a,10\n0,b,7\n1,a,12\n1,b,9\n2,a,14\n2,b,5\n"
    zipped = tmp_path / "s.csv.gz"
    zipped.write_bytes(gzip.compress(text.encode("utf-8")))
    assert read_series(f"{zipped}:b").raw.tolist() == read_series(f"{write(tmp_path, text)}:b").raw.tolist()
    zipped.write_bytes(gzip.compress(text.encode("utf-8"))[:20])  # cut short
    with pytest.raises(ValueError, match=r"s.csv.gz is not a UTF-8 CSV or gzip CSV"):
        read_series(f"{zipped}:b")
    zipped.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ValueError, match=r"s.csv.gz is not a UTF-8 CSV or gzip CSV"):
        read_series(f"{zipped}:b")


@pytest.mark.parametrize(("text", "match"), [
    ("t,x\n0,1\n1,oops\n2,3\n", "a value is not a number"),
    ("t,x\n0,1\n1,-2\n2,3\n", "at least 3 finite values >= 0"),
    ("t,x\n", "has no data rows"),
])
def test_bad_series_are_refused_naming_the_file(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_series(str(write(tmp_path, text)))
    with pytest.raises(ValueError, match="cannot read"):
        read_series(str(tmp_path / "missing.csv"))


def test_scaling_makes_the_mean_c_unless_a_scale_is_given() -> None:
    s = read_series(f"{AZURE}:t1str")
    caps = s.scaled(16.0)
    assert abs(float(caps.mean()) - 16.0) < 0.1
    assert s.scaled(16.0, scale=1e-3).tolist() == np.floor(s.raw * 1e-3 + 0.5).astype(int).tolist()


def test_the_ar1_fit_recovers_a_simulated_process_and_matches_least_squares() -> None:
    rng = np.random.default_rng(0)
    x = np.empty(3000)
    x[0] = 100.0
    for t in range(1, x.size):
        x[t] = 100.0 + 0.7 * (x[t - 1] - 100.0) + rng.normal(0.0, 3.0)
    m = fit_capacity_model(np.floor(x + 0.5).astype(int), persistence_lags=1)
    slope, intercept = np.polyfit(np.floor(x[:-1] + 0.5), np.floor(x[1:] + 0.5), 1)  # OLS, independently
    assert m.phi == pytest.approx(slope, abs=1e-9)
    assert m.mean == pytest.approx(intercept / (1 - slope), abs=1e-6)
    assert abs(m.phi - 0.7) < 0.05 and abs(m.mean - 100.0) < 1.0
    errs, w = np.array(m.errors), np.array(m.weights)
    assert abs(float(np.sum(errs * w))) < 0.2 and abs(float(np.sqrt(np.sum(errs**2 * w))) - 3.0) < 0.4


def test_the_persistence_fit_matches_a_grid_search_on_the_numpy_autocorrelation() -> None:
    rng = np.random.default_rng(1)
    x = np.empty(2000)
    x[0] = 0.0
    for t in range(1, x.size):
        x[t] = 0.8 * x[t - 1] + rng.normal()
    d = x - x.mean()
    rho = np.array([np.sum(d[k:] * d[:-k]) / np.sum(d * d) for k in range(1, 9)])  # acf, by hand
    grid = np.linspace(0.0, 0.99, 99_001)
    best = grid[np.argmin([np.sum((rho - g ** np.arange(1, 9)) ** 2) for g in grid])]
    assert persistence(x, 8) == pytest.approx(best, abs=2e-5)
    assert abs(best - 0.8) < 0.05
    m = fit_capacity_model(np.floor(50 + 3 * x + 0.5).astype(int))
    assert m.phi == pytest.approx(persistence(np.floor(50 + 3 * x + 0.5), 8)) and m.mean == pytest.approx(
        float(np.floor(50 + 3 * x + 0.5).mean()))


def test_one_component_is_discretised_at_its_normal_quantiles() -> None:
    pts, w = discretise_mixture(np.array([1.0]), np.array([2.0]), np.array([0.5]), 4)
    assert np.allclose(pts, 2.0 + 0.5 * norm.ppf([0.125, 0.375, 0.625, 0.875]))
    assert sum(w) == 1.0 and np.allclose(w, 0.25)
    pts, w = discretise_mixture(np.array([0.9, 0.1]), np.array([0.0, -5.0]), np.array([1.0, 1.0]), 3)
    assert pts == tuple(sorted(pts)) and pytest.approx(sum(x for x, y in zip(pts, w, strict=True) if x < -3)) != 0
    assert sum(y for x, y in zip(pts, w, strict=True) if x < -3) == pytest.approx(0.1)  # the rare jump keeps 10 %


def test_with_capacity_rolls_the_series_and_fits_only_for_forecast() -> None:
    w = make_workload("overload", seed=0, rounds=3)
    fixed = with_capacity(w, f"{AZURE}:t7str", "fixed")
    forecast = with_capacity(w, f"{AZURE}:t7str", "forecast", start=5)
    assert fixed.platform == w.platform and fixed.capacity is not None and len(fixed.capacity) == 336
    assert forecast.platform.capacity is not None and forecast.capacity is not None
    assert forecast.capacity[:3] == fixed.capacity[5:8]
    with pytest.raises(ValueError, match="capacity_model mean: not one of fixed, forecast"):
        with_capacity(w, f"{AZURE}:t7str", "mean")


def test_fixed_drops_a_capacity_model_the_workload_already_had() -> None:
    w = make_workload("overload", seed=0, rounds=3)
    forecast = with_capacity(w, f"{AZURE}:t7str", "forecast")  # as a W.json written by a forecast run reads back
    again = with_capacity(forecast, f"{AZURE}:t7str", "fixed")
    assert again.platform == w.platform and again.platform.capacity is None


def test_held_out_rows_scale_and_fit_on_the_prefix_and_play_the_rest(tmp_path: Path) -> None:
    raw = [10, 12, 11, 13, 12, 10, 11, 12, 30, 31, 29, 30]  # a level shift after row 8
    path = write(tmp_path, "t,v\n" + "".join(f"{i},{v}\n" for i, v in enumerate(raw)))
    w = make_workload("overload", seed=0, rounds=2)  # C = 16
    held = with_capacity(w, str(path), "forecast", start=5, fit_rows=8)
    prefix_mean = sum(raw[:8]) / 8  # the scale sees the first 8 rows only
    scaled = [int(np.floor(v * 16 / prefix_mean + 0.5)) for v in raw]
    assert held.capacity == tuple(scaled[8 + (5 + t) % 4] for t in range(4))  # rows 8.. only, wrapping within them
    assert held.platform.capacity == fit_capacity_model(np.array(scaled[:8]))  # fitted on the prefix alone
    m = held.platform.capacity
    assert m.high == upper_bound(np.array(scaled[:8]), m.mean, m.phi, m.error_array, np.array(m.weights))
    assert with_capacity(w, str(path), "fixed", fit_rows=8).platform == w.platform
    for bad in (2, 12):
        with pytest.raises(ValueError, match=f"capacity_fit_rows {bad}: .* has 12 rows; fit on 3 to 11 of them"):
            with_capacity(w, str(path), "forecast", fit_rows=bad)


def test_high_is_five_stationary_sds_above_the_mean_and_at_least_the_rows_maximum() -> None:
    errors, weights = np.array([-1.0, 1.0]), np.array([0.5, 0.5])  # Var e = 1; phi = 0.6: sd = 1 / 0.8 = 1.25
    assert upper_bound(np.array([9, 12]), 10.0, 0.6, errors, weights) == 17  # ceil(10 + 6.25)
    assert upper_bound(np.array([9, 20]), 10.0, 0.6, errors, weights) == 20  # the rows' maximum is higher
    assert upper_bound(np.array([16, 16]), 16.0, 0.0, np.array([0.0]), np.array([1.0])) == 16  # no spread


def test_a_later_capacity_above_the_fitted_rows_maximum_is_read_unclamped() -> None:
    series = read_series(f"{AZURE.with_name('capacity_azure2019.csv')}:t7str")
    scaled = series.scaled(16, None, 168)  # the held-out protocol at C = 16: fit on the first week, play the second
    m = fit_capacity_model(scaled[:168])
    fitted, played = int(scaled[:168].max()), int(scaled[168:].max())
    assert (fitted, played) == (22, 24)  # the second week rises above the first's maximum
    assert m.clamp(played) == played


def test_a_constant_prefix_fits_a_law_without_empty_components() -> None:
    m = fit_capacity_model(np.full(40, 16))  # the mixture's spare components weigh ~1e-17 (sd: its 1e-6 variance floor)
    assert m.phi == 0.0 and m.mean == 16.0 and all(abs(e) < 0.01 for e in m.errors)
    assert m.price_capacity() == 16.0


# ---- the hindsight optimum knows the realized capacity ----

def tiny() -> HindsightInstance:
    jobs = tuple(HindsightJob(id=f"j{i}", birth=0, arrival=a, duration=d, concurrency=c, value_steps=((3, v),))
                 for i, (a, d, c, v) in enumerate([(0, 2, 2, 5.0), (0, 1, 3, 4.0), (1, 2, 1, 3.0), (2, 1, 3, 6.0)]))
    return HindsightInstance(capacity=3, jobs=jobs, capacities=(3, 1, 2, 3))


def test_solvers_agree_with_brute_force_under_a_capacity_drop() -> None:
    inst = tiny()
    best = solve_brute(inst)
    assert solve_cpsat(inst, CpSatParams(time_limit=10.0, workers=1)).value == pytest.approx(best.value)
    assert solve_milp(inst, MilpParams(time_limit=10.0)).value == pytest.approx(best.value)
    assert lp_bound(inst).bound >= best.value - 1e-9
    inst.check_schedule(density_greedy(inst))
    flat = HindsightInstance(capacity=3, jobs=inst.jobs)
    assert solve_brute(flat).value > best.value  # the drop costs value


def test_past_the_last_realized_round_the_last_capacity_stays_as_in_the_engine() -> None:
    # the engine keeps the last reported capacity (model.md 10.1); the optimum may not use more
    job = HindsightJob(id="late", birth=0, arrival=5, duration=1, concurrency=2, value_steps=((6, 4.0),))
    inst = HindsightInstance(capacity=8, jobs=(job,), capacities=(8, 1))
    assert [inst.capacity_at(t) for t in (0, 1, 2, 9)] == [8, 1, 1, 1]
    assert inst.capacity_row(4).tolist() == [8, 1, 1, 1]
    assert solve_brute(inst).value == 0.0
    assert solve_cpsat(inst, CpSatParams(time_limit=10.0, workers=1)).value == 0.0
    assert solve_milp(inst, MilpParams(time_limit=10.0)).value == pytest.approx(0.0)
    assert lp_bound(inst).bound == pytest.approx(2.0)  # half of the job fits one node; with 8 nodes it was 4
    assert HindsightInstance(capacity=3, jobs=(job,)).capacity_at(7) == 3  # no series: C in every round


def test_a_schedule_overloading_a_dropped_round_is_refused() -> None:
    with pytest.raises(ValueError, match="round 1 load=2 exceeds the bound capacity=1"):
        tiny().check_schedule({"j0": 0})


def test_the_mechanism_schedule_fits_the_realized_capacity() -> None:
    w = with_capacity(make_workload("overload", seed=3, rounds=8), f"{AZURE}:t7str", "forecast", start=40)
    result = run_simulation(w)
    inst = HindsightInstance.from_realized(w)
    starts = {e.job: int(e.data["start"]) for e in result.events if e.type == "complete"}
    inst.check_schedule(starts)
    assert inst.capacities == w.capacity


# ---- W.json carries the capacity model (in the platform) and the feed ----

def test_a_workload_file_round_trips_its_capacity_model_and_feed() -> None:
    from models.workloads import parse_workload, workload_document

    w = with_capacity(make_workload("overload", seed=1, rounds=2), f"{AZURE}:t5str", "forecast")
    doc = workload_document(w)
    assert doc["capacity"] == list(w.capacity or ()) and "capacity" in doc["platform"]
    again = parse_workload(doc, name=w.name)
    assert again.platform == w.platform and again.capacity == w.capacity
    plain = workload_document(make_workload("overload", seed=1, rounds=2))
    assert "capacity" not in plain and "capacity" not in plain["platform"]
    with pytest.raises(ValueError, match=r"capacity\[1\]=-3 is outside \[0, 1000000\]"):
        parse_workload({**doc, "capacity": [4, -3]})
    with pytest.raises(ValueError, match=r"capacity\[0\] \(value 2.5\): Input should be a valid integer"):
        parse_workload({**doc, "capacity": [2.5]})


@pytest.mark.parametrize("C", [16, 32])
def test_the_fitted_process_settles_at_the_fitted_rows_mean(C: int) -> None:
    # 2017 t7str's first week, the series behind the held-out evaluation's largest difference: phi ~ 0.98, so a
    # residual mean of a few hundredths moves the stationary mean m + E[e] / (1 - phi) by whole nodes
    rows = scaled_rows(f"{AZURE}:t7str", C, None, 168)[0]
    m = fit_capacity_model(rows)
    y = rows.astype(np.float64)
    raw = (y[1:] - y.mean()) - m.phi * (y[:-1] - y.mean())  # the persistence fit's residuals, uncentred
    assert abs(float(raw.mean()) / (1.0 - m.phi)) > 1.0  # what the mixture kept before it was centred
    errs, w = np.array(m.errors), np.array(m.weights)
    assert m.mean == pytest.approx(float(y.mean()), abs=1e-12)
    assert m.mean + float(errs @ w) / (1.0 - m.phi) == pytest.approx(m.mean, abs=1e-9)  # the closed form
    # the model's own recursion (`step`), run long from far below the mean on many paths: E[X_k] -> m
    rng = np.random.default_rng(0)
    x = np.full(20_000, m.mean - 10.0)
    for _ in range(int(np.ceil(np.log(1e-4) / np.log(m.phi)))):
        x = m.mean + m.phi * (x - m.mean) + rng.choice(errs, size=x.size, p=w)  # `step`, elementwise
    sd = float(np.sqrt((errs**2 @ w) / (1.0 - m.phi**2)))
    assert abs(float(x.mean()) - m.mean) < 4.0 * sd / np.sqrt(x.size) + 1e-3
