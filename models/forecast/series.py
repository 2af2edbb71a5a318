"""Window-aggregated CPU series (the forecasters' data) and the loaders of the max / average CSV files."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.arrays import FloatArray


@dataclass(frozen=True)
class Series:
    """One value per window: y the target (the window's max), x a regressor (its average), raw its samples.

    `start` is the absolute index of the first window, so seasonal phases survive slicing.
    """

    y: FloatArray
    x: FloatArray | None = None
    raw: FloatArray | None = None
    start: int = 0

    def __post_init__(self) -> None:
        y = np.asarray(self.y, dtype=np.float64).ravel()
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite")
        object.__setattr__(self, "y", y)
        if self.x is not None:
            x = np.asarray(self.x, dtype=np.float64).ravel()
            if x.shape != y.shape or not np.all(np.isfinite(x)):
                raise ValueError(f"x must be finite with y's shape {y.shape}, got {x.shape}")
            object.__setattr__(self, "x", x)
        if self.raw is not None:
            raw = np.atleast_2d(np.asarray(self.raw, dtype=np.float64))
            if raw.shape[0] != y.size:
                raise ValueError(f"raw has {raw.shape[0]} windows for {y.size} values of y")
            object.__setattr__(self, "raw", raw)
        if self.start < 0:
            raise ValueError(f"start={self.start} must be >= 0")

    def __len__(self) -> int:
        return int(self.y.size)

    def window(self, begin: int, end: int) -> Series:
        """Windows [begin, end) as a Series of their own (phase kept)."""
        if not 0 <= begin <= end <= len(self):
            raise ValueError(f"window [{begin}, {end}) must lie within [0, {len(self)}]")
        return Series(self.y[begin:end], None if self.x is None else self.x[begin:end],
                      None if self.raw is None else self.raw[begin:end], self.start + begin)

    def head(self, end: int) -> Series:
        return self.window(0, end)

    def require_x(self, who: str) -> FloatArray:
        if self.x is None:
            raise ValueError(f"{who} needs the window averages (x) as a regressor; give an average series")
        return self.x

    def require_raw(self, who: str) -> FloatArray:
        if self.raw is None:
            raise ValueError(f"{who} needs the samples inside each window (raw)")
        return self.raw


def aggregate(samples_max: FloatArray, samples_avg: FloatArray | None, size: int) -> Series:
    """Disjoint windows of `size` samples from the first one (a partial last window is dropped).

    y = the window's max of the sample maxima, x = the mean of the sample averages, raw = the sample maxima.
    """
    if size < 1:
        raise ValueError(f"window size={size} must be >= 1 sample")
    m = np.asarray(samples_max, dtype=np.float64).ravel()
    n = m.size // size
    if n == 0:
        raise ValueError(f"a series of {m.size} samples holds no window of {size}")
    raw = m[: n * size].reshape(n, size)
    x = None
    if samples_avg is not None:
        a = np.asarray(samples_avg, dtype=np.float64).ravel()
        if a.size != m.size:
            raise ValueError(f"the average series has {a.size} samples, the max series {m.size}")
        x = a[: n * size].reshape(n, size).mean(axis=1)
    return Series(raw.max(axis=1), x, raw)


@dataclass(frozen=True)
class Table:
    """The VM columns of one CSV: ids in file order and a (samples, vms) matrix."""

    ids: tuple[str, ...]
    values: FloatArray

    def column(self, vm: str) -> FloatArray:
        if vm not in self.ids:
            raise ValueError(f"column {vm!r} is not in the file (it has {len(self.ids)} VM columns)")
        return np.asarray(self.values[:, self.ids.index(vm)], dtype=np.float64)


def load_table(path: str) -> Table:
    """Read a VM CPU CSV or gzip CSV: one column per VM id; an optional `window` index column is dropped."""
    import pandas as pd

    frame = pd.read_csv(path, compression="infer")
    frame = frame.drop(columns=[c for c in frame.columns if str(c).lower() in {"window", "time", "timestamp"}])
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise ValueError(f"{path}: no VM column or no row")
    values = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = _first(bad)
        cell = frame.iat[row, col]
        what = "a missing value" if pd.isna(cell) else repr(cell) if isinstance(cell, str) else f"{float(cell):g}"
        raise ValueError(f"{path}: column {frame.columns[col]!r}, data row {row + 1}: {what} is not a finite number "
                         "(one column per VM id, CPU in percent)")
    out = (values < 0) | (values > 100)
    if out.any():
        row, col = _first(out)
        raise ValueError(f"{path}: column {frame.columns[col]!r}, data row {row + 1}: {values[row, col]:g} is outside "
                         "[0, 100] percent")
    return Table(tuple(str(c) for c in frame.columns), values)


def _first(mask: np.ndarray) -> tuple[int, int]:
    """(row, column) of the first True cell of a 2-D mask, in row order."""
    rows, cols = np.nonzero(mask)
    return int(rows[0]), int(cols[0])
