"""Robust menu-based bundle prices of the stochastic variant (seed 002 Lemma E.2, Thm 5.2).

Bundle B_k holds nodes in some rounds and has a unit price p_k; R_k is the expected width of the relaxed
allocations it holds so far. A run of c nodes over [s, s + d) costs c p_k of the cheapest bundle k holding every
round of [s, s + d) with R_k + c <= 2 C_m (the whole width c, not the task's lambda c: a price that does not
depend on the reported distribution keeps Thm 3.2's truthfulness, and every bundle it admits, Lemma E.2 admits).
With no such bundle the run costs 2 H c, above any value (as p(C') = 2 H in eq. 7). Choosing a plan adds each
task's lambda c to the R_k of the bundle it was priced at.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from mechanism.launch_plan import LaunchPlan
from mechanism.platform import MAX_BUNDLES, Bundle, Platform
from mechanism.sow import SoW

ROOM_TOLERANCE = 1e-9  # R_k is a float sum of lambda c terms; a bundle filled exactly to 2 C_m stays usable


def check_duration_revealed(sow: SoW) -> None:
    """Thm 5.2 needs sigma(a, d) = d: raise ValueError unless every outcome's signal is its duration."""
    for i, (o, sig) in enumerate(zip(sow.outcomes, sow.signals, strict=True)):
        if sig != str(o.duration):
            raise ValueError(
                f"outcomes[{i}] has signal {sig!r} under signal_mode {sow.signal_mode!r}, but pricing 'stochastic' "
                f"needs the duration revealed at arrival (sigma(a, d) = d, Thm 5.2): use signal_mode 'duration'")


@dataclass(frozen=True)
class BundleMenu:
    """The bundle prices announced at a job's birth b and frozen for it (over rounds [b, b + horizon))."""

    birth: int
    cover: np.ndarray  # int64 (K, horizon + 1): cover[k, i] = rounds of [b, b + i) that bundle k holds
    unit: np.ndarray  # float64 (K,): p_k
    room: np.ndarray  # float64 (K,): 2 C_m - R_k at birth
    blocked: float  # the unit price of a run no bundle admits: 2 H

    def bundle(self, start: np.ndarray | int, concurrency: int, duration: np.ndarray | int) -> np.ndarray:
        """The cheapest bundle admitting each run (the lowest k on ties), -1 where none does."""
        lo, d = np.broadcast_arrays(np.asarray(start) - self.birth, np.asarray(duration))
        horizon = self.cover.shape[1] - 1
        if lo.size and (int(lo.min()) < 0 or int((lo + d).max()) > horizon or int(d.min()) < 1):
            raise ValueError(f"a window [start - {self.birth}, + duration) leaves the menu's {horizon} rounds "
                             "or is empty")
        shape = lo.shape
        lo, d = lo.ravel(), d.ravel()
        held = (self.cover[:, lo + d] - self.cover[:, lo]) == d[None, :]  # (K, n): B_k holds every round
        ok = held & (self.room[:, None] + ROOM_TOLERANCE >= concurrency)
        cost = np.where(ok, self.unit[:, None], np.inf)
        k = np.argmin(cost, axis=0) if cost.shape[0] else np.zeros(lo.size, dtype=np.int64)
        found = ok[k, np.arange(lo.size)] if cost.shape[0] else np.zeros(lo.size, dtype=bool)
        return np.where(found, k, -1).reshape(shape)

    def price(self, start: np.ndarray | int, concurrency: int, duration: np.ndarray | int) -> np.ndarray:
        """pi_b(s, c, d) = c p_k of the cheapest admitting bundle, c 2 H if none admits the run."""
        k = self.bundle(start, concurrency, duration)
        unit = np.where(k >= 0, self.unit[np.maximum(k, 0)] if self.unit.size else 0.0, self.blocked)
        return concurrency * unit


