"""The relaxed LP of seed 002 App. E over a prior: z_omega for outcomes omega = (j, SoW_j, task i, interval)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mechanism.platform import Platform
from models.highs import quiet_highs
from models.prior import Prior


@dataclass(frozen=True)
class Outcomes:
    """The LP's columns: outcome omega = (job, SoW, task, start); its interval [start, start + duration)."""

    job: np.ndarray  # int64, index into prior.jobs
    sow: np.ndarray  # int64, index into prior.jobs[job].sows
    task: np.ndarray  # int64, outcome index of the SoW (task tau_i, weight lambda_i)
    start: np.ndarray  # int64, absolute round
    duration: np.ndarray  # int64
    width: np.ndarray  # float64, w(omega) = lambda_i c_j: the task's resources per round
    value: np.ndarray  # float64, V~(omega) = lambda_i V_j(start + d)
    cap_row: np.ndarray  # int64, index of the (job, SoW, task) cap row
    caps: np.ndarray  # float64, q_SoW per cap row

    @property
    def size(self) -> int:
        return int(self.job.size)

    @property
    def end(self) -> np.ndarray:
        return self.start + self.duration


def enumerate_outcomes(prior: Prior, platform: Platform) -> Outcomes:
    """Every (job, SoW, task, start) with start in [a_i, b + S_m - 1] and positive value V(start + d_i)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("job", "sow", "task", "start", "duration", "width",
                                                          "value", "cap_row")}
    caps: list[float] = []
    for j, job in enumerate(prior.jobs):
        for k, (sow, q) in enumerate(zip(job.sows, job.probability, strict=True)):
            t = sow.table
            for i in range(t.arrival.size):
                offsets = np.arange(int(t.arrival[i]), platform.S_m, dtype=np.int64)
                v = sow.value(offsets + t.duration[i])
                keep = v > 0.0
                n = int(keep.sum())
                lam = float(t.probability[i])
                cols["job"].append(np.full(n, j, dtype=np.int64))
                cols["sow"].append(np.full(n, k, dtype=np.int64))
                cols["task"].append(np.full(n, i, dtype=np.int64))
                cols["start"].append(job.birth + offsets[keep])
                cols["duration"].append(np.full(n, int(t.duration[i]), dtype=np.int64))
                cols["width"].append(np.full(n, lam * sow.concurrency))
                cols["value"].append(lam * v[keep])
                cols["cap_row"].append(np.full(n, len(caps), dtype=np.int64))
                caps.append(q)
    arrays = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    ints = ("job", "sow", "task", "start", "duration", "cap_row")
    return Outcomes(**{k: arrays[k].astype(np.int64 if k in ints else np.float64) for k in arrays},
                    caps=np.asarray(caps, dtype=np.float64))


@dataclass(frozen=True)
class StochasticLP:
    """max V~ . z  s.t.  supply @ z <= capacity - held (per round),  tasks @ z <= caps,  0 <= z <= 1."""

    outcomes: Outcomes
    first_round: int  # supply row r is round first_round + r
    capacity: float
    supply: sp.csr_matrix  # (rounds, outcomes): x_t(omega) = w(omega) for t in omega's interval
    tasks: sp.csr_matrix  # (cap rows, outcomes): 1 where omega is a start of that (job, SoW, task)
    held: np.ndarray | None = None  # int64 (rounds,): units earlier bundles hold (a rolling horizon); None: none

    @property
    def held_units(self) -> np.ndarray:
        """Units earlier bundles hold in each round of the LP (zeros without a rolling horizon)."""
        return np.zeros(self.supply.shape[0], dtype=np.int64) if self.held is None else self.held

    @property
    def round_capacity(self) -> np.ndarray:
        """The supply row's bound per round: capacity - held, at least 0."""
        return np.maximum(self.capacity - self.held_units, 0.0)

    @property
    def rows(self) -> int:
        return int(self.supply.shape[0] + self.tasks.shape[0])

    @property
    def cols(self) -> int:
        return self.outcomes.size

    @property
    def nonzeros(self) -> int:
        return int(self.supply.nnz + self.tasks.nnz)


def build_lp(prior: Prior, platform: Platform, capacity: float,
             held: Callable[[int, int], np.ndarray] | None = None) -> StochasticLP:
    """The App. E LP of `prior` with supply `capacity` per round (sparse), less `held(first, rounds)`: the units
    earlier bundles hold in rounds first, ..., first + rounds - 1 (none by default)."""
    if not capacity > 0:
        raise ValueError(f"capacity={capacity} must be positive")
    om = enumerate_outcomes(prior, platform)
    first = int(om.start.min()) if om.size else 0
    last = int(om.end.max()) if om.size else first
    # Supply: sum_omega x_t(omega) z_omega <= C for every round t (one entry per round of each interval).
    col = np.repeat(np.arange(om.size, dtype=np.int64), om.duration)
    run = np.arange(col.size, dtype=np.int64) - np.repeat(np.cumsum(om.duration) - om.duration, om.duration)
    row = om.start[col] + run - first
    supply = sp.csr_matrix((om.width[col], (row, col)), shape=(last - first, om.size))
    # Task caps: sum over omega of (SoW_j, tau_i) of z_omega <= q_SoW.
    tasks = sp.csr_matrix((np.ones(om.size), (om.cap_row, np.arange(om.size))), shape=(om.caps.size, om.size))
    taken = np.zeros(last - first, dtype=np.int64) if held is None else np.asarray(held(first, last - first))
    return StochasticLP(outcomes=om, first_round=first, capacity=float(capacity), supply=supply, tasks=tasks,
                        held=taken.astype(np.int64))


@dataclass(frozen=True)
class LPSolution:
    lp: StochasticLP
    z: np.ndarray  # float64 per outcome, clipped to [0, 1]
    value: float  # Val(z) = V~ . z
    status: str

    def size(self) -> dict[str, int]:
        return {"rows": self.lp.rows, "cols": self.lp.cols, "nonzeros": self.lp.nonzeros,
                "support": int(np.count_nonzero(self.z))}


ZERO = 1e-9  # HiGHS's primal values below this are read as 0 (its feasibility tolerance is 1e-7)


def solve_lp(lp: StochasticLP) -> LPSolution:
    """Solve with HiGHS's simplex (one thread, output silenced): a basic, hence sparse and reproducible z."""
    import highspy

    h = quiet_highs()
    h.setOptionValue("solver", "simplex")
    h.setOptionValue("random_seed", 0)
    a = sp.vstack([lp.supply, lp.tasks]).tocsc()
    upper = np.concatenate([lp.round_capacity, lp.outcomes.caps])
    inf = highspy.kHighsInf
    h.addRows(upper.size, np.full(upper.size, -inf), upper, 0, np.zeros(0, dtype=np.int32),
              np.zeros(0, dtype=np.int32), np.zeros(0))
    if lp.cols:
        h.addCols(lp.cols, lp.outcomes.value, np.zeros(lp.cols), np.ones(lp.cols), int(a.nnz),
                  a.indptr[:-1].astype(np.int32), a.indices.astype(np.int32), a.data)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal and lp.cols:
        raise RuntimeError(f"HiGHS did not solve the stochastic LP: {h.modelStatusToString(status)}")
    z = np.asarray(h.getSolution().col_value, dtype=np.float64) if lp.cols else np.zeros(0)
    z = np.clip(np.where(z > ZERO, z, 0.0), 0.0, 1.0)
    return LPSolution(lp=lp, z=z, value=float(lp.outcomes.value @ z), status="optimal")

