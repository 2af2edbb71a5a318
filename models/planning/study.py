"""The seed's synthetic study (Sec. 5.3-5.4): Fig. 14-15 by size, the Fig. 11 hyperparameter grid, a table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.planning.methods import ALPHA, SAMPLES, SyntheticRun, run_synthetic
from models.planning.plan import SolveParams
from models.planning.synthetic import SIZES

METRICS = ("peak_reduction", "under_estimation", "over_estimation", "deadline_violation")
GRID_SAMPLES = tuple(range(5, 50, 5))  # K = 5, 10, ..., 45 (Fig. 11)
GRID_ALPHAS = tuple(round(0.1 * i, 1) for i in range(1, 10))  # alpha = 0.1, ..., 0.9


@dataclass(frozen=True)
class StudyConfig:
    sizes: tuple[int, ...] = SIZES
    instances: int = 5  # problems per size (seeds 0..instances-1)
    methods: tuple[str, ...] = ("manual", "det-p50", "cospis")
    samples: int = SAMPLES
    alpha: float = ALPHA
    runs: int = 25
    params: SolveParams = field(default_factory=SolveParams)
    grid_size: int = 30  # jobs per problem of the hyperparameter grid (0: no grid)
    grid_instances: int = 2
    grid_params: SolveParams = field(default_factory=lambda: SolveParams(time_limit=2.0))
    grid_samples: tuple[int, ...] = GRID_SAMPLES
    grid_alphas: tuple[float, ...] = GRID_ALPHAS


@dataclass
class StudyResult:
    runs: list[SyntheticRun]
    grid: dict[tuple[int, float], list[SyntheticRun]]

    def rows(self) -> list[dict[str, Any]]:
        return [{"n": x.n, "seed": x.seed, "method": x.plan.method, "status": x.plan.status, "gap": x.plan.gap,
                 "solve_s": x.plan.solve_s, **x.evaluation.as_dict()} for x in self.runs]

    def summary(self) -> dict[str, dict[str, float]]:
        """Mean of each metric over all problems, per method; `by_n` means per size."""
        out: dict[str, dict[str, float]] = {}
        for method in dict.fromkeys(x.plan.method for x in self.runs):
            mine = [x for x in self.runs if x.plan.method == method]
            out[method] = {m: float(np.mean([x.evaluation.as_dict()[m] for x in mine])) for m in METRICS}
            out[method]["peak_observed_mean"] = float(np.mean([x.evaluation.peak_observed_mean for x in mine]))
            for extra in ("deadline_violation_capped", "missed_capped"):
                out[method][extra] = float(np.mean([x.evaluation.as_dict()[extra] for x in mine]))
            out[method]["optimal_share"] = float(np.mean([x.plan.status == "optimal" for x in mine]))
        return out

    def by_n(self, method: str, metric: str) -> dict[int, float]:
        sizes = sorted({x.n for x in self.runs})
        return {n: float(np.mean([x.evaluation.as_dict()[metric] for x in self.runs
                                  if x.n == n and x.plan.method == method])) for n in sizes}


def run_study(config: StudyConfig, progress: Callable[[str], None] | None = None) -> StudyResult:
    """Every method on every problem of every size, then the (K, alpha) grid with COSPiS."""
    runs = []
    for n in config.sizes:
        for seed in range(config.instances):
            for method in config.methods:
                runs.append(run_synthetic(n, seed, method, config.params, config.samples, config.alpha,
                                          config.runs))
                if progress:
                    progress(f"n={n} seed={seed} {method}")
    grid: dict[tuple[int, float], list[SyntheticRun]] = {}
    if config.grid_size:
        for k in config.grid_samples:
            for alpha in config.grid_alphas:
                grid[(k, alpha)] = [run_synthetic(config.grid_size, seed, "cospis", config.grid_params, k, alpha,
                                                  config.runs) for seed in range(config.grid_instances)]
                if progress:
                    progress(f"grid K={k} alpha={alpha}")
    return StudyResult(runs, grid)


def table(result: StudyResult) -> str:
    """Markdown: the mean of each metric per method (percent for the ratios), and per size for Fig. 14."""
    lines = ["| method | peak reduction vs manual | under-estimation | over-estimation | deadline violation (s/job)"
             " | on C = p_est: violation (s/job) | missed runs | observed peak | optimal |",
             "|---|---|---|---|---|---|---|---|---|"]
    for method, mean in result.summary().items():
        lines.append(f"| {method} | {100 * mean['peak_reduction']:.2f} % | {100 * mean['under_estimation']:.1f} % | "
                     f"{100 * mean['over_estimation']:.1f} % | {mean['deadline_violation']:.3f} | "
                     f"{mean['deadline_violation_capped']:.3f} | {100 * mean['missed_capped']:.0f} % | "
                     f"{mean['peak_observed_mean']:.2f} | {100 * mean['optimal_share']:.0f} % |")
    methods = [m for m in dict.fromkeys(x.plan.method for x in result.runs) if m != "manual"]
    lines += ["", "| n | " + " | ".join(f"{m} under-est. | {m} violation | {m} violation on C = p_est | "
                                        f"{m} peak red." for m in methods) + " |",
              "|---|" + "---|" * (4 * len(methods))]
    for n in sorted({x.n for x in result.runs}):
        cells = []
        for m in methods:
            cells += [f"{100 * result.by_n(m, 'under_estimation')[n]:.1f} %",
                      f"{result.by_n(m, 'deadline_violation')[n]:.3f}",
                      f"{result.by_n(m, 'deadline_violation_capped')[n]:.3f}",
                      f"{100 * result.by_n(m, 'peak_reduction')[n]:.1f} %"]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(result: StudyResult, out: Path) -> list[Path]:
    """fig15_peaks.png (observed peaks by size and method), fig14_errors.png (under-estimation and deadline
    violation by size), fig11_grid.png (the four metrics over K x alpha)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = [_boxes(plt, result, ("peak",), "Observed peak CPU (cores)", out / "fig15_peaks.png"),
               _boxes(plt, result, ("under_estimation", "deadline_violation", "deadline_violation_capped"),
                      "Under-estimation error; deadline violation (s per job), free and on C = p_est",
                      out / "fig14_errors.png")]
    if result.grid:
        written.append(_heatmaps(plt, result, out / "fig11_grid.png"))
    return written


