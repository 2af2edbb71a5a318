"""HiGHS without a word on stdout: the one way this project makes a `highspy.Highs` solver."""

from __future__ import annotations

import os
import sys

import highspy

THREADS = 1  # HiGHS threads of an instance unless its caller asks for more (its simplex and B&B are serial)


class _Scheduler:
    """HiGHS keeps one thread scheduler per process, sized by the first run, and fails (kError, no solution) any
    later run whose instance asks for another count: the count this process's scheduler was last sized for."""

    threads: int | None = None


def quiet_highs(threads: int = THREADS) -> highspy.Highs:
    """A HiGHS instance with its log off and `threads` threads. Its constructor prints a banner from C to file
    descriptor 1 (highspy 1.16), which `--json` output would carry before the document: the descriptor points at
    /dev/null while it runs. A count other than the one the process's scheduler was last sized for resets the
    scheduler first, so instances of different counts (the offline solver's, capacity planning's, CUC's) can run
    one after the other in one process."""
    if threads < 1:
        raise ValueError(f"threads={threads} is below the bound 1")
    if _Scheduler.threads not in (None, threads):
        highspy.Highs.resetGlobalScheduler(True)
    _Scheduler.threads = threads
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", threads)
    return h
