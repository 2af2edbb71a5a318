"""A rolling horizon for the bundle prices: each window's prior refitted on the submissions observed, re-solved."""

from __future__ import annotations

from collections.abc import Sequence

from mechanism.bundle_pricing import BundleBook
from mechanism.engine import Engine, RoundReport
from mechanism.platform import Bundle, Platform
from mechanism.sow import SoW
from models.prior import JobPrior, Prior
from models.stochastic.pricing import exponential, solve_bundles


def window_prior(observed: Sequence[tuple[int, SoW]], start: int, window: int) -> Prior:
    """The empirical prior of the window [start, start + W): the submissions of the last window that had any
    ([start - k W, start - (k - 1) W), k >= 1 the least such) recur k W rounds later, each with its own SoW
    (probability 1), in the order observed."""
    if window < 1:
        raise ValueError(f"bundle_window={window} is below the bound 1")
    if not observed:
        return Prior(jobs=())
    newest = max(b for b, _ in observed)
    k = max((start - newest + window - 1) // window, 1)
    lo = start - k * window
    rows = [(b, sow) for b, sow in observed if lo <= b < lo + window]
    return Prior(jobs=tuple(JobPrior(id=f"w{start}-{i}", birth=b + k * window, sows=(sow,), probability=(1.0,))
                            for i, (b, sow) in enumerate(rows)))


def window_bundles(book: BundleBook, platform: Platform, start: int) -> tuple[Bundle, ...]:
    """The bundles of the window starting at `start`: the App. E LP of `window_prior` under C' = C_sim / 2 less
    the units the bundles still held hold (so all bundles together keep at most floor(C') units a round, and
    Lemma E.2's relaxed load stays at most C_sim), its unit allocation and p_k (models/stochastic/pricing.py).
    Empty when nothing was ever observed or the LP allocates nothing."""
    prior = window_prior(book.observed, start, platform.bundle_window)
    if not prior.jobs:
        return ()
    return solve_bundles(prior, exponential(platform), book.held_units)[3]


def window_due(engine: Engine) -> bool:
    """Whether the current round starts a rolling horizon's window (pricing 'stochastic', bundle_window W > 0,
    round a positive multiple of W) whose bundles are not posted yet."""
    window = engine.platform.bundle_window
    return (engine.bundles is not None and window > 0 and engine.now > 0 and engine.now % window == 0
            and engine.bundles.posted_round != engine.now)


class RollingEngine(Engine):
    """An in-process engine that posts each window's bundles when a round starts one (what the server's writer
    does, logging them): for simulations of a rolling horizon."""

    def advance(self) -> RoundReport:
        report = super().advance()
        if window_due(self):
            assert self.bundles is not None
            self.post_bundles(self.now, window_bundles(self.bundles, self.platform, self.now))
        return report
