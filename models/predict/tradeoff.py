"""The risk trade-off of easy-learned: BSLD and AF over the risk parameter, against EASY++, as rows and a PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.hpc.jobs import Workload
from models.predict.jobs import JobTable
from models.predict.schedulers import run_predictive


def risk_tradeoff(workload: Workload, table: JobTable, risks: Sequence[float], **options: Any) -> dict[str, Any]:
    """EASY++ once, then easy-learned at each risk (the other options fixed)."""
    pp = run_predictive(workload, table, "easy-pp")
    rows = []
    for risk in risks:
        run = run_predictive(workload, table, "easy-learned", risk=risk, **options)
        rows.append({"risk": risk, "BSLD": run.metrics.BSLD, "AF": run.metrics.AF,
                     "bsld_vs_easy_pp": run.metrics.BSLD / pp.metrics.BSLD - 1.0,
                     "af_vs_easy_pp": run.metrics.AF / pp.metrics.AF - 1.0, "seconds": run.details["seconds"]})
    return {"easy_pp": {"BSLD": pp.metrics.BSLD, "AF": pp.metrics.AF}, "options": options, "rows": rows}


def plot_tradeoff(result: dict[str, Any], title: str, out: str | Path) -> None:
    """BSLD (left axis) and AF (right axis) of easy-learned over the risk, EASY++ as dashed lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    risks = [r["risk"] for r in result["rows"]]
    fig, left = plt.subplots(figsize=(6.4, 4.0))
    right = left.twinx()
    left.plot(risks, [r["BSLD"] for r in result["rows"]], "o-", color="tab:blue", label="easy-learned BSLD")
    left.axhline(result["easy_pp"]["BSLD"], color="tab:blue", ls="--", label="EASY++ BSLD")
    left.axhline(0.9 * result["easy_pp"]["BSLD"], color="tab:blue", ls=":", label="target: EASY++ BSLD - 10%")
    right.plot(risks, [r["AF"] for r in result["rows"]], "s-", color="tab:red", label="easy-learned AF")
    right.axhline(result["easy_pp"]["AF"], color="tab:red", ls="--", label="EASY++ AF")
    left.set_xlabel("risk: backfill when P(delaying the head's reservation) <= risk")
    left.set_ylabel("BSLD")
    right.set_ylabel("AF (s)")
    left.set_title(title)
    lines = left.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    left.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
