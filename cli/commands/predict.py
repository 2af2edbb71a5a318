"""`sowsched predict evaluate` and `sowsched predict sows`: score runtime predictors; a trace as a W.json workload."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.args import bounded_int

PREDICTOR_NAMES = ("requested", "tsafrir", "last5", "exact", "learned", "learned-gmm")  # models.predict.evaluate


def register(sub: Any) -> None:
    p = sub.add_parser("predict", help="runtime prediction engine: score predictors, export a trace as SoWs")
    psub = p.add_subparsers(dest="predict_command", required=True)
    e = psub.add_parser("evaluate", help="replay an SWF trace causally and score each predictor")
    e.add_argument("--trace", required=True, help="SWF file (.swf or .swf.gz), cleaned as predictsim does")
    e.add_argument("--predictor", choices=PREDICTOR_NAMES, action="append",
                   help="predictor to score (repeatable; default: all but learned-gmm)")
    e.add_argument("--jobs", type=bounded_int(1), help="use only the first N jobs")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(func=_guarded(evaluate))
    s = psub.add_parser("sows", help="write the trace as a W.json workload of SoWs from the engine's predictions")
    s.add_argument("--trace", required=True, help="SWF file (.swf or .swf.gz), cleaned as predictsim does")
    s.add_argument("--jobs", type=bounded_int(1), default=200, help="the first N jobs (default %(default)s)")
    s.add_argument("--round-seconds", type=bounded_int(1), default=3600, help="seconds per round (default %(default)s)")
    s.add_argument("--nodes", type=bounded_int(1), default=32, help="platform nodes C (default %(default)s)")
    s.add_argument("--max-concurrency", type=bounded_int(1), help="C_m (default C)")
    s.add_argument("--samples", type=bounded_int(1), default=1000, help="failure-oracle Monte Carlo samples")
    s.add_argument("--out", required=True, metavar="W.json", help="the workload file to write")
    s.add_argument("--json", action="store_true", help="print one JSON summary")
    s.set_defaults(func=_guarded(sows))


def _guarded(body: Any) -> Any:
    """A missing trace or a bad value: one line on stderr naming it, exit 2."""
    def run(args: argparse.Namespace) -> int:
        try:
            return int(body(args))
        except (OSError, ValueError) as exc:
            print(f"sowsched predict {args.predict_command}: {exc}", file=sys.stderr)
            return 2
    return run


def evaluate(args: argparse.Namespace) -> int:
    from models.predict.evaluate import evaluate as score
    from models.predict.jobs import load_trace

    _, table = load_trace(args.trace, args.jobs)
    names = args.predictor or [n for n in PREDICTOR_NAMES if n != "learned-gmm"]
    out = {"trace": str(args.trace), "jobs": len(table), "predictors": {n: score(table, n) for n in names}}
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    print(f"{'predictor':<12} {'MAE s':>9} {'under':>6} {'cov.5':>6} {'cov.9':>6} {'cov.95':>6} {'log':>7} "
          f"{'fit s':>6} {'us/pred':>8}")
    for name, r in out["predictors"].items():  # type: ignore[attr-defined]
        log = "" if r["log_score"] is None else f"{r['log_score']:.3f}"
        c = r["coverage"]
        print(f"{name:<12} {r['mae_s']:>9.0f} {r['underprediction_rate']:>6.3f} {c['0.5']:>6.3f} {c['0.9']:>6.3f} "
              f"{c['0.95']:>6.3f} {log:>7} {r['fit_s']:>6.2f} {r['predict_us']:>8.0f}")
    return 0


def sows(args: argparse.Namespace) -> int:
    from models.predict.jobs import load_trace
    from models.predict.sows import ExportConfig, export_sows

    config = ExportConfig(round_seconds=args.round_seconds, nodes=args.nodes, max_concurrency=args.max_concurrency,
                          samples=args.samples)
    workload, table = load_trace(args.trace, args.jobs)
    document = export_sows(table, workload.nodes, config)
    Path(args.out).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    summary = {"out": str(args.out), "jobs": len(document["jobs"]), "platform": document["platform"],
               "rounds": 1 + max(j["birth"] for j in document["jobs"])}
    print(json.dumps(summary, sort_keys=True) if args.json else
          f"wrote {summary['jobs']} SoWs over {summary['rounds']} rounds to {args.out}")
    return 0
