"""bench capacity_pool: results over consecutive seed ranges pooled into what one run over their union prints, and
the refusals of pieces that are not one run cut in pieces."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks import capacity, capacity_pool
from cli.args import BenchInputError
from cli.main import main
from models.data import AZURE_CAPACITY

SERIES = ",".join(f"{AZURE_CAPACITY / f}:t7str" for f in ("capacity_azure2017.csv", "capacity_azure2019.csv"))
COMMON = {"workloads": "overload", "series": SERIES, "rounds": 3, "stride": 13, "offline_time_limit": 1.0,
          "processes": 1}


def _run(tmp: Path, name: str, first_seed: int, seeds: int, offline_seeds: int = 0, **options: Any) -> str:
    result = capacity.run(argparse.Namespace(**COMMON, first_seed=first_seed, seeds=seeds,
                                             offline_seeds=offline_seeds, **options))
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(result))
    return str(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The union run (seeds 3-6) and its pieces (3-4, 5-6), at q = 0.3 and at q = 0.6 paired with q = 0.3."""
    tmp = tmp_path_factory.mktemp("pool")
    out = {"union": _run(tmp, "union", 3, 4, offline_seeds=1, quantile=0.3),
           "a": _run(tmp, "a", 3, 2, offline_seeds=1, quantile=0.3), "b": _run(tmp, "b", 5, 2, quantile=0.3)}
    out["union_q"] = _run(tmp, "union_q", 3, 4, quantile=0.6, against=out["union"])
    out["a_q"] = _run(tmp, "a_q", 3, 2, quantile=0.6, against=out["a"])
    out["b_q"] = _run(tmp, "b_q", 5, 2, quantile=0.6, against=out["b"])
    return out


def _pool(*paths: str) -> dict[str, Any]:
    return capacity_pool.run(argparse.Namespace(results=list(paths)))


def _approx_equal(pooled: Any, single: Any, path: str = "") -> None:
    """Equal key for key, floats within rounding (sums taken in another order), nan where nan."""
    if isinstance(single, dict):
        assert set(pooled) >= set(single), path
        for key in single:
            _approx_equal(pooled[key], single[key], f"{path}.{key}")
    elif isinstance(single, list | tuple):
        assert len(pooled) == len(single), path
        for i, (x, y) in enumerate(zip(pooled, single, strict=True)):
            _approx_equal(x, y, f"{path}[{i}]")
    elif isinstance(single, float) and math.isnan(single):
        assert math.isnan(pooled), path
    elif isinstance(single, float):
        assert pooled == pytest.approx(single, rel=1e-12, abs=1e-12), path
    else:
        assert pooled == single, path


def test_pooling_consecutive_ranges_gives_the_run_over_their_union(runs: dict[str, str]) -> None:
    single = json.loads(Path(runs["union"]).read_text())
    pooled = _pool(runs["b"], runs["a"])  # any order: sorted by first seed
    assert pooled["first_seed"] == 3 and pooled["seeds"] == 4 and pooled["pooled_from"] == [runs["a"], runs["b"]]
    _approx_equal(pooled, single)
    assert "seeds 3-6, pooled from" in capacity_pool.table(pooled)


def test_pooled_pairings_give_the_union_runs_pairing(runs: dict[str, str]) -> None:
    single = json.loads(Path(runs["union_q"]).read_text())
    pooled = _pool(runs["a_q"], runs["b_q"])
    assert pooled["against"]["file"] == f"{runs['a']} + {runs['b']}"
    _approx_equal({k: v for k, v in pooled["against"].items() if k not in ("file", "base")},
                  {k: v for k, v in single["against"].items() if k not in ("file", "base")})
    assert pooled["against"]["base"]["quantile"] == 0.3 and pooled["against"]["pooled"][0]["fixed_equal"]


def test_a_pooled_result_is_an_against_base_for_the_union_run(runs: dict[str, str], tmp_path: Path) -> None:
    base = tmp_path / "pooled.json"
    base.write_text(json.dumps(_pool(runs["a"], runs["b"])))
    again = _run(tmp_path, "again", 3, 4, quantile=0.6, against=str(base))
    pairing = json.loads(Path(again).read_text())["against"]
    _approx_equal(pairing["pooled"], json.loads(Path(runs["union_q"]).read_text())["against"]["pooled"])


