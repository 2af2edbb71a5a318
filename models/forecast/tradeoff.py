"""Survival-vs-utilisation trade-off curves over the cut-off probability: dominated area and PNG plots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from models.forecast.scores import Score


def curve_points(scores: Sequence[Score]) -> list[tuple[float, float]]:
    """(survival, utilisation) of each cut-off whose two scores are defined."""
    return [(s.survival, s.utilization) for s in scores if s.survival is not None and s.utilization is not None]


def dominated_area(points: Sequence[tuple[float, float]], reference: tuple[float, float] = (0.5, 0.0)) -> float:
    """Area of {(s, u): s_ref <= s <= s_i, u_ref <= u <= u_i for some point i}: higher is better.

    The union of the rectangles between the reference and each point (the 2-d hypervolume indicator): a
    curve to the top right of another dominates more area.
    """
    s_ref, u_ref = reference
    kept = sorted((s, u) for s, u in points if s > s_ref and u > u_ref)
    area, best_u = 0.0, u_ref
    # sweep survival from the right: each strip [s_{i-1}, s_i] is covered up to the best u at or beyond s_i
    for i in range(len(kept) - 1, -1, -1):
        s, u = kept[i]
        best_u = max(best_u, u)
        left = kept[i - 1][0] if i > 0 else s_ref
        area += (s - left) * (best_u - u_ref)
    return float(area)


def plot_curves(curves: Mapping[str, Sequence[tuple[float, float, float]]], path: str, title: str) -> None:
    """One PNG: each model's (cut-off, survival, utilisation) points joined in cut-off order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for name, rows in curves.items():
        if not rows:
            continue
        ordered = sorted(rows)
        ax.plot([r[1] for r in ordered], [r[2] for r in ordered], marker="o", label=name)
        for c, s, u in ordered[:1] + ordered[-1:]:
            ax.annotate(f"{c:g}", (s, u), fontsize=7, textcoords="offset points", xytext=(3, 3))
    ax.set_xlabel("survival")
    ax.set_ylabel("utilisation")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def rank(areas: dict[str, float]) -> list[str]:
    """Model names by decreasing dominated area (ties by name)."""
    return sorted(areas, key=lambda name: (-areas[name], name))


def reference_ok(reference: tuple[float, float]) -> tuple[float, float]:
    if not all(0.0 <= v < 1.0 for v in reference) or not np.all(np.isfinite(reference)):
        raise ValueError(f"reference={reference} must have both coordinates in [0, 1)")
    return reference
