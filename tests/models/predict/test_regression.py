"""easy-learned on the first 3,000 jobs of KTH-SP2, and the first 10,000 of Sandia-Ross and LANL-CM5 (refits on the
full window, drift updates), is pinned: speed work on the engine must not change a start."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from models.hpc.metrics import evaluate
from models.hpc.prediction_backfill import simulate_backfill
from models.predict.jobs import load_trace
from models.predict.schedulers import make_policy

KTH = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "KTH-SP2.swf"
PWA = KTH.parent / "pwa"
# trace: (BSLD, AF, (passes, backfilled, corrections), sha256 of the starts' repr), from the engine before its
# hot path was rewritten in plain Python (Law.valid_atoms, capped_one on lists, the float32 tree walk)
PINNED = {
    "Sandia-Ross-2001-1.1-cln.swf.gz": (18.70848879715383, 25830.9273, (19329, 2269, 16450),
                                        "f995da274277e2da154ddb3c035d8834590d4d2deaedc0adcca8118cca24015f"),
    "LANL-CM5-1994-4.1-cln.swf.gz": (5.738807929643265, 1902.1226, (19808, 3969, 8401),
                                     "6a3ae19eabe9314328098d9ec416fa6ee94edf1683fdec4098bdbe09a12cda4c"),
}


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


@pytest.mark.parametrize("trace", sorted(PINNED))
def test_easy_learned_on_pwa_prefixes_is_pinned(trace: str) -> None:
    if not (PWA / trace).exists():
        pytest.skip(f"the shared trace {trace} is not present")
    workload, table = load_trace(PWA / trace, 10_000)
    policy, plain = make_policy("easy-learned", table)
    result = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    metrics = evaluate(workload.jobs, result.starts, workload.nodes).as_dict()
    bsld, af, counters, digest = PINNED[trace]
    assert (metrics["BSLD"], metrics["AF"]) == (bsld, af)
    assert (result.passes, result.backfilled, result.corrections) == counters
    assert hashlib.sha256(repr(list(result.starts)).encode()).hexdigest() == digest
