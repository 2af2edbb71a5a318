"""Paired differences over seeds: their mean and standard error, and a seed's difference averaged over series."""

from __future__ import annotations

import math


def per_seed(series: list[list[float]]) -> list[float]:
    """Seed k's difference averaged over the series."""
    return [mean(list(xs)) for xs in zip(*series, strict=True)]


def paired_mean(xs: list[float]) -> tuple[float, float]:
    """Mean and standard error of paired differences (nan se for one)."""
    return mean(xs), (std(xs) / math.sqrt(len(xs)) if len(xs) > 1 else math.nan)


def mean(xs: list[float]) -> float:
    """The mean (nan for none)."""
    return sum(xs) / len(xs) if xs else math.nan


def std(xs: list[float]) -> float:
    """The sample standard deviation (n - 1 in the denominator)."""
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
