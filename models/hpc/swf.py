"""Standard Workload Format (SWF) reader: header keys, the 18 fields, and documented cleaning rules."""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from models.hpc.jobs import Job, Workload

FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
FLOAT_FIELDS = frozenset({"average_cpu_time", "used_memory", "requested_memory"})
_FLOAT_POSITIONS: tuple[int, ...] = tuple(k for k, name in enumerate(FIELDS) if name in FLOAT_FIELDS)
_IS_FLOAT: tuple[bool, ...] = tuple(name in FLOAT_FIELDS for name in FIELDS)


# Cleaning rules, in the order they are applied; each counter in CleaningReport.counts names one.
CLEANING_RULES: dict[str, str] = {
    "size_from_requested": "allocated processors missing (<= 0): size taken from requested processors",
    "dropped_nonpositive_runtime": "run time <= 0 (missing or zero): job dropped",
    "dropped_nonpositive_size": "no positive allocated or requested processors: job dropped",
    "dropped_size_above_machine": "size above the machine's node count: job dropped",
    "dropped_negative_submit": "submit time < 0: job dropped",
    "requested_missing_set_to_runtime": "requested time missing (<= 0): set to the run time",
    "requested_raised_to_runtime": "requested time below the run time: raised to the run time",
}


# The predictsim mode (data README): the filtering behind the EASY / EASY++ reference numbers of issue 17.
PREDICTSIM_RULES: dict[str, str] = {
    "dropped_nonpositive_runtime": "run time <= 0: job dropped",
    "dropped_missing_requested": "requested time missing (<= 0): job dropped",
    "dropped_no_processors": "neither allocated nor requested processors: job dropped",
    "dropped_negative_submit": "submit time < 0: job dropped",
    "size_from_allocated": "requested processors missing: size taken from allocated processors",
    "size_capped_to_machine": "size above the machine's node count: capped to the node count",
    "runtime_capped_to_requested": "run time above the requested time: capped to the requested time",
}
CLEANING_MODES: tuple[str, ...] = ("default", "predictsim")


class SwfParseError(ValueError):
    """A malformed SWF line; the message names the line number, the field and the value."""


@dataclass(frozen=True, slots=True)
class SwfRecord:
    """One SWF data line: the 18 standard fields (-1 means missing)."""

    line: int
    job_number: int
    submit_time: int
    wait_time: int
    run_time: int
    allocated_processors: int
    average_cpu_time: float
    used_memory: float
    requested_processors: int
    requested_time: int
    requested_memory: float
    status: int
    user_id: int
    group_id: int
    executable: int
    queue: int
    partition: int
    preceding_job: int
    think_time: int


@dataclass(frozen=True)
class SwfTrace:
    """Parsed file: header keys (e.g. MaxNodes, MaxProcs) and the records in file order."""

    header: dict[str, str]
    records: tuple[SwfRecord, ...]


@dataclass(frozen=True)
class CleaningReport:
    """How many records each cleaning rule touched; `kept` records became jobs."""

    records: int
    kept: int
    nodes: int
    counts: dict[str, int] = field(default_factory=dict)


def _parse_value(token: str, name: str, line: int) -> int | float:
    try:
        value = float(token)
    except ValueError:
        raise SwfParseError(f"line {line}: field {name}={token!r} is not a number") from None
    if not math.isfinite(value):
        raise SwfParseError(f"line {line}: field {name}={token!r} is not a finite number")
    if name in FLOAT_FIELDS:
        return value
    if value != int(value):
        raise SwfParseError(f"line {line}: field {name}={token!r} must be an integer")
    return int(value)


def parse_record(text: str, line: int) -> SwfRecord:
    """One data line into a record; raises SwfParseError naming the line on a malformed line."""
    tokens = text.split()
    if len(tokens) != len(FIELDS):
        raise SwfParseError(f"line {line}: expected {len(FIELDS)} fields, found {len(tokens)}")
    try:  # the common case, plain integers and finite floats, without a call per field
        values = [float(tok) if is_float else int(tok) for tok, is_float in zip(tokens, _IS_FLOAT, strict=True)]
        if not all(math.isfinite(values[k]) for k in _FLOAT_POSITIONS):
            raise ValueError
    except ValueError:
        values = [_parse_value(tok, name, line) for name, tok in zip(FIELDS, tokens, strict=True)]
    return SwfRecord(line, *values)  # type: ignore[arg-type]


def _parse_header(text: str) -> tuple[str, str] | None:
    body = text.lstrip(";").strip()
    key, sep, value = body.partition(":")
    if not sep or not key.strip() or " " in key.strip():
        return None
    return key.strip(), value.strip()


def parse_swf(lines: Iterable[str]) -> SwfTrace:
    """Pure parser over the file's lines: ';' lines are comments (and 'Key: value' header entries)."""
    header: dict[str, str] = {}
    records: list[SwfRecord] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        if text.startswith(";"):
            entry = _parse_header(text)
            if entry is not None:
                header.setdefault(*entry)
            continue
        records.append(parse_record(text, number))
    return SwfTrace(header=header, records=tuple(records))


