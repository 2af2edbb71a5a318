"""`sowsched simulate`: run a workload through the mechanism and report welfare, revenue and outcomes."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from cli.args import (
    add_output_arguments,
    bounded_int,
    comma_list,
    interval,
    level_weight,
    nonempty,
    positive_float,
    quantile_or_fit,
    usage_message,
)
from cli.commands.jobs import DEFAULT_ATTEMPTS
from cli.verbs import add_verb
from mechanism.failure_exact import OracleTooLarge
from mechanism.platform import OVERLOAD_RULES
from models.predict.names import PREDICTORS
from models.simulation import SimulationResult, Workload, drive, run_simulation
from models.workloads import WORKLOADS, load_workload_file, make_workload, workload_document

OFFLINE_TIME_LIMIT = 5.0  # CP-SAT deterministic time for the hindsight optimum (about seconds; reproducible)
SOLVER_NAMES = {"cpsat": "CP-SAT", "milp": "the HiGHS MILP"}
MAX_SEED = 2**63 - 1  # platform.seed's bound


def register(sub: Any) -> None:
    p = add_verb(sub, "simulate")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", choices=WORKLOADS, help="a named synthetic workload")
    src.add_argument("--workload-file", type=nonempty, metavar="W.json",
                     help="a workload file (schema: docs/workloads-and-sows.md)")
    src.add_argument("--trace", type=nonempty, metavar="SWF",
                     help="an SWF trace's first --jobs jobs as feature submissions, SoWs from --sows laws "
                          "(docs/prediction.md)")
    p.add_argument("--jobs", type=bounded_int(1), default=2000, help="with --trace: the first N jobs")
    p.add_argument("--sows", choices=(*PREDICTORS, "service"), default="learned",
                   help="with --trace: the predictor whose duration laws the SoWs declare (values come from the "
                        "requested time); "
                        "service: feature submissions, the SoWs built by the service's own prediction engine (in "
                        "process, or the server's with --server)")
    p.add_argument("--round-seconds", type=bounded_int(1), default=3600,
                   help="with --trace: seconds per round (default %(default)s)")
    p.add_argument("--cold-start", type=bounded_int(1), default=20,
                   help="with --trace --sows service in process: completions before learned laws (the server's "
                        "prediction_cold_start; default %(default)s)")
    p.add_argument("--conformal-gamma", type=interval(0.0, 1.0, closed="hi"), default=None, metavar="G",
                   help="with --trace --sows service: the engine's laws recalibrated by adaptive conformal inference "
                        "on their 0.9-quantile with step G (the server's prediction_conformal_gamma, which a "
                        "--server must be started with; default: off; docs/prediction.md)")
    p.add_argument("--headroom", type=bounded_int(0), default=None, metavar="H",
                   help="with --trace: the failure estimates assume H nodes fewer than C (a capacity model fixed at "
                        "C - H, prices floored at C); prices and overload keep C (default 0; docs/prediction.md)")
    p.add_argument("--reserve", type=comma_list(positive_float), default=None, metavar="UP,DOWN",
                   help="with --trace: the failure estimates hold back a reserve the platform sets itself, UP nodes "
                        "more after a round whose overload step removed a job, DOWN fewer after any other, within "
                        "[0, C - 1]; prices and overload keep C (docs/model.md 10.9, docs/prediction.md)")
    p.add_argument("--overload", choices=OVERLOAD_RULES, default=None,
                   help="with --trace: step 3's rule while the load exceeds C: newest, the newest active job, "
                        "waiting or not (Remark 2, the default); newest_demanding, the newest active job that "
                        "demands the round (docs/model.md 6)")
    p.add_argument("--seed", type=_seed, default=None,
                   help="seed (named workloads: default 0; files: overrides platform.seed)")
    p.add_argument("--load", type=float, default=None,
                   help="scale the job rate of a named workload (default 1; not with --workload-file)")
    p.add_argument("--oracle", choices=("mc", "exact"), default="mc", help="failure oracle")
    p.add_argument("--pricing", choices=("exponential", "stochastic"), default="exponential",
                   help="price menus: exponential (eq. 7, default) or stochastic (Lemma E.2's bundle prices from the "
                        "workload's prior; needs a prior and durations revealed at arrival)")
    p.add_argument("--events", type=nonempty, metavar="OUT.jsonl", help="write one JSON object per event")
    p.add_argument("--write-workload", type=nonempty, metavar="W.json",
                   help="also write the workload as simulated (its SoWs and realized outcomes) as a W.json file")
    add_output_arguments(p)
    p.add_argument("--offline-time-limit", type=positive_float, default=OFFLINE_TIME_LIMIT, metavar="T",
                   help="CP-SAT's limit for the clairvoyant optimum of the same realization, in deterministic "
                        "time (about seconds; the same answer on every run; default %(default)g)")
    p.add_argument("--no-offline", action="store_true",
                   help="skip the clairvoyant optimum (and the ratio to it)")
    add_capacity_arguments(p)
    p.add_argument("--server", type=nonempty, metavar="HOST:PORT",
                   help="drive a running server (fresh store) over gRPC instead")
    p.add_argument("--token", default=os.environ.get("SOWSCHED_TOKEN"), help="operator token for --server")
    p.add_argument("--tls-ca", type=Path, help="with --server: CA certificate, connect with TLS")
    p.add_argument("--timeout", type=float, default=30.0, help="with --server: deadline per call in seconds")
    p.add_argument("--retries", type=int, default=DEFAULT_ATTEMPTS,
                   help="with --server: attempts on UNAVAILABLE or DEADLINE_EXCEEDED, with the same request id")
    p.set_defaults(func=run)


def add_capacity_arguments(p: argparse.ArgumentParser) -> None:
    """--capacity-series, --capacity-model, --capacity-scale, --capacity-quantile, --capacity-level-weight,
    --capacity-price-floor (docs/capacity-model.md)."""
    p.add_argument("--capacity-series", type=nonempty, metavar="PATH[:KEY]",
                   help="realized capacity per round from a CSV: KEY is a column of a wide CSV or a VM type "
                        "(Column1) of the long-format Azure capacity files; round t is row t")
    p.add_argument("--capacity-model", choices=("fixed", "forecast"), default=None,
                   help="with --capacity-series: 'fixed' quotes with C (the series' mean), 'forecast' with an "
                        "AR(1) + Gaussian-mixture model fitted to the series (default fixed)")
    p.add_argument("--capacity-scale", type=positive_float, default=None, metavar="F",
                   help="nodes per unit of the series (default: the factor that makes its mean C)")
    p.add_argument("--capacity-quantile", type=quantile_or_fit, default=None, metavar="Q|fit",
                   help="with --capacity-model forecast: the quantile of the stationary capacity that replaces C in "
                        "the prices' C' (default 0.3); 'fit' chooses it from 0.1, 0.3, 0.5 by replaying the named "
                        "workload's job stream (seeds 10000+) on the fit rows (docs/capacity-model.md)")
    p.add_argument("--capacity-level-weight", type=level_weight, default=None, metavar="LAM|fit",
                   help="with --capacity-model forecast: the model's mean tracks the feed, mu_t = (1 - LAM) mu_{t-1} "
                        "+ LAM C_{t-1}; 'fit' (the default) chooses LAM on the fit rows; 0 keeps the fitted mean")
    p.add_argument("--capacity-price-floor", action="store_true", default=None,
                   help="with --capacity-model forecast: prices never assume less than C (each round's capacity "
                        "quantile is at least C) while the failure estimates follow the model")
    p.add_argument("--capacity-start", type=bounded_int(0), default=None, metavar="ROW",
                   help="round 0 is this row of the series (default 0; rows wrap around at the end)")
    p.add_argument("--capacity-fit-rows", type=bounded_int(0), default=None, metavar="F",
                   help="hold out: scale and fit on the first F rows only and play rows F.. (round 0 is row F + "
                        "--capacity-start, wrapping within rows F..; default 0: scale, fit and play the whole series)")


def capacity_options(args: argparse.Namespace) -> None:
    """Raise ValueError on capacity options that need --capacity-series without it."""
    if args.capacity_series:
        if args.capacity_quantile is not None and args.capacity_model != "forecast":
            raise ValueError(f"--capacity-quantile {args.capacity_quantile} needs --capacity-model forecast")
        if args.capacity_level_weight is not None and args.capacity_model != "forecast":
            raise ValueError(f"--capacity-level-weight {args.capacity_level_weight} needs --capacity-model forecast")
        if args.capacity_price_floor and args.capacity_model != "forecast":
            raise ValueError("--capacity-price-floor needs --capacity-model forecast")
        return
    for flag, value in (("--capacity-model", args.capacity_model), ("--capacity-scale", args.capacity_scale),
                        ("--capacity-quantile", args.capacity_quantile), ("--capacity-start", args.capacity_start),
                        ("--capacity-level-weight", args.capacity_level_weight),
                        ("--capacity-price-floor", args.capacity_price_floor),
                        ("--capacity-fit-rows", getattr(args, "capacity_fit_rows", None)),
                        ("--capacity-stride", getattr(args, "capacity_stride", None))):
        if value is not None:
            raise ValueError(f"{flag}{'' if value is True else f' {value}'} needs --capacity-series")


def apply_capacity(args: argparse.Namespace, workload: Workload, run: int = 0) -> Workload:
    """The workload with the realized capacity of --capacity-series and, with forecast, its fitted model; run k of
    a calibration starts at row start + k * stride."""
    if not args.capacity_series:
        return workload
    from mechanism.capacity import DEFAULT_QUANTILE
    from models.capacity_fit import DEFAULT_LEVEL_WEIGHT, with_capacity

    lam = DEFAULT_LEVEL_WEIGHT if args.capacity_level_weight is None else args.capacity_level_weight
    fit_rows = getattr(args, "capacity_fit_rows", None) or 0
    q: float | str = DEFAULT_QUANTILE if args.capacity_quantile is None else args.capacity_quantile
    if q == "fit":
        if getattr(args, "workload_file", None):
            raise ValueError(f"--capacity-quantile fit replays a named workload's job stream on the fit rows: it "
                             f"needs --workload, not --workload-file {args.workload_file}")
        rounds = None if args.workload == "toy" else getattr(args, "rounds", None)
        q = tuned_quantile(args.workload, 1.0 if args.load is None else args.load, rounds, args.capacity_series,
                           fit_rows, args.capacity_scale, lam, bool(args.capacity_price_floor))
    start = (args.capacity_start or 0) + run * (getattr(args, "capacity_stride", None) or 0)
    return with_capacity(workload, args.capacity_series, args.capacity_model or "fixed", args.capacity_scale,
                         float(q), start=start, fit_rows=fit_rows, level_weight=lam,
                         price_floor=bool(args.capacity_price_floor))


@lru_cache(maxsize=8)
def tuned_quantile(workload: str, load: float, rounds: int | None, spec: str, fit_rows: int, scale: float | None,
                   lam: float | str, price_floor: bool) -> float:
    """q chosen by models/capacity_tune.py for the named workload's job stream (once per command: every run of a
    calibration shares it)."""
    from models.capacity_tune import tune_quantile

    extra = {} if rounds is None else {"rounds": rounds}
    return tune_quantile(lambda seed: make_workload(workload, seed=seed, load=load, **extra), spec, fit_rows, scale,
                         lam, price_floor).quantile


def capacity_summary(workload: Workload, args: argparse.Namespace) -> dict[str, Any] | None:
    if workload.capacity is None:
        return None
    caps = workload.capacity
    model = workload.platform.capacity
    return {"series": args.capacity_series or args.workload_file, "model": "fixed" if model is None else "forecast",
            "rows": len(caps),
            "mean": sum(caps) / len(caps), "min": min(caps), "max": max(caps),
            "fitted": None if model is None else model.model_dump(mode="json")}


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below the bound 0")
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} exceeds the bound {MAX_SEED}")
    return value


def load(args: argparse.Namespace) -> Workload:
    if getattr(args, "trace", None):
        return trace_workload(args)
    if getattr(args, "headroom", None) is not None:
        raise ValueError(f"--headroom {args.headroom} needs --trace")
    if getattr(args, "reserve", None) is not None:
        raise ValueError(f"--reserve {_reserve_text(args.reserve)} needs --trace")
    if getattr(args, "overload", None) is not None:
        raise ValueError(f"--overload {args.overload} needs --trace (a workload's platform states its own rule)")
    if getattr(args, "conformal_gamma", None) is not None:
        raise ValueError(f"--conformal-gamma {args.conformal_gamma:g} needs --trace and --sows service")
    if args.workload_file:
        if args.load is not None:
            raise ValueError(f"--load {args.load} does not apply with --workload-file {args.workload_file}: "
                             "a file's jobs and realized outcomes are fixed")
        return load_workload_file(args.workload_file, seed=args.seed)
    return make_workload(args.workload, seed=args.seed or 0, load=1.0 if args.load is None else args.load)


def trace_workload(args: argparse.Namespace) -> Workload:
    """--trace: the trace's jobs with --sows laws; the prediction report (coverage, predict_ms_p50) is kept on
    `args.trace_report` for the output."""
    from models.predict.jobs import load_trace
    from models.predict.sows import ExportConfig
    from models.predict.trace_workload import trace_document
    from models.workloads import parse_workload_file

    if args.load is not None:
        raise ValueError(f"--load {args.load} does not apply with --trace {args.trace}: a trace's jobs are fixed")
    headroom = getattr(args, "headroom", None) or 0
    if headroom >= ExportConfig.nodes:
        raise ValueError(f"--headroom {headroom} is above the bound {ExportConfig.nodes - 1} (C - 1: the trace's "
                         f"platform has C = {ExportConfig.nodes} nodes)")
    reserve = getattr(args, "reserve", None)
    if reserve is not None and len(reserve) != 2:
        raise ValueError(f"--reserve {_reserve_text(reserve)} must be two numbers, UP,DOWN")
    if reserve is not None and headroom:
        raise ValueError(f"--reserve {_reserve_text(reserve)} and --headroom {headroom} exclude each other: both "
                         "set the nodes the failure estimates leave out")
    service = args.sows == "service"
    gamma = getattr(args, "conformal_gamma", None)
    if gamma is not None and not service:
        raise ValueError(f"--conformal-gamma {gamma:g} needs --sows service (the service's engine; the offline "
                         f"adaptive laws are --sows learned-aci)")
    trace, table = load_trace(args.trace, args.jobs)
    config = ExportConfig(round_seconds=args.round_seconds, predictor="requested" if service else args.sows,
                          headroom=headroom, reserve=None if reserve is None else (reserve[0], reserve[1]),
                          overload=getattr(args, "overload", None) or "newest")
    document, args.trace_report = trace_document(table, trace.nodes, config)
    if headroom:
        args.trace_report["headroom"] = headroom
    if reserve is not None:
        args.trace_report["reserve"] = document["platform"]["reserve"]
    if config.overload != "newest":
        args.trace_report["overload"] = config.overload
    if service:  # the workload's SoWs only carry the jobs' terms: the port submits the features
        from models.predict.trace_workload import feature_submissions

        args.trace_features = feature_submissions(table, document)
        args.trace_table = table
    return parse_workload_file(Path(args.trace), document, name=Path(args.trace).stem, seed=args.seed)


def _reserve_text(values: list[float]) -> str:
    return ",".join(f"{v:g}" for v in values)


def check_outputs(args: argparse.Namespace) -> None:
    """--events must not name the workload file read or written: it is truncated before the run."""
    if not args.events:
        return
    for flag, other in (("--workload-file", args.workload_file), ("--write-workload", args.write_workload)):
        if other and Path(args.events).resolve() == Path(other).resolve():
            raise ValueError(f"--events {args.events} is the same file as {flag} {other}")


def check_writable(path: Path) -> None:
    """Raise OSError unless `path` can be written, leaving it as it was: a run that fails later must neither
    truncate an earlier events file nor leave an empty one behind. A symbolic link is followed, as the write will
    (exclusive creation refuses the link itself, even one to a file not yet written)."""
    path = Path(os.path.realpath(path))  # not Path.resolve: a link loop stays an OSError (ELOOP) when opened
    if path.exists():
        path.open("a", encoding="utf-8").close()  # opened for writing, not truncated
    else:
        path.open("x", encoding="utf-8").close()
        path.unlink()


class Refused(Exception):
    """`simulate` stops: its message is one line on stderr, `code` the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def run(args: argparse.Namespace) -> int:
    try:
        workload = prepared(args)
        workload, pricing = priced(args, workload)
        result = simulated(args, workload)
        if args.events:
            try:
                write_events(result, args.events)
            except OSError as exc:  # a full disk after the run: the earlier file stays whole
                raise Refused(f"cannot write --events {args.events}: {exc}", 1) from None
    except Refused as exc:
        print(f"sowsched simulate: {exc}", file=sys.stderr)
        return exc.code
    offline = None if args.no_offline else against_optimum(workload, result, args.offline_time_limit)
    print(output(args, workload, result, pricing, offline))
    return 0


