"""The COS problem's validation: every branch refused with the field, the value and the bound; cycles named."""

from __future__ import annotations

import pytest

from models.planning.history import empirical, estimate, pair_samples
from models.planning.problem import CycleError, Job, Problem, find_cycle, topological_order


def job(id: str = "a", q: int = 0, f: int = 5, u: int = 20, D: tuple[int, ...] = (3, 4), J: tuple[str, ...] = (),
        R: tuple[int, ...] = (2, 2)) -> Job:
    return Job(id=id, q=q, f=f, u=u, D=D, J=J, R=R)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"id": ""}, "job id is empty"),
    ({"q": -1}, r"q=-1 is not an integer in \[0, "),
    ({"f": -2}, r"f=-2 is not an integer in \[0, "),
    ({"u": 0}, r"u=0 is not an integer in \[1, "),
    ({"q": 1.5}, r"q=1.5 is not an integer"),
    ({"q": True}, r"q=True is not an integer"),
    ({"q": 20, "u": 20}, "deadline u=20 is not after the requested start q=20"),
    ({"D": (), "R": ()}, r"the history is empty \(\|D\|=0, \|R\|=0\)"),
    ({"D": (1, 2, 3)}, r"\|D\|=3 differs from \|R\|=2"),
    ({"D": (0, 2)}, r"D\[0\]=0 is not an integer in \[1, "),
    ({"R": (2, 0)}, r"R\[1\]=0 is not an integer in \[1, "),
    ({"J": ("a",)}, "job 'a' lists itself as a parent: a -> a"),
    ({"J": ("b", "b")}, r"parents J=\['b', 'b'\] name a job twice"),
])
def test_job_refuses_bad_fields(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        job(**kwargs)  # type: ignore[arg-type]


def test_window_is_q_to_min_of_q_plus_f_and_u() -> None:
    assert job(q=3, f=5, u=20).latest_start == 8
    assert job(q=3, f=50, u=20).latest_start == 20


def test_problem_refuses_empty_duplicates_and_unknown_parents() -> None:
    with pytest.raises(ValueError, match="the problem has no job"):
        Problem(())
    with pytest.raises(ValueError, match="job id 'a' is used twice"):
        Problem((job("a"), job("a")))
    with pytest.raises(ValueError, match="job 'a': parent 'zz' is not a job of the problem"):
        Problem((job("a", J=("zz",)),))


def test_a_cycle_is_refused_with_the_cycle_named() -> None:
    jobs = (job("a", J=("c",)), job("b", J=("a",)), job("c", J=("b",)), job("d", J=("a",)))
    with pytest.raises(CycleError, match="the parents form a cycle: a -> c -> b -> a"):
        Problem(jobs)
    assert find_cycle([job("x"), job("y", J=("x",))]) == []


def test_topological_order_puts_parents_first() -> None:
    problem = Problem((job("a", J=("c",)), job("b"), job("c", J=("b",))))
    order = problem.order
    assert order.index(2) < order.index(0) and order.index(1) < order.index(2)
    with pytest.raises(CycleError):
        topological_order([[1], [0]])


def test_check_starts_names_the_job_and_its_window() -> None:
    problem = Problem((job("a", q=2, f=3),))
    problem.check_starts([4])
    with pytest.raises(ValueError, match=r"job 'a': start 6 is outside its window \[2, 5\]"):
        problem.check_starts([6])
    with pytest.raises(ValueError, match="2 starts for 1 jobs"):
        problem.check_starts([2, 3])


def test_estimators_are_empirical_quantiles_and_the_smaller_mode() -> None:
    law = empirical([(1, 2, 2, 3, 9), (4, 4, 5, 5)])
    assert list(estimate(law, "p50")) == [2, 4]  # the smallest x with F(x) >= 0.5
    assert list(estimate(law, "p75")) == [3, 5]
    assert list(estimate(law, "p100")) == [9, 5]
    assert list(estimate(law, "mode")) == [2, 4]  # a tie goes to the smaller value
    with pytest.raises(ValueError, match="estimator='p90' is not one of p50, p75, p100, mode"):
        estimate(law, "p90")  # type: ignore[arg-type]


def test_pair_samples_keep_duration_and_cpu_of_the_same_run() -> None:
    import numpy as np

    problem = Problem((job("a", D=(1, 2, 3), R=(10, 20, 30)),))
    d, r = pair_samples(problem, 200, np.random.default_rng(0))
    assert set(zip(d[:, 0].tolist(), r[:, 0].tolist(), strict=True)) == {(1, 10), (2, 20), (3, 30)}
    with pytest.raises(ValueError, match="samples K=0 is below the bound 1"):
        pair_samples(problem, 0, np.random.default_rng(0))
