"""The job table a predictor sees: what is known at submission, plus the true runtime for learning afterwards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.arrays import IntArray
from models.hpc.jobs import Workload
from models.hpc.swf import SwfRecord, SwfTrace, clean_records, read_swf


@dataclass(frozen=True)
class JobTable:
    """One row per job in submission order. `runtime` is learned only once the job has completed."""

    submit: IntArray
    runtime: IntArray
    requested: IntArray
    size: IntArray
    user: IntArray
    group: IntArray
    executable: IntArray
    queue: IntArray
    partition: IntArray
    wait: IntArray  # the trace's own wait (for replaying its real completion order); 0 when unknown

    def __post_init__(self) -> None:
        n = self.submit.size
        for name in ("runtime", "requested", "size", "user", "group", "executable", "queue", "partition", "wait"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({n},)")
        if np.any(self.runtime <= 0):
            raise ValueError("every runtime must be > 0")
        if np.any(self.requested < self.runtime):
            raise ValueError("requested must be >= runtime for every job (clean the trace first)")
        if np.any(np.diff(self.submit) < 0):
            raise ValueError("jobs must be in submission order")

    def __len__(self) -> int:
        return int(self.submit.size)

    def prefix(self, count: int | None) -> JobTable:
        """The first `count` jobs (all when None)."""
        if count is None:
            return self
        if count <= 0:
            raise ValueError(f"jobs={count} must be > 0")
        return JobTable(**{k: getattr(self, k)[:count] for k in self.__dataclass_fields__})


def table_from_records(workload: Workload, records: Sequence[SwfRecord]) -> JobTable:
    """The table of a cleaned workload and its SWF records (aligned)."""
    def col(values: Sequence[int]) -> IntArray:
        return np.asarray(values, dtype=np.int64)
    jobs = workload.jobs
    return JobTable(
        submit=col([j.submit for j in jobs]),
        runtime=col([j.runtime for j in jobs]),
        requested=col([j.requested for j in jobs]),
        size=col([j.size for j in jobs]),
        user=col([r.user_id for r in records]),
        group=col([r.group_id for r in records]),
        executable=col([r.executable for r in records]),
        queue=col([r.queue for r in records]),
        partition=col([r.partition for r in records]),
        wait=col([max(r.wait_time, 0) for r in records]),
    )


def load_trace(path: str | Path | SwfTrace, jobs: int | None = None) -> tuple[Workload, JobTable]:
    """An SWF trace (a file or one already read) cleaned as predictsim does (data README), as a workload and a
    job table."""
    trace = path if isinstance(path, SwfTrace) else read_swf(path)
    workload, _, records = clean_records(trace, mode="predictsim")
    workload = workload.prefix(jobs)
    return workload, table_from_records(workload, records[: len(workload.jobs)])
