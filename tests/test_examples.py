"""Every file in examples/ validates: the configurations load (the tenants' one only with its token variables set),
the SoW against the platform, the workload file loads and simulates; the JSON shown in the docs validates too."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli.commands.jobs import read_sow
from mechanism.engine import Engine
from mechanism.sow import SoW
from models.capacity_fit import fitted_model, scaled_rows
from models.simulation import run_simulation
from models.workloads import load_workload_file, parse_workload
from server.config import ConfigError, load_config
from tests.tolerance import assert_fit_close

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TOKENS = {"SOWSCHED_OPERATOR_TOKEN": "operator-example-token", "SOWSCHED_ACME_TOKEN": "acme-example-token",
          "SOWSCHED_GLOBEX_TOKEN": "globex-example-token"}


def test_examples_holds_the_files_the_readme_names() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir()) == ["W.json", "capacity.toml", "features.json",
                                                          "pipeline-sow.json", "platform.toml", "sow.json",
                                                          "tenants.toml"]


def test_the_features_example_is_a_feature_submission_the_server_builds_a_sow_from() -> None:
    from models.predict.online import DurationEngine
    from server.prediction import Predictions

    data = read_sow(EXAMPLES / "features.json", features=True)
    platform = load_config(EXAMPLES / "platform.toml").platform
    sow, logged = Predictions(DurationEngine().config, round_seconds=900).sow("acme", data["features"], platform)
    # before any completion the law is the request as a point: 5,400 s on 900 s rounds is 6 rounds
    assert [(o.arrival_offset, o.duration, o.probability) for o in sow.outcomes] == [(0, 6, 0.8), (1, 6, 0.2)]
    assert logged["features"]["tags"] == ["nightly", "resnet"] and sow.concurrency == 2


def test_the_platform_example_loads_open_and_so_only_for_loopback() -> None:
    config = load_config(EXAMPLES / "platform.toml")
    assert not config.auth_enabled and config.tenants == () and config.oracle == "mc"
    assert (config.platform.C, config.platform.C_m, config.platform.D_m, config.platform.S_m) == (16, 4, 6, 24)


def test_the_tenants_example_loads_with_its_token_variables_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    config = load_config(EXAMPLES / "tenants.toml")
    assert config.tenants == ("acme", "globex") and dict(config.max_active_jobs) == {"acme": 500}
    assert config.tokens == {"operator-example-token": "operator", "acme-example-token": "acme",
                             "globex-example-token": "globex"}
    assert config.platform == load_config(EXAMPLES / "platform.toml").platform


@pytest.mark.parametrize("unset", sorted(TOKENS))
def test_the_tenants_example_is_refused_naming_the_variable_that_is_unset(unset: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(unset)
    with pytest.raises(ConfigError, match=rf"tenants\.toml: .*token_env='{unset}': the variable is unset"):
        load_config(EXAMPLES / "tenants.toml")


def test_the_tenants_example_needs_no_token_to_replay_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TOKENS:
        monkeypatch.delenv(name, raising=False)
    config = load_config(EXAMPLES / "tenants.toml", resolve_tokens=False)
    assert config.tenants == ("acme", "globex") and config.tokens == {}


def test_the_capacity_example_is_the_platform_example_with_the_model_capacity_fit_prints() -> None:
    platform = load_config(EXAMPLES / "capacity.toml").platform
    series = f"{ROOT.parent / 'shared' / 'data' / 'azure-capacity' / 'capacity_azure2019.csv'}:t7str"
    rows, _ = scaled_rows(series, 16, fit_rows=168)  # the command in the file's header
    # the fit is BLAS-backed (scikit-learn's mixture): its last bits are the machine's, so within FIT_RTOL
    assert platform.capacity is not None
    assert_fit_close(platform.capacity.model_dump(), fitted_model(rows, 16).model_dump())
    assert platform.model_copy(update={"capacity": None}) == load_config(EXAMPLES / "platform.toml").platform


def test_the_capacity_example_quotes_the_sow_example_and_takes_a_capacity_report() -> None:
    platform = load_config(EXAMPLES / "capacity.toml").platform
    engine = Engine(platform)
    engine.report_capacity(0, 12)
    quote = engine.submit("etl-1", SoW.parse(read_sow(EXAMPLES / "sow.json"), platform))
    assert quote.job == "etl-1" and engine.capacity_of(0) == 12


def test_the_sow_example_passes_the_cli_check_and_the_platform_bounds() -> None:
    data = read_sow(EXAMPLES / "sow.json")
    sow = SoW.parse(data, load_config(EXAMPLES / "platform.toml").platform)
    assert sow.concurrency == 2 and sow.value_steps == ((6, 20.0), (12, 5.0))
    assert [(o.arrival_offset, o.duration) for o in sow.outcomes] == [(0, 2), (1, 3)]


def test_the_workload_example_loads_and_simulates() -> None:
    workload = load_workload_file(EXAMPLES / "W.json")
    assert workload.name == "W" and [j.id for j in workload.jobs] == ["etl-1", "train-1", "etl-2", "report-1"]
    result = run_simulation(workload).summary()
    assert result["jobs"] == 4 and result["completed"] == 4 and result["welfare"] > 0
    assert result == run_simulation(load_workload_file(EXAMPLES / "W.json")).summary()  # deterministic


def test_the_json_shown_in_the_formats_page_validates() -> None:
    text = (ROOT / "docs" / "workloads-and-sows.md").read_text(encoding="utf-8")
    sow_doc, pipeline_doc, workload_doc = (json.loads(block)
                                           for block in re.findall(r"```json\n(.*?)```", text, re.S))
    assert sow_doc == json.loads((EXAMPLES / "sow.json").read_text(encoding="utf-8"))
    assert pipeline_doc == json.loads((EXAMPLES / "pipeline-sow.json").read_text(encoding="utf-8"))
    workload = parse_workload(workload_doc)
    assert [j.id for j in workload.jobs] == ["etl-1", "train-1"]
    SoW.parse(sow_doc, workload.platform)
    pipeline = SoW.parse(read_sow(EXAMPLES / "pipeline-sow.json"), workload.platform)
    assert pipeline.after == ("etl-1",) and pipeline.command[0] == "python" and pipeline.env == {"DATASET": "day-2"}
