"""What every scheduler family gives and how it is scored: start times on the workload, one run record.

The three families (`simulator.Scheduler` rounds, `prediction_backfill.BackfillPolicy` under EASY, and its compiled
point path `point_backfill`) each replay a `jobs.Workload` and return a `Schedule`; `score` turns any of them into
the one `Run` record the study, the predictive runs, the CLI and the benchmarks read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from models.hpc.jobs import Workload
from models.hpc.metrics import Metrics, evaluate


class Schedule(Protocol):
    """A simulated schedule: the start time b_j of every job, aligned with `workload.jobs`."""

    @property
    def starts(self) -> Sequence[int]: ...


@dataclass(frozen=True)
class Run:
    """One scheduler on one workload: its name, the seed-001 metrics of its starts, its counters and the starts."""

    scheduler: str
    metrics: Metrics
    details: dict[str, Any] = field(default_factory=dict)
    starts: tuple[int, ...] = ()


def score(scheduler: str, workload: Workload, schedule: Schedule, details: dict[str, Any]) -> Run:
    """The `Run` of a schedule: its metrics on `workload` (models/hpc/metrics.evaluate) and its start times."""
    starts = tuple(schedule.starts)
    return Run(scheduler, evaluate(workload.jobs, starts, workload.nodes), details, starts)
