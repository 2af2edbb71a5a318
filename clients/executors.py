"""Executors: where a started job's payload runs (a local process group, a Slurm batch job or an element of a Slurm
job array), found again by handle or by the array's key."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

KINDS = ("local", "slurm")
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")  # the agent's own variables a payload inherits
SLURM_PREFIX = "sowsched-"  # Slurm job names; the comment carries the full handle
SLURM_COMMENT = "sowsched:"
SLURM_TIMEOUT = 30.0  # seconds for one sbatch / squeue / scancel call
ARRAY_MAX = 1000  # elements of one array (indices 0-999: Slurm's default MaxArraySize of 1001 admits them)
ARRAY_SCRIPT_CHARS = 1_000_000  # characters of one array's batch script (Slurm's default max_script_size is 4 MB)
# sbatch dies with an agent killed mid-call, so it either reached the controller (and is found later) or never will.
# util-linux's setpriv sets the signal in the child itself: a Python preexec_fn would run in a child forked from a
# process with gRPC's threads, which gRPC's fork handlers abort.
_DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL") if shutil.which("setpriv") else ()
SLURM_GONE = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                        "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})


class ExecutorError(Exception):
    """The workload manager refused or failed a call (sbatch, squeue, scancel): retried on the next poll."""


def handle(tenant: str, job_id: str, instance: str = "") -> str:
    """The launch's name in the workload manager: a digest of (the agent state's instance, tenant, job id), so any id
    is a safe name and no two state files name a job alike."""
    key = f"{instance}/{tenant}/{job_id}" if instance else f"{tenant}/{job_id}"
    return hashlib.sha256(key.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Launch:
    """What to run for one started job."""

    handle: str
    job_id: str
    command: tuple[str, ...]
    nodes: int  # the job's concurrency
    time_limit: float  # seconds: its largest declared duration times the round length
    env: Mapping[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        """The payload's environment: a few of the agent's variables (never its token), the SoW's, and ours."""
        return {**base_environment(), **self.own_environment()}

    def own_environment(self) -> dict[str, str]:
        """The variables of this payload alone: the SoW's and ours."""
        return {**self.env, "SOWSCHED_JOB_ID": self.job_id, "SOWSCHED_NODES": str(self.nodes),
                "SOWSCHED_LAUNCH": self.handle}

    def script_chars(self) -> int:
        """About the characters its element takes in an array's batch script."""
        return 64 + sum(len(a) + 3 for a in self.command) + sum(len(k) + len(v) + 4
                                                                 for k, v in self.own_environment().items())


def base_environment() -> dict[str, str]:
    """The agent's variables every payload inherits (never its token)."""
    return {k: os.environ[k] for k in PASSED_ENV if k in os.environ}


@dataclass(frozen=True)
class Ended:
    """Launched work that is over: its exit code (None when the executor cannot tell) and how it ended."""

    exit_code: int | None
    how: str  # "exited", "signalled" (killed outside sowsched), "timeout" (the workload manager's limit), "lost"


class Executor(Protocol):
    kind: str

    def launch(self, spec: Launch) -> str:
        """Start the payload; its external id."""
        ...

    def find(self, handle: str) -> str | None:
        """The external id of a launch already made under `handle` (after a crash), or None."""
        ...

    def ended(self, launched: Mapping[str, str]) -> dict[str, Ended]:
        """Of the launches {handle: external id}, those whose work is over."""
        ...

    def stop(self, external_id: str, grace: float) -> None:
        """Stop the work: SIGTERM, then SIGKILL after `grace` seconds (returns at once)."""
        ...


@runtime_checkable
class ArrayExecutor(Protocol):
    """An executor that also launches many payloads of one shape in one call, as the elements of an array under one
    key, and finds such an array again by its key."""

    def shape(self, spec: Launch) -> Hashable:
        """What launches must share to go in one array."""
        ...

    def launch_array(self, key: str, elements: Mapping[int, Launch]) -> dict[int, str]:
        """Start every element in one call (all or none); each element's external id by index."""
        ...

    def find_array(self, key: str, indices: Sequence[int]) -> dict[int, str]:
        """The external ids of `indices` in the array launched under `key` (after a crash), or {}: never launched."""
        ...


def wait_status(status: int) -> tuple[int, str]:
    """A wait(2) status as (exit code, how): a signal s reads as the shell's 128 + s."""
    if status & 0x7F:
        return 128 + (status & 0x7F), "signalled"
    return status >> 8, "exited"


# ---- local process groups ----

