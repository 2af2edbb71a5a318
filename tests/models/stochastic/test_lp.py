"""The App. E LP against brute force: vertex enumeration on tiny priors, and the closed form when supply is slack."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from mechanism.platform import Platform
from mechanism.sow import SoW
from models.prior import JobPrior, Prior, check_prior
from models.stochastic.lp import build_lp, enumerate_outcomes, solve_lp
from tests.models.stochastic.conftest import random_prior, sow_of, tiny_platform


def vertex_optimum(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """max c.z over {a z <= b, 0 <= z <= 1} by enumerating every vertex (n tight constraints at a time)."""
    n = c.size
    g = np.vstack([a, -np.eye(n), np.eye(n)])
    h = np.concatenate([b, np.zeros(n), np.ones(n)])
    best = -np.inf
    for rows in itertools.combinations(range(g.shape[0]), n):
        sub = g[list(rows)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        z = np.linalg.solve(sub, h[list(rows)])
        if np.all(g @ z <= h + 1e-9):
            best = max(best, float(c @ z))
    return best


def lp_by_definition(prior: Prior, p: Platform, capacity: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, A, b) of App. E written out from the prior, one loop per index, without build_lp or its outcome table:
    a column per (job j, SoW k, task i, start offset s) with s in [a_i, S_m) and V_k(s + d_i) > 0, worth
    lambda_i V_k(s + d_i); per round t, sum of lambda_i c_k over the columns running at t <= capacity; per (j, k, i),
    the sum of its columns <= q_k."""
    columns = []  # (cap key, first round, last round + 1, width, value)
    for j, job in enumerate(prior.jobs):
        for k, (sow, q) in enumerate(zip(job.sows, job.probability, strict=True)):
            for i, o in enumerate(sow.outcomes):
                for s in range(o.arrival_offset, p.S_m):
                    v = float(sow.value(np.array([s + o.duration]))[0])
                    if v > 0:
                        start = job.birth + s
                        columns.append(((j, k, i, q), start, start + o.duration, o.probability * sow.concurrency,
                                        o.probability * v))
    rounds = range(min(c[1] for c in columns), max(c[2] for c in columns))
    keys = sorted({c[0] for c in columns})
    a = np.zeros((len(rounds) + len(keys), len(columns)))
    for col, (key, lo, hi, width, _) in enumerate(columns):
        for t in range(lo, hi):
            a[t - rounds.start, col] = width
        a[len(rounds) + keys.index(key), col] = 1.0
    b = np.array([capacity] * len(rounds) + [key[3] for key in keys])
    return np.array([c[4] for c in columns]), a, b


@pytest.mark.parametrize("seed", range(12))
def test_lp_matches_vertex_enumeration_on_tiny_priors(seed: int) -> None:
    p = tiny_platform()
    rng = np.random.default_rng(seed)
    prior = random_prior(rng, p, jobs=2)
    lp = build_lp(prior, p, capacity=float(rng.uniform(0.3, 1.5)))
    if lp.cols > 6 or lp.cols == 0:
        prior = Prior(jobs=prior.jobs[:1])
        lp = build_lp(prior, p, capacity=float(rng.uniform(0.3, 1.5)))
    assert 0 < lp.cols <= 7
    sol = solve_lp(lp)
    c, a, b = lp_by_definition(prior, p, lp.capacity)  # the columns in build_lp's order: job, SoW, task, start
    assert c.tolist() == pytest.approx(lp.outcomes.value.tolist())
    assert sol.value == pytest.approx(vertex_optimum(c, a, b), rel=1e-7, abs=1e-9)
    # The solution itself is feasible.
    assert np.all(a @ sol.z <= b + 1e-7)


def test_slack_supply_gives_every_task_its_best_start() -> None:
    """With ample supply, Val = sum_j sum_SoW q sum_i lambda_i max_s V(s + d_i) (closed form)."""
    p = tiny_platform(S_m=4)
    rng = np.random.default_rng(5)
    prior = random_prior(rng, p, jobs=4, max_sows=3, max_tasks=3)
    expected = 0.0
    for job in prior.jobs:
        for sow, q in zip(job.sows, job.probability, strict=True):
            for o in sow.outcomes:
                expected += q * o.probability * float(sow.value(np.arange(o.arrival_offset, p.S_m) + o.duration).max())
    sol = solve_lp(build_lp(prior, p, capacity=1e6))
    assert sol.value == pytest.approx(expected, rel=1e-9)