def prepared(args: argparse.Namespace) -> Workload:
    """The workload with its capacity, every output checked writable and --write-workload written: before the run."""
    try:
        check_outputs(args)
        capacity_options(args)
        workload = apply_capacity(args, load(args))
        if args.events:  # fail before the run, not after it
            check_writable(Path(args.events))
        if args.write_workload:
            Path(args.write_workload).write_text(json.dumps(workload_document(workload), indent=1) + "\n",
                                                 encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise Refused(usage_message(exc), 2) from None
    return workload


def priced(args: argparse.Namespace, workload: Workload) -> tuple[Workload, dict[str, Any] | None]:
    """With --pricing stochastic, the workload on Lemma E.2's bundle prices and their report."""
    if args.pricing != "stochastic":
        return workload, None
    if args.server:
        raise Refused(f"--pricing stochastic does not apply with --server {args.server}: the server's platform "
                      "sets its prices", 2)
    from models.stochastic.pricing import priced_workload
    try:
        workload, prices = priced_workload(workload)
    except ValueError as exc:
        raise Refused(f"--pricing stochastic: {exc}", 2) from None
    return workload, prices.report()


def simulated(args: argparse.Namespace, workload: Workload) -> SimulationResult:
    """The run: in process, or through the server at --server."""
    features = getattr(args, "trace_features", None)
    if not args.server:
        try:
            if features is not None:
                return service_run(args, workload, features)
            return run_simulation(workload, oracle=args.oracle)
        except OracleTooLarge as exc:  # --oracle exact on too many earlier jobs' joint outcomes
            raise Refused(str(exc), 1) from None
    from cli.commands.jobs import connect, exit_code
    from clients.client import RpcFailure
    from clients.grpc_sim import FeatureGrpcScheduler, RemoteSchedulerError, check_server, run_remote_simulation
    try:
        client = connect(args)
    except (OSError, ValueError) as exc:  # a bad option, or an unreadable --tls-ca file
        raise Refused(str(exc), 2) from None
    try:
        with client:
            if features is None:
                return run_remote_simulation(workload, client, oracle=args.oracle)
            check_server(client, workload, args.oracle)
            if client.status().round_seconds != args.round_seconds:
                raise RemoteSchedulerError(f"the server's rounds are {client.status().round_seconds} s; --trace runs "
                                           f"on --round-seconds {args.round_seconds}: start it with that")
            if client.status().prediction_cold_start != args.cold_start:
                raise RemoteSchedulerError(f"the server's prediction_cold_start is "
                                           f"{client.status().prediction_cold_start}; --cold-start is "
                                           f"{args.cold_start}: start it with that")
            gamma = getattr(args, "conformal_gamma", None)
            if client.status().prediction_conformal_gamma != gamma:
                raise RemoteSchedulerError(f"the server's prediction_conformal_gamma is "
                                           f"{client.status().prediction_conformal_gamma}; --conformal-gamma is "
                                           f"{gamma}: start it with that")
            port = FeatureGrpcScheduler(client, features)
            result = drive(workload, port)
            args.trace_report = service_report(args, port.laws, result)
            return result
    except (RpcFailure, RemoteSchedulerError) as exc:
        raise Refused(str(exc), exit_code(exc) if isinstance(exc, RpcFailure) else 1) from None


def service_run(args: argparse.Namespace, workload: Workload, features: dict[str, dict[str, Any]]) -> SimulationResult:
    """--sows service in process: the server's prediction engine, fits in step (server/feature_sim.py)."""
    from models.predict.online import EngineConfig
    from server.feature_sim import FeatureEngine

    config = EngineConfig(cold_start=args.cold_start, conformal_gamma=getattr(args, "conformal_gamma", None))
    port = FeatureEngine(workload.platform, features, config, args.round_seconds, args.oracle)
    result = drive(workload, port)
    args.trace_report = service_report(args, port.laws, result)
    return result


def service_report(args: argparse.Namespace, laws: dict[str, dict[str, Any]],
                   result: SimulationResult) -> dict[str, Any]:
    """Coverage of the laws the quotes carried, how many were learned (not the cold start's point) and from how many
    models (predict_ms_p50 is the servicer's, not measured here: null); with --conformal-gamma, the option and the
    coverage over the completed jobs alone (`coverage_learned`: the jobs whose durations the engine learns)."""
    from models.predict.trace_workload import quoted_coverage

    platform = {k: v for k, v in (getattr(args, "trace_report", None) or {}).items()
                if k in ("headroom", "reserve", "overload")}  # the trace platform's settings, reported as for --sows
    report = {"sows": "service", "jobs": len(laws), "coverage": quoted_coverage(args.trace_table, laws),
              "predict_ms_p50": None, "learned_quotes": sum(1 for law in laws.values() if law["trained"] > 0),
              "model_versions": len({law["model_version"] for law in laws.values()}), **platform}
    gamma = getattr(args, "conformal_gamma", None)
    if gamma is None:
        return report
    completed = {r.id for r in result.jobs if r.state == "completed"}
    learned = {job: law for job, law in laws.items() if job in completed}
    return {**report, "conformal_gamma": gamma, "coverage_learned": quoted_coverage(args.trace_table, learned)}


def output(args: argparse.Namespace, workload: Workload, result: SimulationResult, pricing: dict[str, Any] | None,
           offline: dict[str, Any] | None) -> str:
    """The run's report: one JSON document with --json, else text."""
    if args.json:
        extra = {} if pricing is None else {"pricing": "stochastic", "stochastic_pricing": pricing}
        capacity = capacity_summary(workload, args)
        trace = getattr(args, "trace_report", None) or {}
        return json.dumps({**result.summary(), "seed": workload.platform.seed, "offline": offline, **extra, **trace,
                           **({} if capacity is None else {"capacity": capacity})}, sort_keys=True)
    lines = [report(result, args.oracle), *([] if pricing is None else pricing_lines(pricing)),
             *([] if offline is None else offline_lines(offline))]
    if workload.capacity is not None:
        caps = workload.capacity
        mean = sum(caps) / len(caps)
        kind = "fixed" if workload.platform.capacity is None else "forecast"
        lines.append(f"  capacity     {args.capacity_series or args.workload_file}: {len(caps)} rounds, mean "
                     f"{mean:.2f}, min {min(caps)}, max {max(caps)}; the mechanism quotes with {kind} capacity")
    return "\n".join(lines)


def against_optimum(workload: Workload, result: SimulationResult, time_limit: float) -> dict[str, Any]:
    """The run against the clairvoyant optimum of its realization (models/offline/report.py)."""
    from models.offline import report as offline
    from models.offline.baselines import fcfs
    from models.offline.hindsight import HindsightInstance

    instance = HindsightInstance.from_realized(workload)
    best = offline.hindsight_optimum(instance, result, offline.OfflineConfig(time_limit=time_limit),
                                     fcfs(instance).starts)
    return offline.against_optimum(best, result.welfare)


def pricing_lines(d: dict[str, Any]) -> list[str]:
    """The stochastic pricing's LP, unit allocation and bundle prices as report lines."""
    lp, alloc, p = d["lp"], d["allocation"], d["prices"]
    return [f"  pricing      stochastic: LP {lp['rows']} rows x {lp['cols']} cols ({lp['nonzeros']} nonzeros), "
            f"value {lp['value']:.2f} at C' = {lp['capacity']:.2f}",
            f"               {alloc['bundles']} bundles keep {alloc['value']:.2f} ({100 * alloc['kept']:.1f} %); "
            f"unit prices {p['min']:.2f} to {p['max']:.2f} (median {p['median']:.2f})"]


def offline_lines(d: dict[str, Any]) -> list[str]:
    """The optimum and the ratio as report lines; an unproven optimum shows its bound and the ratio's range."""
    if d["status"] == "optimal":
        found = f"(the clairvoyant optimum of the same realization, {SOLVER_NAMES[d['solver']]}, proven optimal)"
    else:
        found = (f"(the best clairvoyant schedule {SOLVER_NAMES[d['solver']]} found; bound {d['bound']:.2f}, gap "
                 f"{100 * d['gap']:.1f} %)")
    lines = [f"  offline opt  {d['value']:12.2f}   {found}"]
    if d["ratio"] is None:
        lines.append("  ratio               inf   (the mechanism earned nothing the optimum could)")
    elif d["ratio_bound"] is None:  # both earned 0, but the unproven optimum's bound is positive
        lines.append(
            f"  ratio        {d['ratio']:12.3f}   (up to inf by the bound: the mechanism and the best schedule "
            "found earned nothing)"
        )
    elif d["status"] == "optimal" or d["ratio_bound"] == d["ratio"]:
        lines.append(f"  ratio        {d['ratio']:12.3f}   (offline / mechanism welfare: the mechanism reached "
                     f"{100 / d['ratio']:.1f} %)")
    else:
        lines.append(f"  ratio        {d['ratio']:12.3f}   (up to {d['ratio_bound']:.3f} by the bound: the mechanism "
                     f"reached {100 / d['ratio_bound']:.1f}-{100 / d['ratio']:.1f} %)")
    return lines


def _umask() -> int:
    """The process's umask (read by setting it back at once: this command runs one thread)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_events(result: SimulationResult, path: str) -> None:
    """One JSON object per event. A regular file (links followed) is written whole or not at all: a temporary file
    beside it replaces it once complete, so a write that fails (a full disk) leaves an earlier file as it was."""
    lines = "".join(json.dumps(e.to_dict(), sort_keys=True) + "\n" for e in result.events)
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():  # /dev/stdout, a FIFO: written in place
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(lines)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(lines)
        os.chmod(tmp, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def report(result: SimulationResult, oracle: str = "mc") -> str:
    s = result.summary()
    p = result.platform
    sampling = "exact failure oracle" if oracle == "exact" else f"N={p.sample_count} Monte Carlo samples"
    lines = [
        f"workload {s['workload']}: {s['jobs']} jobs over {s['rounds']} rounds on C={p.C} nodes ({sampling})",
        f"  welfare      {s['welfare']:12.2f}   (sum of V(f) over completed jobs)",
        f"  revenue      {s['revenue']:12.2f}",
        f"  utility      {s['utility']:12.2f}   (welfare - revenue)",
        f"  utilisation  {100 * s['utilization']:11.1f} %",
        "  outcomes     " + ", ".join(f"{k} {s[k]}" for k in ("completed", "evicted", "cancelled", "expired",
                                                              "not_scheduled")),
    ]
    return "\n".join(lines)
