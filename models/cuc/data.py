"""Load the hourly available-capacity series (one per VM type) of the CUC paper's Azure datasets."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.arrays import FloatArray
from models.data import AZURE_CAPACITY_COLUMNS as COLUMNS
from models.data import read_text


@dataclass(frozen=True)
class CapacityData:
    """Hourly available cores per VM type, in time order; every type has the same hours."""

    hours: tuple[str, ...]
    series: dict[str, FloatArray]

    @property
    def vm_types(self) -> tuple[str, ...]:
        return tuple(sorted(self.series))

    def of(self, vm_type: str) -> FloatArray:
        """The series of one VM type; a ValueError naming the known types otherwise."""
        if vm_type not in self.series:
            raise ValueError(f"vm-type={vm_type!r} is not in the data (known: {', '.join(self.vm_types)})")
        return self.series[vm_type]


def load_capacity(path: str | Path) -> CapacityData:
    """Read `TimeStamp,Column1,TotalCores` rows (CSV or gzip CSV) into one hourly series per VM type."""
    path = Path(path)
    reader = csv.DictReader(io.StringIO(read_text(path)))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)} (need {', '.join(COLUMNS)})")
    values: dict[str, dict[str, float]] = {}
    for line, row in enumerate(reader, start=2):
        try:
            cores = float(row["TotalCores"])
        except (TypeError, ValueError):
            raise ValueError(f"{path}:{line}: TotalCores={row['TotalCores']!r} is not a number") from None
        if not np.isfinite(cores) or cores < 0:
            raise ValueError(f"{path}:{line}: TotalCores={cores} must be finite and >= 0")
        values.setdefault(row["Column1"], {})[row["TimeStamp"]] = cores
    if not values:
        raise ValueError(f"{path}: no capacity rows")
    hours = tuple(sorted({h for per_type in values.values() for h in per_type}))
    for vm_type, per_type in values.items():
        if len(per_type) != len(hours):
            raise ValueError(f"{path}: VM type {vm_type!r} has {len(per_type)} hours, the file {len(hours)}")
    series = {t: np.array([per_type[h] for h in hours], dtype=np.float64) for t, per_type in values.items()}
    return CapacityData(hours, series)