def machine_nodes(header: dict[str, str], override: int | None = None) -> int:
    """R: `override`, else header MaxProcs (job sizes count processors), else MaxNodes.

    A header that lists partitions after the total (SDSC DataStar: `MaxProcs: 1664 (72, 1368, 224)`) gives the
    total: the machine is scheduled as one pool.
    """
    if override is not None:
        if override <= 0:
            raise ValueError(f"nodes={override} must be > 0")
        return override
    for key in ("MaxProcs", "MaxNodes"):
        if key in header:
            text = header[key]
            total, _, partitions = text.partition("(")
            if partitions and not partitions.rstrip().endswith(")"):
                raise ValueError(f"header {key}={text!r} is not an integer")
            try:
                value = int(total)
            except ValueError:
                raise ValueError(f"header {key}={header[key]!r} is not an integer") from None
            if value <= 0:
                raise ValueError(f"header {key}={value} must be > 0")
            return value
    raise ValueError("header has neither MaxNodes nor MaxProcs; pass the node count explicitly")


def _clean_record(rec: SwfRecord, nodes: int, counts: dict[str, int]) -> Job | None:
    size = rec.allocated_processors
    if size <= 0:
        size = rec.requested_processors
        counts["size_from_requested"] += 1
    drop = None
    if rec.run_time <= 0:
        drop = "dropped_nonpositive_runtime"
    elif size <= 0:
        drop = "dropped_nonpositive_size"
    elif size > nodes:
        drop = "dropped_size_above_machine"
    elif rec.submit_time < 0:
        drop = "dropped_negative_submit"
    if drop is not None:
        counts[drop] += 1
        return None
    requested = rec.requested_time
    if requested <= 0:
        requested = rec.run_time
        counts["requested_missing_set_to_runtime"] += 1
    elif requested < rec.run_time:
        requested = rec.run_time
        counts["requested_raised_to_runtime"] += 1
    return Job(id=rec.job_number, submit=rec.submit_time, runtime=rec.run_time, size=size, requested=requested)


def _clean_record_predictsim(rec: SwfRecord, nodes: int, counts: dict[str, int]) -> Job | None:
    drop = None
    if rec.run_time <= 0:
        drop = "dropped_nonpositive_runtime"
    elif rec.requested_time <= 0:
        drop = "dropped_missing_requested"
    elif rec.allocated_processors <= 0 and rec.requested_processors <= 0:
        drop = "dropped_no_processors"
    elif rec.submit_time < 0:
        drop = "dropped_negative_submit"
    if drop is not None:
        counts[drop] += 1
        return None
    # pyss's _job_input_to_job: the size is the requested processor count, capped at the machine
    size = rec.requested_processors
    if size <= 0:
        size = rec.allocated_processors
        counts["size_from_allocated"] += 1
    if size > nodes:
        size = nodes
        counts["size_capped_to_machine"] += 1
    runtime = rec.run_time
    if runtime > rec.requested_time:
        runtime = rec.requested_time
        counts["runtime_capped_to_requested"] += 1
    return Job(id=rec.job_number, submit=rec.submit_time, runtime=runtime, size=size, requested=rec.requested_time)


def clean_records(
    trace: SwfTrace, nodes: int | None = None, mode: str = "default"
) -> tuple[Workload, CleaningReport, tuple[SwfRecord, ...]]:
    """Apply the mode's rules (CLEANING_RULES or PREDICTSIM_RULES); also the kept records, aligned with the jobs."""
    if mode not in CLEANING_MODES:
        raise ValueError(f"cleaning mode={mode!r} must be one of {CLEANING_MODES}")
    machine = machine_nodes(trace.header, nodes)
    rule = _clean_record if mode == "default" else _clean_record_predictsim
    counts = dict.fromkeys(CLEANING_RULES if mode == "default" else PREDICTSIM_RULES, 0)
    pairs = [(job, rec) for rec in trace.records if (job := rule(rec, machine, counts)) is not None]
    pairs.sort(key=lambda p: (p[0].submit, p[0].id))
    report = CleaningReport(records=len(trace.records), kept=len(pairs), nodes=machine, counts=counts)
    return Workload(tuple(j for j, _ in pairs), machine), report, tuple(r for _, r in pairs)


def clean(trace: SwfTrace, nodes: int | None = None, mode: str = "default") -> tuple[Workload, CleaningReport]:
    """Apply the mode's cleaning rules; jobs are sorted by (submit, job number)."""
    workload, report, _ = clean_records(trace, nodes, mode)
    return workload, report


def read_swf(path: str | Path) -> SwfTrace:
    """Read and parse an SWF file; a name ending in `.gz` is decompressed on the fly."""
    if str(path).endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as gz:
            return parse_swf(gz)
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse_swf(fh)


def load_workload(
    path: str | Path, nodes: int | None = None, mode: str = "default"
) -> tuple[Workload, CleaningReport]:
    """Read, parse and clean an SWF file."""
    return clean(read_swf(path), nodes, mode)
