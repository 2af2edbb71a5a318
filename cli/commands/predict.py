"""`sowsched predict evaluate`, `sows`, `tradeoff` and `misreport`: score runtime predictors; a trace as a W.json
workload; what misreporting features gains on a trace."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cli.args import add_output_arguments, bounded_int, comma_list, nonempty, probability, unit_float, usage_errors
from cli.verbs import add_verb
from models.predict.names import ON_REQUEST, PREDICTORS


def register(sub: Any) -> None:
    p = add_verb(sub, "predict")
    psub = p.add_subparsers(dest="predict_command", required=True)
    e = psub.add_parser("evaluate", help="replay an SWF trace causally and score each predictor")
    e.add_argument("--trace", required=True, help="SWF file (.swf or .swf.gz), cleaned as predictsim does")
    e.add_argument("--predictor", choices=PREDICTORS, action="append",
                   help="predictor to score (repeatable; default: all but learned-gmm, learned-boosted and the "
                        "learned-oracle-P bounds)")
    e.add_argument("--jobs", type=bounded_int(1), help="use only the first N jobs")
    e.add_argument("--window", type=bounded_int(10), default=None,
                   help="learned, learned-gmm: completed jobs the model trains on (default: the engine's 8,000; the "
                   "other predictors ignore it)")
    add_output_arguments(e)
    e.set_defaults(func=usage_errors("predict evaluate", evaluate))
    s = psub.add_parser("sows", help="write the trace as a W.json workload of SoWs from the engine's predictions")
    s.add_argument("--trace", required=True, help="SWF file (.swf or .swf.gz), cleaned as predictsim does")
    s.add_argument("--jobs", type=bounded_int(1), default=200, help="the first N jobs (default %(default)s)")
    s.add_argument("--round-seconds", type=bounded_int(1), default=3600, help="seconds per round (default %(default)s)")
    s.add_argument("--nodes", type=bounded_int(1), default=32, help="platform nodes C (default %(default)s)")
    s.add_argument("--max-concurrency", type=bounded_int(1), help="C_m (default C)")
    s.add_argument("--samples", type=bounded_int(1), default=1000, help="failure-oracle Monte Carlo samples")
    s.add_argument("--out", type=nonempty, required=True, metavar="W.json", help="the workload file to write")
    add_output_arguments(s)
    s.set_defaults(func=usage_errors("predict sows", sows))
    t = psub.add_parser("tradeoff", help="easy-learned BSLD and AF over the risk parameter, against EASY++ (PNG)")
    t.add_argument("--trace", required=True, help="SWF file (.swf or .swf.gz), cleaned as predictsim does")
    t.add_argument("--jobs", type=bounded_int(1), help="use only the first N jobs")
    t.add_argument("--risks", type=comma_list(unit_float), default="0.1,0.3,0.5,0.7,0.9",
                   help="comma-separated risks in [0, 1]")
    t.add_argument("--reservation-q", type=probability, default=None,
                   help="reservation quantile in (0, 1) (default: the engine's)")
    t.add_argument("--plot", type=nonempty, required=True, metavar="OUT.png", help="the PNG to write")
    add_output_arguments(t)
    t.set_defaults(func=usage_errors("predict tradeoff", tradeoff))
    m = psub.add_parser("misreport", help="what misreporting features gains on a trace, against the real durations "
                                          "(docs/prediction.md)")
    m.add_argument("--trace", required=True, help="SWF file (.swf or .swf.gz), cleaned as predictsim does")
    m.add_argument("--jobs", type=bounded_int(1), default=200, help="the first N jobs (default %(default)s)")
    m.add_argument("--round-seconds", type=bounded_int(1), default=3600, help="seconds per round (default %(default)s)")
    m.add_argument("--every", type=bounded_int(1), default=1, help="audit every K-th job (default %(default)s)")
    m.add_argument("--cold-start", type=bounded_int(1), default=20,
                   help="completions before learned laws (the server's prediction_cold_start; default %(default)s)")
    add_output_arguments(m)
    m.set_defaults(func=usage_errors("predict misreport", misreport))


def evaluate(args: argparse.Namespace) -> int:
    from models.predict.evaluate import evaluate as score
    from models.predict.jobs import load_trace

    _, table = load_trace(args.trace, args.jobs)
    names = args.predictor or [n for n in PREDICTORS if n not in ON_REQUEST]
    out = {"trace": str(args.trace), "jobs": len(table), "window": args.window,
           "predictors": {n: score(table, n, args.window) for n in names}}
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    print(f"{'predictor':<12} {'MAE s':>9} {'under':>6} {'cov.5':>6} {'cov.9':>6} {'cov.95':>6} {'log':>7} "
          f"{'fit s':>6} {'us/pred':>8}")
    for name, r in out["predictors"].items():
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


def misreport(args: argparse.Namespace) -> int:
    from models.predict.jobs import load_trace
    from models.predict.misreport_trace import measure
    from models.predict.online import EngineConfig
    from models.predict.sows import ExportConfig

    workload, table = load_trace(args.trace, args.jobs)
    out = {"trace": str(args.trace), **measure(table, workload.nodes, ExportConfig(round_seconds=args.round_seconds),
                                                EngineConfig(cold_start=args.cold_start), args.every)}
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    print(f"{out['audited']} jobs audited: {out['jobs_gaining']} gain by misreporting features, "
          f"{out['gain_total']:.2f} in all against an honest utility of {out['honest_utility']:.2f} "
          f"({out['truncating']['jobs']} by an overrun eviction)")
    return 0


def tradeoff(args: argparse.Namespace) -> int:
    from models.predict.jobs import load_trace
    from models.predict.schedulers import DEFAULT_RESERVATION_Q
    from models.predict.tradeoff import plot_tradeoff, risk_tradeoff

    risks = args.risks
    q = DEFAULT_RESERVATION_Q if args.reservation_q is None else args.reservation_q
    workload, table = load_trace(args.trace, args.jobs)
    result = risk_tradeoff(workload, table, risks, reservation_q=q)
    plot_tradeoff(result, f"{Path(args.trace).name}: {len(table)} jobs", args.plot)
    result |= {"trace": str(args.trace), "jobs": len(table), "plot": str(args.plot)}
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print(f"EASY++: BSLD {result['easy_pp']['BSLD']:.2f}, AF {result['easy_pp']['AF']:.0f} s")
    for r in result["rows"]:
        print(f"risk {r['risk']:.2f}: BSLD {r['BSLD']:.2f} ({100 * r['bsld_vs_easy_pp']:+.1f}%), "
              f"AF {r['AF']:.0f} s ({100 * r['af_vs_easy_pp']:+.1f}%)")
    return 0
