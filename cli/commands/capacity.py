"""`sowsched capacity-plan` and `sowsched capacity-study`: capacity planning under uncertainty (seed 000)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.args import (
    add_output_arguments,
    bounded_int,
    choice_list,
    comma_list,
    int_list,
    nonempty,
    positive_float,
    unit_float,
    usage_errors,
)
from cli.verbs import add_verb
from models.planning.names import METHODS

MAX_JOBS = 2000  # synthetic problems: beyond this one CP-SAT model is a typo on 2 cores


def _solver_flags(p: argparse.ArgumentParser, time_limit: float) -> None:
    p.add_argument("--samples", type=bounded_int(1), default=25, metavar="K", help="pair samples of COSPiS/SORU (25)")
    p.add_argument("--alpha", type=unit_float, default=None, metavar="A",
                   help="tolerance: the share of samples allowed to miss a deadline (0.4; capacity-plan on a "
                        "workload file: 0.1)")
    p.add_argument("--runs", type=bounded_int(1), default=25, metavar="R", help="fresh executions per schedule (25)")
    p.add_argument("--time-limit", type=positive_float, default=time_limit, metavar="T",
                   help=f"solver seconds per problem ({time_limit:g}; CP-SAT deterministic time unless --wall-time)")
    p.add_argument("--wall-time", action="store_true", help="read --time-limit as wall seconds (not reproducible)")
    p.add_argument("--workers", type=bounded_int(1), default=2, help="CP-SAT workers (2; HiGHS runs on one thread)")


def register(sub: Any) -> None:
    p = add_verb(sub, "capacity-plan")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--synthetic", action="store_true", help="a synthetic problem of the seed's Sec. 5.4")
    src.add_argument("--workload-file", type=nonempty, metavar="W.json",
                     help="plan a workload file's jobs (optional top-level \"dependencies\": {child: [parents]})")
    src.add_argument("--write-example", type=nonempty, metavar="W.json",
                     help="write a workload file of training runs after their data preparation, and exit")
    p.add_argument("--jobs", type=bounded_int(1), default=30, metavar="N", help="synthetic: job count (30)")
    p.add_argument("--seed", type=bounded_int(0), default=0, metavar="S", help="problem and sample seed (0)")
    p.add_argument("--method", choices=METHODS, default="cospis", help="synthetic: the planner (cospis)")
    _solver_flags(p, 10.0)
    add_output_arguments(p)
    p.set_defaults(func=usage_errors("capacity-plan", capacity_plan))
    s = add_verb(sub, "capacity-study")
    s.add_argument("--sizes", type=int_list(1), default=[10, 20, 30, 40, 50, 60], help="job counts (10,...,60)")
    s.add_argument("--instances", type=bounded_int(1), default=5, help="problems per size (5)")
    s.add_argument("--methods", type=choice_list(METHODS), default="manual,det-p50,cospis",
                   help="comma-separated planners")
    s.add_argument("--grid-size", type=bounded_int(0), default=30, help="jobs per Fig. 11 problem (30; 0: no grid)")
    s.add_argument("--grid-instances", type=bounded_int(1), default=2, help="Fig. 11 problems (2)")
    s.add_argument("--grid-samples", type=int_list(1), default=list(range(5, 50, 5)),
                   help="K values of the Fig. 11 grid (5,10,...,45)")
    s.add_argument("--grid-alphas", type=comma_list(unit_float), default=[round(0.1 * i, 1) for i in range(1, 10)],
                   help="alpha values of the Fig. 11 grid (0.1,...,0.9)")
    s.add_argument("--grid-time-limit", type=positive_float, default=2.0, help="solver seconds per grid cell (2)")
    s.add_argument("--out", type=nonempty, default="capacity-study",
                   help="directory for the PNGs, table.md and study.json")
    _solver_flags(s, 10.0)
    add_output_arguments(s)
    s.set_defaults(func=usage_errors("capacity-study", capacity_study))


def _params(args: argparse.Namespace) -> Any:
    from models.planning.plan import SolveParams

    return SolveParams(time_limit=args.time_limit, workers=args.workers, deterministic=not args.wall_time)


def capacity_plan(args: argparse.Namespace) -> int:
    if args.synthetic and args.jobs > MAX_JOBS:
        raise ValueError(f"--jobs {args.jobs} is above the bound {MAX_JOBS} (synthetic problems)")
    if args.write_example is not None:
        from models.planning.workload import preparation_example

        try:
            Path(args.write_example).write_text(json.dumps(preparation_example(args.seed), indent=1) + "\n",
                                                encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"--write-example {args.write_example}: {exc}") from None
        return 0
    if args.workload_file is not None:
        return _plan_workload(args)
    from models.planning.methods import run_synthetic

    alpha = 0.4 if args.alpha is None else args.alpha
    run = run_synthetic(args.jobs, args.seed, args.method, _params(args), args.samples, alpha, args.runs)
    out = {"jobs": args.jobs, "seed": args.seed, "samples": args.samples, "alpha": alpha, "runs": args.runs,
           **run.plan.as_dict(), **run.evaluation.as_dict()}
    _print(out, args.json)
    return 0


def _plan_workload(args: argparse.Namespace) -> int:
    from models.planning.workload import capacity, split_dependencies
    from models.workloads import parse_workload_file, read_workload_document

    alpha = 0.1 if args.alpha is None else args.alpha
    try:
        document, dependencies = split_dependencies(read_workload_document(args.workload_file))
        workload = parse_workload_file(args.workload_file, document, name=Path(args.workload_file).stem)
        answer = capacity(workload, dependencies, alpha, args.samples, _params(args), args.runs, args.seed)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--workload-file {args.workload_file}: {exc}") from None
    out = {"workload": workload.name, "jobs": len(workload.jobs), "dependencies": sum(map(len, dependencies.values())),
           "samples": args.samples, "alpha": alpha, "runs": args.runs, **answer.as_dict()}
    _print(out, args.json)
    return 0


def _print(out: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(out, sort_keys=True))
    else:
        for key, value in out.items():
            if key != "schedule":
                print(f"{key}: {value}")
        if "schedule" in out:
            print("schedule: " + ", ".join(f"{k}@{v}" for k, v in out["schedule"].items()))
    sys.stdout.flush()


def capacity_study(args: argparse.Namespace) -> int:
    methods = tuple(args.methods)
    from models.planning.plan import SolveParams
    from models.planning.study import StudyConfig, plot, run_study, table

    alpha = 0.4 if args.alpha is None else args.alpha
    config = StudyConfig(sizes=tuple(args.sizes), instances=args.instances, methods=methods, samples=args.samples,
                         alpha=alpha, runs=args.runs, params=_params(args), grid_size=args.grid_size,
                         grid_instances=args.grid_instances, grid_samples=tuple(args.grid_samples),
                         grid_alphas=tuple(args.grid_alphas),
                         grid_params=SolveParams(time_limit=args.grid_time_limit, workers=args.workers,
                                                 deterministic=not args.wall_time))
    result = run_study(config, progress=lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(args.out)
    figures = plot(result, out_dir)
    text = table(result)
    (out_dir / "table.md").write_text(text + "\n", encoding="utf-8")
    doc = {"summary": result.summary(), "rows": result.rows(), "figures": [str(f) for f in figures],
           "grid": {f"{k},{a}": [x.evaluation.as_dict() for x in runs] for (k, a), runs in result.grid.items()}}
    (out_dir / "study.json").write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps({**doc, "table": str(out_dir / "table.md")}, sort_keys=True))  # study.json's document
    else:
        print(text)
    return 0
