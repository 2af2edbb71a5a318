"""The `sowsched` dispatcher: a Ctrl-C anywhere ends with one line and exit code 130."""

from __future__ import annotations

import argparse

import pytest

from clients import cli
from clients.commands import simulate


def test_ctrl_c_during_a_command_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(simulate, "run", interrupted)
    assert cli.main(["simulate", "--workload", "toy"]) == 130
    out, err = capsys.readouterr()
    assert out == "" and err == "sowsched simulate: interrupted\n"
