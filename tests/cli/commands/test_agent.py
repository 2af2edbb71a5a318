"""`sowsched agent`'s options: --array-max is refused outside 1 to ARRAY_MAX before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from clients.executors import ARRAY_MAX


@pytest.mark.parametrize(("value", "match"), [
    ("0", "argument --array-max: 0 is below the bound 1"),
    (str(ARRAY_MAX + 1), f"argument --array-max: {ARRAY_MAX + 1} is above the bound {ARRAY_MAX}"),
])
def test_array_max_outside_one_to_the_arrays_bound_is_refused(value: str, match: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["agent", "--executor", "slurm", "--state", str(tmp_path / "a.db"), "--array-max", value])
    assert info.value.code == 2 and match in capsys.readouterr().err
    assert not (tmp_path / "a.db").exists()  # refused before the state file is made
