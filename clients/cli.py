"""The `sowsched` command line: a thin dispatcher over the subcommand modules in clients/commands."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

EXIT_REFUSED = 1  # the server answered with a refusal (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, ...)
EXIT_USAGE = 2  # bad input found before any call: options, files, tokens
EXIT_UNAVAILABLE = 69  # sysexits EX_UNAVAILABLE: no answer from the server after the retries
EXIT_TRY_LATER = 75  # sysexits EX_TEMPFAIL: refused for now (RESOURCE_EXHAUSTED: a limit in use); retry later
EXIT_INTERRUPTED = 130  # Ctrl-C, the shell's code for SIGINT
EXIT_BROKEN_PIPE = 141  # stdout's reader went away (`| head`): the shell's code for SIGPIPE
EPILOG = f"""exit codes of the commands that talk to a server (submit, arrive, complete, job, advance, jobs, watch,
invoice, status, state-digest --server, simulate --server):
  0    done
  {EXIT_REFUSED}    the server refused the call (its status code and message on stderr)
  {EXIT_USAGE}    usage error: a bad option, file or token, found before any call
  {EXIT_UNAVAILABLE}   no answer: the server was unreachable or too slow after --retries attempts (UNAVAILABLE,
       DEADLINE_EXCEEDED), or cancelled the call (CANCELLED, not retried); a mutating command's outcome is then unknown and
       the message names its request id: re-run with --request-id ID to retry it safely
  {EXIT_TRY_LATER}   refused for now, retry later: a limit is in use (RESOURCE_EXHAUSTED: the tenant's
       max_active_jobs, the server's open event streams)
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (watch: the normal end of a follow, exit 0)
  {EXIT_BROKEN_PIPE}  stdout was closed by its reader (`sowsched watch | head -1`): the output stopped there"""

# Each module registers its own subcommands; add a module here to add commands.
COMMAND_MODULES: tuple[str, ...] = (
    "clients.commands.simulate",
    "clients.commands.calibrate",
    "clients.commands.server", "clients.commands.jobs",
    "clients.commands.bench",
    "clients.commands.hpc",
    "clients.commands.cuc",
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
