"""A job's payload (the argv and environment an executor runs) and its parents (`after`): the bounds, one home each,
and the checks the SoW's validation runs. The mechanism never reads a payload; it logs, replays and shows it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MAX_COMMAND_ARGS = 256  # arguments of `command` (argv[0] included)
MAX_ARG_CHARS = 4096  # characters of one argument
MAX_ENV_VARS = 64  # variables in `env`
MAX_ENV_NAME = 128  # characters of a variable's name
MAX_ENV_VALUE = 4096  # characters of a variable's value
MAX_PAYLOAD_CHARS = 65_536  # characters of the whole payload: every argument, name and value
MAX_AFTER = 32  # parents of one job
RESERVED_ENV_PREFIX = "SOWSCHED_"  # names the executor sets (SOWSCHED_JOB_ID, SOWSCHED_NODES)


def check_command(command: Sequence[str]) -> None:
    """Raise ValueError naming the field, value and bound of the first rule `command` breaks."""
    if len(command) > MAX_COMMAND_ARGS:
        raise ValueError(f"command has {len(command)} arguments, above the bound {MAX_COMMAND_ARGS}")
    if command and not command[0]:
        raise ValueError("command[0]='' is empty: the program to run must be named")
    for i, arg in enumerate(command):
        if len(arg) > MAX_ARG_CHARS:
            raise ValueError(f"command[{i}] has {len(arg)} characters, above the bound {MAX_ARG_CHARS}")
        if "\0" in arg:
            raise ValueError(f"command[{i}]={arg[:40]!r} holds a NUL character (no process can receive it)")


def check_env(env: Mapping[str, str]) -> None:
    """Raise ValueError naming the field, value and bound of the first rule `env` breaks (names are POSIX ones:
    letters, digits and '_', not starting with a digit; the executor's own SOWSCHED_ names are reserved)."""
    if len(env) > MAX_ENV_VARS:
        raise ValueError(f"env has {len(env)} variables, above the bound {MAX_ENV_VARS}")
    for name, value in env.items():
        if not 1 <= len(name) <= MAX_ENV_NAME:
            raise ValueError(f"env name {name[:40]!r} must have 1 to {MAX_ENV_NAME} characters")
        if not (name.isascii() and (name[0].isalpha() or name[0] == "_")
                and all(c.isalnum() or c == "_" for c in name)):
            raise ValueError(f"env name {name!r} is not a variable name (letters, digits and '_', not starting "
                             "with a digit)")
        if name.startswith(RESERVED_ENV_PREFIX):
            raise ValueError(f"env name {name!r} is reserved: the executor sets {RESERVED_ENV_PREFIX}* itself")
        if len(value) > MAX_ENV_VALUE:
            raise ValueError(f"env[{name}] has {len(value)} characters, above the bound {MAX_ENV_VALUE}")
        if "\0" in value:
            raise ValueError(f"env[{name}]={value[:40]!r} holds a NUL character (no process can receive it)")


def check_payload_size(command: Sequence[str], env: Mapping[str, str]) -> None:
    total = sum(map(len, command)) + sum(len(k) + len(v) for k, v in env.items())
    if total > MAX_PAYLOAD_CHARS:
        raise ValueError(f"command and env hold {total} characters, above the bound {MAX_PAYLOAD_CHARS}")


def check_after(after: Sequence[str]) -> None:
    """Raise ValueError at the first rule `after` breaks: at most MAX_AFTER job ids, none empty, unprintable or
    repeated (whether each names an earlier job of the same tenant is the engine's check, at submission)."""
    if len(after) > MAX_AFTER:
        raise ValueError(f"after has {len(after)} job ids, above the bound {MAX_AFTER}")
    seen: dict[str, int] = {}
    for i, parent in enumerate(after):
        if not parent or not parent.isprintable():
            raise ValueError(f"after[{i}]={parent!r} is not a job id (1 or more printable characters)")
        if parent in seen:
            raise ValueError(f"after[{i}]={parent!r} repeats after[{seen[parent]}]")
        seen[parent] = i
