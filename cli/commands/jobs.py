"""The verbs that talk to a running server: submit, status, job(s), watch, invoice, prices, arrive, complete, advance.

At import only the standard library loads: the client, gRPC and the SoW model load when a verb runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.args import add_output_arguments
from cli.exits import EPILOG, EXIT_REFUSED, EXIT_TRY_LATER, EXIT_UNAVAILABLE, EXIT_USAGE, interrupted_code, stopped
from cli.verbs import add_verb

if TYPE_CHECKING:  # imported when a verb runs, not when the parser is built
    from clients.client import RpcFailure, SchedulerClient
    from mechanism.engine import Quote, RoundReport
    from mechanism.events import Event

DEFAULT_SERVER = "127.0.0.1:50051"
DEFAULT_ATTEMPTS = 8
RETRY_HELP = ("idempotency key (default: a new one, named in the error when the outcome is unknown): a retry "
              "with the same id returns the logged reply and changes nothing")
NO_ANSWER = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED"})  # the server did not answer the call
STATES = ("SUBMITTED", "WAITING", "RUNNING", "COMPLETED", "EVICTED", "CANCELLED", "EXPIRED", "NOT_SCHEDULED")


def int64(text: str) -> int:
    """An integer option that fits the wire's int64 fields."""
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{value} is outside the 64-bit range [-2**63, 2**63 - 1]")
    return value


def add_connection_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--server", default=os.environ.get("SOWSCHED_SERVER", DEFAULT_SERVER),
                   help="HOST:PORT of the server (env SOWSCHED_SERVER; default %(default)s)")
    p.add_argument("--token", default=os.environ.get("SOWSCHED_TOKEN"),
                   help="bearer token (env SOWSCHED_TOKEN)")
    p.add_argument("--tls-ca", type=Path, help="CA certificate: connect with TLS")
    p.add_argument("--timeout", type=float, default=30.0, help="deadline per call in seconds")
    p.add_argument("--retries", type=int, default=DEFAULT_ATTEMPTS,
                   help="attempts on UNAVAILABLE or DEADLINE_EXCEEDED, with the same request id")


def connect(args: argparse.Namespace) -> SchedulerClient:
    from clients.client import RetryPolicy, SchedulerClient

    if args.retries < 1:
        raise ValueError(f"--retries={args.retries} is below the bound 1")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        raise ValueError(f"--timeout={args.timeout} must be a positive number of seconds")
    return SchedulerClient(args.server, args.token, tls_ca=args.tls_ca, timeout=args.timeout,
                           retry=RetryPolicy(attempts=args.retries))


TENANT_HELP = "operator only: the tenant whose job this is (job ids are per tenant; default: the operator's own)"


