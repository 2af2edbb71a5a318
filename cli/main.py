"""The `sowsched` command line: schedule jobs on a sowsched server, simulate workloads, run studies and benchmarks."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from cli.exits import EPILOG, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED

# Each module registers its own subcommands; add a module here to add commands.
COMMAND_MODULES: tuple[str, ...] = (
    "cli.commands.simulate",
    "cli.commands.calibrate",
    "cli.commands.server", "cli.commands.jobs",
    "cli.commands.bench",
    "cli.commands.hpc",
    "cli.commands.predict",
)


class VersionAction(argparse.Action):
    """`--version`: the package version and the code identity (the hash `serve` keys its snapshots by and `status`
    reports for a running server), computed only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from server.snapshot import code_identity, server_version
        print(f"sowsched {server_version()} (code {code_identity()})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sowsched", description=__doc__, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=VersionAction, help="print the version and the code identity, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # `serve` reloads its configuration on SIGHUP, whose default action ends the process: hold the signal from
    # here (before the second or so of imports) until the server's handler is in place (server/app.py), so a reload
    # asked for during start-up is served after it instead of killing the server.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP}) if words[:1] == ["serve"] else None
    try:
        return _run(words)
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _run(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for SIGINT, not a traceback
        print(f"sowsched {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away: nobody to tell, and the shell's code for SIGPIPE
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    return int(code or 0)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail again on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor (a replaced sys.stdout)
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
