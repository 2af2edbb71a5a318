"""The core benchmark runs end to end on a small setting and reports every key (numbers are not asserted)."""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks import core


def test_the_core_benchmark_reports_quotes_the_literal_comparison_and_history_memory() -> None:
    args = argparse.Namespace(jobs="20", quotes=3, literal_jobs=5, literal_candidates=1, samples=300, seed=1,
                              history_rounds=20)
    r = core.run(args)
    assert r["literal_equals_fast"] is True and r["runs"][0]["quotes"] == 3 and r["history_rounds"] == 20
    assert 0 <= r["runs"][0]["earlier_jobs_that_run"] <= r["runs"][0]["earlier_jobs"] > 0
    assert r["history_ended_jobs"] > r["history_completed_jobs"] > 0 and r["history_bytes_per_ended_job"] > 0
    text = core.table(r)
    assert "quote p50 ms" in text and "KiB kept in memory per ended job" in text
    assert "N=300 samples (--samples)" in text  # not Lemma F.1's count when overridden
    assert r["runs"][0]["state_pickle_bytes"] > 0 and "state pickle ms" in text


def test_state_pickle_measures_what_unpickles_to_the_same_engine_state() -> None:
    import pickle

    from mechanism.engine import Engine

    p = core.bench_platform(1, 300)
    e = core.loaded_engine(p, 20, np.random.default_rng(1), rounds=4)
    ms, size = core.state_pickle(e, repeats=1)
    assert ms > 0 and size == len(pickle.dumps(e.without_history(), protocol=pickle.HIGHEST_PROTOCOL))
    restored: Engine = pickle.loads(pickle.dumps(e.without_history(), protocol=pickle.HIGHEST_PROTOCOL))
    assert restored.digest() == e.digest()
