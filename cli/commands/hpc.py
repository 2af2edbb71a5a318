"""`sowsched hpc` and `sowsched hpc-study`: schedule an SWF trace and compare schedulers (seed 001)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from cli.args import (
    add_output_arguments,
    bounded_int,
    comma_list,
    nonempty,
    nonnegative_float,
    positive_float,
    probability,
    unit_float,
    usage_errors,
)
from cli.verbs import add_verb
from models.hpc.cp import DEFAULT_TIME_LIMIT, Objective
from models.hpc.jobs import ESTIMATE_MODES, Workload
from models.hpc.study import StudyConfig, is_cp, make_scheduler, run_scheduler, run_study, study_table
from models.hpc.swf import CLEANING_RULES, CleaningReport, SwfTrace, clean, read_swf
from models.predict.names import CORRECTORS, PREDICTIVE_SCHEDULERS


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", required=True, help="SWF file")
    parser.add_argument("--nodes", type=bounded_int(1), help="node count R (default: header MaxProcs, else MaxNodes)")
    parser.add_argument("--estimates", choices=ESTIMATE_MODES, default="exact", help="E_j = runtime or requested")
    parser.add_argument(
        "--time-limit",
        type=positive_float,
        default=DEFAULT_TIME_LIMIT,
        help="CP-SAT seconds per round (off-line: total)",
    )
    add_output_arguments(parser)


def register(sub: Any) -> None:
    p = add_verb(sub, "hpc")
    _common(p)
    p.add_argument("--jobs", type=bounded_int(1), help="use only the first N jobs")
    p.add_argument("--scheduler", required=True, help="e.g. fcfs-conservative, easy, cp-af, cp-offline-awf; "
                   "prediction-driven (trace cleaned as predictsim does): " + ", ".join(PREDICTIVE_SCHEDULERS))
    p.add_argument("--risk", type=unit_float, default=0.9,  # models.predict.schedulers.DEFAULT_RISK
                   help="easy-learned: backfill when P(delaying the head's reservation) <= risk")
    p.add_argument("--reservation-q", type=probability, default=0.4,  # DEFAULT_RESERVATION_Q
                   help="easy-learned: the predicted quantile used for reservations (0 < q < 1)")
    p.add_argument("--corrector", choices=CORRECTORS, default="conditional",
                   help="easy-learned: re-prediction of a job that outlives its prediction")
    p.add_argument("--guard", type=nonnegative_float, default=None,
                   help="easy-learned: a backfill's expected run past the head's reservation at most GUARD times "
                        "the time left to it (default: no bound)")
    p.add_argument("--calibrate", type=bounded_int(0), default=0,
                   help="easy-learned: recalibrate the risk test on the PIT of this many recent completions (0: off)")
    p.add_argument("--portfolio", type=bounded_int(0), default=0,
                   help="easy-learned: every PORTFOLIO hours, schedule with EASY++ or the risk test, whichever had "
                        "the lower BSLD replaying the last week's completed jobs (0: off)")
    p.add_argument("--portfolio-risks", type=comma_list(unit_float), default=None,
                   help="easy-learned --portfolio: the candidates are EASY++ and the risk test at each of these "
                        "comma-separated, increasing risks (in place of --risk), a tie keeping the policy in force")
    p.add_argument("--window", type=bounded_int(10), default=None,
                   help="easy-learned: completed jobs the engine trains on (default: LearnedConfig's)")
    p.set_defaults(func=_on_trace("hpc", hpc))
    s = add_verb(sub, "hpc-study")
    _common(s)
    s.add_argument("--jobs", type=bounded_int(1), help="trace prefix for the list schedulers and EASY (default all)")
    s.add_argument(
        "--cp-jobs", type=bounded_int(0), default=0, help="trace prefix for the on-line CP schedulers (0: skip)"
    )
    s.add_argument(
        "--offline-jobs", type=bounded_int(0), default=0, help="window for the off-line CP schedulers (0: skip)"
    )
    s.add_argument("--offline-time-limit", type=positive_float, default=60.0, help="CP-SAT seconds per off-line window")
    s.add_argument("--schedulers", type=nonempty, help="comma-separated subset of the table's schedulers")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (shown on a terminal)")
    s.set_defaults(func=_on_trace("hpc-study", hpc_study))


def _cleaning(report: Any) -> dict[str, Any]:
    return {"records": report.records, "kept": report.kept, "nodes": report.nodes, **report.counts}


def check_scheduler(name: str) -> None:
    """Raise ValueError for a name that is neither a list, an on-line CP nor an off-line CP scheduler."""
    if name in PREDICTIVE_SCHEDULERS:
        return
    if name.startswith("cp-offline-"):
        if name.removeprefix("cp-offline-") not in {o.value for o in Objective}:
            raise ValueError(f"scheduler={name!r} is not a known scheduler name")
    else:
        make_scheduler(name, DEFAULT_TIME_LIMIT)


def _dropped(report: CleaningReport) -> str:
    """The record count, R and the non-zero cleaning counters, for the empty-trace error."""
    counts = [f"{rule}={count}" for rule, count in report.counts.items() if count]
    return ", ".join([f"{report.records} records", f"nodes={report.nodes}", *counts])


def _check_flags(command: str, args: argparse.Namespace) -> None:
    """Scheduler names, and flag combinations under which a named scheduler cannot run: ValueError."""
    if command == "hpc":
        check_scheduler(args.scheduler)
        if args.scheduler.startswith("cp-offline-") and args.estimates != "exact":
            raise ValueError(f"--estimates={args.estimates}: scheduler={args.scheduler!r} uses the true runtimes "
                             "(off-line CP takes --estimates exact only)")
        return
    if args.schedulers is None:
        return
    names = args.schedulers.split(",")
    if not all(names):
        raise ValueError(f"--schedulers={args.schedulers!r} names an empty scheduler")
    for name in names:
        check_scheduler(name)
        _check_study_runs(name, args)


def _check_study_runs(name: str, args: argparse.Namespace) -> None:
    """hpc-study skips CP schedulers whose prefix is 0 (and off-line CP with requested times): refuse naming one."""
    if name.startswith("cp-offline-"):
        if args.offline_jobs == 0:
            raise ValueError(f"--schedulers names {name} but --offline-jobs=0 skips the off-line CP schedulers")
        if args.estimates != "exact":
            raise ValueError(
                f"--schedulers names {name}, an off-line CP scheduler, which runs with --estimates exact only"
            )
    elif is_cp(name) and args.cp_jobs == 0:
        raise ValueError(f"--schedulers names {name} but --cp-jobs=0 skips the on-line CP schedulers")


Body = Callable[[argparse.Namespace, SwfTrace, Workload, CleaningReport], int]


def _on_trace(command: str, body: Body) -> Callable[[argparse.Namespace], int]:
    """`body` on the flags checked and the trace read and cleaned; a missing or malformed trace, or an unknown
    scheduler, is a usage error (cli/args.usage_errors)."""
    def run(args: argparse.Namespace) -> int:
        _check_flags(command, args)
        trace = read_swf(args.trace)  # read once: a prediction-driven run cleans it again as predictsim does
        loaded = clean(trace, args.nodes)
        if not loaded[0].jobs:
            raise ValueError(f"no job left after cleaning ({_dropped(loaded[1])})")
        return body(args, trace, *loaded)
    return usage_errors(command, run)


def _predictive(args: argparse.Namespace, trace: SwfTrace) -> int:
    """A prediction-driven EASY on the trace cleaned as predictsim does (the data README)."""
    from models.predict.jobs import load_trace
    from models.predict.schedulers import run_predictive

    workload, table = load_trace(trace, args.jobs)
    options: dict[str, Any] = {"risk": args.risk, "reservation_q": args.reservation_q, "corrector": args.corrector}
    if args.guard is not None:
        options["guard"] = args.guard
    if args.calibrate:
        options["calibrate"] = args.calibrate
    if args.portfolio:
        options["portfolio"] = args.portfolio
    if args.portfolio_risks is not None:
        options["portfolio_risks"] = tuple(args.portfolio_risks)
    if args.window is not None:
        from models.predict.learned import LearnedConfig
        options["config"] = LearnedConfig(window=args.window)
    result = run_predictive(workload, table, args.scheduler, **(options if args.scheduler == "easy-learned" else {}))
    out = {**result.metrics.as_dict(), "scheduler": args.scheduler, "cleaning": "predictsim",
           "details": result.details}
    return _print(out, args.json)


def hpc(args: argparse.Namespace, trace: SwfTrace, workload: Workload, report: CleaningReport) -> int:
    if args.scheduler in PREDICTIVE_SCHEDULERS:
        return _predictive(args, trace)
    window = workload.prefix(args.jobs)
    result = run_scheduler(window, args.scheduler, args.estimates, args.time_limit)
    out = {
        **result.metrics.as_dict(),
        "scheduler": args.scheduler,
        "estimates": args.estimates,
        "details": result.details,
        "cleaning": _cleaning(report),
    }
    return _print(out, args.json)


def hpc_study(args: argparse.Namespace, trace: SwfTrace, workload: Workload, report: CleaningReport) -> int:
    from tqdm import tqdm

    config = StudyConfig(
        list_jobs=args.jobs,
        cp_jobs=args.cp_jobs,
        offline_jobs=args.offline_jobs,
        estimates=args.estimates,
        time_limit=args.time_limit,
        offline_time_limit=args.offline_time_limit,
        schedulers=tuple(args.schedulers.split(",")) if args.schedulers else None,
    )
    with tqdm(desc="hpc-study", unit="run", file=sys.stderr, disable=True if args.no_progress else None) as bar:

        def starting(name: str, jobs: int) -> None:
            bar.set_postfix_str(f"{name} ({jobs} jobs)")
            bar.update()

        result = run_study(workload, config, starting)
    if args.json:
        out = {
            "trace": args.trace,
            "estimates": result.estimates,
            "time_limit": result.time_limit,
            "config": {
                "jobs": args.jobs,
                "cp_jobs": args.cp_jobs,
                "offline_jobs": args.offline_jobs,
                "offline_time_limit": args.offline_time_limit,
            },
            "cleaning": _cleaning(report),
            "cleaning_rules": CLEANING_RULES,
            "table": result.table,
            "runs": result.runs,
        }
        print(json.dumps(out, sort_keys=True))
    else:
        print(study_table(result))
    sys.stdout.flush()
    return 0


def _print(out: dict[str, Any], as_json: bool) -> int:
    """One JSON document, or one `key: value` line per metric."""
    if as_json:
        print(json.dumps(out, sort_keys=True))
    else:
        for key, value in out.items():
            print(f"{key}: {value}")
    sys.stdout.flush()
    return 0