class BundleBook:
    """The bundles' rounds and prices and R_k, the expected width each holds (R_k never falls while the bundle can
    still price a run). The platform's bundles come first; with a rolling horizon (`bundle_window` W > 0) each
    window posts more (`post`), and bundles holding no round from then on are dropped (no later menu can use
    them). `observed` keeps the (birth, SoW) of the last W rounds' submissions (of the last window with any), what
    the next window refits on (models/stochastic/rolling.py)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self._origin = 0  # column 0 of _held is this round
        self._held = np.zeros((0, 0), dtype=np.int64)  # (K, rounds): 1 where bundle k holds the round
        self.unit = np.zeros(0, dtype=np.float64)  # p_k
        self.load = np.zeros(0, dtype=np.float64)  # R_k
        self.posted = b""  # SHA-256 chain over every post's (round, bundles), for the digest (empty: none)
        self.posted_round = -1  # the round of the last post
        self.observed: list[tuple[int, SoW]] = []
        self._add(platform.bundles)

    def _add(self, bundles: tuple[Bundle, ...]) -> None:
        end = max((hi for b in bundles for _, hi in b.rounds), default=0) - self._origin
        width = max(self._held.shape[1], end)
        held = np.zeros((self._held.shape[0] + len(bundles), width), dtype=np.int64)
        held[: self._held.shape[0], : self._held.shape[1]] = self._held
        for k, b in enumerate(bundles, start=self._held.shape[0]):
            for lo, hi in b.rounds:
                held[k, lo - self._origin: hi - self._origin] = 1
        self._held = held
        self.unit = np.concatenate([self.unit, np.array([b.price for b in bundles], dtype=np.float64)])
        self.load = np.concatenate([self.load, np.zeros(len(bundles), dtype=np.float64)])

    def post(self, round_: int, bundles: tuple[Bundle, ...]) -> None:
        """Add the bundles of a window starting at `round_` (each holds rounds >= round_ only); drop the bundles
        holding no round >= round_ and, when later ones exist, the observations born before round_ - W. Raises
        ValueError, changing nothing, if a bundle holds an earlier round or the book would exceed MAX_BUNDLES."""
        if round_ <= self.posted_round:
            raise ValueError(f"a window's bundles were posted at round {self.posted_round}: round {round_} comes "
                             "no later")
        for i, b in enumerate(bundles):
            if b.rounds[0][0] < round_:
                raise ValueError(f"bundles[{i}] holds round {b.rounds[0][0]}, before the current round {round_}: "
                                 "a window prices rounds from its start on")
        cut = min(max(round_ - self._origin, 0), self._held.shape[1])
        keep = self._held[:, cut:].any(axis=1)
        if int(keep.sum()) + len(bundles) > MAX_BUNDLES:
            raise ValueError(f"{int(keep.sum())} live bundles and {len(bundles)} posted exceed {MAX_BUNDLES}")
        self._held, self.unit, self.load = self._held[keep, cut:], self.unit[keep], self.load[keep]
        self._origin += cut
        self._add(bundles)
        text = json.dumps([round_, [b.model_dump(mode="json") for b in bundles]], sort_keys=True).encode()
        self.posted = hashlib.sha256(self.posted + text).digest()
        self.posted_round = round_
        recent = [(b, sow) for b, sow in self.observed if b >= round_ - self.platform.bundle_window]
        if recent:  # a window without submissions keeps the last ones seen (the next refit reuses them)
            self.observed = recent

    def observe(self, birth: int, sow: SoW) -> None:
        """Record a submission for the next window's refit (rolling horizon only)."""
        if self.platform.bundle_window:
            self.observed.append((birth, sow))

    def held_units(self, start: int, rounds: int) -> np.ndarray:
        """Units the bundles hold in each round of [start, start + rounds): C_m per bundle holding it."""
        out = np.zeros(rounds, dtype=np.int64)
        lo, hi = max(start - self._origin, 0), min(start + rounds - self._origin, self._held.shape[1])
        if hi > lo:
            out[lo + self._origin - start: hi + self._origin - start] = self._held[:, lo:hi].sum(axis=0)
        return out * self.platform.C_m

    def menu(self, birth: int) -> BundleMenu:
        """Freeze the bundle prices and rooms of [birth, birth + horizon) for a job born now."""
        h = self.platform.horizon
        window = np.zeros((self._held.shape[0], h), dtype=np.int64)
        first = birth - self._origin
        n = max(min(self._held.shape[1] - first, h), 0)
        window[:, :n] = self._held[:, first: first + n]
        cover = np.concatenate([np.zeros((window.shape[0], 1), dtype=np.int64), np.cumsum(window, axis=1)], axis=1)
        return BundleMenu(birth=birth, cover=cover, unit=self.unit.copy(), room=2.0 * self.platform.C_m - self.load,
                          blocked=2.0 * self.platform.H)

    def commit(self, menu: BundleMenu, sow: SoW, plan: LaunchPlan) -> None:
        """R_k += lambda c for every task (outcome) the plan runs, at the bundle it was priced at."""
        t = sow.table
        starts = plan.outcome_starts(sow)
        runs = starts >= 0
        if not np.any(runs):
            return
        k = menu.bundle(menu.birth + starts[runs], sow.concurrency, t.duration[runs])
        if np.any(k < 0):
            raise ValueError("a plan runs an outcome that no bundle admits (its price is above any value)")
        np.add.at(self.load, k, t.probability[runs] * sow.concurrency)

    def state_bytes(self) -> bytes:
        """R_k of every bundle, and the bundles posted since the platform's (none without a rolling horizon), for
        the state digest."""
        return self.load.tobytes() + self.posted
