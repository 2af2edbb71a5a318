"""quote_to_proto gives the same bytes as its keyword form (kept here as the reference) for any plan: every optional
field of every group and outcome present or absent on its own."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Quote
from mechanism.plans import GroupPlan, LaunchPlan, OutcomeQuote
from server import convert
from server.gen.sowsched.v1 import scheduler_pb2 as pb
from server.namespace import split


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def reference_quote_to_proto(q: Quote) -> pb.Quote:
    p = q.plan
    tenant, job_id = split(q.job)
    msg = pb.Quote(job_id=job_id, birth=p.birth, utility=p.utility, tenant=tenant)
    for g in p.groups:
        msg.groups.add(arrival=g.arrival, utility=g.utility, **_present(signal=g.signal, start=g.start))
    for o in p.outcomes:
        msg.outcomes.add(arrival=o.arrival, duration=o.duration, probability=o.probability, utility=o.utility,
                         **_present(signal=o.signal, start=o.start, price=o.price, failure_raw=o.failure_raw,
                                    failure=o.failure))
    return msg


rounds = st.integers(0, 2**31 - 1)
numbers = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0])
signals = st.none() | st.sampled_from(["", "0", "7", "a", "é"])
groups = st.builds(GroupPlan, rounds, signals, st.none() | rounds, numbers)
outcomes = st.builds(OutcomeQuote, rounds, st.integers(1, 10_000), signals, numbers, st.none() | rounds,
                     st.none() | numbers, st.none() | numbers, st.none() | numbers, numbers)
plans = st.builds(LaunchPlan, rounds, st.lists(groups, max_size=8).map(tuple),
                  st.lists(outcomes, max_size=12).map(tuple), numbers)


@settings(max_examples=300, deadline=None)
@given(plans, st.sampled_from(["acme/j1", "globex/x/y", "t/"]))
def test_quote_to_proto_gives_the_bytes_of_the_keyword_form(plan: LaunchPlan, job: str) -> None:
    q = Quote(job, plan)
    assert convert.quote_to_proto(q).SerializeToString(deterministic=True) == \
        reference_quote_to_proto(q).SerializeToString(deterministic=True)
    assert convert.quote_to_proto(q) == reference_quote_to_proto(q)
