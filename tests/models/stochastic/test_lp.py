"""The App. E LP against brute force: vertex enumeration on tiny priors, and the closed form when supply is slack."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

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
    a = np.vstack([lp.supply.toarray(), lp.tasks.toarray()])
    b = np.concatenate([np.full(lp.supply.shape[0], lp.capacity), lp.outcomes.caps])
    assert sol.value == pytest.approx(vertex_optimum(lp.outcomes.value, a, b), rel=1e-7, abs=1e-9)
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


def test_hand_built_lp_rows_and_columns() -> None:
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
