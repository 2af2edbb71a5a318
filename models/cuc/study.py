"""Analogues of seed 003's Tables 1-3 on the Azure capacity series (with generated jobs)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from models.cuc.data import load_capacity
from models.cuc.greedy import greedy_schedule
from models.cuc.jobs import JobConfig
from models.cuc.names import SELECTABLE, SPLITS
from models.cuc.problem import utility, violation_rate
from models.cuc.protocol import make_split
from models.cuc.run import (
    HINDSIGHT_GRID,
    VALIDATION_HOURS,
    Evaluator,
    Outcome,
    Theta,
    check_forecasters,
    hindsight,
    on_test_samples,
    train,
)
from models.sweep import run_tasks

P_LEVELS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
BASELINE_FORECASTERS = ("tsdec", "ar1")
HINDSIGHT_ROW = "Hindsight kappa (p = 0.1 %)"


@dataclass(frozen=True)
class StudyConfig:
    """What the study runs: the datasets (name -> CSV), BO steps, seeds, the generator, the X+HiGHS baselines' MILP
    seconds per sample (0: the rounded LP alone) and whether to run only the rows without training."""

    datasets: dict[str, str]
    bo_steps: int = 30
    seed: int = 0
    jobs: JobConfig = field(default_factory=JobConfig)
    exact_time_limit: float = 0.0
    p_levels: tuple[float, ...] = P_LEVELS
    vm_types: tuple[str, ...] | None = None
    objective: str = "sample"
    order: str = "ratio"
    refit_every: int = 1
    errors: str = "newest"
    baselines_only: bool = False
    forecasters: tuple[str, ...] = ("tsdec",)  # the CUC rows' point forecaster; BO chooses among two or more
    split: str = "clean"  # models.cuc.protocol.SPLITS
    scale: float = 1.0  # every series is multiplied by it (the paper's series: 0.06 x m3str, 0.02 x m2str)
    validation_hours: int = VALIDATION_HOURS  # BO's samples: the last this many training origins (0: all)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split={self.split!r} is not one of {', '.join(SPLITS)}")
        if not (np.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale={self.scale} must be finite and > 0")
        if not self.forecasters:
            raise ValueError("forecasters=() must name at least one point forecaster")
        check_forecasters(self.forecasters, self.theta0)

    @property
    def theta0(self) -> Theta:
        """BO's first trial and the W/o BO row's θ: the defaults with the first of `forecasters`."""
        return Theta(forecaster=self.forecasters[0])


@dataclass
class Cell:
    """One method on one dataset: the per-sample outcomes pooled over VM types and the summed wall time."""

    outcomes: list[Outcome] = field(default_factory=list)
    time_s: float = 0.0
    laws: list[str] = field(default_factory=list)  # `--errors select`: the law chosen on each VM type

    def add(self, outcome: Outcome, seconds: float, law: str | None = None) -> None:
        self.outcomes.append(outcome)
        self.time_s += seconds
        if law is not None:
            self.laws.append(law)

    def extend(self, other: Cell) -> None:
        self.outcomes.extend(other.outcomes)
        self.time_s += other.time_s
        self.laws.extend(other.laws)

    def summary(self) -> dict[str, float]:
        u = np.concatenate([o.utility for o in self.outcomes])
        b = np.concatenate([o.bound for o in self.outcomes])
        v = np.concatenate([o.violation for o in self.outcomes])
        pooled = Outcome(u, b, v)
        chosen = {f"chose_{law}": float(self.laws.count(law)) for law in SELECTABLE} if self.laws else {}
        return {"util": 100 * pooled.util, "violation": 100 * pooled.vio, "time_s": self.time_s,
                "samples": int(u.size), **chosen}


def clairvoyant_greedy(ev: Evaluator) -> Outcome:
    """Alg. 3 given the true capacity: the greedy's own ceiling (no forecast error at all)."""
    u = [utility(s.jobs, greedy_schedule(s.jobs, s.truth, ev.order)) for s in ev.test]
    v = [violation_rate(s.jobs, greedy_schedule(s.jobs, s.truth, ev.order), s.truth) for s in ev.test]
    return Outcome(np.array(u), np.array([ev.bound(s) for s in ev.test]), np.array(v))


def run_type(ev: Evaluator, cfg: StudyConfig, cells: dict[str, Cell]) -> None:
    """Every method of Tables 1-3 on one VM type's series, added to the dataset's cells."""
    theta0 = cfg.theta0
    ev.prepare_bounds(ev.test)  # Util's denominator, outside every method's time
    for name in BASELINE_FORECASTERS:  # Table 1: X + HiGHS, no uncertainty
        tick = time.perf_counter()
        outcome = ev.two_stage(Theta(forecaster=name), ev.test, cfg.exact_time_limit)
        cells.setdefault(f"{name.upper()}+HiGHS", Cell()).add(outcome, time.perf_counter() - tick)
    outcome, seconds = on_test_samples(ev, theta0, 0.5, uncertain=False)  # Table 2: without uncertainty
    cells.setdefault("W/o uncertainty", Cell()).add(outcome, seconds)
    if not cfg.baselines_only:
        _trained_rows(ev, cfg, cells)
    cells.setdefault("Alg. 3 with the true capacity", Cell()).add(clairvoyant_greedy(ev), 0.0)


