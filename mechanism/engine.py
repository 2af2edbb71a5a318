"""The engine: Alg. 1 run through the reduction of Alg. 2, one round at a time (docs/model.md section 6).

Inputs are `submit`, `report_arrival`, `report_completion`, `report_capacity` and `advance`; replaying the same
inputs in the same order rebuilds the identical state, events and quotes, bit for bit.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import numpy as np

from mechanism.bundle_pricing import BundleBook, BundleMenu, check_duration_revealed
from mechanism.capacity import MAX_CAPACITY
from mechanism.events import Event
from mechanism.executor import ExecutorInfo
from mechanism.failure import MonteCarloOracle, Residual
from mechanism.failure_exact import DEFAULT_MAX_COMBINATIONS, ExactOracle
from mechanism.history import ChainPoint, History, HistoryLookup, HistoryMarks
from mechanism.jobs import Job, JobState
from mechanism.launch_plan import FailureEstimates, choose_plan
from mechanism.ledger import Charge, Ledger
from mechanism.platform import Bundle, Platform
from mechanism.pricing import PriceBook, PriceMenu, plan_usage, unit_price
from mechanism.sow import Signal, SoW
from mechanism.views import BundlesView, CapacityView, JobView, Payload, Quote, RoundReport

OracleKind = Literal["mc", "exact"]
MAX_JOB_KEY = 256  # characters of a job key; the server's keys are a tenant name, '/' and the tenant's own job id,
# each bounded in server/limits.py (64 + 1 + 128, within this bound)
CHAIN_BYTES = 32  # SHA-256
CHAIN_START = ChainPoint(HistoryMarks(0, 0, 0), bytes(CHAIN_BYTES), bytes(CHAIN_BYTES))  # before any history
MAX_FEED_AHEAD = 1_000_000  # rounds: a capacity report further ahead than this is refused


def check_job_id(job_id: str, bound: int = MAX_JOB_KEY) -> None:
    """Refuse an empty, longer than `bound` or unprintable job id (a line break breaks every listing and log)."""
    if not job_id or len(job_id) > bound:
        raise EngineError(f"job id {job_id!r} must have 1 to {bound} characters")
    unprintable = next((i for i, ch in enumerate(job_id) if not ch.isprintable()), None)
    if unprintable is not None:
        raise EngineError(f"job id {job_id!r} has a character that is not printable at position {unprintable}")


class EngineError(Exception):
    """A command the engine refuses; nothing changed. `code` names the matching gRPC status."""

    code = "INVALID_ARGUMENT"


class UnknownJob(EngineError):
    code = "NOT_FOUND"


class DuplicateJob(EngineError):
    code = "ALREADY_EXISTS"


class InvalidReport(EngineError):
    code = "FAILED_PRECONDITION"


class OutsideSupport(EngineError):
    code = "INVALID_ARGUMENT"


class ParentEnded(EngineError):
    """A job named in `after` has ended other than COMPLETED: the new job could never arrive."""

    code = "FAILED_PRECONDITION"


class NoUnitPrices(EngineError):
    """A per-round unit price menu asked of an engine that prices by bundles (pricing 'stochastic')."""

    code = "FAILED_PRECONDITION"


class Engine:
    """The whole mechanism state; time is passed in by calling `advance`."""

    def __init__(self, platform: Platform, oracle: OracleKind = "mc",
                 max_exact_combinations: int = DEFAULT_MAX_COMBINATIONS) -> None:
        self.platform = platform
        self.now = 0
        self.jobs: dict[str, Job] = {}  # every job not forgotten (forget_history), in submission order
        self._active: list[Job] = []  # birth order
        self.submitted = 0  # jobs ever submitted: the next job's seq
        self.prices = PriceBook(platform)  # y: the expected usage (it sets the prices unless pricing is stochastic)
        self.bundles = BundleBook(platform) if platform.pricing == "stochastic" else None
        self.ledger = Ledger()
        self.events: list[Event] = []
        self.oracle_kind: OracleKind = oracle
        self._max_exact_combinations = max_exact_combinations
        self._oracle: MonteCarloOracle | ExactOracle = self._new_oracle(platform)
        self._oracle_round = -1
        # The reserve H_t when the platform sets one (docs/model.md 10.9), else None; the oracle holds floor(H_t).
        self.reserve: float | None = 0.0 if platform.reserve is not None else None
        self._oracle_held = 0
        # The capacity feed: reported capacities of rounds not played yet, and the capacity of the last round
        # played (C until a report says otherwise; a round without a report keeps the last one).
        self.capacity_feed: dict[int, int] = {}
        self.capacity_last = platform.C
        # The capacity model's level mu_t when it tracks the feed (level_weight > 0; docs/model.md 10.1), else None.
        self.capacity_level: float | None = (
            platform.capacity.mean if platform.capacity is not None and platform.capacity.level_weight > 0 else None)
        self.busy_node_rounds = 0  # sum over finished rounds of the running load
        # The digest's record of what no longer changes, so it costs O(active jobs), not O(history): hash chains
        # over the events and over the jobs that left the active set, in that order (`retired`).
        self.retired: list[str] = []
        self._event_chain = bytes(CHAIN_BYTES)
        self._retired_chain = bytes(CHAIN_BYTES)
        # History before `forgotten` is no longer held: `archive` finds its jobs (the server's is its store).
        self.forgotten = HistoryMarks(0, 0, 0)
        self.archive: HistoryLookup | None = None
        # Dependencies: each active parent's children still waiting for it (docs/workloads-and-sows.md).
        self._children: dict[str, list[str]] = {}

    # ---- step 1: submissions ----

    def submit(self, job_id: str, sow: SoW, after: tuple[str, ...] | None = None) -> Quote:
        """Quote a SoW born now: announce prices and failure estimates, choose its plan, commit it to y.

        `after` holds the job keys of `sow.after` (the server's are namespaced: server/namespace.py; default: the
        SoW's ids as they are); each must be an earlier job that has not ended other than COMPLETED."""
        check_job_id(job_id)
        if job_id in self.jobs or self._forgotten_job(job_id) is not None:
            raise DuplicateJob(f"job id {job_id!r} already exists")
        parents = self._parents(job_id, sow, sow.after if after is None else after)
        try:
            sow.check_bounds(self.platform)
            if self.bundles is not None:
                check_duration_revealed(sow)
        except ValueError as exc:
            raise EngineError(str(exc)) from exc
        oracle = self._current_oracle()
        raw = oracle.estimates(sow.concurrency)  # may raise OracleTooLarge before anything changes
        est = FailureEstimates.from_raw(raw, self.platform.failure_threshold)
        menu = self.current_menu()
        plan = choose_plan(sow, self.now, menu, est)
        starts = plan.outcome_starts(sow)
        job = Job(id=job_id, seq=self.submitted, birth=self.now, concurrency=sow.concurrency, held_sow=sow,
                  held_menu=menu, held_plan=plan, command=sow.command, env=tuple(sow.env.items()),
                  after=tuple(p.id for p in parents))
        for parent in parents:
            if parent.state is not JobState.COMPLETED:
                job.parents_left += 1
                self._children.setdefault(parent.id, []).append(job_id)
        self.jobs[job_id] = job
        self.submitted += 1
        self._active.append(job)
        t = sow.table
        self.prices.commit(self.now, plan_usage(sow.concurrency, t.probability, starts, t.duration,
                                                self.platform.horizon))
        if self.bundles is not None:
            assert isinstance(menu, BundleMenu)
            self.bundles.commit(menu, sow, plan)
            self.bundles.observe(self.now, sow)
        # Born now: every outcome is still possible, at its planned start (what _residual gives, without the masks)
        oracle.append(Residual(job=job.seq, concurrency=sow.concurrency, start=starts, length=t.duration.copy(),
                               probability=t.probability / t.probability.sum()))
        quote = Quote(job_id, plan)
        self._emit("quote", job, plan=[{"arrival": g.arrival, "signal": g.signal, "start": g.start}
                                       for g in plan.groups], utility=plan.utility)
        return quote

    def _parents(self, job_id: str, sow: SoW, keys: tuple[str, ...]) -> list[Job]:
        """The jobs `keys` name (sow.after[i] is how the submitter wrote keys[i]), refusing an unknown one, the job
        itself (a cycle: a parent must exist before its child, so no longer cycle can form) and one that ended other
        than COMPLETED."""
        if len(keys) != len(sow.after):
            raise EngineError(f"after has {len(sow.after)} job ids but {len(keys)} keys were given")
        parents = []
        for i, (key, shown) in enumerate(zip(keys, sow.after, strict=True)):
            if key == job_id:
                raise EngineError(f"after[{i}]={shown!r} names the job itself (a cycle)")
            parent = self.jobs.get(key) or self._forgotten_job(key)
            if parent is None:
                raise EngineError(f"after[{i}]={shown!r} is not a job of the same tenant submitted before this one "
                                  "(parents must exist first, so no cycle can form)")
            if not parent.state.active and parent.state is not JobState.COMPLETED:
                raise ParentEnded(f"after[{i}]={shown!r} ended {parent.state.value}: a job waiting for it could "
                                  "never arrive")
            parents.append(parent)
        return parents

    def ready_to_release(self, among: Iterable[str] | None = None) -> list[str]:
        """The jobs (of `among`, default every active one) whose parents have all completed and whose arrival is
        still to be reported: the server reports each (`release`) in the round after its last parent completed."""
        jobs = self._active if among is None else [self.jobs[key] for key in among if key in self.jobs]
        return [j.id for j in jobs if j.after and j.parents_left == 0 and j.state is JobState.SUBMITTED
                and j.pending_arrival is None]

    def release(self, job_id: str) -> JobView:
        """A job with parents arrives now, with no signal: all of them have completed. Step 2 schedules it, or
        expires it if this arrival is outside its declared support."""
        job = self._job(job_id)
        if job.id not in self.ready_to_release([job.id]):
            raise InvalidReport(f"job {job_id!r} ({job.state.value}, {job.parents_left} parents not completed) is "
                                "not waiting for its arrival after its parents")
        job.pending_arrival = (self.now, None)
        return self.view(job_id)

    def current_menu(self) -> PriceMenu:
        """The prices a SoW submitted now is quoted (and later billed) at: exponential, or the bundles'."""
        if self.bundles is not None:
            return self.bundles.menu(self.now)
        return self.prices.menu(self.now, self.price_capacities(self.now, self.platform.horizon))

    def price_capacities(self, start: int, length: int) -> np.ndarray | None:
        """C' of rounds [start, start + length) (start >= now) as priced now: with a capacity model the quantile of
        each round's capacity given the feed (the last capacity, or this round's report), times 1 - epsilon/10, at
        least that of one node (docs/model.md 10.4); None with fixed C (C' = C (1 - epsilon/10) everywhere)."""
        model = self.platform.capacity
        if model is None:
            return None
        cq = model.at_level(self.capacity_level).price_capacities(  # mean mu_t when the level tracks the feed
            self.capacity_last, start - self.now + length, self.capacity_feed.get(self.now))
        return np.maximum(cq[start - self.now:], 1.0) * (1.0 - self.platform.epsilon / 10.0)

    # ---- reports (applied in the next advance) ----

    def report_arrival(self, job_id: str, signal: Signal) -> JobView:
        """The job is ready now with `signal`; it is scheduled at L(now, signal) in this round's step 2."""
        job = self._job(job_id)
        if job.state is not JobState.SUBMITTED:
            raise InvalidReport(f"job {job_id!r} is {job.state.value}: an arrival is accepted only while SUBMITTED")
        if job.after:
            raise InvalidReport(f"job {job_id!r} waits for its parents (after): the server reports its arrival in "
                                "the round after the last of them completes")
        if job.pending_arrival is not None:
            raise InvalidReport(f"job {job_id!r} already reported its arrival in round {job.pending_arrival[0]}")
        offset = self.now - job.birth
        groups = job.sow.table.groups
        if (offset, signal) not in groups:
            declared = ", ".join(f"({a}, {s!r})" for a, s in groups[:10]) + (" ..." if len(groups) > 10 else "")
            raise OutsideSupport(
                f"arrival of job {job_id!r} at round {self.now} (arrival_offset={offset}, signal={signal!r}) is "
                f"outside its declared support; declared (arrival_offset, signal): {declared}")
        job.pending_arrival = (self.now, signal)
        return self.view(job_id)

    def report_completion(self, job_id: str, executor: ExecutorInfo | None = None) -> JobView:
        """The job's work ends in this round (its last occupied round is now); processed in step 5. `executor`, when
        given, says where it ran (the same work it was launched as, if a launch was reported) and is recorded."""
        job = self._job(job_id)
        if job.pending_completion is not None:
            raise InvalidReport(f"job {job_id!r} already reported its completion in round {job.pending_completion}")
        if self._start_if_running_now(job) is None:
            raise InvalidReport(f"job {job_id!r} is {job.state.value} and does not run in round {self.now}")
        if executor is not None and job.executor is not None and not job.executor.same_work(executor):
            raise InvalidReport(f"job {job_id!r} was launched as {job.executor.kind} {job.executor.external_id!r}; "
                                f"a completion of {executor.kind} {executor.external_id!r} is not its work")
        job.pending_completion = self.now
        if executor is not None:
            job.executor = executor
        return self.view(job_id)

    def report_launch(self, job_id: str, executor: ExecutorInfo) -> JobView:
        """Record where a running job's work was launched; no mechanism state changes."""
        job = self._job(job_id)
        if executor.exit_code is not None:
            raise EngineError(f"executor.exit_code={executor.exit_code} is for completions: a launch has none")
        if job.state is not JobState.RUNNING:
            raise InvalidReport(f"job {job_id!r} is {job.state.value}: only a RUNNING job's launch is recorded")
        if job.executor is not None and not job.executor.same_work(executor):
            raise InvalidReport(f"job {job_id!r} was launched as {job.executor.kind} {job.executor.external_id!r}; "
                                f"a second launch as {executor.kind} {executor.external_id!r} is refused")
        job.executor = executor
        return self.view(job_id)

    def repeats_report(self, job_id: str, kind: Literal["launch", "complete"], executor: ExecutorInfo) -> bool:
        """Whether this executor report was accepted before (the same launch, or the same completion, pending or
        done): answered as it is, with no second effect."""
        job = self.jobs.get(job_id) or self._forgotten_job(job_id)
        if job is None or job.executor is None:
            return False
        if kind == "launch":
            return executor.exit_code is None and job.executor.same_work(executor)
        return job.executor == executor and (job.pending_completion is not None or job.state is JobState.COMPLETED)

    def repeats_arrival(self, job_id: str, signal: Signal) -> bool:
        """Whether this arrival report was accepted before (the same signal, pending or observed) on a job whose
        arrival is reported to the server (not one with parents): answered as it is, with no second effect."""
        job = self.jobs.get(job_id) or self._forgotten_job(job_id)
        if job is None or job.after:
            return False
        if job.pending_arrival is not None:
            return job.pending_arrival[1] == signal
        return job.arrival is not None and job.signal == signal

    def _start_if_running_now(self, job: Job) -> int | None:
        if job.state is JobState.RUNNING or (job.state is JobState.WAITING and job.start == self.now):
            return job.start
        if job.state is JobState.SUBMITTED and job.pending_arrival is not None:
            start = _pending_start(job)
            return start if start == self.now else None
        return None

    def report_capacity(self, round_: int, capacity: int) -> CapacityView:
        """The capacity of round `round_` (now or later) is `capacity` nodes; step 3 of that round evicts against it."""
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise EngineError(f"capacity={capacity!r} is not a whole number of nodes")
        if not 0 <= capacity <= MAX_CAPACITY:
            raise EngineError(f"capacity={capacity} is outside [0, {MAX_CAPACITY}]")
        if isinstance(round_, bool) or not isinstance(round_, int):
            raise EngineError(f"round={round_!r} is not a whole round number")
        if round_ < self.now:
            raise InvalidReport(f"round={round_} has been played (the current round is {self.now}): its capacity "
                                "can no longer change")
        if round_ > self.now + MAX_FEED_AHEAD:
            raise EngineError(f"round={round_} is more than {MAX_FEED_AHEAD} rounds after the current round {self.now}")
        if round_ in self.capacity_feed:
            raise InvalidReport(f"the capacity of round {round_} was already reported "
                                f"({self.capacity_feed[round_]} nodes)")
        self.capacity_feed[round_] = capacity
        if round_ == self.now and self.platform.capacity is not None:
            self._oracle_round = -1  # later quotes of this round condition on it (rebuilt: equal to appending)
        return CapacityView(round_, capacity)

    def post_bundles(self, round_: int, bundles: tuple[Bundle, ...]) -> BundlesView:
        """A rolling horizon's window starts at `round_` (the current round) with these bundles (pricing
        'stochastic'; docs/stochastic.md). The bundles are plain numbers, logged and replayed as they are: a replay
        never re-solves the LP that made them."""
        if self.bundles is None:
            raise EngineError("pricing is 'exponential': there are no bundles to post")
        if isinstance(round_, bool) or not isinstance(round_, int) or round_ != self.now:
            raise InvalidReport(f"round={round_!r} is not the current round {self.now}: a window's bundles are "
                                "posted at its start")
        try:
            self.bundles.post(round_, tuple(bundles))
        except ValueError as exc:
            raise EngineError(str(exc)) from exc
        return BundlesView(round_, len(bundles))

    def capacity_of(self, round_: int) -> int:
        """The capacity step 3 of round `round_` (now or later) evicts against, as reported so far."""
        return self.capacity_feed.get(round_, self.capacity_last)

    # ---- steps 2-6: the round ----

    def advance(self) -> RoundReport:
        t = self.now
        first = len(self.events)  # held events: forgetting happens between commands
        priced = self.price_capacities(t, 1)  # C' of this round as its quotes saw it (before the feed moves on)
        capacity = self.capacity_feed.pop(t, self.capacity_last)
        self._arrivals(t)
        overloaded = self._overload(t, capacity)
        running = self._starts(t)
        self._completions(t)
        self._cancel_orphans(t)
        usage = float(self.prices.usage(t, 1)[0])
        self.busy_node_rounds += running
        self._retire_ended()
        self.capacity_last = capacity
        if self.capacity_level is not None and self.platform.capacity is not None:
            self.capacity_level = self.platform.capacity.next_level(self.capacity_level, capacity)  # mu_{t+1}
        if self.reserve is not None and self.platform.reserve is not None:
            self.reserve = self.platform.reserve.next(self.reserve, overloaded)  # H_{t+1}
        self.now = t + 1
        self.prices.forget_before(self.now)
        return RoundReport(round=t, events=tuple(self.events[first:]), running=running, expected_usage=usage,
                           unit_price=float(unit_price(usage, self.platform, priced).reshape(-1)[0]))

    def _arrivals(self, t: int) -> None:
        for job in self._active:
            if job.pending_arrival is not None:
                arrival, signal = job.pending_arrival
                job.pending_arrival = None
                if job.after and (arrival - job.birth, signal) not in job.sow.table.groups:  # released by its parents
                    job.move(JobState.EXPIRED, t)
                    self._emit("expire", job, reason="outside_support", arrival=arrival,
                               arrival_offset=arrival - job.birth)
                    continue
                job.arrival, job.signal = arrival, signal
                start = job.plan.start_for(arrival, signal)
                if start is None:
                    job.move(JobState.NOT_SCHEDULED, t)
                    self._emit("not_scheduled", job, arrival=arrival, signal=signal)
                else:
                    job.start = start
                    job.move(JobState.WAITING, t)
                    self._emit("arrive", job, arrival=arrival, signal=signal, start=start)
            elif job.state is JobState.SUBMITTED and job.last_arrival() <= t:
                job.move(JobState.EXPIRED, t)
                if job.after:  # its parents had not all completed in time
                    self._emit("expire", job, reason="parents_late", parents_left=job.parents_left)
                else:
                    self._emit("expire", job)

    def _overload(self, t: int, capacity: int) -> bool:
        """While the committed load exceeds the round's capacity (C, or as reported), the newest active job goes
        (Remark 2: contributing or not; under the `newest_demanding` rule, the newest that demands round t). True if
        a job went."""
        load = sum(j.sow.concurrency for j in self._active if self._demands(j, t))
        removed = False
        for job in reversed(self._active):
            if load <= capacity:
                break
            if not job.state.active:
                continue
            if self._demands(job, t):
                load -= job.sow.concurrency
            elif not self.platform.cancels_waiting:
                continue
            if job.state is JobState.RUNNING:
                job.move(JobState.EVICTED, t)
                self._emit("evict", job, reason="overload")
            else:
                job.move(JobState.CANCELLED, t)
                self._emit("cancel", job, reason="overload")
            job.pending_completion = None
            removed = True
        return removed

    @staticmethod
    def _demands(job: Job, t: int) -> bool:
        return job.state is JobState.RUNNING or (job.state is JobState.WAITING and job.start == t)

    def _starts(self, t: int) -> int:
        running = 0
        for job in self._active:
            if job.state is JobState.WAITING and job.start == t:
                job.move(JobState.RUNNING, t)
                job.longest = job.max_duration
                self._emit("start", job, start=t)
            if job.state is JobState.RUNNING:
                running += job.sow.concurrency
        return running

    def _completions(self, t: int) -> None:
        for job in self._active:
            if job.state is not JobState.RUNNING:
                continue
            assert job.start is not None
            duration = t - job.start + 1
            if job.pending_completion == t:
                self._complete(job, t, duration)
            elif duration >= job.max_duration:
                job.move(JobState.EVICTED, t)
                self._emit("evict", job, reason="overrun", duration=duration)
            job.pending_completion = None

    def _complete(self, job: Job, t: int, duration: int) -> None:
        assert job.start is not None
        job.finish = t + 1
        job.value = float(job.sow.value(job.finish - job.birth))
        job.charge = float(job.menu.price(job.start, job.sow.concurrency, duration))
        job.move(JobState.COMPLETED, t)
        self.ledger.bill(Charge(job.id, t, job.start, duration, job.sow.concurrency, job.charge))
        self._emit("complete", job, start=job.start, duration=duration, value=job.value, charge=job.charge)
        for key in self._children.pop(job.id, ()):
            child = self.jobs.get(key)  # one that ended since may be forgotten: it waits for nothing any more
            if child is not None:
                child.parents_left -= 1

    def _cancel_orphans(self, t: int) -> None:
        """A parent that ended this round other than COMPLETED cancels its waiting children, and theirs in turn
        (no charge: they never started)."""
        if not self._children:  # no job waits for a parent: nothing to look at
            return
        ended = [j.id for j in self._active if not j.state.active and j.id in self._children]
        while ended:
            parent = ended.pop(0)
            for key in self._children.pop(parent, ()):
                child = self.jobs.get(key)
                if child is not None and child.state is JobState.SUBMITTED:
                    child.move(JobState.CANCELLED, t)
                    self._emit("cancel", child, reason="parent", parent=parent)
                    if key in self._children:
                        ended.append(key)

    # ---- the failure oracle's view of the earlier jobs ----

    def residuals(self) -> list[Residual]:
        """What is still random about every active job at the start of the current round, oldest first."""
        return [self._residual(j) for j in self._active if j.state.active]

    def _new_oracle(self, platform: Platform) -> MonteCarloOracle | ExactOracle:
        if self.oracle_kind == "mc":
            return MonteCarloOracle(platform)
        return ExactOracle(platform, self._max_exact_combinations)

    def _current_oracle(self) -> MonteCarloOracle | ExactOracle:
        if self._oracle_round != self.now:
            rule = self.platform.reserve
            if rule is not None and self.reserve is not None and rule.held(self.reserve) != self._oracle_held:
                # The reserve moved by a whole node: the oracle assumes C - floor(H_t) from this round on.
                self._oracle_held = rule.held(self.reserve)
                self._oracle = self._new_oracle(self.platform.model_copy(
                    update={"capacity": rule.oracle_model(self.platform.C, self.reserve), "reserve": None}))
            # A capacity model conditions on the capacity realized last, or on this round's if already reported.
            self._oracle.reset(self.now, self.residuals(), self.capacity_last, self.capacity_feed.get(self.now),
                               self.capacity_level)
            self._oracle_round = self.now
        return self._oracle

    def prepare_round(self) -> None:
        """Build the failure oracle's state (and the prices' per-round C') for the current round now instead of at
        its first SoW."""
        oracle = self._current_oracle()
        if isinstance(oracle, MonteCarloOracle):
            oracle.paths()
        self.price_capacities(self.now, self.platform.horizon)  # the round's C' quantiles (cached by the model)

    def settle(self) -> bool:
        """Do the oracle work the next quote of this round would start with, now (no result changes); True if any."""
        return self._oracle_round == self.now and isinstance(self._oracle, MonteCarloOracle) and self._oracle.settle()

    def _residual(self, job: Job) -> Residual:
        """The job's outcomes still possible at `now`, conditioned on what was observed before this round."""
        t, b = self.now, job.birth
        tab = job.sow.table
        if job.state is JobState.SUBMITTED:
            keep = b + tab.arrival >= t
            start = job.plan.outcome_starts(job.sow)[keep]
            start = np.where(start >= 0, start + b - t, -1)
            length = tab.duration[keep]
        else:
            assert job.arrival is not None and job.start is not None
            group = tab.groups.index((job.arrival - b, job.signal))
            keep = tab.group == group
            if job.state is JobState.RUNNING:
                keep &= tab.duration >= t - job.start + 1
            length = tab.duration[keep] + job.start - max(job.start, t)
            start = np.full(length.size, max(job.start - t, 0), dtype=np.int64)
        prob = tab.probability[keep]
        return Residual(job=job.seq, concurrency=job.sow.concurrency, start=start.astype(np.int64),
                        length=length.astype(np.int64), probability=prob / prob.sum())

    # ---- reads ----

    def _job(self, job_id: str) -> Job:
        job = self.jobs.get(job_id) or self._forgotten_job(job_id)
        if job is None:
            raise UnknownJob(f"job {job_id!r} not found")
        return job

    def _forgotten_job(self, job_id: str) -> Job | None:
        if self.archive is None or not self.forgotten.retired:
            return None
        return self.archive.job(job_id)

    def view(self, job_id: str) -> JobView:
        return self.view_of(self._job(job_id))

    def running_max_duration(self, job_id: str) -> int | None:
        """A running job's longest declared duration (rounds) for its observed arrival and signal: the bound past
        which it is evicted for overrun, and an executor's time limit. None for a job that is not running."""
        job = self._job(job_id)
        return job.max_duration if job.state is JobState.RUNNING else None

    def payload(self, job_id: str) -> Payload | None:
        """What an executor launches for a job that started: its payload, concurrency and the longest declared
        duration of its observed group, the same however long after the start it is read. None for a job that
        never started, or was archived by a server that did not keep that duration."""
        job = self._job(job_id)
        if job.longest is None:
            return None
        return Payload(job.command, job.concurrency, job.longest, dict(job.env))

    @staticmethod
    def view_of(j: Job) -> JobView:
        """What a job looks like from outside."""
        reported = j.pending_arrival[0] if j.pending_arrival else None
        scheduled = j.start if j.start is not None else _pending_start(j)
        return JobView(id=j.id, seq=j.seq, state=j.state.value, birth=j.birth, concurrency=j.concurrency,
                       arrival=j.arrival, signal=j.signal, start=j.start, finish=j.finish, ended=j.ended,
                       charge=j.charge, value=j.value, reported_arrival=reported, scheduled_start=scheduled,
                       command=j.command, env=j.env, after=j.after, executor=j.executor)

    def quote(self, job_id: str) -> Quote:
        """The job's binding quote; an ended job keeps it only if it completed (its invoice line quotes it)."""
        job = self._job(job_id)
        if job.held_plan is None:
            raise InvalidReport(f"job {job_id!r} ended {job.state.value}: only completed jobs keep their quote "
                                "(the submission's logged reply holds every quote)")
        return Quote(job_id, job.held_plan)

    def price_menu(self, start: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        """Expected usage y and unit prices p(y) for rounds [start, start + length) (exponential pricing only)."""
        if self.platform.pricing == "stochastic":
            raise NoUnitPrices("pricing='stochastic' has no per-round unit prices: a run costs c p_k of the cheapest "
                               "bundle that holds it (docs/stochastic.md), and each quote carries its own prices")
        y = self.prices.usage(start, length)
        return y, unit_price(y, self.platform, self.price_capacities(start, length))

    def jobs_after(self, seq: int, active_only: bool = False) -> Iterator[Job]:
        """Held jobs with a seq above `seq`, in submission order; only the active ones (cheaply) if `active_only`."""
        if active_only:
            return (j for j in self._active if j.seq > seq and j.state.active)
        return (j for j in self.jobs.values() if j.seq > seq)

    @property
    def active_jobs(self) -> int:
        return sum(1 for j in self._active if j.state.active)

    def _emit(self, kind: str, job: Job, **data: Any) -> None:
        if job.executor is not None:  # where the job runs or ran, as known when the event was made
            data["executor"] = job.executor.to_dict()
        event = Event(seq=self.forgotten.events + len(self.events), round=self.now, type=kind, job=job.id, data=data)
        self.events.append(event)
        self._event_chain = hashlib.sha256(self._event_chain + event.canonical_json().encode()).digest()

    # ---- the state's hash ----

    def _retire_ended(self) -> None:
        """Drop the jobs that ended this round from the active set; their final state joins the retired chain."""
        still: list[Job] = []
        for job in self._active:
            if job.state.active:
                still.append(job)
            else:
                self.retired.append(job.id)
                self._retired_chain = _chain(self._retired_chain, self._job_state(job))
                job.release()
        self._active = still

    def _job_state(self, job: Job) -> dict[str, Any]:
        state = self.view_of(job).to_dict()
        state["pending_completion"] = job.pending_completion
        if job.after:  # only jobs with parents: every other job hashes as before
            state["parents_left"] = job.parents_left
        if job.pending_arrival is not None:  # its signal too: the next advance acts on it (never set once retired)
            state["pending_arrival"] = list(job.pending_arrival)
        return state

    def digest(self) -> str:
        """SHA-256 of the full state: clock, every job, expected usage y and the event history.

        Jobs still active are hashed as they are; a job that ended is hashed once, when it left the active set
        (it never changes again: reports on ended jobs are refused), through the retired chain, and every event
        through the event chain. So the digest costs O(active jobs) however long the history.
        """
        h = hashlib.sha256()
        marks = self.history_marks()
        h.update(json.dumps({"now": self.now, "events": marks.events, "oracle": self.oracle_kind,
                             "platform": self.platform.model_dump(), "busy": self.busy_node_rounds,
                             "jobs": self.submitted, "retired": marks.retired}, sort_keys=True).encode())
        for job in self._active:
            h.update(json.dumps(self._job_state(job), sort_keys=True).encode())
        h.update(self.prices.state_bytes(self.now))
        if self.bundles is not None:
            h.update(self.bundles.state_bytes())
        if self.capacity_feed or self.capacity_last != self.platform.C:  # fixed C, no report: hashed as before
            h.update(json.dumps({"capacity_last": self.capacity_last,
                                 "capacity_feed": sorted(self.capacity_feed.items())}).encode())
        if self.capacity_level is not None:  # only with a level that tracks the feed
            h.update(json.dumps({"capacity_level": self.capacity_level}).encode())
        if self.reserve is not None:  # only when the platform sets a reserve
            h.update(json.dumps({"reserve": self.reserve}).encode())
        h.update(self._retired_chain)
        h.update(self._event_chain)
        return h.hexdigest()

    def verify_chains(self, forgotten_events: Iterable[Event] = (), forgotten_jobs: Iterable[Job] = (),
                      start: ChainPoint | None = None) -> ChainPoint:
        """Recompute both chains (O(history after `start`)) from the forgotten events and retired jobs after
        `start` (the beginning if None), in order, then the held ones; raise if either differs or the forgotten ones
        do not end exactly at `forgotten`. Returns the chains at `forgotten`, a start for the next check."""
        start = start or CHAIN_START
        f = self.forgotten
        if not f.covers(start.marks):
            raise ValueError(f"chain point {start.marks} lies beyond the forgotten history {f}")
        events, n_events, events_at_f = start.events, start.marks.events, start.events
        for event in itertools.chain(forgotten_events, self.events):
            if event.seq != n_events:
                raise ValueError(f"event {event.seq} is where event {n_events} belongs")
            events, n_events = _chain(events, event.to_dict()), n_events + 1
            if n_events == f.events:
                events_at_f = events
        retired, n_retired, retired_at_f = start.retired, start.marks.retired, start.retired
        for job in itertools.chain(forgotten_jobs, (self.jobs[i] for i in self.retired)):
            retired, n_retired = _chain(retired, self._job_state(job)), n_retired + 1
            if n_retired == f.retired:
                retired_at_f = retired
        marks = self.history_marks()
        unretired = self.submitted - marks.retired
        if events != self._event_chain or retired != self._retired_chain or unretired != len(self._active) \
                or (n_events, n_retired) != (marks.events, marks.retired):
            raise ValueError("the engine's jobs or events do not reproduce its hash chains")
        return ChainPoint(f, events_at_f, retired_at_f)

    # ---- history: what never changes again, for snapshots that do not grow with it ----

    def history_marks(self) -> HistoryMarks:
        """How much history there is, forgotten or held."""
        f = self.forgotten
        return HistoryMarks(f.retired + len(self.retired), f.events + len(self.events),
                            f.charges + len(self.ledger.charges))

    def history_since(self, marks: HistoryMarks) -> History:
        """The retired jobs (in retirement order), events and charges after `marks` (which must be held)."""
        f = self.forgotten
        if not marks.covers(f) or not self.history_marks().covers(marks):
            raise ValueError(f"history from {marks} is not held: held from {f} to {self.history_marks()}")
        return History(marks, [self.jobs[i] for i in self.retired[marks.retired - f.retired:]],
                       self.events[marks.events - f.events:], self.ledger.charges[marks.charges - f.charges:])

    def forget_history(self, marks: HistoryMarks) -> list[str]:
        """Stop holding the history before `marks` (the caller has archived it and set `archive`, where the engine
        then finds those jobs); the ids of the jobs forgotten. Nothing else changes: digest, quotes and refusals
        stay as they were."""
        f = self.forgotten
        if not marks.covers(f) or not self.history_marks().covers(marks):
            raise ValueError(f"cannot forget up to {marks}: held from {f} to {self.history_marks()}")
        if self.archive is None and marks != f:
            raise ValueError("forget_history needs an archive to find the forgotten jobs in")
        gone = self.retired[:marks.retired - f.retired]
        for job_id in gone:
            del self.jobs[job_id]
        del self.retired[:len(gone)]
        del self.events[:marks.events - f.events]
        del self.ledger.charges[:marks.charges - f.charges]
        self.forgotten = marks
        return gone

    def without_history(self) -> Engine:
        """A shallow copy holding only the active jobs and no events or charges, as if all history were
        forgotten (and with no archive attached): the state a snapshot needs beside the history."""
        live = copy.copy(self)
        live.jobs = {j.id: j for j in self._active}
        live.retired, live.events, live.ledger = [], [], Ledger()
        live.forgotten, live.archive = self.history_marks(), None
        return live


def _pending_start(job: Job) -> int | None:
    """The start the plan gives a reported arrival; None for none, for "never", and for a release by parents at an
    arrival outside the declared support (the job then expires in step 2)."""
    if job.pending_arrival is None or (job.after and (job.pending_arrival[0] - job.birth, job.pending_arrival[1])
                                       not in job.sow.table.groups):
        return None
    return job.plan.start_for(*job.pending_arrival)


def _chain(previous: bytes, record: dict[str, Any]) -> bytes:
    """One link of a hash chain: SHA-256 of the previous link and the record's canonical JSON (`_emit` links an
    event's `canonical_json`, the same text; verify_chains recomputes every link from the records)."""
    return hashlib.sha256(previous + json.dumps(record, sort_keys=True).encode()).digest()
