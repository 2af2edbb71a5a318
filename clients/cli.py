"""The `sowsched` command line: a thin dispatcher over the subcommand modules in clients/commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module registers its own subcommands; add a module here to add commands.
COMMAND_MODULES: tuple[str, ...] = (
    "clients.commands.simulate",
    "clients.commands.calibrate",
    "clients.commands.server", "clients.commands.jobs",
    "clients.commands.bench",
    "clients.commands.hpc",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sowsched", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for SIGINT, not a traceback
        print(f"sowsched {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
