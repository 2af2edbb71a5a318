"""Mechanism core: quote latency (fixed C and a forecast capacity model), the literal App. F procedure, advance."""

from __future__ import annotations

import argparse
import gc
import pickle
import time
import tracemalloc
from typing import Any

import numpy as np

from cli.args import bounded_int, int_list, level_weight
from mechanism.capacity import CapacityModel
from mechanism.engine import Engine
from mechanism.failure_literal import literal_failure
from mechanism.jobs import JobState
from mechanism.platform import Platform
from mechanism.sow import SoW


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int_list(1), default=[100, 1000],
                   help="earlier active jobs for the quote-latency runs, comma separated")
    p.add_argument("--quotes", type=bounded_int(1), default=40, help="quotes timed per run")
    p.add_argument("--literal-jobs", type=bounded_int(1), default=100,
                   help="earlier jobs in the literal-procedure case")
    p.add_argument("--literal-candidates", type=bounded_int(1), default=2, help="(s, d) candidates timed literally")
    p.add_argument("--samples", type=bounded_int(1), default=None, help="override the Lemma F.1 sample count")
    p.add_argument("--seed", type=bounded_int(0), default=0, help="seed of the random SoWs and of the platform")
    p.add_argument("--history-rounds", type=bounded_int(4), default=200,
                   help="rounds played (3 submissions each, after a quarter as many to warm up) for the memory kept "
                        "per ended job")
    p.add_argument("--no-capacity", action="store_true",
                   help="skip the quote-latency run with a forecast capacity model (at the largest --jobs)")
    p.add_argument("--capacity-level-weight", type=fixed_level_weight, default=0.0,
                   help="the forecast capacity model's adaptive level weight lam in [0, 1) (default 0: a fixed mean)")


def fixed_level_weight(text: str) -> float:
    """An argparse type: lam in [0, 1) (no series here to fit it on)."""
    value = level_weight(text)
    if isinstance(value, str):
        raise argparse.ArgumentTypeError("'fit' needs a capacity series; give lam in [0, 1)")
    return value


def bench_platform(seed: int, samples: int | None) -> Platform:
    return Platform(C=1000, C_m=16, D_m=48, S_m=96, H=1000.0, epsilon=0.1, eps0=0.02, delta0=0.01, seed=seed,
                    samples=samples)


def forecast_capacity(p: Platform, level_weight: float = 0.0) -> Platform:
    """The bench platform with an AR(1) capacity model around C: phi 0.8, a 24-point error law of two normal
    components (sd 8 nodes w.p. 0.9, a drop of about 40 nodes w.p. 0.1), capacity at most C + 100; with
    `level_weight` > 0 its mean is a level that tracks the realized capacity (docs/model.md 10.1)."""
    from scipy.special import ndtri

    z = ndtri((np.arange(12) + 0.5) / 12)
    errors = np.sort(np.concatenate([8.0 * z, -40.0 + 10.0 * z]))
    weights = [0.9 / 12 if e > -25 else 0.1 / 12 for e in errors]  # the two components barely overlap
    weights[-1] = 1.0 - sum(weights[:-1])
    model = CapacityModel(mean=float(p.C), phi=0.8, errors=tuple(float(e) for e in errors), weights=tuple(weights),
                          high=p.C + 100, level_weight=level_weight)
    return p.model_copy(update={"capacity": model})


def random_sow(rng: np.random.Generator, p: Platform) -> SoW:
    """A job like a batch of training runs: arrival within 20 rounds, a few candidate durations."""
    n_a, n_d = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    arrivals = np.sort(rng.choice(np.arange(0, 20), size=n_a, replace=False))
    durations = np.sort(rng.choice(np.arange(1, p.D_m + 1), size=n_d, replace=False))
    w = rng.uniform(0.2, 1.0, size=n_a * n_d)
    w /= w.sum()
    outcomes = [[int(a), int(d), float(x)] for (a, d), x in zip(
        [(a, d) for a in arrivals for d in durations], w, strict=True)]
    outcomes[-1][2] = 1.0 - sum(o[2] for o in outcomes[:-1])
    v = float(rng.uniform(100.0, p.H))
    steps = [[int(min(p.S_m - 10, arrivals[-1] + durations[-1] + 10)), v], [p.S_m, max(1.0, v / 4)]]
    return SoW.parse({"concurrency": int(rng.integers(1, p.C_m + 1)), "value_steps": steps,
                      "outcomes": outcomes}, p)


def loaded_engine(p: Platform, n_jobs: int, rng: np.random.Generator, rounds: int = 10) -> Engine:
    """An engine with about n_jobs active jobs born over `rounds` rounds, with arrivals reported on time."""
    e = Engine(p)
    for r in range(rounds):
        for i in range(n_jobs // rounds):
            e.submit(f"bg{r}-{i}", random_sow(rng, p))
        for job in e.jobs.values():
            if job.state.value != "SUBMITTED":
                continue
            groups = [g for g in job.sow.table.groups if g[0] == e.now - job.birth]
            if groups and rng.random() < 0.5:
                e.report_arrival(job.id, groups[0][1])
        e.advance()
    return e


def quote_latency(p: Platform, n_jobs: int, quotes: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    e = loaded_engine(p, n_jobs, rng)
    residuals = e.residuals()
    t0 = time.perf_counter()
    e.prepare_round()  # the round's oracle state (step 6 of the previous round)
    prepare = time.perf_counter() - t0
    times = []
    for i in range(quotes):
        sow = random_sow(rng, p)
        t0 = time.perf_counter()
        e.submit(f"q{i}", sow)
        times.append(time.perf_counter() - t0)
    pickled_ms, pickled_bytes = state_pickle(e)
    t0 = time.perf_counter()
    e.advance()
    e.prepare_round()
    advance = time.perf_counter() - t0
    ms = np.array(times) * 1e3
    return {"active_jobs": n_jobs, "quotes": quotes, "quote_p50_ms": float(np.percentile(ms, 50)),
            "quote_p99_ms": float(np.percentile(ms, 99)), "oracle_prepare_ms": prepare * 1e3,
            "round_advance_ms": advance * 1e3, "active_after": e.active_jobs,
            "earlier_jobs": len(residuals), "earlier_jobs_that_run": sum(1 for r in residuals if r.runs),
            "state_pickle_ms": pickled_ms, "state_pickle_bytes": pickled_bytes}


def state_pickle(e: Engine, repeats: int = 3) -> tuple[float, int]:
    """(best ms, bytes) of pickling the engine's active state, what a server snapshot pickles (server/snapshot.py)
    while it holds the writer; the history is archived separately."""
    live = e.without_history()
    best, size = float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        size = len(pickle.dumps(live, protocol=pickle.HIGHEST_PROTOCOL))
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, size


def literal_speedup(p: Platform, n_jobs: int, candidates: int, seed: int) -> dict[str, Any]:
    """Time the fast oracle for all (s, d) at once against the literal procedure per candidate, same N."""
    rng = np.random.default_rng(seed + 1)
    e = loaded_engine(p, n_jobs, rng)
    residuals = e.residuals()
    sow = random_sow(rng, p)
    t0 = time.perf_counter()
    e.prepare_round()
    fast_est = e._current_oracle().estimates(sow.concurrency)
    fast = time.perf_counter() - t0
    pairs = [(int(rng.integers(0, p.S_m)), int(rng.integers(1, p.D_m + 1))) for _ in range(candidates)]
    t0 = time.perf_counter()
    agree = True
    for s, d in pairs:
        value = literal_failure(p, e.now, residuals, sow.concurrency, s, d, p.sample_count)
        agree &= value == fast_est[s, d - 1]
    per_candidate = (time.perf_counter() - t0) / candidates
    all_candidates = p.S_m * p.D_m
    return {
        "literal_jobs": n_jobs,
        "literal_candidates_timed": candidates,
        "literal_per_candidate_s": per_candidate,
        "literal_all_candidates_s_extrapolated": per_candidate * all_candidates,
        "fast_all_candidates_s": fast,
        "speedup_vs_literal": per_candidate * all_candidates / fast,
        "literal_equals_fast": bool(agree),
    }


def history_memory(p: Platform, seed: int, rounds: int = 200, per_round: int = 3) -> dict[str, Any]:
    """Memory the engine keeps per ended job (its record, events, charge), measured with tracemalloc.

    Jobs arrive on time with probability 1/2 and report completion in each running round with probability 1/3,
    so the history mixes completed jobs (which keep their plan for the invoice) with every other end.
    """
    rng = np.random.default_rng(seed + 3)
    e = Engine(p.model_copy(update={"samples": 2000}))  # the oracle's size does not grow with the history

    def play(n_rounds: int) -> None:
        for _ in range(n_rounds):
            for i in range(per_round):
                e.submit(f"h{e.now}-{i}", random_sow(rng, e.platform))
            for job in list(e.jobs_after(-1, active_only=True)):
                if job.state is JobState.SUBMITTED:
                    groups = [g for g in job.sow.table.groups if g[0] == e.now - job.birth]
                    if groups and rng.random() < 0.5:
                        e.report_arrival(job.id, groups[0][1])
                elif job.state is JobState.RUNNING and rng.random() < 1 / 3:
                    e.report_completion(job.id)
            e.advance()

    play(rounds // 4)  # reach the steady number of active jobs first
    gc.collect()
    tracemalloc.start()
    before, ended_before = tracemalloc.get_traced_memory()[0], len(e.retired)
    play(rounds)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    ended = len(e.retired) - ended_before
    completed = sum(1 for i in e.retired[ended_before:] if e.jobs[i].state is JobState.COMPLETED)
    return {"history_rounds": rounds, "history_ended_jobs": ended, "history_completed_jobs": completed,
            "history_bytes_per_ended_job": grown / max(ended, 1)}


def warm_up(p: Platform, seed: int) -> None:
    """Run every oracle kernel once on a tiny copy of the platform, so no timing below includes compilation."""
    rng = np.random.default_rng(seed + 2)
    tiny = p.model_copy(update={"samples": 64})
    e = loaded_engine(tiny, 20, rng, rounds=2)
    e.prepare_round()
    for i in range(3):
        e.submit(f"warm{i}", random_sow(rng, tiny))


def run(args: argparse.Namespace) -> dict[str, Any]:
    p = bench_platform(args.seed, args.samples)
    warm_up(p, args.seed)
    jobs = args.jobs if isinstance(args.jobs, list) else int_list(1)(str(args.jobs))
    runs = [quote_latency(p, k, args.quotes, args.seed) for k in jobs]
    big = max(runs, key=lambda r: r["active_jobs"])
    capacity: dict[str, Any] = {}
    if not getattr(args, "no_capacity", False):
        q = forecast_capacity(p, float(getattr(args, "capacity_level_weight", 0.0)))
        warm_up(q, args.seed)
        c = quote_latency(q, big["active_jobs"], args.quotes, args.seed)
        lam = q.capacity.level_weight if q.capacity else 0.0
        capacity = {"capacity_run": c, "capacity_level_weight": lam, "capacity_quote_p50_ms": c["quote_p50_ms"],
                    "capacity_quote_p99_ms": c["quote_p99_ms"],
                    "capacity_p50_ratio": c["quote_p50_ms"] / big["quote_p50_ms"]}
    lit = literal_speedup(p, args.literal_jobs, args.literal_candidates, args.seed)
    return {"platform": p.model_dump(), "samples": p.sample_count, "runs": runs, **capacity,
            "quote_p50_ms": big["quote_p50_ms"], "quote_p99_ms": big["quote_p99_ms"],
            "round_advance_ms": big["round_advance_ms"], **lit,
            **history_memory(p, args.seed, int(getattr(args, "history_rounds", 200)))}


def table(r: dict[str, Any]) -> str:
    source = "Lemma F.1" if r["platform"]["samples"] is None else "--samples"
    lines = [f"mechanism core, C=1000 C_m=16 D_m=48 S_m=96, N={r['samples']} samples ({source})",
             f"{'active jobs':>12} {'quote p50 ms':>13} {'quote p99 ms':>13} {'oracle prep ms':>15} {'advance ms':>11} "
             f"{'state pickle ms':>16} {'pickle KiB':>11}"]
    for x in r["runs"]:
        lines.append(f"{x['active_jobs']:>12} {x['quote_p50_ms']:>13.1f} {x['quote_p99_ms']:>13.1f} "
                     f"{x['oracle_prepare_ms']:>15.1f} {x['round_advance_ms']:>11.1f} "
                     f"{x['state_pickle_ms']:>16.1f} {x['state_pickle_bytes'] / 1024:>11.0f}")
    if "capacity_run" in r:
        x = r["capacity_run"]
        lines.append(f"{x['active_jobs']:>12} {x['quote_p50_ms']:>13.1f} {x['quote_p99_ms']:>13.1f} "
                     f"{x['oracle_prepare_ms']:>15.1f} {x['round_advance_ms']:>11.1f} "
                     f"{x['state_pickle_ms']:>16.1f} {x['state_pickle_bytes'] / 1024:>11.0f}   forecast capacity "
                     f"(AR(1), 24 error points, lam {r['capacity_level_weight']:g}): "
                     f"quote p50 {r['capacity_p50_ratio']:.2f}x fixed C")
    lines.append(f"literal App. F ({r['literal_jobs']} jobs, {r['literal_candidates_timed']} candidates timed): "
                 f"{r['literal_per_candidate_s']:.2f} s per (s, d); all {96 * 48} candidates ~"
                 f"{r['literal_all_candidates_s_extrapolated']:.0f} s vs {r['fast_all_candidates_s']:.3f} s fast "
                 f"-> speed-up {r['speedup_vs_literal']:.0f}x (estimates equal: {r['literal_equals_fast']})")
    lines.append(f"history: {r['history_bytes_per_ended_job'] / 1024:.1f} KiB kept in memory per ended job "
                 f"({r['history_ended_jobs']} ended over {r['history_rounds']} rounds, "
                 f"{r['history_completed_jobs']} completed)")
    return "\n".join(lines)
