"""Forecasters by name, with the options the CLI and the studies pass (one place that builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from models.forecast.ar import AR1, AR1X, ARI11
from models.forecast.autopilot import Autopilot
from models.forecast.base import Forecaster
from models.forecast.errors import make_errors
from models.forecast.markov import Markov
from models.forecast.names import MODELS
from models.forecast.tsdec import DECOMPOSITIONS, TSDec
from models.forecast.var import VAR1

NEEDS_AVERAGE = frozenset({"ar1x", "var1", "markovx"})


@dataclass(frozen=True)
class ModelSpec:
    """A forecaster's name and settings; `build(window_minutes)` makes a fresh, unfitted one."""

    name: str
    residuals: str = "normal"
    fit: str = "mle"
    states: int = 8
    partition: str = "quantile"
    half_life_minutes: float = 60.0
    breaks: int = 50
    seed: int = 0
    decomposition: str = "stl"  # TSDec's seasonal decomposition: "stl" or "classical" (CUC's, ten times faster)

    def __post_init__(self) -> None:
        if self.name not in MODELS:
            raise ValueError(f"model={self.name!r} is not one of {', '.join(MODELS)}")
        make_errors(self.residuals)
        if self.decomposition not in DECOMPOSITIONS:
            raise ValueError(f"decomposition={self.decomposition!r} is not one of {', '.join(DECOMPOSITIONS)}")

    def build(self, window_minutes: int) -> Forecaster:
        errors = make_errors(self.residuals, self.seed)
        if self.name == "ar1":
            return AR1(errors, method=self.fit)
        if self.name == "ar1x":
            return AR1X(errors)
        if self.name == "ari11":
            return ARI11(errors, method=self.fit)
        if self.name == "var1":
            return VAR1(errors)
        if self.name in ("markov", "markovx"):
            return Markov(self.states, self.partition, "max" if self.name == "markov" else "avg")
        if self.name == "tsdec":
            return TSDec(max(2, round(24 * 60 / window_minutes)), errors, method=self.decomposition)
        return Autopilot(half_life=self.half_life_minutes / window_minutes, breaks=self.breaks)