def _trained_rows(ev: Evaluator, cfg: StudyConfig, cells: dict[str, Cell]) -> None:
    """The rows that train θ on the training days: W/o BO, CUC at every p, and the hindsight row."""
    theta0 = cfg.theta0
    trained = train(ev, P_LEVELS[0], 1, theta0, cfg.seed, cfg.objective)  # Table 2: without BO (k = 1)
    outcome, seconds = on_test_samples(ev, trained.theta, P_LEVELS[0])
    cells.setdefault("W/o BO (p = 0.1 %)", Cell()).add(outcome, trained.time_s + seconds, trained.theta.errors)
    for p in cfg.p_levels:  # Tables 1-3: CUC
        trained = train(ev, p, cfg.bo_steps, theta0, cfg.seed, cfg.objective, cfg.forecasters)
        outcome, seconds = on_test_samples(ev, trained.theta, p)
        cells.setdefault(f"CUC (p = {100 * p:g} %)", Cell()).add(outcome, trained.time_s + seconds,
                                                                 trained.theta.errors)
        if p == P_LEVELS[0]:  # not a method: kappa chosen on the test days' truth (the largest kappa if none meets p)
            best = hindsight(ev, trained.theta, ev.test, p)
            kappa = best.inflation if best.inflation is not None else max(HINDSIGHT_GRID)
            outcome = ev.greedy(replace(trained.theta, inflation=kappa), ev.test, p)
            cells.setdefault(HINDSIGHT_ROW, Cell()).add(outcome, 0.0)


@dataclass(frozen=True)
class TypeTask:
    """One VM type of one dataset: a task of the study's process pool."""

    dataset: str
    path: str
    vm_type: str
    cfg: StudyConfig


def type_cells(task: TypeTask) -> dict[str, Cell]:
    """Every method on one VM type's series: {method: its cell for this type}."""
    cfg = task.cfg
    y = cfg.scale * load_capacity(Path(task.path)).of(task.vm_type)
    ev = Evaluator(y, make_split(len(y), cfg.split), cfg.jobs, cfg.seed, cfg.refit_every, cfg.order, cfg.errors,
                   cfg.validation_hours)
    cells: dict[str, Cell] = {}
    run_type(ev, cfg, cells)
    return cells


def run_study(cfg: StudyConfig, processes: int | None = 1,
              progress: bool = False) -> dict[str, dict[str, dict[str, float]]]:
    """{dataset: {method: {util %, violation %, time_s, samples}}} pooled over the VM types of each dataset.

    The VM types run as independent tasks on `processes` local processes (None: every core; 1: in this process);
    each is seeded on its own, so the pooled numbers do not depend on `processes` (the X+HiGHS rows stop at a
    wall-clock limit and may)."""
    tasks = []
    for name, path in cfg.datasets.items():
        data = load_capacity(Path(path))
        for vm_type in cfg.vm_types or data.vm_types:
            data.of(vm_type)  # an unknown type is refused before any runs
            tasks.append(TypeTask(name, path, vm_type, cfg))
    per_type = run_tasks(type_cells, tasks, processes=processes, progress=progress, desc="VM types")
    pooled: dict[str, dict[str, Cell]] = {name: {} for name in cfg.datasets}
    for task, cells in zip(tasks, per_type, strict=True):
        for method, cell in cells.items():
            pooled[task.dataset].setdefault(method, Cell()).extend(cell)
    return {name: {method: cell.summary() for method, cell in cells.items()} for name, cells in pooled.items()}


def _table(results: dict[str, dict[str, dict[str, float]]], methods: list[str], title: str,
           with_time: bool) -> str:
    names = list(results)
    head = "| method | " + " | ".join(
        f"{n} Util (%) | {n} Vio (%)" + (f" | {n} Time (s)" if with_time else "") for n in names) + " |"
    rule = "| --- " * (1 + len(names) * (3 if with_time else 2)) + "|"
    rows = []
    for m in methods:
        cells = []
        for n in names:
            r = results[n].get(m)
            if r is None:
                cells += ["-"] * (3 if with_time else 2)
                continue
            cells += [f"{r['util']:.2f}", f"{r['violation']:.2f}"] + ([f"{r['time_s']:.1f}"] if with_time else [])
        rows.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join([title, "", head, rule, *rows])


def study_tables(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """Markdown analogues of Tables 1 (methods), 2 (ablation) and 3 (p), jobs generated."""
    methods = sorted({m for r in results.values() for m in r})
    p_rows = [m for m in methods if m.startswith("CUC")]
    p_rows.sort(key=lambda m: float(m.split("= ")[1].split(" %")[0]))
    t1 = [m for m in methods if m.endswith("+HiGHS")] + p_rows[:1] + [m for m in (HINDSIGHT_ROW,) if m in methods] \
        + ["Alg. 3 with the true capacity"]
    t2 = ["W/o uncertainty", "W/o BO (p = 0.1 %)", *p_rows[:1]]
    note = "(job requests generated, see docs/cuc.md; Util against the LP bound of the clairvoyant optimum)"
    return "\n\n".join([_table(results, t1, f"Table 1: methods x datasets {note}", True),
                        _table(results, t2, "Table 2: ablation", False),
                        _table(results, p_rows, "Table 3: violation level p", False)])
