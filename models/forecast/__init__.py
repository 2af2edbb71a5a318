"""Forecasting a VM's foreground CPU with prediction intervals (seed 004 Part 1; the forecasters CUC reuses)."""

from models.forecast.ar import AR1, AR1X, ARI11
from models.forecast.autopilot import Autopilot
from models.forecast.base import Ahead, Forecaster, LocationScale
from models.forecast.errors import EmpiricalErrors, ErrorModel, GMMErrors, NormalErrors, SkewNormalErrors
from models.forecast.markov import Markov
from models.forecast.series import Series
from models.forecast.sliding import SlidingErrors, sliding_errors
from models.forecast.tsdec import TSDec
from models.forecast.var import VAR1

__all__ = [
    "AR1", "AR1X", "ARI11", "VAR1", "Ahead", "Autopilot", "EmpiricalErrors", "ErrorModel", "Forecaster", "GMMErrors",
    "LocationScale", "Markov", "NormalErrors", "Series", "SkewNormalErrors", "SlidingErrors", "TSDec",
    "sliding_errors",
]