def test_pairings_are_pooled_only_when_every_piece_has_one(runs: dict[str, str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    unpaired = json.loads(Path(runs["b_q"]).read_text())
    del unpaired["against"]
    path = tmp_path / "unpaired.json"
    path.write_text(json.dumps(unpaired))
    mixed = _pool(runs["a_q"], str(path))
    assert "against" not in mixed and "rows" in mixed
    assert "`against` left out: not every result has one" in capsys.readouterr().err


def test_a_base_written_before_the_price_floor_key_pools_with_one_that_has_it(runs: dict[str, str],
                                                                              tmp_path: Path) -> None:
    older = json.loads(Path(runs["a_q"]).read_text())
    older["against"]["base"]["price_floor"] = None  # echoed as null by a result written before the key
    path = tmp_path / "older.json"
    path.write_text(json.dumps(older))
    assert _pool(str(path), runs["b_q"])["against"]["base"]["price_floor"] is False


def test_one_piece_pools_to_itself(runs: dict[str, str]) -> None:
    _approx_equal(_pool(runs["union"]), json.loads(Path(runs["union"]).read_text()))


def _variant(tmp_path: Path, path: str, name: str, **changes: Any) -> str:
    result = json.loads(Path(path).read_text())
    result.update(changes)
    out = tmp_path / name
    out.write_text(json.dumps(result))
    return str(out)


def test_pieces_that_are_not_one_run_are_refused(runs: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(BenchInputError, match=r"seeds start at 3, not at 5.*without gap or overlap"):
        _pool(runs["a"], runs["a"])
    with pytest.raises(BenchInputError, match=r"seeds start at 6, not at 5"):
        _pool(runs["a"], _variant(tmp_path, runs["b"], "gap.json", first_seed=6))
    with pytest.raises(BenchInputError, match=r"quantile is 0\.6 there and 0\.3 in"):
        _pool(runs["a"], runs["b_q"])
    with pytest.raises(BenchInputError, match=r"rounds is 4 there and 3 in"):
        _pool(runs["a"], _variant(tmp_path, runs["b"], "rounds.json", rounds=4))
    with pytest.raises(BenchInputError, match=r"offline_seeds is 1; only the piece with the first seeds"):
        _pool(runs["a"], _variant(tmp_path, runs["b"], "offline.json", offline_seeds=1))
    with pytest.raises(BenchInputError, match=r"offline_seeds is 3, more than its 2 seeds"):
        _pool(_variant(tmp_path, runs["a"], "many.json", offline_seeds=3), runs["b"])
    rows = json.loads(Path(runs["b"]).read_text())["rows"][:2]
    with pytest.raises(BenchInputError, match=r"rows differ from those of"):
        _pool(runs["a"], _variant(tmp_path, runs["b"], "rows.json", rows=rows))
    with pytest.raises(BenchInputError, match=r"the pieces' `against` bases ran with different options"):
        _pool(runs["a_q"], _variant(tmp_path, runs["b_q"], "base.json", against={
            **json.loads(Path(runs["b_q"]).read_text())["against"],
            "base": {"quantile": 0.5, "level_weight": 0.0, "price_floor": False, "offline_seeds": 0}}))


def test_files_that_are_not_results_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "bare.json").write_text(json.dumps({"seeds": 1, "rows": [{"workload": "overload"}]}))
    with pytest.raises(BenchInputError, match=r"bad\.json: cannot read it as JSON"):
        _pool(str(tmp_path / "bad.json"))
    with pytest.raises(BenchInputError, match=r"missing\.json: cannot read it as JSON"):
        _pool(str(tmp_path / "missing.json"))
    with pytest.raises(BenchInputError, match=r"list\.json: not a `bench capacity --json` result"):
        _pool(str(tmp_path / "list.json"))
    with pytest.raises(BenchInputError, match=r"bare\.json: its rows carry no per-run lists"):
        _pool(str(tmp_path / "bare.json"))


def test_the_command_prints_one_json_document_and_refuses_with_exit_2(
        runs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "capacity_pool", runs["a"], runs["b"], "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seeds"] == 4 and {"rows", "pooled", "pooled_from"} <= set(out)
    assert main(["bench", "capacity_pool", runs["a"], runs["a"]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sowsched bench capacity_pool: ") and err.count("\n") == 1
