"""Every named forecaster is a models.predictive.Model and answers on real Azure windows."""

import numpy as np
import pytest

from models.forecast.base import Ahead
from models.forecast.names import MODELS
from models.forecast.registry import ModelSpec
from models.forecast.series import aggregate, load_table
from models.predictive import Model, Predictive

DATA = "../shared/data/azure-vm-cpu"


@pytest.mark.parametrize("name", MODELS)
def test_every_model_fits_a_real_vm_and_predicts_laws(name: str) -> None:
    maxes, avgs = load_table(f"{DATA}/max.csv.gz"), load_table(f"{DATA}/avg.csv.gz")
    for vm in maxes.ids[:1]:
        series = aggregate(maxes.column(vm), avgs.column(vm), 12)
        model = ModelSpec(name).build(60)
        assert isinstance(model, Model)
        model.fit(series.head(70))
        law = model.predict(Ahead(series.head(70), 1 if name == "markovx" else 3))
        assert isinstance(law, Predictive)
        assert np.all(np.isfinite(law.quantile(0.99)))
        one = model.one_step(series, np.arange(70, len(series)))
        assert len(one) == len(series) - 70


def test_model_spec_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="model='nn'"):
        ModelSpec("nn")
    with pytest.raises(ValueError, match="residuals='cauchy'"):
        ModelSpec("ar1", residuals="cauchy")
