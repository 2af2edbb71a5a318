"""`sowsched cuc` and `sowsched cuc-study`: CUC (seed 003) on the Azure capacity series, jobs generated."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.args import (
    add_output_arguments,
    bounded_int,
    comma_list,
    nonempty,
    nonnegative_float,
    positive_float,
    probability,
    usage_errors,
)
from cli.verbs import add_verb
from models.cuc.names import ERROR_CHOICES, FORECASTERS, OBJECTIVES, ORDERS, SPLITS

DEFAULT_DATA = Path("../shared/data/azure-capacity")
DEFAULT_FILES = ("capacity_azure2017.csv", "capacity_azure2019.csv")


def forecaster_names(text: str) -> tuple[str, ...]:
    """`--forecaster`: one point forecaster, or a comma-separated list that BO chooses among (the first is θ0's)."""
    names = tuple(part.strip() for part in text.split(","))
    for name in names:
        if name not in FORECASTERS:
            raise argparse.ArgumentTypeError(f"{text!r}: {name!r} is not one of {', '.join(FORECASTERS)}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r} names a forecaster twice")
    return names


def _generator(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--demand-multiple", type=positive_float,
                        help="generated jobs' total demand over the scope's capacity-hours (default: the generator's, "
                        "1.5)")
    parser.add_argument("--max-share", type=probability,
                        help="largest job demand as a share of the hourly capacity (default: the generator's, 0.002)")
    parser.add_argument("--seed", type=bounded_int(0), default=0, help="seed of the jobs, the GMM and BO")
    parser.add_argument("--objective", choices=OBJECTIVES, default="sample",
                        help="BO's violation error: per sample (the seed's text), the mean rate, or its 95 %% UCB")
    parser.add_argument("--order", choices=ORDERS, default="ratio",
                        help="Alg. 3 line 1: by c_i/d_i (the seed's text, default) or by the utility c_i d_i")
    parser.add_argument("--refit-every", type=bounded_int(1), default=1,
                        help="hours between error-law refits (default 1: a law per sample, Alg. 2 as written)")
    parser.add_argument("--errors", choices=ERROR_CHOICES, default="newest",
                        help="the error law: GMM of whole inner windows' errors, GMM of the newest observed per step "
                        "(default), moments: the published law (per-step mean and sd over the training windows, "
                        "frozen, kappa 1), max: per step the larger cut-down of newest (BO's kappa) and moments "
                        "(kappa 1), or select: newest or moments per series and p, the one BO's validation samples "
                        "favour (Vio <= p with the higher Util, else the lower Vio)")
    parser.add_argument("--split", choices=SPLITS, default="clean",
                        help="clean (default): a day between the training targets and the test scopes; published: the "
                        "paper's code, 75 %% of the 120-hour-history windows train, the rest test (23 test scopes "
                        "overlap training targets)")
    parser.add_argument("--scale", type=positive_float, default=1.0,
                        help="multiply the series by it (the paper's: 0.06 for 2019 m3str, 0.02 for 2017 m2str)")
    parser.add_argument("--validation-hours", type=bounded_int(0), default=48,
                        help="BO scores θ on the last N training origins (default 48: the last two training days; 0: "
                        "on every training origin, in-sample)")
    parser.add_argument("--forecaster", type=forecaster_names, default=FORECASTERS[:1], metavar="F[,F]",
                        help="the point forecaster of Alg. 2: tsdec (default, the seed's), ar1 (an AR(1) by OLS), or "
                        "tsdec,ar1: BO chooses it as one more parameter of θ, the first named in θ0")
    add_output_arguments(parser)


def register(sub: Any) -> None:
    p = add_verb(sub, "cuc")
    p.add_argument("--capacity", required=True, help="capacity CSV (TimeStamp,Column1,TotalCores; .gz too)")
    p.add_argument("--vm-type", required=True, help="the Column1 value to schedule, e.g. t1str")
    p.add_argument("--p", type=probability, required=True, help="violation level p, e.g. 0.001 for 0.1 %%")
    p.add_argument("--bo-steps", type=bounded_int(1), default=50, help="BO steps k (default 50, the seed's)")
    p.add_argument("--hours", type=bounded_int(1), help="use only the series' first N hours (a hold-out inside "
                   "the training span: --hours 264 --train-hours 72 trains on days 6-8 and tests on days 10-11)")
    p.add_argument("--hindsight", action="store_true",
                   help="also print `hindsight`: the kappa, chosen on the test days' truth, of the largest test Util "
                   "with Vio <= p (θ's other parameters BO's): an oracle bound, not a method")
    p.add_argument("--train-hours", type=bounded_int(1),
                   help="training origins after the 120 fitting hours (default 144: days 6-11; clean split only)")
    _generator(p)
    p.set_defaults(func=usage_errors("cuc", cuc))
    s = add_verb(sub, "cuc-study")
    s.add_argument("--capacity", action="append",
                   help="capacity CSV, repeatable (default: the Azure 2017 and 2019 files in ../shared/data)")
    s.add_argument("--bo-steps", type=bounded_int(1), default=30, help="BO steps k per CUC run (default 30)")
    s.add_argument("--exact-time-limit", type=nonnegative_float, default=0.0,
                   help="X+HiGHS baselines: seconds of HiGHS's MILP per sample after the rounded LP (default 0: the "
                   "rounded LP alone, certified against its LP bound; docs/cuc.md)")
    s.add_argument("--baselines-only", action="store_true",
                   help="only the rows that train nothing (X+HiGHS, W/o uncertainty, Alg. 3 with the true capacity): "
                   "the same numbers as the whole study's rows, in a fraction of its time")
    s.add_argument("--vm-types", type=nonempty, help="comma-separated VM types (default: every type of each file)")
    s.add_argument("--p-levels", type=comma_list(probability),
                   help="comma-separated p values for Table 3 (default 0.001,...,0.1)")
    s.add_argument("--processes", type=bounded_int(1), default=None,
                   help="local processes over the VM types (default: every core; 1 runs in this process); the "
                   "pooled numbers do not depend on it")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _generator(s)
    s.set_defaults(func=usage_errors("cuc-study", cuc_study))


def _check_paths(paths: list[str]) -> None:
    for path in paths:
        if not Path(path).is_file():
            raise ValueError(f"--capacity={path}: no such file")


def _jobs(args: argparse.Namespace) -> Any:
    from models.cuc.jobs import job_config

    return job_config(args.demand_multiple, args.max_share)


def cuc(args: argparse.Namespace) -> int:
    _check_paths([args.capacity])
    from models.cuc.data import load_capacity

    y = args.scale * load_capacity(args.capacity).of(args.vm_type)
    if args.hours is not None:
        if args.hours > len(y):
            raise ValueError(f"--hours={args.hours} exceeds the series' {len(y)} hours")
        y = y[:args.hours]
    jobs = _jobs(args)
    from models.cuc.protocol import make_split
    from models.cuc.run import Evaluator, Theta, run_cuc

    split = make_split(len(y), args.split, args.train_hours)
    ev = Evaluator(y, split, jobs, args.seed, args.refit_every, args.order, args.errors, args.validation_hours)
    out = run_cuc(y, args.p, args.bo_steps, args.seed, theta0=Theta(forecaster=args.forecaster[0]), ev=ev,
                  objective=args.objective, with_hindsight=args.hindsight, forecasters=args.forecaster)
    out.update({"forecasters": list(args.forecaster), "capacity": args.capacity, "vm_type": args.vm_type,
                "p": args.p, "bo_steps": args.bo_steps, "seed": args.seed, "order": args.order,
                "refit_every": args.refit_every, "errors": args.errors, "hours": len(y),
                "train_hours": split.train_hours, "objective": args.objective, "jobs": "generated",
                "split": args.split, "scale": args.scale,
                "generator": {**vars(jobs), "T": 24}})
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        for phase in ("train", "test"):
            r = out[phase]
            print(f"{phase}: util {100 * r['util']:.2f} %  violation {100 * r['violation']:.3f} %  "
                  f"time {r['time_s']:.2f} s  ({r['samples']} samples, jobs generated)")
        print(f"theta: {out['theta']}")
    sys.stdout.flush()
    return 0


def cuc_study(args: argparse.Namespace) -> int:
    paths = args.capacity or [str(DEFAULT_DATA / f) for f in DEFAULT_FILES]
    _check_paths(paths)
    from models.cuc.study import P_LEVELS, StudyConfig, run_study, study_tables

    p_levels = tuple(args.p_levels) if args.p_levels else P_LEVELS
    vm_types = tuple(t for t in args.vm_types.split(",") if t) if args.vm_types else None
    datasets = {Path(p).name.split(".")[0].removeprefix("capacity_"): p for p in paths}
    cfg = StudyConfig(datasets=datasets, bo_steps=args.bo_steps, seed=args.seed, jobs=_jobs(args),
                      exact_time_limit=args.exact_time_limit, p_levels=p_levels, vm_types=vm_types,
                      objective=args.objective, order=args.order, refit_every=args.refit_every,
                      errors=args.errors, baselines_only=args.baselines_only, forecasters=args.forecaster,
                      split=args.split, scale=args.scale, validation_hours=args.validation_hours)
    results = run_study(cfg, processes=args.processes, progress=not args.no_progress)
    if args.json:
        print(json.dumps({"results": results, "jobs": "generated", "bo_steps": args.bo_steps, "seed": args.seed,
                          "p_levels": list(p_levels), "datasets": datasets,
                          "objective": args.objective, "order": args.order,
                          "forecasters": list(args.forecaster), "errors": args.errors, "split": args.split,
                          "scale": args.scale, "validation_hours": args.validation_hours,
                          "generator": vars(cfg.jobs)}, sort_keys=True))
    else:
        print(study_tables(results))
    sys.stdout.flush()
    return 0