_WRAPPER = ('trap : TERM; echo $$ > "$0.pid.tmp" && mv "$0.pid.tmp" "$0.pid"; "$@"; s=$?; '
            'echo $s > "$0.exit.tmp" && mv "$0.exit.tmp" "$0.exit"')


class LocalExecutor:
    """Each payload runs under `sh` in its own process group (the group id is the external id). The shell writes
    its pid before it starts the payload and the payload's exit code after it, under `run_dir`, so an agent that
    restarts finds both without having been the parent."""

    kind = "local"

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    def _base(self, handle: str) -> Path:
        return self.run_dir / handle

    def launch(self, spec: Launch) -> str:
        base = self._base(spec.handle)
        with open(f"{base}.out", "ab") as out:
            proc = subprocess.Popen(["/bin/sh", "-c", _WRAPPER, str(base), *spec.command], env=spec.environment(),
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, cwd=self.run_dir)
        self._children[str(proc.pid)] = proc
        return str(proc.pid)

    def find(self, handle: str) -> str | None:
        pid_file = Path(f"{self._base(handle)}.pid")
        if pid_file.exists():
            return pid_file.read_text().strip()
        for _ in range(2):  # the shell may not have written its pid yet: look for its environment
            pid = _process_with(f"SOWSCHED_LAUNCH={handle}")
            if pid is not None:
                return pid
            time.sleep(0.05)
        return None

    def ended(self, launched: Mapping[str, str]) -> dict[str, Ended]:
        """Over when no process of the group lives; the exit code is the shell's record of it, if it made one."""
        for pid in launched.values():
            child = self._children.get(pid)
            if child is not None and child.poll() is not None:
                del self._children[pid]
        live = live_groups()
        out: dict[str, Ended] = {}
        for h, pid in launched.items():
            if int(pid) in live:
                continue
            exit_file = Path(f"{self._base(h)}.exit")
            if exit_file.exists():
                code = int(exit_file.read_text().strip())
                out[h] = Ended(code, "signalled" if code > 128 else "exited")
            else:
                out[h] = Ended(None, "lost")  # the whole group was killed from outside
        return out

    def stop(self, external_id: str, grace: float) -> None:
        threading.Thread(target=_stop_group, args=(int(external_id), grace), daemon=True).start()


def _stop_group(pgid: int, grace: float) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return


def live_groups() -> set[int]:
    """The process groups with a process that is not a zombie."""
    groups: set[int] = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                groups.add(int(fields[2]))
    return groups


def _process_with(entry: str) -> str | None:
    needle = entry.encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle in (d / "environ").read_bytes().split(b"\0"):
                return str(os.getpgid(int(d.name)))
        except OSError:
            continue
    return None


# ---- Slurm ----

