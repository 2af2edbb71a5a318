"""Every `sowsched` command in a code block of the README or docs/ parses with today's command line, so a reader who
copies one is not told that an option does not exist (usage lines with placeholders such as `ROUND` or `[--x N]`
are left out)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"^\s*(?:\$ )?(?:\.venv/bin/)?sowsched (.*)$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_:]*$|[\[\]]|\.\.\.")  # ROUND, [--tenant T], a,b,...
SHELL_TAIL = re.compile(r"\s+(?:#|2>|>>?|\||&&)\s")  # a comment, a redirection, a pipe, a second command


def code_commands(text: str) -> list[tuple[int, str]]:
    """(line, arguments after `sowsched`) of each command in a fenced or indented code block, its backslash
    continuations joined as a shell joins them, without what follows it on the shell line."""
    lines, found, fenced, in_block, blank_before = text.splitlines(), [], False, False, True
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        else:
            in_block = fenced or (line.startswith("    ") and (blank_before or in_block))
            match = COMMAND.match(line) if in_block else None
            if match:
                start, command = i + 1, match.group(1)
                while command.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command = command.rstrip()[:-1].rstrip() + " " + lines[i].strip()
                found.append((start, SHELL_TAIL.split(command + " ")[0].strip().rstrip("&").strip()))
            blank_before = not line.strip()
        i += 1
    return found


def documented() -> list[tuple[str, int, list[str]]]:
    commands = []
    for page in PAGES:
        for line, command in code_commands(page.read_text(encoding="utf-8")):
            words = shlex.split(command)
            if not any(PLACEHOLDER.search(w) for w in words if not w.startswith("-")):
                commands.append((str(page.relative_to(ROOT)), line, words))
    return commands


COMMANDS = documented()


def test_the_docs_show_commands_to_check() -> None:
    assert len(COMMANDS) >= 60, len(COMMANDS)


@pytest.mark.parametrize(("page", "line", "words"), COMMANDS, ids=[f"{p}:{n}" for p, n, _ in COMMANDS])
def test_a_documented_command_parses(page: str, line: int, words: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    try:
        build_parser(words[:1]).parse_args(words)
    except SystemExit as stop:
        if stop.code:
            pytest.fail(f"{page}:{line}: sowsched {shlex.join(words)}: {capsys.readouterr().err.strip()}")


def test_the_extractor_joins_continuations_and_drops_the_shell_around_a_command() -> None:
    text = ("text\n\n    .venv/bin/sowsched simulate --workload toy \\\n        --json > out.json  # note\n"
            "```\n$ sowsched status -o json | jq .\n```\nsowsched outside a block\n")
    assert code_commands(text) == [(3, "simulate --workload toy --json"), (6, "status -o json")]