def test_a_task_has_a_column_per_valuable_start_and_each_round_bounds_its_width() -> None:
    """One job, one SoW (q = 1), tasks (0, 1) w.p. 0.75 and (1, 2) w.p. 0.25, c = 2, value 8 until offset 3."""
    p = tiny_platform()
    sow = sow_of(p, 2, [[3, 8.0]], [[0, 1, 0.75], [1, 2, 0.25]])
    prior = Prior(jobs=(JobPrior(id="a", birth=1, sows=(sow,), probability=(1.0,)),))
    om = enumerate_outcomes(prior, p)
    # task 0 may start at offsets 0, 1, 2 (completion 1..3 <= 3); task 1 at offset 1 only (completion 3).
    assert om.start.tolist() == [1, 2, 3, 2]
    assert om.width.tolist() == [1.5, 1.5, 1.5, 0.5]
    assert om.value.tolist() == [6.0, 6.0, 6.0, 2.0]
    lp = build_lp(prior, p, capacity=1.0)
    assert lp.first_round == 1 and lp.supply.shape == (3, 4)
    assert lp.supply.toarray().tolist() == [[1.5, 0, 0, 0], [0, 1.5, 0, 0.5], [0, 0, 1.5, 0.5]]
    assert lp.tasks.toarray().tolist() == [[1, 1, 1, 0], [0, 0, 0, 1]]
    sol = solve_lp(lp)
    # Each task-0 start is worth 4 per unit of supply, task 1 is too: the supply of 3 rounds binds.
    assert sol.value == pytest.approx(vertex_optimum(lp.outcomes.value, np.vstack(
        [lp.supply.toarray(), lp.tasks.toarray()]), np.array([1.0, 1.0, 1.0, 1.0, 1.0])))
    assert sol.size() == {"rows": 5, "cols": 4, "nonzeros": 9, "support": int(np.count_nonzero(sol.z))}


def test_solve_is_deterministic() -> None:
    p = tiny_platform(S_m=5, D_m=3)
    prior = random_prior(np.random.default_rng(9), p, jobs=8, max_sows=3, max_tasks=3)
    a, b = solve_lp(build_lp(prior, p, 2.0)), solve_lp(build_lp(prior, p, 2.0))
    assert a.z.tobytes() == b.z.tobytes() and a.value == b.value


def test_highs_prints_nothing_on_stdout() -> None:
    code = ("from tests.models.stochastic.conftest import random_prior, tiny_platform\n"
            "import numpy as np\nfrom models.stochastic.lp import build_lp, solve_lp\n"
            "p = tiny_platform()\nsolve_lp(build_lp(random_prior(np.random.default_rng(1), p, 3), p, 1.0))\n"
            "print('{}')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {}


def test_capacity_must_be_positive() -> None:
    p = tiny_platform()
    with pytest.raises(ValueError, match=r"capacity=0\.0 must be positive"):
        build_lp(random_prior(np.random.default_rng(0), p, 1), p, 0.0)


def test_prior_validation() -> None:
    p = tiny_platform()
    sow = sow_of(p, 1, [[2, 5.0]], [[0, 1, 1.0]])
    with pytest.raises(ValueError, match=r"probabilities sum to 0.5, not 1"):
        check_prior(Prior(jobs=(JobPrior("a", 0, (sow,), (0.5,)),)), p)
    with pytest.raises(ValueError, match="id is used twice"):
        check_prior(Prior(jobs=(JobPrior("a", 0, (sow,), (1.0,)), JobPrior("a", 1, (sow,), (1.0,)))), p)
    with pytest.raises(ValueError, match=r"probability\[0\]=0.0 is outside"):
        check_prior(Prior(jobs=(JobPrior("a", 0, (sow, sow), (0.0, 1.0)),)), p)
    with pytest.raises(ValueError, match="as many probabilities"):
        check_prior(Prior(jobs=(JobPrior("a", 0, (sow,), (0.5, 0.5)),)), p)
    with pytest.raises(ValueError, match="birth=-1 is below the bound 0"):
        check_prior(Prior(jobs=(JobPrior("a", -1, (sow,), (1.0,)),)), p)
    blind = SoW.parse({"concurrency": 1, "value_steps": [[2, 5.0]], "outcomes": [[0, 1, 1.0]]}, p)
    with pytest.raises(ValueError, match=r"sows\[0\]: outcomes\[0\] has signal None .* needs the duration revealed"):
        check_prior(Prior(jobs=(JobPrior("a", 0, (blind,), (1.0,)),)), p)
