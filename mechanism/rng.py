"""Counter-based random streams: a uniform number is a pure function of (seed, round, job, sample)."""

from __future__ import annotations

import numba
import numpy as np

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def stream_key(seed: int, round_: int, job: int) -> int:
    """One 64-bit key per (seed, round, job): the stream every sample of that job in that round draws from."""
    k = _mix((seed * _GOLDEN) & _MASK)
    k = _mix((k ^ (round_ + 0x632BE59BD9B4E019)) & _MASK)
    return _mix((k ^ (job * 0x8CB92BA72F3D8DD7 + 1)) & _MASK)


def capacity_key(seed: int, round_: int, offset: int) -> int:
    """The stream of the capacity error of round round_ + offset, drawn by the samples of round round_.

    Jobs key their streams by their sequence number (>= 0); capacity takes the negative ones, so no job shares it.
    """
    return stream_key(seed, round_, -1 - offset)


def _mix(z: int) -> int:
    z = (z + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


@numba.njit(cache=True, inline="always")
def uniform(key: np.uint64, sample: np.int64) -> float:  # pragma: no cover - compiled
    """splitmix64 of (key, sample) mapped to [0, 1) with 53 bits."""
    z = np.uint64(key) + np.uint64(sample + 1) * np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def uniforms(key: int, samples: int) -> np.ndarray:
    """The same numbers as `uniform(key, n)` for n in range(samples), computed with numpy."""
    with np.errstate(over="ignore"):
        n = np.arange(samples, dtype=np.uint64)
        z = np.uint64(key) + (n + np.uint64(1)) * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
