"""`python -m cli.demo` (the `make demo` driver): a reused store directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.demo import main


def test_a_second_demo_in_the_same_store_dir_fails_with_one_line_and_no_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--workload", "toy", "--store-dir", str(tmp_path)]) == 0
    assert "(identical)" in capsys.readouterr().out
    assert main(["--workload", "toy", "--store-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("python -m cli.demo: the server is at round ") and "needs a fresh store" in err


def test_the_demo_backs_up_its_store_while_serving_and_the_copy_replays_to_the_same_digest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--workload", "toy", "--store-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("online backup while serving (sowsched backup): sowsched-backup.db, commands 1..")
    assert lines[-1].endswith("(identical)") and (tmp_path / "sowsched-backup.db").is_file()
    (tmp_path / "sowsched.db").unlink()  # a later demo in the same directory: the backup's name is taken
    assert main(["--workload", "toy", "--store-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "backup target" in err and "exists" in err and err.count("\n") == 1


def test_an_unknown_workload_is_a_usage_error_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--workload", "nope"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --workload: invalid choice: 'nope'" in err and "pipelines" in err and "Traceback" not in err
