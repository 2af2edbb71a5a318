"""Every model against the Autopilot recommender on the same windows (seed 004 Table 22's analogue)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from models.arrays import FloatArray
from models.forecast.evaluate import Protocol, evaluate
from models.forecast.registry import ModelSpec
from models.forecast.tradeoff import curve_points, dominated_area, plot_curves, rank, reference_ok


def compare(models: list[str], spec: Callable[[str], ModelSpec], protocol: Callable[[int], Protocol],
            windows: list[int], cutoffs: list[float], ids: list[str], maxes: FloatArray,
            avgs: FloatArray | None, reference: tuple[float, float], out: str) -> dict[str, Any]:
    """Rows per (window, model, cut-off), the dominated area per model and the ranking, one PNG per window."""
    import numpy as np

    reference_ok(reference)
    os.makedirs(out, exist_ok=True)
    result: dict[str, Any] = {"reference": list(reference), "cutoffs": cutoffs, "vms": len(ids), "windows": {}}
    for window in windows:
        rows, areas, curves, seconds, failed = [], {}, {}, {}, {}
        for name in models:
            start = time.perf_counter()
            pooled, per_vm = evaluate(spec(name), protocol(window), ids, maxes, avgs, np.asarray(cutoffs))
            seconds[name] = time.perf_counter() - start
            failed[name] = sum(1 for r in per_vm if r.error)
            for c, score in zip(cutoffs, pooled, strict=True):
                rows.append({"model": name, "cutoff": c, **score.as_dict()})
            areas[name] = dominated_area(curve_points(pooled), reference)
            curves[name] = [(c, s.survival, s.utilization) for c, s in zip(cutoffs, pooled, strict=True)
                            if s.survival is not None and s.utilization is not None]
        plot = os.path.join(out, f"tradeoff-{window}min.png")
        plot_curves(curves, plot, f"survival vs utilisation, {window}-minute windows, {len(ids)} VMs")
        result["windows"][str(window)] = {"rows": rows, "area": areas, "ranking": rank(areas), "plot": plot,
                                          "seconds": seconds, "failed_vms": failed}
    return result
