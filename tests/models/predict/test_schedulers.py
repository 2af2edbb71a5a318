"""EASY++ against a hand-computed trace where a Tsafrir prediction lets a job backfill that EASY holds back."""

from __future__ import annotations

import pytest

from models.hpc.jobs import Job, Workload
from models.hpc.prediction_backfill import simulate_backfill
from models.predict.jobs import JobTable
from models.predict.schedulers import make_policy, run_predictive
from tests.models.predict.conftest import make_table

# 2 nodes. Users 1's two first jobs (10 s each) finish at 10, so Tsafrir predicts (10 + 10) // 2 = 10 for its
# third job j4. j2 (1 node, requested 1000) runs from 20 to 120; j3 needs both nodes: its reservation is at
# j2's predicted end, 20 + 1000 = 1020. j4 (1 node, runs 30, requested 2000) arrives at 22:
# - EASY (requested times): 22 + 2000 > 1020 and no spare node at 1020 -> j4 waits for j3: starts 170;
# - EASY++: 22 + 10 <= 1020 -> backfilled at 22; it outlives its prediction at 32 and gets its requested time.
ROWS = [  # submit, runtime, requested, size, user
    (0, 10, 100, 1, 1), (0, 10, 100, 1, 1), (20, 100, 1000, 1, 2), (21, 50, 50, 2, 3), (22, 30, 2000, 1, 1)]


def _trace() -> tuple[Workload, object]:
    jobs = tuple(Job(id=i, submit=s, runtime=d, size=r, requested=req) for i, (s, d, req, r, _) in enumerate(ROWS))
    table = make_table([r[0] for r in ROWS], [r[1] for r in ROWS], [r[2] for r in ROWS], [r[4] for r in ROWS],
                       size=[r[3] for r in ROWS])
    return Workload(jobs, 2), table


def test_easy_pp_backfills_what_easy_holds_back() -> None:
    workload, table = _trace()
    policy, plain = make_policy("easy-pp", table)  # type: ignore[arg-type]
    pp = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    assert pp.starts == (0, 0, 20, 120, 22) and pp.corrections == 1 and pp.backfilled == 1
    policy, plain = make_policy("easy-requested", table)  # type: ignore[arg-type]
    easy = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    assert easy.starts == (0, 0, 20, 120, 170) and easy.corrections == 0


def test_shortest_predicted_first() -> None:
    # j0 holds a node to 100, jx the other to 5; j1 (2 nodes) is the head, reserved at 100; j2 (60 s) and
    # j3 (20 s) wait for the node freed at 5, and both would end before 100: EASY++ starts the shorter
    # prediction (j3) at 5 and j2 at 25; FCFS EASY starts j2 at 5 and j3 at 65.
    rows = [(0, 100, 100, 1, 1), (0, 5, 5, 1, 5), (1, 10, 10, 2, 2), (2, 60, 60, 1, 3), (3, 20, 20, 1, 4)]
    jobs = tuple(Job(id=i, submit=s, runtime=d, size=r, requested=q) for i, (s, d, q, r, _) in enumerate(rows))
    workload = Workload(jobs, 2)
    table = make_table([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[4] for r in rows],
                       size=[r[3] for r in rows])
    pp = simulate_backfill(workload, make_policy("easy-pp", table)[0])
    assert pp.starts == (0, 0, 100, 25, 5)
    fcfs = simulate_backfill(workload, make_policy("easy-requested", table)[0], pass_if_new_fits=True)
    assert fcfs.starts == (0, 0, 100, 5, 65)


def test_easy_learned_runs_and_validates() -> None:
    workload, table = _trace()
    run = run_predictive(workload, table, "easy-learned", risk=0.5)  # type: ignore[arg-type]
    assert run.metrics.jobs == 5 and min(run.metrics.as_dict()["BSLD"], 1.0) == 1.0
    with pytest.raises(ValueError, match=r"risk=1\.5 must lie in"):
        run_predictive(workload, table, "easy-learned", risk=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="corrector='x' must be one of"):
        run_predictive(workload, table, "easy-learned", corrector="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scheduler='bogus' must be one of"):
        run_predictive(workload, table, "bogus")  # type: ignore[arg-type]


def _workload(rows: list[tuple[int, int, int, int, int]], nodes: int) -> tuple[Workload, JobTable]:
    jobs = tuple(Job(id=i, submit=s, runtime=d, size=r, requested=q) for i, (s, d, q, r, _) in enumerate(rows))
    table = make_table([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[4] for r in rows],
                       size=[r[3] for r in rows])
    return Workload(jobs, nodes), table


def test_every_job_predicted_to_end_at_the_shadow_frees_its_nodes() -> None:
    # 4 nodes: j0 (1 node) and j1 (2 nodes) are both predicted to end at 100; j2 (2 nodes) is the head, reserved
    # at 100, when 1 + 1 + 2 = 4 nodes are free: 2 spare. j3 (1 node, 500 s) ends after the shadow but fits the
    # spare nodes, so it starts at 2 (counting j0's node alone at 100 would leave no spare node and hold it back).
    rows = [(0, 100, 100, 1, 1), (0, 100, 100, 2, 2), (1, 50, 50, 2, 3), (2, 500, 500, 1, 4)]
    workload, table = _workload(rows, 4)
    run = simulate_backfill(workload, make_policy("easy-requested", table)[0], pass_if_new_fits=True)
    assert run.starts == (0, 0, 100, 2)


def test_one_pass_per_instant_sees_simultaneous_submissions_together() -> None:
    # 2 nodes: j0 holds one to 100, j1 (2 nodes) is the head reserved at 100. j2 (90 s) and j3 (20 s) arrive
    # together at 5 and both would end by 100; one node is free. The instant's single pass backfills the
    # shorter prediction, j3; j2 then waits for j1 (100 to 110). A pass per submission would start j2 first.
    rows = [(0, 100, 100, 1, 1), (0, 10, 10, 2, 2), (5, 90, 90, 1, 3), (5, 20, 20, 1, 4)]
    workload, table = _workload(rows, 2)
    run = simulate_backfill(workload, make_policy("easy-pp", table)[0])
    assert run.starts == (0, 100, 110, 5) and run.passes == 6  # instants 0, 5, 25, 100, 110, 200
