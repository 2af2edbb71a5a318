"""Wire translation: the mechanism's SoW, Quote, JobView, RoundReport and Event to and from protobuf messages.

On the way out, an engine job key ('<tenant>/<job id>', server/namespace.py) becomes the message's job id and
tenant; on the way in, the job id is the tenant's own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import server.gen  # noqa: F401  (puts the generated `sowsched.v1` package on the import path)
from mechanism.events import Event
from mechanism.executor import ExecutorInfo
from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote
from mechanism.views import CapacityView, JobView, Payload, Quote, RoundReport
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.namespace import split

if TYPE_CHECKING:
    from mechanism.sow import Signal


def _opt(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


# ---- statements of work ----

def sow_to_dict(msg: pb.SoW) -> dict[str, Any]:
    """The SoW message as the dict `SoW.parse` validates (so errors name the same fields as a JSON file)."""
    return {
        "concurrency": msg.concurrency,
        "value_steps": [[s.deadline, s.value] for s in msg.value_steps],
        "outcomes": [{"arrival_offset": o.arrival_offset, "duration": o.duration, "probability": o.probability,
                      "signal": _opt(o, "signal")} for o in msg.outcomes],
        "signal_mode": msg.signal_mode or "explicit",
        **({"command": list(msg.command)} if msg.command else {}),
        **({"env": dict(msg.env)} if msg.env else {}),
        **({"after": list(msg.after)} if msg.after else {}),
    }


def sow_to_proto(data: dict[str, Any]) -> pb.SoW:
    """A SoW dict (as in sow.json, outcomes as dicts or [arrival_offset, duration, probability, signal?] rows)."""
    msg = pb.SoW(concurrency=int(data["concurrency"]), signal_mode=str(data.get("signal_mode") or ""),
                 command=[str(a) for a in data.get("command") or ()], after=[str(p) for p in data.get("after") or ()],
                 env={str(k): str(v) for k, v in (data.get("env") or {}).items()})
    for k, v in data["value_steps"]:
        msg.value_steps.add(deadline=int(k), value=float(v))
    for row in data["outcomes"]:
        if isinstance(row, dict):
            a, d, p, s = row["arrival_offset"], row["duration"], row["probability"], row.get("signal")
        else:
            a, d, p, s = (*row, None)[:4]
        o = msg.outcomes.add(arrival_offset=int(a), duration=int(d), probability=float(p))
        if s is not None:
            o.signal = str(s)
    return msg


# ---- quotes ----

def features_to_dict(msg: pb.Features) -> dict[str, Any]:
    """The Features message as the dict the prediction engine validates (the same keys as a SoW JSON's features)."""
    return {"nodes": msg.nodes, "requested_seconds": msg.requested_seconds,
            "value_steps": [[s.deadline, s.value] for s in msg.value_steps],
            "arrival": [[a.offset, a.probability] for a in msg.arrival],
            "executable": msg.executable, "queue": msg.queue, "tags": list(msg.tags)}


def features_to_proto(data: dict[str, Any]) -> pb.Features:
    """A features dict (SoW JSON `features`: nodes, requested_seconds, value_steps, arrival [[offset, p]], tags)."""
    msg = pb.Features(nodes=int(data["nodes"]), requested_seconds=int(data["requested_seconds"]),
                      executable=str(data.get("executable", "")), queue=str(data.get("queue", "")),
                      tags=[str(t) for t in data.get("tags", [])])
    for k, v in data.get("value_steps", []):
        msg.value_steps.add(deadline=int(k), value=float(v))
    for offset, p in data.get("arrival", []):
        msg.arrival.add(offset=int(offset), probability=float(p))
    return msg


def prediction_to_proto(data: dict[str, Any], msg: pb.Prediction) -> None:
    """Fill `msg` with a logged prediction (seconds, probabilities, model_version, trained)."""
    msg.seconds.extend(data["seconds"])
    msg.probabilities.extend(data["probabilities"])
    msg.model_version = data["model_version"]
    msg.trained = int(data["trained"])


def prediction_from_proto(msg: pb.Prediction) -> dict[str, Any]:
    """A quote's prediction as the dict the log keeps."""
    return {"seconds": list(msg.seconds), "probabilities": list(msg.probabilities),
            "model_version": msg.model_version, "trained": msg.trained}


def quote_to_proto(q: Quote) -> pb.Quote:
    """The quote's message; an optional field is set only where the plan holds a value (None leaves it absent)."""
    p = q.plan
    tenant, job_id = split(q.job)
    msg = pb.Quote(job_id=job_id, birth=p.birth, utility=p.utility, tenant=tenant)
    add_group = msg.groups.add
    for g in p.groups:
        row = add_group(arrival=g.arrival, utility=g.utility)
        if g.signal is not None:
            row.signal = g.signal
        if g.start is not None:
            row.start = g.start
    add_outcome = msg.outcomes.add
    for o in p.outcomes:  # field by field on the added row: no keyword dict per outcome
        out = add_outcome(arrival=o.arrival, duration=o.duration, probability=o.probability, utility=o.utility)
        if o.signal is not None:
            out.signal = o.signal
        if o.start is not None:
            out.start = o.start
        if o.price is not None:
            out.price = o.price
        if o.failure_raw is not None:
            out.failure_raw = o.failure_raw
        if o.failure is not None:
            out.failure = o.failure
    return msg


def quote_from_proto(msg: pb.Quote) -> Quote:
    groups = tuple(GroupPlan(arrival=g.arrival, signal=_opt(g, "signal"), start=_opt(g, "start"), utility=g.utility)
                   for g in msg.groups)
    outcomes = tuple(OutcomeQuote(arrival=o.arrival, duration=o.duration, signal=_opt(o, "signal"),
                                  probability=o.probability, start=_opt(o, "start"), price=_opt(o, "price"),
                                  failure_raw=_opt(o, "failure_raw"), failure=_opt(o, "failure"), utility=o.utility)
                     for o in msg.outcomes)
    return Quote(msg.job_id, LaunchPlan(birth=msg.birth, groups=groups, outcomes=outcomes, utility=msg.utility))


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


# ---- jobs ----

_JOB_OPTIONAL = ("arrival", "signal", "start", "finish", "ended", "reported_arrival", "scheduled_start")


def job_to_proto(v: JobView) -> pb.Job:
    tenant, job_id = split(v.id)
    msg = pb.Job(job_id=job_id, seq=v.seq, state=v.state, birth=v.birth, concurrency=v.concurrency,
                 charge=v.charge, value=v.value, tenant=tenant, command=v.command, env=dict(v.env),
                 after=[split(parent)[1] for parent in v.after],
                 **_present(**{k: getattr(v, k) for k in _JOB_OPTIONAL}))
    if v.executor is not None:
        msg.executor.CopyFrom(executor_to_proto(v.executor))
    return msg


def job_from_proto(msg: pb.Job) -> JobView:
    return JobView(id=msg.job_id, seq=msg.seq, state=msg.state, birth=msg.birth, concurrency=msg.concurrency,
                   charge=msg.charge, value=msg.value, **{k: _opt(msg, k) for k in _JOB_OPTIONAL},
                   command=tuple(msg.command), env=tuple(sorted(msg.env.items())), after=tuple(msg.after),
                   executor=executor_from_proto(msg.executor) if msg.HasField("executor") else None)


# ---- executors ----

def executor_to_proto(info: ExecutorInfo) -> pb.ExecutorInfo:
    return pb.ExecutorInfo(kind=info.kind, external_id=info.external_id, **_present(exit_code=info.exit_code))


def executor_from_proto(msg: pb.ExecutorInfo) -> ExecutorInfo:
    """The message as validated executor info; raises ExecutorInfoError naming the field of a broken rule."""
    return ExecutorInfo(msg.kind, msg.external_id, _opt(msg, "exit_code"))


# ---- events and rounds ----

def event_to_proto(e: Event, payload: Payload | None = None) -> pb.Event:
    """The event; with `payload` (a start event streamed to an executor) the started job's payload too."""
    tenant, job_id = split(e.job)
    data = {**e.data, "parent": split(e.data["parent"])[1]} if "parent" in e.data else e.data
    msg = pb.Event(seq=e.seq, round=e.round, type=e.type, job_id=job_id, tenant=tenant,
                   data_json=json.dumps(data, sort_keys=True))
    if "executor" in e.data:
        msg.executor.CopyFrom(executor_to_proto(ExecutorInfo.from_dict(e.data["executor"])))
    if payload is not None:
        msg.payload.CopyFrom(pb.JobPayload(command=payload.command, env=payload.env, concurrency=payload.nodes,
                                           max_duration=payload.max_duration))
    return msg


def payload_from_proto(msg: pb.Event) -> Payload | None:
    """The start event's payload, or None: the event carries none, or none with a time limit (ask GetJob)."""
    if not msg.HasField("payload") or not msg.payload.HasField("max_duration"):
        return None
    p = msg.payload
    return Payload(tuple(p.command), int(p.concurrency), int(p.max_duration), dict(p.env))


def event_from_proto(msg: pb.Event) -> Event:
    return Event(seq=msg.seq, round=msg.round, type=msg.type, job=msg.job_id,
                 data=json.loads(msg.data_json) if msg.data_json else {})


def capacity_to_proto(c: CapacityView) -> pb.CapacityReport:
    return pb.CapacityReport(round=c.round, capacity=c.capacity)


def capacity_from_proto(msg: pb.CapacityReport) -> CapacityView:
    return CapacityView(round=msg.round, capacity=msg.capacity)


def round_to_proto(r: RoundReport) -> pb.RoundReport:
    return pb.RoundReport(round=r.round, events=[event_to_proto(e) for e in r.events], running=r.running,
                          expected_usage=r.expected_usage, unit_price=r.unit_price)


def round_from_proto(msg: pb.RoundReport) -> RoundReport:
    return RoundReport(round=msg.round, events=tuple(event_from_proto(e) for e in msg.events), running=msg.running,
                       expected_usage=msg.expected_usage, unit_price=msg.unit_price)


def signal_field(signal: Signal) -> dict[str, Any]:
    """Keyword arguments setting an optional `signal` field, or none for "no signal"."""
    return {} if signal is None else {"signal": str(signal)}
