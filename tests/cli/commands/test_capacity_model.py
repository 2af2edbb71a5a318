"""`sowsched capacity-fit`: the printed `[platform.capacity]` table is the fitted model, a server reads it, and bad
input exits 2 naming this command's option."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from cli.main import main
from mechanism.capacity import CapacityModel
from models.capacity_fit import fitted_model, scaled_rows
from server.config import load_config

ROOT = Path(__file__).resolve().parents[3]
SERIES = f"{ROOT / '..' / 'shared' / 'data' / 'azure-capacity' / 'capacity_azure2019.csv'}:t7str"


def fit(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["capacity-fit", SERIES, "--C", "16", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_the_printed_table_reads_back_to_the_very_model_fitted(capsys: pytest.CaptureFixture[str]) -> None:
    text = fit(capsys, "--fit-rows", "168")
    assert text.startswith(f"# sowsched capacity-fit {SERIES} --C 16 --fit-rows 168: ")  # the command, to rerun
    table = tomllib.loads(text)["platform"]["capacity"]
    rows, _ = scaled_rows(SERIES, 16, fit_rows=168)
    want = fitted_model(rows, 16)  # the default: q 0.3, lam fitted
    assert CapacityModel.model_validate(table) == want
    assert table["level_weight"] == 0.02 and table["quantile"] == 0.3  # 2019 t7str's first week fits lam 0.02


def test_a_platform_file_with_the_table_gives_the_server_that_model(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text = fit(capsys, "--quantile", "0.2", "--price-floor")
    example = (ROOT / "examples" / "platform.toml").read_text(encoding="utf-8")
    path = tmp_path / "platform.toml"
    assert "\nC = 16 " in example  # the example platform's C, the --C the table was fitted for
    path.write_text(example + "\n" + text, encoding="utf-8")
    platform = load_config(path).platform
    rows, _ = scaled_rows(SERIES, 16)
    assert platform.C == 16 and platform.capacity == fitted_model(rows, 16, 0.2, price_floor=True)
    assert platform.capacity is not None and platform.capacity.price_floor == 16.0


def test_json_names_the_rows_fitted_and_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    out = fit(capsys, "--fit-rows", "168", "--level-weight", "0", "--json")
    assert out.count("\n") == 1
    result = json.loads(out)
    assert set(result) == {"C", "series", "fitted_rows", "capacity"} and result["C"] == 16
    assert result["fitted_rows"]["rows"] == 168 and abs(result["fitted_rows"]["mean"] - 16) < 0.05
    assert "level_weight" not in result["capacity"]  # lam 0: the fixed mean, dumped without the key


@pytest.mark.parametrize(("argv", "match"), [
    (["nope.csv:t7str", "--C", "16"], r"^sowsched capacity-fit: series nope\.csv:t7str: "),
    ([SERIES.replace("t7str", "t4str"), "--C", "16"], r"^sowsched capacity-fit: series .*: name a VM type"),
    ([SERIES, "--C", "16", "--fit-rows", "400"], r"^sowsched capacity-fit: --fit-rows 400: .* has 336 rows"),
])
def test_bad_input_exits_2_naming_this_commands_option(argv: list[str], match: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity-fit", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and re.search(match, err)


@pytest.mark.parametrize(("argv", "option"), [(["--C", "0"], "--C"), (["--C", "16", "--level-weight", "1"],
                                                                        "--level-weight")])
def test_a_bound_is_a_usage_error(argv: list[str], option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["capacity-fit", SERIES, *argv])
    assert info.value.code == 2 and f"argument {option}:" in capsys.readouterr().err
