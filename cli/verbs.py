"""Every `sowsched` verb: the module that implements it, its group in the help, and its one-line summary."""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple


class Verb(NamedTuple):
    module: str  # imported only when this verb runs (or when the full parser is built)
    group: str
    summary: str


JOBS = "Jobs (talk to a server; -s HOST:PORT or SOWSCHED_SERVER, token in SOWSCHED_TOKEN)"
SERVER = "Running a server"
STUDIES = "Simulation and studies (no server needed)"
BENCH = "Benchmarks"
_J, _S, _M = "cli.commands.jobs", "cli.commands.server", "cli.commands.simulate"

VERBS: dict[str, Verb] = {
    "submit": Verb(_J, JOBS, "submit a statement of work (SoW.json); prints the binding quote"),
    "status": Verb(_J, JOBS, "the platform, its clock and round, and your active jobs"),
    "job": Verb(_J, JOBS, "one job's state, start, charge and value"),
    "jobs": Verb(_J, JOBS, "list jobs (a tenant sees its own), optionally by state"),
    "audit": Verb(_J, JOBS, "what a misreport would have gained a job at the menu it saw (operator: any job)"),
    "watch": Verb(_J, JOBS, "print events as they happen (or those that exist, with --no-follow)"),
    "invoice": Verb(_J, JOBS, "a tenant's charges, each with the quote it came from"),
    "prices": Verb(_J, JOBS, "the posted price menu: expected usage and unit price per round ahead"),
    "arrive": Verb(_J, JOBS, "report that a job is ready now (with its signal)"),
    "complete": Verb(_J, JOBS, "report that a job's work ends in this round"),
    "advance": Verb(_J, JOBS, "play the current round (operator, simulated clock)"),
    "report-capacity": Verb(_J, JOBS, "report a round's capacity in nodes (operator): its step 3 evicts against it"),
    "serve": Verb(_S, SERVER, "run the gRPC server (durable command log, replayed on start)"),
    "agent": Verb("cli.commands.agent", SERVER,
                  "run started jobs' payloads (local processes or Slurm) and report their completions"),
    "backup": Verb(_S, SERVER, "copy a store consistently while its server runs"),
    "state-digest": Verb(_S, SERVER, "hash of the full state, from a server or by replaying a store"),
    "capacity-fit": Verb("cli.commands.capacity_model", SERVER,
                         "fit a capacity model to a capacity series: the [platform.capacity] table of platform.toml"),
    "simulate": Verb(_M, STUDIES, "simulate a workload through the mechanism, with the offline optimum"),
    "calibrate": Verb("cli.commands.calibrate", STUDIES, "raw failure estimates (as quoted) against realized failures"),
    "hpc": Verb("cli.commands.hpc", STUDIES, "schedule an SWF trace with one scheduler (seed 001 metrics)"),
    "hpc-study": Verb("cli.commands.hpc", STUDIES, "compare the seed-001 schedulers on an SWF trace (Table 2)"),
    "predict": Verb("cli.commands.predict", STUDIES, "learned runtime distributions: score predictors, traces as SoWs"),
    "forecast": Verb("cli.commands.forecast", STUDIES, "forecast VM CPU with prediction intervals; seed 004's scores"),
    "cuc": Verb("cli.commands.cuc", STUDIES, "CUC on one VM type's capacity series: BO-tuned quantile, train and test"),
    "cuc-study": Verb("cli.commands.cuc", STUDIES, "analogues of seed 003's Tables 1-3 (methods, ablation, p)"),
    "stochastic": Verb("cli.commands.stochastic", STUDIES, "the stochastic variant: its LP, bundle prices, a sweep"),
    "capacity-plan": Verb(
        "cli.commands.capacity",
        STUDIES,
        "the nodes and schedule a workload needs under duration and CPU uncertainty (seed 000)",
    ),
    "capacity-study": Verb("cli.commands.capacity", STUDIES, "seed 000's synthetic study: Fig. 11, 14, 15 and a table"),
    "bench": Verb("cli.commands.bench", BENCH, "run one benchmark and report its numbers (make bench runs them all)"),
}


def add_verb(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The parser of verb `name`, its summary as description (the top-level help lists verbs by group)."""
    parser: argparse.ArgumentParser = sub.add_parser(name, description=VERBS[name].summary, **kwargs)
    return parser


def listing() -> str:
    """The verbs by group, for the top-level help."""
    groups: dict[str, list[str]] = {}
    for name, verb in VERBS.items():
        groups.setdefault(verb.group, []).append(f"  {name:<15} {verb.summary}")
    return "\n\n".join(f"{group}:\n" + "\n".join(lines) for group, lines in groups.items())
