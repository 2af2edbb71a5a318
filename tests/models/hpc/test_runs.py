"""The scheduler families share one outcome shape: each simulator's result is a `Schedule`, scored by one `Run`."""

from __future__ import annotations

from models.hpc.jobs import Job, Workload
from models.hpc.list_scheduling import ListScheduler, Option, Order
from models.hpc.metrics import evaluate
from models.hpc.point_backfill import PointMode, simulate_point
from models.hpc.prediction_backfill import simulate_backfill
from models.hpc.runs import Run, Schedule, score
from models.hpc.simulator import simulate
from models.predict.schedulers import make_policy
from tests.models.predict.conftest import make_table

# 2 nodes, exact runtimes: jobs 0 and 1 fill the machine; at 10 job 0 ends, the 2-node job 2 is reserved at 30
# (job 1's end), and job 3 (4 s, 1 node) backfills at 10 since it ends by 30
JOBS = ((0, 10, 1), (0, 30, 1), (5, 20, 2), (6, 4, 1))


def test_every_family_gives_a_schedule_that_score_turns_into_its_metrics() -> None:
    workload = Workload(tuple(Job(id=i, submit=s, runtime=d, size=r, requested=d) for i, (s, d, r) in
                              enumerate(JOBS)), 2)
    table = make_table([s for s, _, _ in JOBS], [d for _, d, _ in JOBS], [d for _, d, _ in JOBS],
                       size=[r for _, _, r in JOBS])
    policy, plain = make_policy("easy-exact", table)
    schedules: dict[str, Schedule] = {
        "round": simulate(workload, ListScheduler(Order.FCFS, Option.BACKFILL, 1), "exact"),
        "policy": simulate_backfill(workload, policy, pass_if_new_fits=plain),
        "compiled": simulate_point(workload, table.requested, table.user, PointMode.EXACT, False, True),
    }
    runs = {name: score(name, workload, s, {"family": name}) for name, s in schedules.items()}
    for name, run in runs.items():
        assert isinstance(run, Run) and run.scheduler == name and run.details == {"family": name}
        assert run.starts == tuple(schedules[name].starts)
        assert run.metrics == evaluate(workload.jobs, run.starts, workload.nodes)
    assert runs["round"].starts == runs["policy"].starts == runs["compiled"].starts == (0, 0, 30, 10)