def _values(x: SyntheticRun, metric: str) -> list[float]:
    """Per-run values of a metric (the box plots summarise the runs of every problem of a size)."""
    ev = x.evaluation
    if metric == "peak":
        return [float(p) for p in ev.peaks]
    if metric == "under_estimation":
        return [max(0.0, (p - ev.peak_estimated) / ev.peak_estimated) for p in ev.peaks]
    if metric == "deadline_violation":
        return list(ev.violations)
    return list(ev.violations_capped)


def _boxes(plt: Any, result: StudyResult, metrics: Sequence[str], ylabel: str, path: Path) -> Path:
    methods = list(dict.fromkeys(x.plan.method for x in result.runs))
    if metrics != ("peak",):
        methods = [m for m in methods if m != "manual"]
    sizes = sorted({x.n for x in result.runs})
    width = max(6.0, 0.7 * len(sizes) * len(methods))
    fig, axes = plt.subplots(len(metrics), 1, figsize=(width, 3.5 * len(metrics)), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, metric in zip(axes[:, 0], metrics, strict=True):
        for i, method in enumerate(methods):
            data = [[v for x in result.runs if x.n == n and x.plan.method == method for v in _values(x, metric)]
                    for n in sizes]
            pos = [g * (len(methods) + 1) + i for g in range(len(sizes))]
            box = ax.boxplot(data, positions=pos, widths=0.8, patch_artist=True, showfliers=False)
            for patch in box["boxes"]:
                patch.set_facecolor(colours[i % len(colours)])
            ax.plot([], [], color=colours[i % len(colours)], lw=8, label=method)
        ax.set_xticks([g * (len(methods) + 1) + (len(methods) - 1) / 2 for g in range(len(sizes))])
        ax.set_xticklabels([f"n={n}" for n in sizes])
        ax.set_ylabel(metric.replace("_", " "))
        ax.legend(fontsize=8)
    axes[0, 0].set_title(ylabel)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def grid_axes(result: StudyResult) -> tuple[list[int], list[float]]:
    """The K and alpha values of the grid, sorted."""
    return sorted({k for k, _ in result.grid}), sorted({a for _, a in result.grid})


def grid_means(result: StudyResult, metric: str) -> np.ndarray:
    """(len(K values), len(alpha values)) means of a metric over the grid's problems."""
    ks, alphas = grid_axes(result)
    return np.array([[np.mean([x.evaluation.as_dict()[metric] for x in result.grid[(k, a)]]) for a in alphas]
                     for k in ks])


def _heatmaps(plt: Any, result: StudyResult, path: Path) -> Path:
    fig, axes = plt.subplots(2, 2, figsize=(11, 9))
    # Fig. 11b's deadline violation is shown on C = p_est: on unlimited CPUs the generator's deadlines never bind.
    panels = ("peak_reduction", "under_estimation", "over_estimation", "deadline_violation_capped")
    for ax, metric in zip(axes.ravel(), panels, strict=True):
        values = grid_means(result, metric)
        shown = values if metric.startswith("deadline") else values * 100
        # Brighter is better (Fig. 11): a high peak reduction, low errors and violations.
        cmap = "viridis" if metric == "peak_reduction" else "viridis_r"
        im = ax.imshow(shown, cmap=cmap, aspect="auto", origin="lower")
        ks, alphas = grid_axes(result)
        ax.set_xticks(range(len(alphas)), [f"{a:.2g}" for a in alphas])
        ax.set_yticks(range(len(ks)), [str(k) for k in ks])
        ax.set_xlabel("tolerance alpha")
        ax.set_ylabel("samples K")
        unit = "s per job" if metric.startswith("deadline") else "%"
        title = "deadline violation on C = p_est" if metric == "deadline_violation_capped" else metric.replace("_", " ")
        ax.set_title(f"{title} ({unit})")
        for (i, j), v in np.ndenumerate(shown):
            ax.text(j, i, f"{v:.1f}" if unit == "%" else f"{v:.2f}", ha="center", va="center", fontsize=6,
                    color="white")
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
