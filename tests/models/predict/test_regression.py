"""easy-learned on the first 3,000 jobs of KTH-SP2 is pinned: speed work on the engine must not change a start."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.hpc.metrics import evaluate
from models.hpc.prediction_backfill import simulate_backfill
from models.predict.jobs import load_trace
from models.predict.schedulers import make_policy

KTH = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "KTH-SP2.swf"


@pytest.mark.skipif(not KTH.exists(), reason="the shared KTH-SP2 trace is not present")
def test_easy_learned_on_kth_prefix_is_pinned() -> None:
    workload, table = load_trace(KTH, 3000)
    policy, plain = make_policy("easy-learned", table)
    result = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    metrics = evaluate(workload.jobs, result.starts, workload.nodes).as_dict()
    assert metrics["BSLD"] == 74.24970199234642 and metrics["AF"] == 13650.525
    assert (result.passes, result.backfilled, result.corrections, sum(result.starts)) == (5826, 2264, 5090, 6363353340)
    assert {k: policy.predictor.stats[k] for k in ("refits", "drift_checks", "drift_updates")} == {
        "refits": 12, "drift_checks": 12, "drift_updates": 2}
