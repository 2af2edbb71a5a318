"""The seed's synthetic COS problems (Sec. 5.4): uniform durations and CPUs, random windows and parents.

For each problem: makespan T ~ U{500, ..., 3000}; for each of the n jobs, |D| = |R| = 50 past runs with
duration ~ U{10, ..., 30} and CPU ~ U{5, ..., 10} (whole seconds and whole cores), a requested start
q ~ U{0, ..., T - 1}, flexibility f drawn from {20, 30, 80, 120}, deadline u = q + f + max(D), and up to three
parents: m ~ U{0, ..., 3}, drawn without replacement among the jobs i with q_i + max(D_i) <= q_j (a parent run
at its requested start ends before the child's requested start in every recorded run; fewer if fewer qualify).
That choice keeps the manual schedule feasible for every estimator, as the seed's problems must be (it leaves
the choice of parents open). The true law, for fresh executions, is the same uniform one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.arrays import IntArray
from models.planning.problem import Job, Problem

DURATION = (10, 30)
CPU = (5, 10)
HISTORY = 50
MAKESPAN = (500, 3000)
FLEXIBILITY = (20, 30, 80, 120)
MAX_PARENTS = 3
SIZES = (10, 20, 30, 40, 50, 60)


@dataclass(frozen=True)
class SyntheticProblem:
    """A generated problem, its makespan T and the law fresh executions draw from."""

    problem: Problem
    makespan: int
    seed: int

    def fresh(self, runs: int, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
        """(d[k, j], r[k, j]): independent draws from the true uniform laws."""
        n = self.problem.n
        d = rng.integers(DURATION[0], DURATION[1] + 1, size=(runs, n), dtype=np.int64)
        r = rng.integers(CPU[0], CPU[1] + 1, size=(runs, n), dtype=np.int64)
        return d, r


def generate(n: int, seed: int) -> SyntheticProblem:
    """One problem of n jobs; the same (n, seed) gives the same problem."""
    if n < 1:
        raise ValueError(f"jobs n={n} is below the bound 1")
    rng = np.random.default_rng([20, n, seed])
    makespan = int(rng.integers(MAKESPAN[0], MAKESPAN[1] + 1))
    D = rng.integers(DURATION[0], DURATION[1] + 1, size=(n, HISTORY))
    R = rng.integers(CPU[0], CPU[1] + 1, size=(n, HISTORY))
    q = rng.integers(0, makespan, size=n)
    f = rng.choice(np.array(FLEXIBILITY), size=n)
    m = rng.integers(0, MAX_PARENTS + 1, size=n)
    jobs = []
    for j in range(n):
        eligible = np.flatnonzero(q + D.max(axis=1) <= q[j])
        take = min(int(m[j]), eligible.size)
        parents = sorted(int(i) for i in rng.choice(eligible, size=take, replace=False)) if take else []
        jobs.append(Job(id=f"j{j}", q=int(q[j]), f=int(f[j]), u=int(q[j] + f[j] + D[j].max()),
                        D=tuple(int(x) for x in D[j]), J=tuple(f"j{i}" for i in parents),
                        R=tuple(int(x) for x in R[j])))
    return SyntheticProblem(Problem(tuple(jobs)), makespan, seed)
