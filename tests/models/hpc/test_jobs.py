"""Rigid job and workload validation, estimates E_j."""

from __future__ import annotations

import pytest

from models.hpc.jobs import Job, Workload, estimate


def test_job_fields_are_validated_with_names_and_bounds() -> None:
    with pytest.raises(ValueError, match=r"job 1: submit=-1 must be >= 0"):
        Job(1, -1, 5, 1, 5)
    with pytest.raises(ValueError, match=r"job 1: runtime=0 must be > 0"):
        Job(1, 0, 0, 1, 5)
    with pytest.raises(ValueError, match=r"job 1: size=0 must be > 0"):
        Job(1, 0, 5, 0, 5)
    with pytest.raises(ValueError, match=r"job 1: requested=4 must be >= runtime=5"):
        Job(1, 0, 5, 1, 4)


def test_workload_rejects_oversized_jobs_unsorted_jobs_and_bad_nodes() -> None:
    with pytest.raises(ValueError, match=r"job 1: size=3 exceeds nodes=2"):
        Workload((Job(1, 0, 5, 3, 5),), 2)
    with pytest.raises(ValueError, match=r"sorted by \(submit, id\)"):
        Workload((Job(1, 5, 5, 1, 5), Job(2, 0, 5, 1, 5)), 2)
    with pytest.raises(ValueError, match=r"nodes=0 must be > 0"):
        Workload((), 0)


def test_prefix_takes_the_first_jobs() -> None:
    w = Workload((Job(1, 0, 5, 1, 5), Job(2, 1, 5, 1, 5)), 2)
    assert w.prefix(None) is w
    assert [j.id for j in w.prefix(1).jobs] == [1]
    with pytest.raises(ValueError, match=r"count=0 must be > 0"):
        w.prefix(0)


def test_estimate_is_runtime_or_requested() -> None:
    job = Job(1, 0, 5, 1, 9)
    assert estimate(job, "exact") == 5
    assert estimate(job, "requested") == 9
    with pytest.raises(ValueError, match=r"estimates='guess' must be one of"):
        estimate(job, "guess")  # type: ignore[arg-type]
