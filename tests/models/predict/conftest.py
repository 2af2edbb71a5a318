"""Builders of small job tables for the prediction tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.predict.jobs import JobTable


def make_table(
    submit: Sequence[int], runtime: Sequence[int], requested: Sequence[int] | None = None,
    user: Sequence[int] | None = None, wait: Sequence[int] | None = None, size: Sequence[int] | None = None,
) -> JobTable:
    n = len(submit)

    def col(values: Sequence[int] | None, default: int) -> np.ndarray:
        return np.asarray(values if values is not None else [default] * n, dtype=np.int64)
    return JobTable(submit=col(submit, 0), runtime=col(runtime, 1),
                    requested=col(requested, 0) if requested is not None else col(runtime, 1) * 10,
                    size=col(size, 1), user=col(user, 1), group=col(None, 1), executable=col(None, 1),
                    queue=col(None, 1), partition=col(None, 1), wait=col(wait, 0))