def register(sub: Any) -> None:
    p = _command(sub, "submit", submit, mutating=True)
    p.add_argument("sow", type=Path, nargs="+", metavar="SOW.json",
                   help="a SoW as a JSON object (schema: docs/workloads-and-sows.md); several files, or '-' for JSON "
                        'lines on stdin ({"job_id": ..., "sow": {...}} each), go on one stream (SubmitSoWs)')
    p.add_argument("--job-id", help="job id of a single SoW (default: the file name without .json)")
    p.add_argument("--features", action="store_true",
                   help="each file holds a job's features (nodes, requested_seconds, value_steps, arrival, "
                        "executable, queue, tags): the server's prediction engine builds the SoW (docs/prediction.md)")
    _tenant(p, "operator only: submit on behalf of this tenant")
    _command(sub, "status", status)
    p = _command(sub, "job", job)
    p.add_argument("job", help="the job id")
    _tenant(p, TENANT_HELP)
    p = _command(sub, "audit", audit)
    p.add_argument("job", help="the job id")
    p.add_argument("--reference", type=Path, metavar="SOW.json",
                   help="the law the job's outcomes really follow (default: its quoted law)")
    _tenant(p, TENANT_HELP)
    p = _command(sub, "jobs", jobs)
    p.add_argument("--state", action="append", choices=STATES, default=[], help="filter (repeatable)")
    _tenant(p, "operator only: one tenant's jobs")
    p = _command(sub, "watch", watch)
    p.add_argument("--from-seq", type=int64, default=0, help="first event sequence number (resume point)")
    p.add_argument("--no-follow", action="store_true", help="stop after the events that exist now")
    p.add_argument("--limit", type=int, default=0, help="stop after this many events (0: no limit)")
    p = _command(sub, "invoice", invoice)
    _tenant(p, "operator only: whose invoice")
    p.add_argument("--from-round", type=int64, default=None, help="only charges billed in this round or later")
    p.add_argument("--to-round", type=int64, default=None, help="only charges billed before this round")
    p = _command(sub, "prices", prices)
    p.add_argument("--start", type=int64, default=None, help="first round of the menu (default: the current round)")
    p.add_argument("--length", type=int64, default=0, help="rounds in the menu (default 0: the horizon S_m + D_m - 1)")
    p = _command(sub, "arrive", arrive, mutating=True)
    p.add_argument("job", help="the job id")
    p.add_argument("--signal", help="the observed signal (omit for none)")
    _tenant(p, TENANT_HELP)
    p = _command(sub, "complete", complete, mutating=True)
    p.add_argument("job", help="the job id")
    _tenant(p, TENANT_HELP)
    _command(sub, "advance", advance, mutating=True)
    p = _command(sub, "report-capacity", report_capacity, mutating=True)
    p.add_argument("round", type=int64, help="the round (the current one or a later one)")
    p.add_argument("capacity", type=int64, help="its capacity in nodes")


