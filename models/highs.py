"""HiGHS without a word on stdout: the one way this project makes a `highspy.Highs` solver."""

from __future__ import annotations

import os
import sys

import highspy


def quiet_highs() -> highspy.Highs:
    """A HiGHS instance with its log off. Its constructor prints a banner from C to file descriptor 1 (highspy 1.16),
    which `--json` output would carry before the document: the descriptor points at /dev/null while it runs."""
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
    return h
