"""The planners by name (det-p50, cospis, milp-p50, ...) and one synthetic run: generate, plan, execute, score."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.planning import cpsat, milp
from models.planning.execution import RUNS, Evaluation, evaluate
from models.planning.history import Estimator
from models.planning.names import METHODS
from models.planning.plan import Plan, SolveParams
from models.planning.problem import Problem
from models.planning.synthetic import generate

SAMPLES = 25  # K (Sec. 5.2)
ALPHA = 0.4  # tolerance (Sec. 5.2)


def plan(problem: Problem, method: str, params: SolveParams, samples: int = SAMPLES, alpha: float = ALPHA,
         seed: int = 0) -> Plan:
    """Run the planner `method`; the samples of COSPiS and SORU^Pk are drawn with `seed`."""
    rng = np.random.default_rng([20, 1, seed])
    if method == "manual":
        return cpsat.manual_plan(problem)
    if method.startswith("det-"):
        return cpsat.solve_det(problem, _estimator(method.removeprefix("det-")), params)
    if method == "cospis":
        return cpsat.solve_cospis(problem, samples, alpha, rng, params)
    if method.startswith("soru-"):
        return cpsat.solve_soru(problem, _estimator(method.removeprefix("soru-")), samples, alpha, rng, params)
    if method == "milp-indexed":
        return milp.solve_milp(problem, "p50", params, indexed=True)
    if method.startswith("milp-"):
        return milp.solve_milp(problem, _estimator(method.removeprefix("milp-")), params)
    raise ValueError(f"method={method!r} is not one of {', '.join(METHODS)}")


def _estimator(name: str) -> Estimator:
    for e in ("p50", "p75", "p100", "mode"):
        if name == e:
            return e
    raise ValueError(f"estimator {name!r} is not one of p50, p75, p100, mode")


@dataclass(frozen=True)
class SyntheticRun:
    """One synthetic problem planned by one method and executed `runs` times."""

    n: int
    seed: int
    plan: Plan
    evaluation: Evaluation


def run_synthetic(n: int, seed: int, method: str, params: SolveParams, samples: int = SAMPLES,
                  alpha: float = ALPHA, runs: int = RUNS) -> SyntheticRun:
    """Generate problem (n, seed), plan it, execute it on `runs` fresh draws (the same draws for every method)."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not one of {', '.join(METHODS)}")
    synthetic = generate(n, seed)
    result = plan(synthetic.problem, method, params, samples, alpha, seed)
    d, r = synthetic.fresh(runs, np.random.default_rng([20, 2, n, seed]))
    return SyntheticRun(n, seed, result, evaluate(synthetic.problem, result, d, r))
