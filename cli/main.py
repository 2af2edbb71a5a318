"""The `sowsched` command line: schedule jobs on a sowsched server, simulate workloads, run studies and benchmarks."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from cli.exits import EPILOG, EXIT_BROKEN_PIPE, Terminated, interrupted_code, stopped
from cli.verbs import VERBS, listing


class VersionAction(argparse.Action):
    """`--version`: the package version and the replay identity (the hash `serve` keys its snapshots by and `status`
    reports for a running server), computed only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from server.snapshot import code_identity, server_version
        print(f"sowsched {server_version()} (code {code_identity()})")
        parser.exit()


def build_parser(verbs: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every verb, or (`verbs`) only of the modules behind those verbs: `main` builds the one it runs,
    so a client verb never imports the solvers, the oracle or the server."""
    parser = argparse.ArgumentParser(prog="sowsched", description=f"{__doc__}\n\n{listing()}", epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="sowsched [--version] COMMAND [options]  (sowsched COMMAND --help)")
    parser.add_argument("--version", action=VersionAction, help="print the version and the replay identity, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", prog="sowsched")
    wanted = VERBS if verbs is None else [v for v in verbs if v in VERBS]
    for module in dict.fromkeys(VERBS[v].module for v in wanted):
        importlib.import_module(module).register(sub)
    for name, verb in VERBS.items():  # the others: known names, so a typo is told from a verb not loaded
        if name not in sub.choices:
            sub.add_parser(name, description=verb.summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # `serve` reloads its configuration on SIGHUP, whose default action ends the process: hold the signal from
    # here (before the second or so of imports) until the server's handler is in place (server/app.py), so a reload
    # asked for during start-up is served after it instead of killing the server.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP}) if words[:1] == ["serve"] else None
    # Every other command unwinds on SIGTERM as on Ctrl-C (`Terminated`), so that a study's worker processes stop
    # with it instead of running on (`serve` has its own clean shutdown).
    own_term = words[:1] != ["serve"] and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if own_term else None
    try:
        return _run(words)
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        if own_term:
            signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated()


def _run(argv: Sequence[str]) -> int:
    parser = build_parser(argv[:1])
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line and the shell's code, not a traceback
        print(f"sowsched {args.command}: {stopped(exc)}", file=sys.stderr)
        return interrupted_code(exc)
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
