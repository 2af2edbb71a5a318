"""Exponential posted prices over the relaxed simulator's expected usage y (Alg. 2, Alg. 3, eq. 7)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numba
import numpy as np

from mechanism.platform import Platform


def unit_price(y: np.ndarray | float, platform: Platform, capacity: np.ndarray | None = None) -> np.ndarray:
    """p(y) = (4 H D_m)^(y / C') / (2 D_m)   (eq. 7); `capacity` gives C' per round (docs/model.md 10.4)."""
    log_base = math.log(4.0 * platform.H * platform.D_m)
    c_prime = platform.sim_capacity if capacity is None else capacity
    return np.exp(np.asarray(y, dtype=np.float64) * (log_base / c_prime)) / (2.0 * platform.D_m)


class PriceMenu(Protocol):
    """What a launch plan and a bill read from a job's frozen prices: this module's `Menu` or a `BundleMenu`."""

    @property
    def birth(self) -> int: ...

    def price(self, start: np.ndarray | int, concurrency: int, duration: np.ndarray | int) -> np.ndarray: ...


@dataclass(frozen=True)
class Menu:
    """Prices announced at a job's birth b and frozen for it: the unit prices of [b, b + horizon)."""

    birth: int
    unit: np.ndarray  # unit[i] = p(y_b[b + i])

    def price(self, start: np.ndarray | int, concurrency: int, duration: np.ndarray | int) -> np.ndarray:
        """pi_b(s, c, d) = c * sum_{tau=s}^{s+d-1} p(y_b[tau]), the sum taken left to right over the window.

        A window's own terms only, added in a fixed order: no rounding from the rounds before s (unit prices span
        (4 H D_m)^k, and a difference of prefix sums over 1e11-priced rounds read a 1/6 round as 0.16663), and,
        float addition being monotone, a window never costs less after any of its unit prices rose.
        """
        lo, d = np.asarray(start) - self.birth, np.asarray(duration)
        end = lo + d  # broadcast: each (start, duration) pair's end; its extremes bound every window
        if not end.size:
            return np.zeros(end.shape)
        if int(lo.min()) < 0 or int(end.max()) > self.unit.size or int(d.min()) < 1:
            raise ValueError(f"a window [start - {self.birth}, + duration) leaves the menu's "
                             f"{self.unit.size} rounds or is empty")
        return concurrency * self._windows(int(lo.max()) + 1, int(d.max()))[lo, d - 1]

    def start_prices(self, n_starts: int, concurrency: int, duration: np.ndarray) -> np.ndarray:
        """[s, i] = pi_b(b + s, c, duration[i]) for s in [0, n_starts): `price` on that grid, compiled (the same
        sums in the same order, bit for bit)."""
        if duration.size and (int(duration.min()) < 1 or n_starts - 1 + int(duration.max()) > self.unit.size):
            raise ValueError(f"a window [start - {self.birth}, + duration) leaves the menu's "
                             f"{self.unit.size} rounds or is empty")
        return _start_prices(self.unit, n_starts, concurrency, duration)

    def _windows(self, starts: int, longest: int) -> np.ndarray:
        """table[i, k - 1] = unit[i] + unit[i + 1] + ... + unit[i + k - 1] for i < starts and k <= longest, added
        left to right (cumsum is sequential; terms past the end count 0)."""
        padded = np.zeros(starts + longest - 1, dtype=np.float64)
        n = min(self.unit.size, padded.size)
        padded[:n] = self.unit[:n]
        rows = np.arange(starts)[:, None] + np.arange(longest)  # row i is padded[i : i + longest]
        return np.cumsum(padded[rows], axis=1)


class PriceBook:
    """The relaxed simulator's expected committed usage y[tau] per absolute round; it never decreases."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self._base = 0  # absolute round of self._y[0]
        self._y = np.zeros(4 * platform.horizon, dtype=np.float64)

    def _ensure(self, end: int) -> None:
        need = end - self._base
        if need > self._y.size:
            grown = np.zeros(max(need, 2 * self._y.size), dtype=np.float64)
            grown[: self._y.size] = self._y
            self._y = grown

    def usage(self, start: int, length: int) -> np.ndarray:
        """y over [start, start + length) (a copy): a pure read, rounds outside the stored span read as 0."""
        lo = start - self._base
        out = np.zeros(length, dtype=np.float64)
        src_lo, src_hi = max(lo, 0), min(lo + length, self._y.size)
        if src_hi > src_lo:
            out[src_lo - lo: src_hi - lo] = self._y[src_lo:src_hi]
        return out

    def menu(self, birth: int, capacity: np.ndarray | None = None) -> Menu:
        """Freeze the prices of [birth, birth + horizon) for a job born now (C' per round from `capacity`)."""
        return Menu(birth=birth, unit=unit_price(self.usage(birth, self.platform.horizon), self.platform, capacity))

    def commit(self, birth: int, increment: np.ndarray) -> None:
        """y[birth + i] += increment[i] (the forced allocation of Alg. 2 line 4); increments must be >= 0."""
        if increment.size and float(increment.min()) < 0.0:
            raise ValueError("usage increments must be non-negative: y never decreases")
        self._ensure(birth + increment.size)
        lo = birth - self._base
        self._y[lo: lo + increment.size] += increment

    def forget_before(self, round_: int) -> None:
        """Drop rounds before `round_` (they are never priced again)."""
        drop = round_ - self._base
        if drop >= self._y.size // 2:
            self._y = np.concatenate([self._y[drop:], np.zeros(drop, dtype=np.float64)])
            self._base = round_

    def state_bytes(self, now: int) -> bytes:
        """y from `now` on up to the last non-zero round, for the state digest."""
        tail = self._y[max(now - self._base, 0):]
        nz = np.flatnonzero(tail)
        return tail[: (int(nz[-1]) + 1) if nz.size else 0].tobytes()


@numba.njit(cache=True, nogil=True)
def _start_prices(unit: np.ndarray, n_starts: int, concurrency: int,
                  duration: np.ndarray) -> np.ndarray:  # pragma: no cover (compiled)
    """`Menu.start_prices`: each start's window sums unit[s] + unit[s + 1] + ... left to right (as `Menu._windows`'
    cumsum adds them), then times c, as numpy multiplies."""
    n = duration.size
    longest = 0
    for i in range(n):
        longest = max(longest, duration[i])
    sums = np.empty((n_starts, longest))
    for s in range(n_starts):
        acc = 0.0
        for k in range(longest):
            x = unit[s + k] if s + k < unit.size else 0.0
            acc = x if k == 0 else acc + x
            sums[s, k] = acc
    out = np.empty((n_starts, n))
    c = np.float64(concurrency)
    for s in range(n_starts):
        for i in range(n):
            out[s, i] = c * sums[s, duration[i] - 1]
    return out


def plan_usage(concurrency: int, probability: np.ndarray, start_offset: np.ndarray,
               duration: np.ndarray, length: int) -> np.ndarray:
    """c * sum over outcomes of P * [start <= tau < start + d], for tau in [0, length); start < 0 means never."""
    inc, end = _usage(concurrency, probability, start_offset, duration, length)
    if end > length:
        raise ValueError(f"an outcome runs until offset {end}, past the {length} rounds of the usage")
    return inc


@numba.njit(cache=True, nogil=True)
def _usage(concurrency: int, probability: np.ndarray, start: np.ndarray, duration: np.ndarray,
           length: int) -> tuple[np.ndarray, int]:  # pragma: no cover (compiled)
    """`plan_usage` and the last end of a run (nothing added if it is past `length`): +P at each start, then -P at
    each end, added into each round in outcome order; their running sum left to right, times c. Rounding in the
    running sum can leave +-1e-16 where no outcome runs (counted exactly, in `cover`); there the increment is 0."""
    n = start.size
    last = 0
    for i in range(n):
        if start[i] >= 0:
            last = max(last, start[i] + duration[i])
    inc = np.zeros(length)
    if last > length:
        return inc, last
    diff = np.zeros(length + 1)
    cover = np.zeros(length + 1, dtype=np.int64)
    for i in range(n):
        if start[i] >= 0:
            diff[start[i]] += probability[i]
            cover[start[i]] += 1
    for i in range(n):
        if start[i] >= 0:
            diff[start[i] + duration[i]] += -probability[i]
            cover[start[i] + duration[i]] -= 1
    running, covered = 0.0, 0
    for k in range(length):
        running = diff[0] if k == 0 else running + diff[k]
        covered += cover[k]
        x = running * concurrency
        inc[k] = (x if x >= 0.0 or np.isnan(x) else 0.0) if covered > 0 else 0.0  # np.maximum(x, 0) where covered
    return inc, last
