"""The exit codes of `sowsched` and the help text that lists them."""

from __future__ import annotations

EXIT_REFUSED = 1  # the server answered with a refusal (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, ...)
EXIT_USAGE = 2  # bad input found before any call: options, files, tokens
EXIT_UNAVAILABLE = 69  # sysexits EX_UNAVAILABLE: no answer from the server after the retries
EXIT_TRY_LATER = 75  # sysexits EX_TEMPFAIL: refused for now (RESOURCE_EXHAUSTED: a limit in use); retry later
EXIT_INTERRUPTED = 130  # Ctrl-C, the shell's code for SIGINT
EXIT_BROKEN_PIPE = 141  # stdout's reader went away (`| head`): the shell's code for SIGPIPE
EXIT_TERMINATED = 143  # SIGTERM (`kill`, `timeout`), the shell's code for it

EPILOG = f"""exit codes of the commands that talk to a server (submit, arrive, complete, job, audit, advance,
report-capacity, jobs, watch, invoice, status, prices, state-digest --server, simulate --server, agent):
  0    done
  {EXIT_REFUSED}    the server refused the call (its status code and message on stderr)
  {EXIT_USAGE}    usage error: a bad option, file or token, found before any call
  {EXIT_UNAVAILABLE}   no answer: the server was unreachable or too slow after --retries attempts (UNAVAILABLE,
       DEADLINE_EXCEEDED), or cancelled the call (CANCELLED, not retried); a mutating command's outcome is then
       unknown and the message names its request id: re-run with --request-id ID to retry it safely
  {EXIT_TRY_LATER}   refused for now, retry later: a limit is in use (RESOURCE_EXHAUSTED: the tenant's
       max_active_jobs, the server's open event streams)
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (watch: the normal end of a follow, exit 0)
  {EXIT_BROKEN_PIPE}  stdout was closed by its reader (`sowsched watch | head -1`): the output stopped there
  {EXIT_TERMINATED}  stopped by SIGTERM, as by Ctrl-C otherwise (watch: exit 0; serve shuts down cleanly)"""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread (cli/main.py) so that it unwinds as Ctrl-C does: a study stops its worker
    processes, a mutating command names its request id; then exit 143 instead of 130."""


def stopped(exc: KeyboardInterrupt) -> str:
    """How an interruption is named on stderr."""
    return "terminated" if isinstance(exc, Terminated) else "interrupted"


def interrupted_code(exc: KeyboardInterrupt) -> int:
    """The exit code of an interruption: 143 for SIGTERM, 130 for Ctrl-C."""
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED

