"""One submission's time by stage on the `bench grpc` platform, in process: servicer, writer, engine, oracle, log.

The servicer's SubmitSoW body (SoW.parse, the logged body) and the durable scheduler's writer run exactly as in
`sowsched serve`, without the gRPC transport (what `bench grpc`'s Echo measures). Each stage is timed by wrapping
its function for the run and restoring it after; a stage inside another counts in both (engine.submit holds the
oracle's and the plan's time).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.grpc import EXECUTABLES, PLATFORM, bench_features, bench_sow
from cli.args import bounded_int

# (label, module, owner in the module or None, function name): the stages of one submission, outermost first
STAGES: tuple[tuple[str, str, str | None, str], ...] = (
    ("writer: one command (_apply)", "server.writer", "Writer", "_apply"),
    ("engine.submit", "mechanism.engine", "Engine", "submit"),
    ("oracle: estimates", "mechanism.failure", "MonteCarloOracle", "estimates"),
    ("oracle: append the new job", "mechanism.failure", "MonteCarloOracle", "append"),
    ("launch plan (choose_plan)", "mechanism.engine", None, "choose_plan"),
    ("price book commit", "mechanism.pricing", "PriceBook", "commit"),
    ("event + hash chain", "mechanism.engine", "Engine", "_emit"),
    ("encode the quote", "server.service", None, "encode_reply"),
    ("log insert (store.append)", "server.store", "CommandStore", "append"),
    ("settler: oracle settle", "mechanism.failure", "MonteCarloOracle", "settle"),
    # the pass drawing the appended jobs into every sample (`_apply_pending`): in the settler's call, or else first
    # thing in the next estimates
    ("oracle: pass over every sample", "mechanism.failure", "MonteCarloOracle", "_apply_pending"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--active", type=bounded_int(0), default=100, help="jobs submitted (and active) before measuring")
    p.add_argument("--submits", type=bounded_int(1), default=300, help="measured submissions")
    p.add_argument("--samples", type=bounded_int(1), default=None, help="Monte Carlo samples (default: Lemma F.1)")
    p.add_argument("--features", action="store_true",
                   help="submit by features: the servicer predicts (an engine trained on --trained completions) and "
                        "builds the SoW, the writer logs it with its prediction")
    p.add_argument("--trained", type=bounded_int(0), default=2000,
                   help="synthetic completions the prediction engine is trained on (with --features)")


@contextmanager
def stage_timers(times: dict[str, list[float]]) -> Iterator[None]:
    """Wrap every stage's function to append its wall seconds to times[label]; restore them on exit."""
    import importlib

    restore: list[tuple[Any, str, Any]] = []

    def wrap(label: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                times[label].append(time.perf_counter() - t0)
        return timed

    try:
        for label, module_name, owner_name, name in STAGES:
            module = importlib.import_module(module_name)
            owner = getattr(module, owner_name) if owner_name else module
            f = owner.__dict__[name] if owner_name else getattr(owner, name)
            restore.append((owner, name, f))
            setattr(owner, name, wrap(label, f))
        yield
    finally:
        for owner, name, f in reversed(restore):
            setattr(owner, name, f)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import server.service as service
    from mechanism.engine import check_job_id
    from mechanism.sow import SoW
    from server import convert
    from server.config import OPERATOR, ServerConfig
    from server.gen.sowsched.v1 import scheduler_pb2 as pb
    from server.limits import MAX_JOB_ID
    from server.scheduler import DurableScheduler
    from server.store import CommandStore

    platform = PLATFORM.model_copy(update={"samples": args.samples})
    config = ServerConfig(platform=platform, oracle="mc", tokens={"t": OPERATOR}, tenants=())
    times: dict[str, list[float]] = {label: [] for label, *_ in STAGES}
    for name in ("servicer: parse + validate the SoW", "writer: queue + apply + commit (execute)",
                 "writer_ms (as logged)", "commit_ms (as logged)"):
        times[name] = []
    rng = np.random.default_rng(1)
    predictions = trained_predictions(args.trained, rng) if args.features else None
    with tempfile.TemporaryDirectory(prefix="sowsched-bench-") as tmp, stage_timers(times):
        # encode_reply is looked up when the scheduler is built: hand it the wrapped one
        sched = DurableScheduler(config, CommandStore(Path(tmp) / "b.db", config.identity()),
                                 lambda kind, result, body=None: service.encode_reply(kind, result, body))
        caller = config.caller("t")
        assert caller is not None

        def submit(job_id: str, measured: bool) -> None:
            if predictions is not None:
                request = pb.SubmitSoWRequest.FromString(pb.SubmitSoWRequest(
                    job_id=job_id, features=convert.features_to_proto(bench_features(rng))).SerializeToString())
            else:
                request = pb.SubmitSoWRequest.FromString(pb.SubmitSoWRequest(
                    job_id=job_id, sow=convert.sow_to_proto(bench_sow(rng, platform))).SerializeToString())
            t0 = time.perf_counter()
            check_job_id(request.job_id, MAX_JOB_ID)  # the servicer's body, as in SubmitSoW
            if predictions is not None:
                sow, logged = predictions.sow(OPERATOR, convert.features_to_dict(request.features), platform)
                data = {"job_id": request.job_id, "tenant": OPERATOR, "sow": sow.model_dump(mode="json"), **logged}
            else:
                sow = SoW.parse(convert.sow_to_dict(request.sow), platform)
                data = {"job_id": request.job_id, "tenant": OPERATOR, "sow": sow.model_dump(mode="json")}
            t1 = time.perf_counter()
            ack = sched.execute(caller, None, "submit", data, sow)
            t2 = time.perf_counter()
            if measured:
                times["servicer: parse + validate the SoW"].append(t1 - t0)
                times["writer: queue + apply + commit (execute)"].append(t2 - t1)
                times["writer_ms (as logged)"].append(ack.writer_ms / 1000)
                times["commit_ms (as logged)"].append(ack.commit_ms / 1000)

        try:
            for i in range(args.active):
                submit(f"pre-{i}", False)
            sched.execute(caller, None, "advance", {})  # a new round: the oracle rebuilds over the active jobs
            submit("warm-up", False)
            for values in times.values():
                values.clear()
            for i in range(args.submits):
                submit(f"s-{i}", True)
                time.sleep(0.001)  # the reply's time on the wire, when the settler works
        finally:
            sched.close()
    n = args.submits
    stages = {label: {"calls_per_submission": len(v) / n,
                      "p50_ms": 1000 * float(np.percentile(v, 50)) if v else 0.0,
                      "mean_ms": 1000 * float(np.mean(v)) if v else 0.0,
                      "ms_per_submission": 1000 * float(np.sum(v)) / n}
              for label, v in times.items()}
    return {"platform": platform.model_dump(), "samples": platform.sample_count, "active_jobs": args.active,
            "submits": n, "features": bool(args.features), "stages": stages}


def trained_predictions(completions: int, rng: np.random.Generator) -> Any:
    """A prediction engine trained on synthetic completions: each program runs a fixed share of its request."""
    from models.predict.online import EngineConfig, JobFeatures
    from server.config import OPERATOR
    from server.prediction import Predictions

    predictions = Predictions(EngineConfig(), round_seconds=60)
    share = dict(zip(EXECUTABLES, (0.2, 0.5, 0.8, 1.0), strict=True))
    for _ in range(completions):
        f = bench_features(rng)
        features = JobFeatures(nodes=f["nodes"], requested_seconds=f["requested_seconds"], executable=f["executable"])
        seconds = max(1, round(f["requested_seconds"] * share[f["executable"]] * float(rng.uniform(0.8, 1.0))))
        predictions.engine.observe(OPERATOR, features, seconds)
    predictions.engine.refit()
    return predictions



def table(result: dict[str, Any]) -> str:
    lines = [f"One SubmitSoW by stage, in process (no gRPC transport), N={result['samples']} samples, "
             f"{result['active_jobs']} active jobs before measuring, {result['submits']} submissions;",
             "a stage inside another counts in both; ms/sub = total time in the stage / submissions",
             f"{'stage':42} {'calls/sub':>9} {'p50 ms':>8} {'mean ms':>8} {'ms/sub':>8}"]
    for label, r in result["stages"].items():
        lines.append(f"{label:42} {r['calls_per_submission']:9.2f} {r['p50_ms']:8.3f} {r['mean_ms']:8.3f} "
                     f"{r['ms_per_submission']:8.3f}")
    return "\n".join(lines)