def _tenant(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("-t", "--tenant", default="", help=help_text)


def _command(sub: Any, name: str, body: Callable[[SchedulerClient, argparse.Namespace], Any],
             *, mutating: bool = False) -> argparse.ArgumentParser:
    p = add_verb(sub, name, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_connection_arguments(p)
    add_output_arguments(p)
    if mutating:
        p.add_argument("--request-id", help=RETRY_HELP)
    p.set_defaults(func=_runner(name, body, mutating))
    return p


class PartialFailure(Exception):
    """A command that failed after part of its output: the part (`--json` prints it with the error) and why."""

    def __init__(self, partial: dict[str, Any], failure: RpcFailure, hint: str) -> None:
        super().__init__(f"{failure}{hint}")
        self.partial = partial
        self.failure = failure


def exit_code(failure: RpcFailure) -> int:
    """69 when the server did not answer (unreachable, too slow, cancelled), 75 when it refused for now (a limit in
    use), 1 when it refused."""
    if failure.code in NO_ANSWER:
        return EXIT_UNAVAILABLE
    return EXIT_TRY_LATER if failure.code == "RESOURCE_EXHAUSTED" else EXIT_REFUSED


def _runner(name: str, body: Callable[[SchedulerClient, argparse.Namespace], Any],
            mutating: bool) -> Callable[..., int]:
    def run(args: argparse.Namespace) -> int:
        from clients.client import RpcFailure, new_request_id

        if mutating and args.request_id == "":
            print(f"sowsched {name}: --request-id '' is empty (omit it to have one generated)", file=sys.stderr)
            return EXIT_USAGE
        if mutating and args.request_id is None:  # always sent, so that an unknown outcome can be retried
            args.request_id = new_request_id()
        try:
            with connect(args) as client:
                out = body(client, args)
        except PartialFailure as exc:
            if args.json:
                print(json.dumps({**exc.partial, "error": _error(exc.failure)}, sort_keys=True))
            print(f"sowsched {name}: {exc}", file=sys.stderr)
            return exit_code(exc.failure)
        except RpcFailure as exc:
            print(f"sowsched {name}: {exc}{_retry_hint(args, exc) if mutating else ''}", file=sys.stderr)
            return exit_code(exc)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM
            if not mutating:
                raise
            print(f"sowsched {name}: {stopped(exc)}{_retry_hint(args, None)}", file=sys.stderr)
            return interrupted_code(exc)
        except BrokenPipeError:  # stdout's reader went away (an OSError, but no usage error): sowsched's main
            raise
        except (OSError, ValueError) as exc:
            print(f"sowsched {name}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if out is not None:
            shown = {k: v for k, v in out.items() if k != "text"}
            print(json.dumps(shown, sort_keys=True) if args.json else _text(out))
        return 0
    return run


def _error(failure: RpcFailure) -> dict[str, str]:
    return {"code": failure.code, "message": failure.details}


def _retry_hint(args: argparse.Namespace, failure: RpcFailure | None) -> str:
    """After a failure whose outcome is unknown, how to retry the command without applying it twice."""
    if failure is not None and failure.code not in NO_ANSWER:
        return ""
    return (f"; the outcome is unknown (it may have been applied): re-run with --request-id {args.request_id} to "
            "retry safely (the server answers a retry with the logged reply)")


def _text(out: dict[str, Any]) -> str:
    return str(out.get("text") or json.dumps(out, indent=2, sort_keys=True))


def read_sow(path: Path, features: bool = False) -> dict[str, Any]:
    """The SoW in a JSON file, checked against its own rules; a syntax error names the line and column."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply for a SoW") from None
    return check_sow(data, str(path), features)


def check_sow(data: Any, where: str, features: bool = False) -> dict[str, Any]:
    """A decoded SoW checked against its own rules; errors start with `where`. With `features` the object is a job's
    features (or a {"features": ...} document), for the server's prediction engine."""
    from pydantic import ValidationError

    from mechanism.sow import SoW
    from mechanism.validation import validation_message

    if not isinstance(data, dict):
        raise ValueError(f"{where}: a SoW is a JSON object, not {type(data).__name__}")
    if features and "features" not in data:
        data = {"features": data}
    if "features" in data:  # a feature submission: the server's prediction engine builds the outcomes
        if set(data) != {"features"} or not isinstance(data["features"], dict):
            raise ValueError(f"{where}: a feature submission is {{\"features\": {{...}}}} alone; got keys "
                             f"{sorted(data)}")
        return data
    try:  # the SoW's own rules here (types, unknown fields, sums); the server checks the platform's bounds
        checked: dict[str, Any] = SoW.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        raise ValueError(f"{where}: {validation_message(exc, 'sow')}") from None
    for field, value in _integers(checked, "sow"):  # the wire's fields are int64
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"{where}: {field} (value {value}) is outside the 64-bit range [-2**63, 2**63 - 1]")
    return checked


def _integers(data: Any, where: str) -> Iterator[tuple[str, int]]:
    """Every integer in a JSON document with its path (`sow.outcomes[1].duration`)."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _integers(value, f"{where}.{key}")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _integers(value, f"{where}[{i}]")
    elif isinstance(data, int) and not isinstance(data, bool):
        yield where, data


def submit(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    if len(args.sow) == 1 and str(args.sow[0]) != "-":
        from server import convert

        job_id = args.sow[0].stem if args.job_id is None else args.job_id
        msg = client.submit_raw(job_id, read_sow(args.sow[0], args.features),
                                request_id=args.request_id, tenant=args.tenant)
        quote = convert.quote_from_proto(msg)
        out = {**quote.to_dict(), "tenant": msg.tenant, "text": quote_text(quote)}
        if msg.HasField("prediction"):
            out["prediction"] = convert.prediction_from_proto(msg.prediction)
        return out
    return submit_many(client, args)



def submit_many(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    """Several SoWs on one stream; item i's request id is `--request-id` and '-i', so re-running the command with the
    same --request-id gets every logged reply and applies nothing twice. A refused item is reported in its place."""
    from clients.client import RpcFailure, Submission

    if args.job_id is not None:
        raise ValueError("--job-id names a single SoW's job; with several, each file's name (or JSON line's job_id) "
                         "is its job id")
    items = [(job_id, sow) for path in args.sow for job_id, sow in _sows_in(path, args.features)]
    submissions = [Submission(job_id, sow, args.tenant, f"{args.request_id}-{i}")
                   for i, (job_id, sow) in enumerate(items)]
    results: list[dict[str, Any]] = []
    lines: list[str] = []
    first_refusal: RpcFailure | None = None
    for (job_id, _), answer in zip(items, client.submit_many(submissions), strict=True):
        if isinstance(answer, RpcFailure):
            first_refusal = first_refusal or answer
            results.append({"job_id": job_id, "error": _error(answer)})
            lines.append(f"{job_id}: refused: {answer}")
        else:
            quote, tenant = answer
            results.append({**quote.to_dict(), "tenant": tenant})
            lines.append(f"{job_id}: quoted, estimated utility {quote.plan.utility:.4f}, starts "
                         + ", ".join("never" if g.start is None else str(g.start) for g in quote.plan.groups))
    refused = sum(1 for r in results if "error" in r)
    out = {"results": results, "quoted": len(results) - refused, "refused": refused, "text": "\n".join(lines)}
    if first_refusal is not None:
        raise PartialFailure(out, first_refusal, f" (and {refused - 1} more refused)" if refused > 1 else "")
    return out


def _sows_in(path: Path, features: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """(job id, SoW) of a SoW file (its name is the job id), or of each JSON line on stdin for '-'."""
    if str(path) != "-":
        yield path.stem, read_sow(path, features)
        return
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        where = f"stdin line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON at column {exc.colno}: {exc.msg}") from None
        if not isinstance(item, dict) or not isinstance(item.get("job_id"), str) or "sow" not in item:
            raise ValueError(f'{where}: each line is {{"job_id": "...", "sow": {{...}}}}')
        yield item["job_id"], check_sow(item["sow"], where, features)


def quote_text(q: Quote) -> str:
    lines = [f"quote for job {q.job} (born round {q.plan.birth}): estimated utility {q.plan.utility:.4f}"]
    for g in q.plan.groups:
        start = "never" if g.start is None else f"start round {g.start}"
        signal = "(none)" if g.signal is None else str(g.signal)
        lines.append(f"  arrival {g.arrival} signal {signal:>6}: {start}")
    lines.append("  arrival duration  prob    start    price  failure(raw/announced)  utility")
    for o in q.plan.outcomes:
        if o.start is None:
            lines.append(f"  {o.arrival:7d} {o.duration:8d} {o.probability:6.3f}    never")
            continue
        lines.append(f"  {o.arrival:7d} {o.duration:8d} {o.probability:6.3f} {o.start:8d} {o.price:8.3f}  "
                     f"{o.failure_raw:9.4f} / {o.failure:<9.4f}  {o.utility:8.3f}")
    return "\n".join(lines)


def arrive(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    s = client.report_arrival(args.job, args.signal, request_id=args.request_id, tenant=args.tenant)
    return {**s.view.to_dict(), "tenant": s.tenant, "text": f"job {s.view.id}: {s.view.state}"
            + ("" if s.view.scheduled_start is None else f", scheduled to start in round {s.view.scheduled_start}")}


def complete(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    s = client.report_completion(args.job, request_id=args.request_id, tenant=args.tenant)
    return {**s.view.to_dict(), "tenant": s.tenant, "text": f"job {s.view.id}: {s.view.state}, completion reported"}


def status(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    s = client.status()
    p = s.platform_data  # as the server sent it: no model to build for a status line
    limit = "no limit" if s.own_max_active_jobs is None else f"limit {s.own_max_active_jobs}"
    clock = s.clock if s.clock == "simulated" else f"{s.clock}, {s.round_seconds:g} s a round"
    text = [f"platform C={p['C']} C_m={p['C_m']} D_m={p['D_m']} S_m={p['S_m']} H={p['H']:g}; oracle {s.oracle} with "
            f"{s.samples} "
            f"samples; clock {clock}; round {s.now}, capacity {s.capacity} nodes"
            + ("" if s.capacity_level is None else f" (model level {s.capacity_level:.2f})"),
            f"your active jobs: {s.own_active_jobs} ({limit})",
            f"server sowsched {s.server_version or 'unknown'}, code {s.code_identity[:12] or 'unknown'}"]
    out: dict[str, Any] = {"platform": p, "samples": s.samples, "oracle": s.oracle,
                           "clock": s.clock, "round_seconds": s.round_seconds, "round": s.now,
                           "own_active_jobs": s.own_active_jobs, "own_max_active_jobs": s.own_max_active_jobs,
                           "server_version": s.server_version, "code_identity": s.code_identity,
                           "capacity": s.capacity, "capacity_level": s.capacity_level}
    if s.state_digest:  # the operator's platform-wide view
        text.append(f"platform-wide: {s.active_jobs} active jobs, {s.events} events, state digest {s.state_digest}")
        reports = [c.to_dict() for c in s.capacity_reports]
        if reports:
            text.append("capacity reported for later rounds: "
                        + ", ".join(f"round {c['round']}: {c['capacity']}" for c in reports))
        out.update(active_jobs=s.active_jobs, events=s.events, state_digest=s.state_digest, capacity_reports=reports)
    return {**out, "text": "\n".join(text)}


def audit(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    """What a misreport would have gained the job (docs/prediction.md, "Audit")."""
    reference = None if args.reference is None else read_sow(args.reference)
    out = client.audit_job(args.job, tenant=args.tenant, reference=reference)
    lie = "none gains" if out["best_misreport"] is None else json.dumps(out["best_misreport"]["outcomes"])
    return {**out, "text": f"job {args.job}: best gain {out['best_gain']:.6g} over {out['tried']} alternative "
                           f"declarations (declared utility {out['declared_utility']:.6g}); best misreport: {lie}"}


def job(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    from mechanism.views import OPTIONAL_JOB_FIELDS  # the parser loads no mechanism (tests/cli/test_main.py)

    s = client.get_job(args.job, tenant=args.tenant)
    v = s.view
    shown = {k: val for k, val in v.to_dict().items() if k not in ("id", *OPTIONAL_JOB_FIELDS) and val is not None}
    text = [f"job {v.id} (tenant {s.tenant}): " + " ".join(f"{k}={val}" for k, val in shown.items())]
    if v.command:
        text.append(f"  command: {shlex.join(v.command)}")
    if v.env:
        text.append("  env: " + " ".join(f"{name}={shlex.quote(value)}" for name, value in v.env))
    if v.after:
        text.append(f"  after: {', '.join(v.after)}")
    if v.executor is not None:
        code = "" if v.executor.exit_code is None else f", exit code {v.executor.exit_code}"
        text.append(f"  executor: {v.executor.kind} {v.executor.external_id}{code}")
    return {**v.to_dict(), "tenant": s.tenant, "text": "\n".join(text)}


def advance(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    r, tenants = client.advance_tenants(request_id=args.request_id)
    head = f"round {r.round}: {len(r.events)} events, running {r.running} nodes, unit price {r.unit_price:.4f}"
    out = round_dict(r)
    out["events"] = [{**e, "tenant": t} for e, t in zip(out["events"], tenants, strict=True)]
    return {**out, "text": "\n".join([head, *(event_text(e, t) for e, t in zip(r.events, tenants, strict=True))])}


def report_capacity(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    c = client.report_capacity(args.round, args.capacity, request_id=args.request_id)
    return {**c.to_dict(),
            "text": f"round {c.round}: capacity {c.capacity} nodes (step 3 of that round evicts against it)"}


def round_dict(r: RoundReport) -> dict[str, Any]:
    return {"round": r.round, "events": [e.to_dict() for e in r.events], "running": r.running,
            "expected_usage": r.expected_usage, "unit_price": r.unit_price}


def jobs(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    rows = list(client.list_jobs(states=tuple(args.state), tenant=args.tenant))
    text = [f"{'job':24} {'tenant':12} {'state':14} {'birth':>5} {'c':>3} {'start':>5} {'charge':>9} {'value':>8}"]
    for s in rows:
        v = s.view
        text.append(f"{v.id:24} {s.tenant:12} {v.state:14} {v.birth:5d} {v.concurrency:3d} "
                    f"{'-' if v.start is None else v.start:>5} {v.charge:9.3f} {v.value:8.3f}")
    return {"jobs": [{**s.view.to_dict(), "tenant": s.tenant} for s in rows], "text": "\n".join(text)}


def event_text(e: Event, tenant: str = "") -> str:
    """One line per event; the job as tenant/id when the tenant is known (the operator sees every tenant's)."""
    data = " ".join(f"{k}={'(none)' if v is None else v}" for k, v in e.data.items() if k != "plan")
    job = f"{tenant}/{e.job}" if tenant else e.job
    return f"#{e.seq:<6} round {e.round:<5} {e.type:13} {job} {data}"


def watch(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any] | None:
    from clients.client import RpcFailure

    if args.limit < 0:
        raise ValueError(f"--limit={args.limit} is below the bound 0 (0: no limit)")
    events: list[dict[str, Any]] = []
    seen = 0
    last: int | None = None
    try:
        for te in client.watch_tenants(args.from_seq, follow=not args.no_follow):
            e = te.event
            seen += 1
            last = e.seq
            if args.json:
                events.append({**e.to_dict(), "tenant": te.tenant})
            else:
                print(event_text(e, te.tenant), flush=True)
            if args.limit and seen >= args.limit:
                break
    except KeyboardInterrupt:
        pass
    except RpcFailure as exc:
        if not seen:
            raise
        next_seq = args.from_seq if last is None else last + 1
        raise PartialFailure({"events": events, "last_seq": last, "next_seq": next_seq}, exc,  # they stand
                             f" (after {seen} events; resume with --from-seq {next_seq})") from None
    if not args.json:
        return None
    return {"events": events, "last_seq": last, "next_seq": args.from_seq if last is None else last + 1}


def prices(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    menu = client.price_menu(args.start, args.length)
    text = [f"price menu from round {menu.start}: {len(menu.unit_price)} rounds",
            f"  {'round':>7} {'expected usage':>15} {'unit price':>12}"]
    text += [f"  {menu.start + i:7d} {y:15.4f} {p:12.6f}"
             for i, (y, p) in enumerate(zip(menu.expected_usage, menu.unit_price, strict=True))]
    return {"start": menu.start, "expected_usage": list(menu.expected_usage), "unit_price": list(menu.unit_price),
            "text": "\n".join(text)}


def invoice(client: SchedulerClient, args: argparse.Namespace) -> dict[str, Any]:
    inv = client.invoice(args.tenant, from_round=args.from_round, to_round=args.to_round)
    period = "" if args.from_round is None and args.to_round is None else \
        f" billed in rounds [{args.from_round or 0}, {'now' if args.to_round is None else args.to_round})"
    text = [f"invoice of {inv.tenant}{period}: {len(inv.lines)} charges, total {inv.total:.4f}"]
    text += [f"  {c.job:24} round {c.round:5d} start {c.start:5d} duration {c.duration:3d} x{c.concurrency:<3d} "
             f"{c.amount:10.4f}" for c in inv.lines]
    return {"tenant": inv.tenant, "total": inv.total, "text": "\n".join(text),
            "charges": [{"job": c.job, "round": c.round, "start": c.start, "duration": c.duration,
                         "concurrency": c.concurrency, "amount": c.amount, "quote": c.quote.to_dict()}
                        for c in inv.lines]}
