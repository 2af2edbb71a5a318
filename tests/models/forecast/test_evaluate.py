"""The simulation protocol on simulated AR(1) VMs, the loaders on tiny files, and the CLI's JSON."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from models.forecast.ar import AR1
from models.forecast.evaluate import Protocol, evaluate, simulate_vm
from models.forecast.registry import ModelSpec
from models.forecast.series import aggregate, load_table
from models.forecast.tradeoff import dominated_area, plot_curves, rank
from tests.models.forecast.test_ar import simulate_ar1


def test_offline_ar1_survival_is_one_minus_the_cutoff_on_ar1_data() -> None:
    y = np.clip(simulate_ar1(4000, 40.0, 0.6, 5.0, seed=21), 0, 100)
    cutoffs = np.array([0.01, 0.05, 0.2])
    surv, util = simulate_vm(ModelSpec("ar1"), Protocol(window_minutes=5, train_samples=1000), y, None, cutoffs)
    assert surv.shape == (3000, 3)
    n = surv.shape[0]
    for j, c in enumerate(cutoffs):
        assert abs(np.nanmean(surv[:, j]) - (1 - c)) < 4 * np.sqrt(c * (1 - c) / n) + 0.005
    # a window that survives uses less of its room under a smaller (more conservative) cut-off
    both = (surv[:, 0] == 1) & (surv[:, 2] == 1)
    assert np.all(util[both, 0] <= util[both, 2])


def test_online_fixed_with_one_refit_is_offline_and_growing_differs() -> None:
    y = np.clip(simulate_ar1(1200, 50.0, 0.8, 4.0, seed=2), 0, 100)
    c = np.array([0.05])
    offline = simulate_vm(ModelSpec("ar1"), Protocol(window_minutes=10, train_samples=200), y, None, c)
    once = simulate_vm(ModelSpec("ar1"), Protocol(window_minutes=10, train_samples=200, train="online",
                                                  refit_every=10_000), y, None, c)
    assert np.array_equal(offline[0], once[0], equal_nan=True)
    refit = simulate_vm(ModelSpec("ar1", fit="ols"), Protocol(window_minutes=10, train_samples=200, train="online",
                                                              online_size="growing", refit_every=50), y, None, c)
    assert refit[0].shape == offline[0].shape


def test_extrapolation_scores_a_window_by_its_sub_windows() -> None:
    y = np.clip(simulate_ar1(1200, 30.0, 0.5, 3.0, seed=4), 0, 100)
    c = np.array([0.5])
    surv = simulate_vm(ModelSpec("ar1"), Protocol(window_minutes=20, train_samples=240, steps=4),
                       y, None, c)[0]
    windows = aggregate(y, None, 4)
    assert surv.shape[0] == len(windows) - 240 // 4  # every 20-minute window after the training part
    # with c = 0.5, four sub-windows all under their medians are rarer than one
    one = simulate_vm(ModelSpec("ar1"), Protocol(window_minutes=20, train_samples=240), y, None, c)[0]
    assert np.nanmean(surv) < np.nanmean(one)


def test_evaluate_pools_vms_and_reports_failures() -> None:
    y = np.clip(simulate_ar1(600, 30.0, 0.5, 3.0, seed=4), 0, 100)
    maxes = np.column_stack([y, np.full(600, 7.0)])
    pooled, rows = evaluate(ModelSpec("ari11"), Protocol(window_minutes=5, train_samples=100), ["a", "flat"],
                            maxes, None, np.array([0.01]))
    assert rows[0].error is None and rows[1].error is not None and "constant" in rows[1].error
    assert pooled[0] == rows[0].scores[0]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"window_minutes": 7}, "multiple of 5"), ({"train": "x"}, "train='x'"), ({"refit_every": 0}, "refit_every"),
    ({"steps": 5}, "divide"), ({"train_samples": 3}, "at least one window"), ({"online_size": "x"}, "online_size"),
])
def test_protocol_refuses_bad_settings(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Protocol(**kwargs)  # type: ignore[arg-type]


def test_dominated_area_is_the_union_of_rectangles_over_the_reference() -> None:
    # two points (0.9, 0.2) and (0.7, 0.5) over the reference (0.5, 0): 0.2*0.5 + 0.2*0.2 = 0.14
    assert dominated_area([(0.9, 0.2), (0.7, 0.5)], (0.5, 0.0)) == pytest.approx(0.14)
    assert dominated_area([(0.9, 0.2), (0.8, 0.1)], (0.5, 0.0)) == pytest.approx(0.4 * 0.2)
    assert dominated_area([(0.4, 0.9)], (0.5, 0.0)) == 0.0
    assert rank({"a": 0.1, "b": 0.3, "c": 0.1}) == ["b", "a", "c"]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    path = tmp_path / "t.png"
    plot_curves({"ar1": [(0.01, 0.9, 0.3), (0.05, 0.85, 0.4)]}, str(path), "t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _write(tmp_path: Path, name: str, values: np.ndarray, gz: bool) -> Path:
    header = "window," + ",".join(f"vm{j}" for j in range(values.shape[1]))
    lines = [header] + [f"{i + 1}," + ",".join(f"{v:.4f}" for v in row) for i, row in enumerate(values)]
    path = tmp_path / (name + (".csv.gz" if gz else ".csv"))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _vms() -> tuple[np.ndarray, np.ndarray]:
    maxes = np.column_stack([np.clip(simulate_ar1(480, 40 + 10 * j, 0.6, 4.0, seed=j), 0, 100) for j in range(3)])
    return maxes, maxes * 0.5


def test_loaders_read_csv_and_gzip_alike_and_refuse_bad_files(tmp_path: Path) -> None:
    maxes, _ = _vms()
    plain = load_table(str(_write(tmp_path, "m", maxes, gz=False)))
    zipped = load_table(str(_write(tmp_path, "z", maxes, gz=True)))
    assert plain.ids == zipped.ids == ("vm0", "vm1", "vm2")
    assert np.array_equal(plain.values, zipped.values)
    assert plain.column("vm1") == pytest.approx(maxes[:, 1], abs=1e-4)
    with pytest.raises(ValueError, match="'vm9' is not in the file"):
        plain.column("vm9")
    bad = tmp_path / "bad.csv"
    bad.write_text("window,a\n1,120\n")
    with pytest.raises(ValueError, match=r"bad.csv: column 'a', data row 1: 120 is outside \[0, 100\] percent"):
        load_table(str(bad))
    bad.write_text("a,b\n1,2\n3,t1str\n")  # e.g. a long-format capacity file given as a VM table
    with pytest.raises(ValueError, match=r"bad.csv: column 'b', data row 2: 't1str' is not a finite number"):
        load_table(str(bad))
    bad.write_text("a,b\n1,\n")
    with pytest.raises(ValueError, match=r"column 'b', data row 1: a missing value is not a finite"):
        load_table(str(bad))
    bad.write_text("a\ninf\n")
    with pytest.raises(ValueError, match=r"column 'a', data row 1: inf is not a finite number"):
        load_table(str(bad))
    bad.write_text("window\n1\n")
    with pytest.raises(ValueError, match=r"bad.csv: no VM column or no row"):
        load_table(str(bad))


def test_cli_evaluate_prints_one_json_with_the_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    maxes, avgs = _vms()
    m, a = _write(tmp_path, "max", maxes, True), _write(tmp_path, "avg", avgs, True)
    code = main(["forecast", "evaluate", "--series", str(m), "--average", str(a), "--all", "--model", "var1",
                 "--window-minutes", "15", "--cutoff", "0.01", "--train-samples", "120", "--per-vm", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    for key in ("survival", "utilization", "survival_weight", "utilization_weight", "predictions"):
        assert key in out
    assert [row["vm"] for row in out["per_vm"]] == ["vm0", "vm1", "vm2"]
    assert out["predictions"] == 3 * (480 // 3 - 120 // 3)
    assert out["survival_weight"] == sum(row["survival_weight"] for row in out["per_vm"])


@pytest.mark.parametrize(("extra", "match"), [
    (["--model", "var1"], "needs --average"),
    (["--model", "ar1", "--column", "nope"], "'nope' is not in the file"),
    (["--model", "ar1", "--window-minutes", "7"], "window_minutes=7"),
])
def test_cli_evaluate_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                                        match: str) -> None:
    m = _write(tmp_path, "max", _vms()[0], False)
    pick = [] if "--column" in extra else ["--all"]
    code = main(["forecast", "evaluate", "--series", str(m), *pick, "--cutoff", "0.01", *extra])
    err = capsys.readouterr().err
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1


def test_cli_evaluate_names_the_column_and_row_of_a_file_that_is_not_a_vm_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capacity = tmp_path / "capacity.csv"  # the long format of the Azure capacity files, not one column per VM
    capacity.write_text("TimeStamp,Column1,TotalCores\n2019-08-06 00:00,t1str,59516\n")
    code = main(["forecast", "evaluate", "--series", str(capacity), "--all", "--model", "ar1", "--cutoff", "0.01"])
    err = capsys.readouterr().err
    assert code == 2 and err == (f"sowsched forecast evaluate: {capacity}: column 'Column1', data row 1: 't1str' is "
                                 "not a finite number (one column per VM id, CPU in percent)\n")
    code = main(["forecast", "evaluate", "--series", str(tmp_path / "missing.csv"), "--all", "--model", "ar1",
                 "--cutoff", "0.01"])
    assert code == 2 and "No such file" in capsys.readouterr().err


def test_cli_compare_ranks_models_and_writes_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    maxes, avgs = _vms()
    m, a = _write(tmp_path, "max", maxes, False), _write(tmp_path, "avg", avgs, False)
    out_dir = tmp_path / "plots"
    code = main(["forecast", "compare", "--series", str(m), "--average", str(a), "--all",
                 "--models", "ar1,var1,autopilot", "--window-minutes", "15,30", "--cutoffs", "0.01,0.1",
                 "--train-samples", "120", "--out", str(out_dir), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    for window in ("15", "30"):
        block = out["windows"][window]
        assert sorted(block["ranking"]) == ["ar1", "autopilot", "var1"]
        assert len(block["rows"]) == 6
        assert Path(block["plot"]).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit, match=r"^2$"):
        main(["forecast", "compare", "--series", str(m), "--all", "--models", "ar1,nn"])
    assert "argument --models: 'nn' is not one of ar1, ar1x" in capsys.readouterr().err


def test_online_closed_form_equals_refitting_one_window_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    y = np.clip(simulate_ar1(400, 50.0, 0.8, 4.0, seed=5), 0, 100)
    c = np.array([0.01, 0.1])
    spec = ModelSpec("ar1", fit="ols")
    for every, size in ((1, "fixed"), (3, "growing")):
        protocol = Protocol(window_minutes=10, train_samples=200, train="online", refit_every=every,
                            online_size=size)
        fast = simulate_vm(spec, protocol, y, None, c)
        with monkeypatch.context() as patch:
            patch.setattr(AR1, "rolling_one_step", lambda *args: None)  # the generic refit loop
            slow = simulate_vm(spec, protocol, y, None, c)
        assert np.array_equal(fast[0], slow[0], equal_nan=True)
        assert fast[1] == pytest.approx(slow[1], nan_ok=True)


def test_cli_evaluate_takes_the_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = _write(tmp_path, "max", _vms()[0], False)
    base = ["forecast", "evaluate", "--series", str(m), "--column", "vm0", "--model", "ar1", "--cutoff", "0.05",
            "--window-minutes", "10", "--train-samples", "100", "--json"]
    plain = main(base)
    first = json.loads(capsys.readouterr().out)
    assert plain == 0
    for extra in (["--train", "online", "--fit", "ols", "--online-size", "growing"], ["--steps", "2"],
                  ["--adjust", "1,1"], ["--granularity", "12.5"], ["--residuals", "empirical"]):
        assert main([*base, *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["predictions"] == first["predictions"]
    with pytest.raises(SystemExit):
        main([*base, "--adjust", "1"])
    assert "ON,OFF" in capsys.readouterr().err
