"""`bench capacity_pool A.json B.json ...`: `bench capacity` results over consecutive seed ranges pooled into one.

Results of the same workloads, series, rounds, load, stride, fit rows and forecast options whose seed ranges follow
each other (`--first-seed` of one is the first seed plus the seeds of the one before) are the runs of one result
over the union of the ranges, cut in pieces. Pooling concatenates each (workload, series, model) row's per-run
lists and recomputes every mean, standard error and pooled difference from them, so the result is what one
`bench capacity --seeds <total> --first-seed <first>` would print (up to the rounding of sums): a difference stated
on several ranges comes from one command, and the pooled result serves as an `--against` base for the union run.
When every piece has an `against` pairing with the same base options, the pairings are pooled as well.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from typing import Any

from benchmarks.capacity import PARTS, pool_rows
from benchmarks.capacity_against import OPTIONS, pool_pairs, setting
from benchmarks.paired import mean, paired_mean
from cli.args import BenchInputError

SHARED = ("rounds", "load", "stride", "fit_rows", "quantile", "level_weight", "price_floor")  # equal in every piece
LISTS = ("gaps", "welfares", "failed", "parts", "d_welfare", "d_failed")  # per-run lists of a row, in seed order


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", metavar="RESULT.json",
                        help="`bench capacity --out` (or --json) results over consecutive seed ranges, any order")


def run(args: argparse.Namespace) -> dict[str, Any]:
    pieces = sorted((_read(path) for path in args.results), key=lambda p: setting(p[1], "first_seed"))
    _check(pieces)
    first = pieces[0][1]
    result: dict[str, Any] = {key: setting(first, key) for key in SHARED}
    result.update({"first_seed": setting(first, "first_seed"), "seeds": sum(p["seeds"] for _, p in pieces),
                   "offline_seeds": first["offline_seeds"], "pooled_from": [path for path, _ in pieces]})
    result["rows"] = [_merge([p["rows"][i] for _, p in pieces]) for i in range(len(first["rows"]))]
    result["pooled"] = pool_rows(result["rows"])
    pairings = [p["against"] for _, p in pieces if "against" in p]
    if len(pairings) == len(pieces):
        result["against"] = _merge_pairings(pairings)
    elif pairings:
        print("sowsched bench capacity_pool: `against` left out: not every result has one", file=sys.stderr)
    return result


def table(result: dict[str, Any]) -> str:
    from benchmarks.capacity import table as capacity_table

    last = result["first_seed"] + result["seeds"] - 1
    head = f"seeds {result['first_seed']}-{last}, pooled from {', '.join(result['pooled_from'])}"
    return head + "\n\n" + capacity_table(result)


def _read(path: str) -> tuple[str, dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            result = json.load(fh)
    except (OSError, ValueError) as e:
        raise BenchInputError(f"{path}: cannot read it as JSON ({e})") from None
    if not isinstance(result, dict) or not isinstance(result.get("rows"), list) or "seeds" not in result:
        raise BenchInputError(f"{path}: not a `bench capacity --json` result (no 'rows' list or 'seeds')")
    if any(not isinstance(r, dict) or any(k not in r for k in ("gaps", "welfares", "failed")) for r in result["rows"]):
        raise BenchInputError(f"{path}: its rows carry no per-run lists (gaps, welfares, failed) to pool")
    return path, result


def _check(pieces: list[tuple[str, dict[str, Any]]]) -> None:
    """Every piece the same settings and rows, the seed ranges consecutive, offline seeds only in the first."""
    (path0, first), keys0 = pieces[0], _keys(pieces[0][1])
    if len(pieces) > 1 and first["offline_seeds"] > first["seeds"]:
        raise BenchInputError(f"{path0}: offline_seeds is {first['offline_seeds']}, more than its {first['seeds']} "
                              "seeds; a run over the union would solve the optimum on seeds it does not have")
    for (before, prev), (path, piece) in itertools.pairwise(pieces):
        for key in SHARED:
            there, here = setting(first, key), setting(piece, key)
            if there != here:
                raise BenchInputError(f"{path}: {key} is {here!r} there and {there!r} in {path0}; the pieces must "
                                      f"share {', '.join(SHARED)}")
        if _keys(piece) != keys0:
            raise BenchInputError(f"{path}: its (workload, series, model) rows differ from those of {path0}")
        end = setting(prev, "first_seed") + prev["seeds"]
        if setting(piece, "first_seed") != end:
            raise BenchInputError(f"{path}: its seeds start at {setting(piece, 'first_seed')}, not at {end} where "
                                  f"{before}'s end; the seed ranges must follow each other without gap or overlap")
        if piece["offline_seeds"]:
            raise BenchInputError(f"{path}: offline_seeds is {piece['offline_seeds']}; only the piece with the "
                                  "first seeds may have them (a single run solves the optimum on its first seeds)")


def _keys(result: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    return [(r.get("workload"), r.get("series"), r.get("model")) for r in result["rows"]]


def _merge(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One (workload, series, model) row over every piece: lists concatenated, means recomputed from them."""
    out = dict(rows[-1])  # C and the played mean: a single run reads them at its last seed
    for key in LISTS:
        if key in rows[0]:
            out[key] = [x for r in rows for x in r[key]]
    if "d_parts" in rows[0]:
        out["d_parts"] = {k: [x for r in rows for x in r["d_parts"][k]] for k in PARTS}
    jobs = [r["jobs"] for r in rows]
    gap, gap_se = paired_mean(out["gaps"])
    out.update(runs=sum(r["runs"] for r in rows), jobs=sum(jobs), ratio=rows[0]["ratio"],
               estimate=_weighted([r["estimate"] for r in rows], jobs),
               realized=_weighted([r["realized"] for r in rows], jobs),
               gap=gap, gap_se=gap_se,
               evicted_cancelled=mean([float(x) for x in out["failed"]]), welfare=mean(out["welfares"]),
               revenue=mean([p["revenue"] for p in out["parts"]]))
    return out


def _weighted(values: list[float], weights: list[int]) -> float:
    total = sum(w for w in weights if w)
    return sum(v * w for v, w in zip(values, weights, strict=True) if w) / total if total else math.nan


def _merge_pairings(pairings: list[dict[str, Any]]) -> dict[str, Any]:
    bases = [{k: setting(p["base"], k) for k in OPTIONS if k != "offline_seeds"} for p in pairings]
    if any(b != bases[0] for b in bases):
        raise BenchInputError(f"the pieces' `against` bases ran with different options: {bases}")
    rows = []
    for parts in zip(*(p["rows"] for p in pairings), strict=True):
        rows.append({"workload": parts[0]["workload"], "series": parts[0]["series"],
                     "d_welfare": [x for r in parts for x in r["d_welfare"]],
                     "d_failed": [x for r in parts for x in r["d_failed"]],
                     "fixed_equal": all(r["fixed_equal"] for r in parts)})
    return {"file": " + ".join(p["file"] for p in pairings), "base": {**pairings[0]["base"], **bases[0]}, "rows": rows,
            "pooled": pool_pairs(rows)}
