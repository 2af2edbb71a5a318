"""PNG plots of a welfare sweep: welfare and ratio against load, prices and load over time, oracle calibration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after use("Agg")
import numpy as np

FILES = ("welfare_vs_load.png", "prices_and_load.png", "calibration.png")


def write_plots(runs: list[dict[str, Any]], summary: list[dict[str, Any]], calibration: dict[str, Any],
                out_dir: Path) -> list[str]:
    """Write the three PNGs into `out_dir`; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / name for name in FILES]
    _welfare_vs_load(runs, summary, paths[0])
    _prices_and_load(runs, paths[1])
    _calibration(calibration, paths[2])
    return [str(p) for p in paths]


def _welfare_vs_load(runs: list[dict[str, Any]], summary: list[dict[str, Any]], path: Path) -> None:
    fig, (ax_w, ax_r) = plt.subplots(1, 2, figsize=(12, 4.5))
    loads = [s["load"] for s in summary]
    for key, label, color, style in (("welfare", "mechanism", "C0", "-"), ("fcfs_welfare", "FCFS", "C2", "-"),
                                     ("reservation_welfare", "reservation", "C3", "-"),
                                     ("offline_value", "offline optimum", "k", "--")):
        per_load = [[r[key] for r in runs if r["load"] == load] for load in loads]
        means = [float(np.mean(v)) for v in per_load]
        stds = [float(np.std(v)) for v in per_load]
        ax_w.errorbar(loads, means, yerr=stds, label=label, color=color, marker="o", capsize=4, linestyle=style)
        for load, vals in zip(loads, per_load, strict=True):
            ax_w.scatter([load] * len(vals), vals, color=color, alpha=0.25, s=12)
    ax_w.set_xlabel("load")
    ax_w.set_ylabel("welfare (mean ± std over seeds)")
    ax_w.set_title("Welfare against load")
    ax_w.legend()
    ratios = [[r["ratio"] for r in runs if r["load"] == load and r["ratio"] is not None] for load in loads]
    for load, vals in zip(loads, ratios, strict=True):
        ax_r.scatter([load] * len(vals), vals, color="C0", alpha=0.35, s=14)
    cr = [s["competitive_ratio"] if s["competitive_ratio"] is not None else np.nan for s in summary]
    crb = [s["competitive_ratio_bound"] if s["competitive_ratio_bound"] is not None else np.nan for s in summary]
    ax_r.plot(loads, cr, marker="o", color="C0", label="E[offline] / E[mechanism]")
    ax_r.plot(loads, crb, linestyle="--", color="C1", label="E[offline bound] / E[mechanism]")
    ax_r.axhline(1.0, color="grey", linewidth=0.8)
    ax_r.set_xlabel("load")
    ax_r.set_ylabel("competitive ratio (dots: single seeds)")
    ax_r.set_title("Offline optimum over mechanism welfare")
    ax_r.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _prices_and_load(runs: list[dict[str, Any]], path: Path) -> None:
    """One panel per load (its first seed): unit price (log), running load, expected usage y, evictions."""
    loads = sorted({r["load"] for r in runs})
    fig, axes = plt.subplots(len(loads), 1, figsize=(11, 3.0 * len(loads)), squeeze=False, sharex=True)
    for ax, load in zip(axes[:, 0], loads, strict=True):
        run = min((r for r in runs if r["load"] == load), key=lambda r: r["seed"])
        s = run["series"]
        t = np.arange(len(s["running"]))
        ax.step(t, s["running"], where="post", color="C0", label="running (committed) load")
        ax.plot(t, s["expected_usage"], color="C2", label="expected usage y")
        ax.axhline(s["capacity"][0], color="grey", linestyle=":", label="capacity C")
        if s["evictions"]:
            ax.vlines(s["evictions"], 0, s["capacity"][0], color="C3", alpha=0.6, label="eviction")
        ax.set_ylabel("nodes")
        ax.set_title(f"load {load:g}, seed {run['seed']}: {len(s['evictions'])} evictions")
        price_ax = ax.twinx()
        price_ax.semilogy(t, np.maximum(s["unit_price"], 1e-12), color="C1", label="unit price p(y)")
        price_ax.set_ylabel("unit price")
        lines = ax.get_legend_handles_labels()
        plines = price_ax.get_legend_handles_labels()
        ax.legend(lines[0] + plines[0], lines[1] + plines[1], loc="upper left", fontsize=8)
    axes[-1, 0].set_xlabel("round")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _calibration(calibration: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 5.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect calibration")
    for key, label, color in (("announced", "announced estimate", "C0"), ("raw", "raw estimate", "C1")):
        bins = [b for b in calibration[key] if b["count"]]
        if not bins:
            continue
        x = [b["mean_estimate"] for b in bins]
        y = [b["failure_rate"] for b in bins]
        sizes = [20 + 180 * b["count"] / max(c["count"] for c in bins) for b in bins]
        ax.plot(x, y, color=color, alpha=0.6)
        ax.scatter(x, y, s=sizes, color=color, label=label)
        for b, xi, yi in zip(bins, x, y, strict=True):
            ax.annotate(str(b["count"]), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("estimated failure probability (bin mean)")
    ax.set_ylabel("realized failure frequency")
    ax.set_title(f"Failure oracle calibration ({calibration['jobs']} scheduled jobs)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
