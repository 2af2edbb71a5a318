"""EASY++ against a hand-computed trace where a Tsafrir prediction lets a job backfill that EASY holds back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from models.data import KTH_SP2
from models.hpc.jobs import Job, Workload
from models.hpc.prediction_backfill import simulate_backfill
from models.law import Law
from models.predict.jobs import JobTable, load_trace
from models.predict.schedulers import (
    PortfolioPolicy,
    RiskPolicy,
    make_policy,
    multi_choice,
    portfolio_choice,
    portfolio_replays,
    recalibrated_threshold,
    run_predictive,
    threshold_summary,
)
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


def _risk_policy(guard: float | None) -> RiskPolicy:
    _, table = _trace()
    policy, _ = make_policy("easy-learned", table, guard=guard)  # type: ignore[arg-type]
    assert isinstance(policy, RiskPolicy)
    return policy


def test_guard_bounds_the_expected_overrun_past_the_reservation() -> None:
    # a candidate that ends at 10 s or at 1000 s with equal odds, 100 s before the head's reservation: it passes
    # the risk test (P(X <= 100) = 0.5 >= 1 - 0.9), and runs past the reservation by 0.5 * 900 = 450 s in
    # expectation: allowed with no guard or guard 5 (450 <= 500), refused with guard 1 (450 > 100)
    law = Law.atoms(np.array([10.0, 1000.0]), np.array([0.5, 0.5]))
    assert law.z_excess(100) == 450.0
    for guard, starts in ((None, True), (5.0, True), (1.0, False)):
        policy = _risk_policy(guard)
        policy.laws[4] = law
        assert policy.ends_by(4, now=1000, shadow=1100) is starts, guard
    with pytest.raises(ValueError, match=r"guard=-1\.0 must be >= 0"):
        _risk_policy(-1.0)


def test_guard_never_refuses_a_job_sure_to_end_by_the_reservation() -> None:
    law = Law.atoms(np.array([10.0, 90.0]), np.array([0.5, 0.5]))
    policy = _risk_policy(0.0)
    policy.laws[4] = law
    assert law.z_excess(100) == 0.0 and policy.ends_by(4, now=0, shadow=100)


def test_easy_learned_decisions_before_t_ignore_the_trace_after_t() -> None:
    # causality: change every job submitted after t (runtimes, requests, sizes); the laws of the jobs submitted
    # by t and every start before t stay as they were
    workload, table = load_trace(str(KTH_SP2), 700)
    cut = 450
    t = int(table.submit[cut])
    later = table.submit > t
    runtime = np.where(later, table.runtime * 3 + 7, table.runtime)
    requested = np.maximum(table.requested, runtime)
    size = np.where(later, np.minimum(table.size * 2, workload.nodes), table.size)
    altered = replace(table, runtime=runtime, requested=requested, size=size)
    jobs = tuple(Job(id=j.id, submit=j.submit, runtime=int(runtime[i]), size=int(size[i]), requested=int(requested[i]))
                 for i, j in enumerate(workload.jobs))
    runs = []
    for w, tab in ((workload, table), (Workload(jobs, workload.nodes), altered)):
        policy, _ = make_policy("easy-learned", tab, guard=2.0, calibrate=100)
        seen: dict[int, tuple[float, ...]] = {}
        submit = policy.on_submit

        def recording(index: int, now: int, submit: Any = submit, seen: dict[int, Any] = seen,
                      laws: dict[int, Law] = policy.laws) -> int:
            out = submit(index, now)
            seen[index] = tuple(laws[index].probs) + tuple(laws[index].support)
            return int(out)
        policy.on_submit = recording
        runs.append((simulate_backfill(w, policy).starts, seen))
    (starts, laws), (starts_b, laws_b) = runs
    assert all(starts_b[i] == b for i, b in enumerate(starts) if b < t)
    assert sum(b < t for b in starts) > 300
    assert all(laws[i] == laws_b[i] for i in range(len(starts)) if table.submit[i] <= t)
    assert any(laws[i] != laws_b[i] for i in range(len(starts)) if table.submit[i] > t)


def test_calibration_raises_the_risk_threshold_when_laws_promise_short_runs_that_never_come() -> None:
    # every law says P(X <= 10) = 0.2, P(X <= 100) = 0.5, yet each of 250 completed jobs ran exactly 100 s: their
    # PIT values F_j(100) are all 0.5, so the 0.1-quantile of the recent PIT is 0.5 and a candidate now needs
    # P(X <= shadow - now) >= 0.5 instead of 0.1. A candidate with P(X <= 50) = 0.3 passed before and is refused.
    n = 300
    table = make_table(list(range(n)), [100] * n, [1000] * n)
    law = Law.atoms(np.array([10.0, 100.0, 1000.0]), np.array([0.2, 0.3, 0.5]))
    candidate = Law.atoms(np.array([10.0, 1000.0]), np.array([0.3, 0.7]))
    decisions = []
    for calibrate in (0, 250):
        policy, _ = make_policy("easy-learned", table, calibrate=calibrate)
        for i in range(250):
            policy.laws[i] = law
            policy.on_complete(i, 0)
        policy.laws[299] = candidate
        decisions.append(policy.ends_by(299, now=0, shadow=50))
    assert decisions == [True, False]
    assert recalibrated_threshold([0.1 * k for k in range(1, 11)], 0.1) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="calibrate=-1 must be >= 0"):
        make_policy("easy-learned", table, calibrate=-1)


def test_the_threshold_summary_counts_recalibrations_and_the_share_below_the_nominal_level() -> None:
    # 250 completions with PIT 0.5 under calibrate=250: recalibrated at the 200th and the 250th (CALIBRATION_MIN,
    # then every CALIBRATION_EVERY), each time to 0.5 (stricter than the nominal 0.1)
    n = 300
    table = make_table(list(range(n)), [100] * n, [1000] * n)
    law = Law.atoms(np.array([10.0, 100.0, 1000.0]), np.array([0.2, 0.3, 0.5]))
    policy, _ = make_policy("easy-learned", table, calibrate=250)
    for i in range(250):
        policy.laws[i] = law
        policy.on_complete(i, 0)
    assert policy.thresholds == [pytest.approx(0.5)] * 2
    assert threshold_summary([0.05, 0.08, 0.2, 0.04], 0.1) == {
        "nominal": 0.1, "recalibrations": 4, "p25": 0.0475, "p50": 0.065, "p75": 0.11, "share_below_nominal": 0.75}
    assert threshold_summary([], 0.1) == {"nominal": 0.1, "recalibrations": 0}


def test_a_wide_head_is_protected_by_its_own_risk() -> None:
    # a candidate with P(X <= 100) = 0.3, 100 s before the reservation: risk 0.9 admits it (0.3 >= 0.1); with
    # wide_risk 0.5 it is refused while the head needs over 1/8 of the machine (0.3 < 0.5) and admitted again
    # when the head is narrow
    policy = _risk_policy(None)
    policy.wide_risk = 0.5
    policy.laws[4] = Law.atoms(np.array([50.0, 1000.0]), np.array([0.3, 0.7]))
    decisions = []
    for share in (0.5, 0.1):
        policy.on_reservation(3, share)
        decisions.append(policy.ends_by(4, now=0, shadow=100))
    assert decisions == [False, True]
    _, table = _trace()
    with pytest.raises(ValueError, match=r"wide_risk=2\.0 must lie in \[0, 1\]"):
        make_policy("easy-learned", table, wide_risk=2.0)  # type: ignore[arg-type]


def _choice(runtime: int) -> tuple[str, float, float]:
    # 2 nodes: j0 (1 node, 100 s) from 0; j1 (2 nodes, 10 s) arrives at 1 and is reserved at j0's end, 100; j2
    # (1 node, requested 1000) arrives at 2. EASY++ predicts j2 its requested 1000 s (no history): it waits for j1
    # (starts 110). Its law, 30 s or 1000 s with equal odds, passes the risk test (P(X <= 98) = 0.5 >= 0.1): it
    # starts at 2. Running 30 s, it ends before the reservation; running 1000 s, it holds j1 back to 1002.
    jobs = [Job(id=0, submit=0, runtime=100, size=1, requested=100), Job(id=1, submit=1, runtime=10, size=2,
            requested=10), Job(id=2, submit=2, runtime=runtime, size=1, requested=1000)]
    laws = [Law.atoms(np.array([100.0]), np.array([1.0])), Law.atoms(np.array([10.0]), np.array([1.0])),
            Law.atoms(np.array([30.0, 1000.0]), np.array([0.5, 0.5]))]
    return portfolio_choice(jobs, 2, [100, 10, 1000], laws, [100.0, 10.0, 30.0], [100, 10, 30])


def test_the_portfolio_chooses_the_policy_whose_replay_has_the_lower_bsld_and_a_tie_goes_to_easy_pp() -> None:
    # j2 runs 30 s: EASY++ BSLD (1 + (100 - 1 + 10) / 10 + (110 - 2 + 30) / 30) / 3 = 5.5, the risk test
    # (1 + 10.9 + 1) / 3 = 4.3; j2 runs 1000 s: EASY++ (1 + 10.9 + 1108 / 1000) / 3, the risk test
    # (1 + (1002 - 1 + 10) / 10 + 1) / 3
    assert _choice(30) == ("easy-learned", pytest.approx(5.5), pytest.approx(4.3))
    assert _choice(1000) == ("easy-pp", pytest.approx(13.008 / 3), pytest.approx(103.1 / 3))
    # one job alone: both replays give BSLD 1, and the tie goes to EASY++; no job: EASY++
    one = [Job(id=0, submit=0, runtime=100, size=1, requested=100)]
    law = Law.atoms(np.array([100.0]), np.array([1.0]))
    assert portfolio_choice(one, 2, [100], [law], [100.0], [100]) == ("easy-pp", 1.0, 1.0)
    assert portfolio_choice([], 2, [], [], [], [])[0] == "easy-pp"


def _portfolio(table: JobTable, **options: Any) -> PortfolioPolicy:
    policy, plain = make_policy("easy-learned", table, portfolio=24, nodes=2, **options)
    assert isinstance(policy, PortfolioPolicy) and not plain and not policy.compiles
    return policy


def test_a_portfolio_pass_orders_and_tests_candidates_by_the_policy_in_force() -> None:
    # job 4's Tsafrir prediction is 10 s, its law 500 s or 1000 s: EASY++ backfills it 100 s before the
    # reservation, the risk test does not (P(X <= 100) = 0 < 0.1); each orders by its own prediction
    _, table = _workload(ROWS, 2)
    policy = _portfolio(table)
    policy._point[4] = 10
    policy.laws[4] = Law.atoms(np.array([500.0, 1000.0]), np.array([0.5, 0.5]))
    policy.key[4] = 500.0
    seen = []
    for mode in ("easy-pp", "easy-learned"):
        policy.mode = mode
        seen.append((policy.ends_by(4, now=0, shadow=100), policy.backfill_key(4)))
    assert seen == [(True, 10.0), (False, 500.0)]


def test_the_portfolio_summary_counts_each_choice_its_ties_and_its_empty_windows() -> None:
    _, table = _workload(ROWS, 2)
    policy = _portfolio(table)
    policy.choices = [(0, "easy-pp", float("nan"), float("nan")), (86400, "easy-pp", 1.0, 1.0),
                      (172800, "easy-learned", 2.0, 1.5), (259200, "easy-pp", 2.0, 2.5)]
    summary = policy.summary()
    assert summary["chosen"] == {"easy-pp": 3, "easy-learned": 1} and summary["choices"] == 4
    assert (summary["ties"], summary["empty"], summary["period_h"], summary["window_h"]) == (1, 1, 24, 168)


def test_a_portfolio_that_never_chooses_is_easy_pp() -> None:
    # a period longer than the trace: no choice is made, every pass is EASY++'s, and the starts are the compiled
    # EASY++ simulator's
    workload, table = load_trace(str(KTH_SP2), 1500)
    run = run_predictive(workload, table, "easy-learned", portfolio=10**6)
    assert run.starts == run_predictive(workload, table, "easy-pp").starts
    assert run.details["portfolio"]["choices"] == 0
    assert run.details["portfolio"]["submitted"] == {"easy-pp": 1500, "easy-learned": 0}


@pytest.mark.parametrize(("risks", "names"), [
    (None, {"easy-pp", "easy-learned"}), ((0.8, 0.9, 0.95), {"easy-pp", "risk=0.8", "risk=0.95"})])
def test_a_portfolio_choice_ignores_the_trace_after_its_instant(risks: tuple[float, ...] | None,
                                                                names: set[str]) -> None:
    # causality: change every job submitted at or after the instant t of a choice (runtimes, requests, sizes); that
    # choice, every one before it (and the replays' BSLD, NaN before any job completed: compared by repr) and
    # every start before t stay as they were; with one risk test or three
    workload, table = load_trace(str(KTH_SP2), 1500)
    runs: list[tuple[tuple[int, ...], list[tuple[int, str, float, float]]]] = []
    for altered in (False, True):
        w, tab = workload, table
        if altered:
            t = runs[0][1][19][0]  # the 20th choice: 1,147 jobs submitted before it, 353 after
            later = table.submit >= t
            runtime = np.where(later, table.runtime * 3 + 7, table.runtime)
            requested = np.maximum(table.requested, runtime)
            size = np.where(later, np.minimum(table.size * 2, workload.nodes), table.size)
            tab = replace(table, runtime=runtime, requested=requested, size=size)
            w = Workload(tuple(Job(id=j.id, submit=j.submit, runtime=int(runtime[i]), size=int(size[i]),
                                   requested=int(requested[i])) for i, j in enumerate(workload.jobs)),
                         workload.nodes)
        policy, _ = make_policy("easy-learned", tab, portfolio=24, nodes=workload.nodes, portfolio_risks=risks)
        assert isinstance(policy, PortfolioPolicy)
        runs.append((simulate_backfill(w, policy).starts, policy.choices))
    (starts, choices), (starts_b, choices_b) = runs
    t = choices[19][0]
    assert repr(choices_b[:20]) == repr(choices[:20]) and {c[1] for c in choices[:20]} == names
    assert all(starts_b[i] == b for i, b in enumerate(starts) if b < t)
    assert choices_b != choices and sum(b < t for b in starts) > 1000


def test_the_portfolio_validates_its_period_machine_and_risk_test() -> None:
    _, table = _workload(ROWS, 2)
    with pytest.raises(ValueError, match=r"portfolio=-1 must be >= 1 \(hours between two choices\)"):
        make_policy("easy-learned", table, portfolio=-1, nodes=2)
    with pytest.raises(ValueError, match=r"nodes=0 must be >= 1"):
        make_policy("easy-learned", table, portfolio=24)
    with pytest.raises(ValueError, match=r"portfolio=24 replays the plain risk test: guard=1\.0, calibrate=0"):
        _portfolio(table, guard=1.0)
    with pytest.raises(ValueError, match=r"calibrate=100 and wide_risk=None must be off"):
        _portfolio(table, calibrate=100)
    with pytest.raises(ValueError, match=r"wide_risk=0\.5 must be off"):
        _portfolio(table, wide_risk=0.5)


def _replays(runtime: int) -> list[float]:
    # _choice's three jobs with j2's law 30 s with probability 0.15, else 1000 s (its 0.4- and 0.5-quantiles
    # 1000 s): P(X <= 98) = 0.15 passes the risk test at 0.9 and 0.95 (0.15 >= 0.1, 0.05), not at 0.8 (< 0.2),
    # and EASY++ (its prediction 1000 s) holds it back as the risk test at 0.8 does
    jobs = [Job(id=0, submit=0, runtime=100, size=1, requested=100), Job(id=1, submit=1, runtime=10, size=2,
            requested=10), Job(id=2, submit=2, runtime=runtime, size=1, requested=1000)]
    laws = [Law.atoms(np.array([100.0]), np.array([1.0])), Law.atoms(np.array([10.0]), np.array([1.0])),
            Law.atoms(np.array([30.0, 1000.0]), np.array([0.15, 0.85]))]
    fast = portfolio_replays(jobs, 2, [100, 10, 1000], laws, [100.0, 10.0, 1000.0], [100, 10, 1000],
                             (0.8, 0.9, 0.95))
    slow = portfolio_replays(jobs, 2, [100, 10, 1000], laws, [100.0, 10.0, 1000.0], [100, 10, 1000],
                             (0.8, 0.9, 0.95), compiled=False)
    assert fast == slow
    return fast


NAMES = ("easy-pp", "risk=0.8", "risk=0.9", "risk=0.95")


def test_the_several_risk_portfolio_chooses_the_lowest_replay_and_a_tie_keeps_the_policy_in_force() -> None:
    # j2 runs 30 s: backfilling it (risk 0.9, 0.95) gives BSLD 4.3, holding it back (EASY++, risk 0.8) 5.5
    # (_choice's arithmetic); j2 runs 1000 s: holding it back 13.008 / 3, backfilling it 103.1 / 3
    short, long = _replays(30), _replays(1000)
    assert short == [pytest.approx(5.5), pytest.approx(5.5), pytest.approx(4.3), pytest.approx(4.3)]
    assert long == [pytest.approx(13.008 / 3)] * 2 + [pytest.approx(103.1 / 3)] * 2
    # the best two tie: the policy in force stays when it is one of them, else the first of them in NAMES
    assert [multi_choice(NAMES, short, now) for now in NAMES] == ["risk=0.9", "risk=0.9", "risk=0.9", "risk=0.95"]
    assert [multi_choice(NAMES, long, now) for now in NAMES] == ["easy-pp", "risk=0.8", "easy-pp", "easy-pp"]
    assert multi_choice(NAMES, [3.0, 2.0, 1.0, 2.0], "risk=0.8") == "risk=0.9"  # no tie: the lowest
    # an empty week (NaN: no completed job) keeps the policy in force
    assert multi_choice(NAMES, [float("nan")] * 4, "risk=0.95") == "risk=0.95"


def test_a_several_risk_portfolio_pass_tests_candidates_at_the_risk_in_force() -> None:
    # job 4's law: 30 s with probability 0.15, else 1000 s; 98 s before the reservation it passes the risk test at
    # 0.9 and 0.95, not at 0.8; under EASY++ its Tsafrir prediction, 1000 s, holds it back
    _, table = _workload(ROWS, 2)
    policy = _portfolio(table, portfolio_risks=(0.8, 0.9, 0.95))
    assert policy.names == NAMES and policy.submitted == dict.fromkeys(NAMES, 0)
    policy._point[4] = 1000
    policy.laws[4] = Law.atoms(np.array([30.0, 1000.0]), np.array([0.15, 0.85]))
    seen = []
    for mode in NAMES:
        policy.mode = mode
        seen.append(policy.ends_by(4, now=2, shadow=100))
    assert seen == [False, False, True, True]


def test_the_several_risk_summary_counts_each_candidate_and_the_ties_for_the_lowest() -> None:
    _, table = _workload(ROWS, 2)
    policy = _portfolio(table, portfolio_risks=(0.8, 0.9))
    nan = float("nan")
    policy.choices = [(0, "easy-pp", nan, nan, nan), (86400, "easy-pp", 1.0, 1.0, 2.0),
                      (172800, "risk=0.9", 2.0, 1.5, 1.5), (259200, "risk=0.8", 2.0, 1.5, 1.8)]
    summary = policy.summary()
    assert summary["chosen"] == {"easy-pp": 2, "risk=0.8": 1, "risk=0.9": 1}
    assert (summary["ties"], summary["empty"], summary["choices"]) == (2, 1, 4)


def test_the_several_risk_portfolio_validates_its_risks() -> None:
    _, table = _workload(ROWS, 2)
    with pytest.raises(ValueError, match=r"portfolio_risks=\(\) must name at least one risk"):
        _portfolio(table, portfolio_risks=())
    with pytest.raises(ValueError, match=r"portfolio_risks=\(0\.8, 1\.5\) must each lie in \[0, 1\]"):
        _portfolio(table, portfolio_risks=(0.8, 1.5))
    with pytest.raises(ValueError, match=r"portfolio_risks=\(0\.9, 0\.8\) must be strictly increasing"):
        _portfolio(table, portfolio_risks=(0.9, 0.8))
    with pytest.raises(ValueError, match=r"portfolio_risks=\(0\.9, 0\.9\) must be strictly increasing"):
        _portfolio(table, portfolio_risks=(0.9, 0.9))
    with pytest.raises(ValueError, match=r"portfolio_risks=\(0\.9,\) needs portfolio >= 1 \(got 0\)"):
        make_policy("easy-learned", table, portfolio_risks=(0.9,))
