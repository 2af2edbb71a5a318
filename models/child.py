"""A call in a child process that is killed when its wall-clock time is up (for solvers that overrun their limit)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")


class TimeUp(Exception):
    """The child process ran past its time and was killed: it returned nothing."""


def call_in_child(seconds: float, fn: Callable[..., T], *args: Any, preload: Sequence[str] = ()) -> T:
    """`fn(*args)` in a child process, its result (or its exception) sent back; raises TimeUp once `seconds` of wall
    time pass without one, after killing the child. `fn`, `args` and the result must pickle (`fn` by name).

    The child comes from a fork server, a clean process that imports `fn`'s module and the modules `preload` names
    once (at the first call) and forks one child per call: a fork of this process could copy a lock another thread
    (a solver's) holds, and a spawned process would import numpy and the solver again on every call. As with any
    multiprocessing start but fork, the child imports the main script again: it needs `if __name__ == "__main__"`."""
    if not seconds > 0:
        raise ValueError(f"seconds={seconds} must be > 0")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([fn.__module__, *preload])  # read when the server starts, then ignored
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_run, args=(send, fn, args), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(seconds):
            raise TimeUp(f"no result after {seconds:g} s: the child process was killed")
        try:
            ok, value = receive.recv()
        except EOFError:  # it died without a word: killed from outside, out of memory, a crash in C
            child.join()
            raise RuntimeError(f"the child process ended (exit code {child.exitcode}) without a result") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if not ok:
        raise value
    result: T = value
    return result


def _run(send: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """In the child: `fn(*args)` as (True, result), or (False, the exception it raised)."""
    try:
        message: tuple[bool, Any] = (True, fn(*args))
    except Exception as exc:  # every exception goes back to the caller, which raises it
        message = (False, exc)
    send.send(message)
    send.close()