def slurm_minutes(seconds: float) -> int:
    """Slurm keeps time limits in whole minutes: the smallest that covers `seconds` (at least 1)."""
    return max(1, -(-round(seconds) // 60))


def index_ranges(indices: Sequence[int]) -> str:
    """Slurm's --array list of `indices`: runs of consecutive ones as ranges ("0-3,7,9-10")."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def array_script(elements: Mapping[int, Launch]) -> str:
    """An array's batch script: element i sets its own variables and execs its own command."""
    lines = ["#!/bin/sh", 'case "$SLURM_ARRAY_TASK_ID" in']
    for i, spec in sorted(elements.items()):
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in spec.own_environment().items())
        lines.append(f"{i}) export {exports}; exec {shlex.join(spec.command)} ;;")
    lines += ["esac", 'echo "sowsched: no element $SLURM_ARRAY_TASK_ID in this array" >&2', "exit 127", ""]
    return "\n".join(lines)


class SlurmExecutor:
    """A payload is one `sbatch` job named sowsched-<handle> with the comment sowsched:<handle>, or an element of an
    array of one round's launches of one shape, named sowsched-<key> with the comment sowsched:<key>, whose external
    id is ARRAYID_INDEX (what `scancel` stops alone). Completions are read by polling `squeue --states=all --array`
    (Slurm keeps a finished job for MinJobAge seconds): no accounting database and no file on the controller's host
    is needed, so the same agent reads a production cluster."""

    kind = "slurm"

    def __init__(self, out_dir: Path, extra: Sequence[str] = ()) -> None:
        self.out_dir = out_dir.resolve()  # sbatch runs the job elsewhere: a relative --chdir or --output fails
        out_dir.mkdir(parents=True, exist_ok=True)
        self.extra = tuple(extra)  # more sbatch options (a partition, an account)

    def _sbatch(self, key: str, spec: Launch, output: str) -> list[str]:
        return ["sbatch", "--parsable", f"--job-name={SLURM_PREFIX}{key}", f"--comment={SLURM_COMMENT}{key}",
                f"--ntasks={spec.nodes}",
                *([f"--time={slurm_minutes(spec.time_limit)}"] if spec.time_limit > 0 else []),
                f"--output={self.out_dir}/{output}", f"--chdir={self.out_dir}", "--export=ALL", "--no-requeue",
                *self.extra]

    def launch(self, spec: Launch) -> str:
        argv = [*self._sbatch(spec.handle, spec, "%x-%j.out"), "--wrap", "exec " + shlex.join(spec.command)]
        out = _run([*_DIE_WITH_PARENT, *argv], env=spec.environment())
        return out.strip().split(";")[0]

    def shape(self, spec: Launch) -> Hashable:
        return spec.nodes, slurm_minutes(spec.time_limit) if spec.time_limit > 0 else 0

    def launch_array(self, key: str, elements: Mapping[int, Launch]) -> dict[int, str]:
        """One `sbatch --array` of the given indices; its batch script (read from stdin) runs each element's command
        with the element's variables. Slurm creates the whole array in one call, or none of it."""
        first = next(iter(elements.values()))
        argv = [*self._sbatch(key, first, "%x-%A_%a.out"), f"--array={index_ranges(list(elements))}"]
        out = _run([*_DIE_WITH_PARENT, *argv], env=base_environment(), stdin=array_script(elements))
        array_id = out.strip().split(";")[0]
        return {i: f"{array_id}_{i}" for i in elements}

    def find(self, handle: str) -> str | None:
        for job_id, _state, comment, _code in self._queue(f"--name={SLURM_PREFIX}{handle}"):
            if comment == f"{SLURM_COMMENT}{handle}":
                return job_id
        return None

    def find_array(self, key: str, indices: Sequence[int]) -> dict[int, str]:
        for job_id, _state, comment, _code in self._queue(f"--name={SLURM_PREFIX}{key}"):
            if comment == f"{SLURM_COMMENT}{key}" and "_" in job_id:
                array_id = job_id.split("_")[0]
                return {i: f"{array_id}_{i}" for i in indices}
        return {}

    def ended(self, launched: Mapping[str, str]) -> dict[str, Ended]:
        if not launched:
            return {}
        seen = {job_id: (state, code) for job_id, state, _c, code in self._queue()}
        out: dict[str, Ended] = {}
        for h, job_id in launched.items():
            if job_id not in seen:
                out[h] = Ended(None, "lost")  # purged after MinJobAge, or never known to this controller
                continue
            state, code = seen[job_id]
            if state not in SLURM_GONE:
                continue
            exit_code, how = wait_status(code)
            if state == "TIMEOUT":
                how = "timeout"
            elif state == "CANCELLED":
                how = "signalled"
            out[h] = Ended(exit_code, how)
        return out

    def stop(self, external_id: str, grace: float) -> None:
        """scancel: Slurm sends SIGTERM and SIGKILL after its KillWait (the cluster's grace, not `grace`)."""
        _run(["scancel", external_id])

    def _queue(self, *options: str) -> list[tuple[str, str, str, int]]:
        """(external id, state, comment, exit status) of every sowsched job Slurm lists, one row per array element
        (its id ARRAYID_INDEX; a job outside any array its own id)."""
        out = _run(["squeue", "-h", "--array", "--states=all", "-O",
                    "JobID:|,State:|,Comment:|,exit_code:|,ArrayJobID:|,ArrayTaskID:|", *options])
        rows = []
        for line in out.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) < 6 or not parts[2].startswith(SLURM_COMMENT):
                continue
            code = int(parts[3]) if re.fullmatch(r"\d+", parts[3]) else 0
            job_id = f"{parts[4]}_{parts[5]}" if re.fullmatch(r"\d+", parts[5]) else parts[0]
            rows.append((job_id, parts[1], parts[2], code))
        return rows


def _run(argv: list[str], env: Mapping[str, str] | None = None, stdin: str | None = None) -> str:
    name = argv[len(_DIE_WITH_PARENT)] if argv[:len(_DIE_WITH_PARENT)] == list(_DIE_WITH_PARENT) else argv[0]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SLURM_TIMEOUT, check=False,
                              env=dict(env) if env is not None else None, input=stdin)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecutorError(f"{name}: {exc}") from exc
    if done.returncode != 0:
        raise ExecutorError(f"{name} exited {done.returncode}: {done.stderr.strip()[:500]}")
    return done.stdout
