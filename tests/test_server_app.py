"""Server assembly: structured logs go to the stderr of the moment."""

from __future__ import annotations

import json
import logging

import pytest

from server.app import setup_logging


def test_structured_logs_follow_sys_stderr_when_it_is_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger("sowsched")
    before = (root.handlers[:], root.level, root.propagate)
    setup_logging("info")
    try:
        logging.getLogger("sowsched.test").info("hello", extra={"fields": {"n": 1}})
        line = json.loads(capsys.readouterr().err)
        assert (line["msg"], line["n"], line["level"], line["logger"]) == ("hello", 1, "info", "sowsched.test")
    finally:
        root.handlers[:], root.level, root.propagate = before
