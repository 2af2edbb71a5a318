"""The compiled EASY / EASY++ simulator equals the policy-driven event simulator, job for job."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.data import CTC_SP2, KTH_SP2
from models.hpc.jobs import Job, Workload
from models.hpc.point_backfill import PointMode, simulate_point
from models.hpc.prediction_backfill import simulate_backfill
from models.predict.jobs import JobTable, load_trace
from models.predict.schedulers import POINT_RUNS, make_policy, run_predictive
from tests.models.predict.conftest import make_table


def _reference(workload: Workload, table: JobTable, name: str) -> tuple[tuple[int, ...], int, int, int]:
    policy, plain = make_policy(name, table)
    run = simulate_backfill(workload, policy, pass_if_new_fits=plain)
    return run.starts, run.passes, run.backfilled, run.corrections


def _compiled(workload: Workload, table: JobTable, name: str) -> tuple[tuple[int, ...], int, int, int]:
    mode, sjf, plain = POINT_RUNS[name]
    run = simulate_point(workload, table.requested, table.user, mode, sjf, plain)
    return run.starts, run.passes, run.backfilled, run.corrections


rows = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(0, 30), st.integers(1, 4),
                          st.integers(1, 3)), min_size=1, max_size=25)


@settings(max_examples=300, deadline=None)
@given(rows)
def test_compiled_point_schedulers_equal_the_policy_simulator(data: list[tuple[int, int, int, int, int]]) -> None:
    # small integer times make many events share an instant and many predicted ends share the shadow time
    data = sorted(data, key=lambda r: r[0])
    jobs = tuple(Job(id=i, submit=s, runtime=d, size=r, requested=d + extra)
                 for i, (s, d, extra, r, _) in enumerate(data))
    workload = Workload(jobs, 4)
    table = make_table([r[0] for r in data], [r[1] for r in data], [r[1] + r[2] for r in data],
                       [r[4] for r in data], size=[r[3] for r in data])
    for name in POINT_RUNS:
        assert _compiled(workload, table, name) == _reference(workload, table, name), name


@pytest.mark.parametrize("trace,jobs", [(KTH_SP2, 4000), (CTC_SP2, 3000)])
def test_compiled_point_schedulers_equal_the_policy_simulator_on_real_traces(trace: object, jobs: int) -> None:
    workload, table = load_trace(str(trace), jobs)
    for name in POINT_RUNS:
        assert _compiled(workload, table, name) == _reference(workload, table, name), name


def test_metrics_on_a_kth_slice_are_pinned() -> None:
    # the values the policy-driven simulator printed before the compiled one existed (the first 4,000 jobs)
    workload, table = load_trace(str(KTH_SP2), 4000)
    got = {name: run_predictive(workload, table, name).metrics for name in POINT_RUNS}
    pinned = {"easy-requested": (111.20940010265498, 14594.02825), "easy-exact": (83.44974102390564, 13668.98275),
              "easy-pp": (98.0262920385386, 14217.227)}
    for name, (bsld, af) in pinned.items():
        assert (bsld, af) == (got[name].BSLD, got[name].AF), name


def test_compiled_simulator_refuses_misaligned_columns() -> None:
    workload = Workload((Job(id=0, submit=0, runtime=1, size=1, requested=1),), 1)
    with pytest.raises(ValueError, match=r"requested and user must have shape \(1,\)"):
        simulate_point(workload, np.array([1, 2]), np.array([1]), PointMode.REQUESTED, False, True)
