"""Each model package's names module: it imports nothing (the CLI's parser reads it), and its names are the ones its
registry builds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from models.cuc import names as cuc_names
from models.forecast import names as forecast_names
from models.planning import names as planning_names
from models.predict import names as predict_names

NAMES_MODULES = ("models.cuc.names", "models.forecast.names", "models.planning.names", "models.predict.names")


@pytest.mark.parametrize("module", NAMES_MODULES)
def test_a_names_module_loads_only_itself_and_its_packages(module: str) -> None:
    probe = ("import json, sys; before = set(sys.modules); import " + module +
             "; print(json.dumps(sorted(set(sys.modules) - before)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                                       text=True).stdout)
    parts = module.split(".")
    assert loaded == sorted(".".join(parts[:i]) for i in range(1, len(parts) + 1))


def test_the_forecast_registry_builds_exactly_the_named_forecasters_error_models_and_fits() -> None:
    from models.forecast.ar import AR1
    from models.forecast.errors import make_errors
    from models.forecast.registry import ModelSpec

    assert sorted(ModelSpec(name).build(60).name for name in forecast_names.MODELS) == sorted(forecast_names.MODELS)
    with pytest.raises(ValueError, match="model='ar2' is not one of ar1, ar1x"):
        ModelSpec("ar2")
    for name in forecast_names.ERROR_MODELS:
        make_errors(name)
    with pytest.raises(ValueError, match="residuals='laplace' is not one of normal, skewnorm"):
        make_errors("laplace")
    assert [AR1(method=m).method for m in forecast_names.FIT_METHODS] == list(forecast_names.FIT_METHODS)


def test_the_predictor_registry_keys_and_the_scheduler_names_are_the_names() -> None:
    from models.predict.evaluate import PREDICTORS
    from models.predict.schedulers import make_policy
    from tests.models.predict.conftest import make_table

    assert tuple(PREDICTORS) == predict_names.PREDICTORS
    table = make_table(submit=[0, 10], runtime=[5, 7])
    for name in predict_names.PREDICTIVE_SCHEDULERS:
        make_policy(name, table)
    with pytest.raises(ValueError, match="scheduler='easy-oracle' must be one of"):
        make_policy("easy-oracle", table)
    for corrector in predict_names.CORRECTORS:
        make_policy("easy-learned", table, corrector=corrector)


def test_cuc_builds_every_named_forecaster_through_the_forecast_registry() -> None:
    from models.cuc.protocol import forecaster_spec

    assert [forecaster_spec(name).name for name in cuc_names.FORECASTERS] == list(cuc_names.FORECASTERS)
    with pytest.raises(ValueError, match="forecaster='var1' is not one of tsdec, ar1"):
        forecaster_spec("var1")


def test_plan_runs_every_named_planner_and_refuses_others() -> None:
    from models.planning.methods import plan
    from models.planning.plan import SolveParams
    from models.planning.synthetic import generate

    problem = generate(3, seed=0).problem
    params = SolveParams(time_limit=5.0, workers=1, deterministic=True)
    for method in planning_names.METHODS:
        assert len(plan(problem, method, params, samples=2).starts) == problem.n
    with pytest.raises(ValueError, match="method='greedy' is not one of det-p50"):
        plan(problem, "greedy", params)
