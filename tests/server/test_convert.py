"""Wire translation is lossless: every SoW, quote, job view and round survives protobuf and comes back equal, with
the engine's job key ('<tenant>/<id>') split into the message's tenant and the tenant's own id."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine, RoundReport
from mechanism.events import Event
from mechanism.sow import SoW
from server import convert, namespace
from tests.conftest import random_sow, small_platform

PLATFORM = small_platform(C=6, samples=300)


def run_engine(seed: int, jobs: int) -> tuple[Engine, list]:
    """Random SoWs submitted over a few rounds, with truthful arrivals reported: quotes, views and rounds."""
    rng = np.random.default_rng(seed)
    engine = Engine(PLATFORM)
    quotes, rounds = [], []
    for i in range(jobs):
        mode = str(rng.choice(["none", "duration", "explicit"]))
        sow = random_sow(rng, PLATFORM, max_outcomes=4, signal_mode=mode)
        key = namespace.key(str(rng.choice(["acme", "globex"])), f"j{i}/x" if i % 2 else f"j{i}")
        quotes.append(engine.submit(key, sow))
        job = engine.jobs[key]
        if job.birth == engine.now and rng.random() < 0.7 and (0, sow.signals[0]) in sow.table.groups:
            engine.report_arrival(key, sow.signals[0])
        if rng.random() < 0.5:
            rounds.append(engine.advance())
    rounds += [engine.advance() for _ in range(3)]
    return engine, [quotes, rounds]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), mode=st.sampled_from(["none", "duration", "explicit"]))
def test_a_sow_survives_the_wire(seed: int, mode: str) -> None:
    sow = random_sow(np.random.default_rng(seed), PLATFORM, max_outcomes=6, signal_mode=mode)
    if mode == "explicit":  # give some outcomes labels
        outcomes = [o.model_copy(update={"signal": "x" if i % 2 else None}) for i, o in enumerate(sow.outcomes)]
        sow = sow.model_copy(update={"outcomes": tuple(outcomes)})
    back = SoW.parse(convert.sow_to_dict(convert.sow_to_proto(sow.model_dump(mode="json"))), PLATFORM)
    assert back == sow


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), jobs=st.integers(1, 6))
def test_quotes_job_views_rounds_and_events_survive_the_wire(seed: int, jobs: int) -> None:
    engine, (quotes, rounds) = run_engine(seed, jobs)
    for q in quotes:
        msg = convert.quote_to_proto(q)
        assert (msg.tenant, convert.quote_from_proto(msg)) == (namespace.split(q.job)[0],
                                                               replace(q, job=namespace.local(q.job)))
    for job_id in engine.jobs:
        view = engine.view(job_id)
        job_msg = convert.job_to_proto(view)
        assert (job_msg.tenant, convert.job_from_proto(job_msg)) == (namespace.split(job_id)[0],
                                                                     replace(view, id=namespace.local(job_id)))
    for r in rounds:
        assert convert.round_from_proto(convert.round_to_proto(r)) == _local_round(r)
    for e in engine.events:
        event_msg = convert.event_to_proto(e)
        assert (event_msg.tenant, convert.event_from_proto(event_msg)) == (namespace.split(e.job)[0], _local(e))


def _local(e: Event) -> Event:
    return replace(e, job=namespace.local(e.job))


def _local_round(r: RoundReport) -> RoundReport:
    return replace(r, events=tuple(_local(e) for e in r.events))



def test_outcome_rows_and_dicts_give_the_same_message() -> None:
    rows = {"concurrency": 1, "value_steps": [[3, 5.0]], "outcomes": [[0, 1, 0.5, "a"], [1, 2, 0.5]]}
    dicts = {**rows, "outcomes": [{"arrival_offset": 0, "duration": 1, "probability": 0.5, "signal": "a"},
                                  {"arrival_offset": 1, "duration": 2, "probability": 0.5}]}
    assert convert.sow_to_proto(rows) == convert.sow_to_proto(dicts)
    assert not convert.sow_to_proto(rows).outcomes[1].HasField("signal")


def test_a_sow_without_a_signal_mode_travels_as_empty_and_is_read_as_the_default_explicit() -> None:
    data = {"concurrency": 1, "value_steps": [[3, 5.0]], "outcomes": [[0, 1, 1.0]]}  # no signal_mode: as in sow.json
    msg = convert.sow_to_proto(data)
    assert msg.signal_mode == ""
    assert convert.sow_to_dict(msg)["signal_mode"] == "explicit"
    assert SoW.parse(convert.sow_to_dict(msg), PLATFORM) == SoW.parse(data, PLATFORM)


def test_event_data_travels_with_sorted_keys_so_a_logged_reply_does_not_depend_on_insertion_order() -> None:
    one = Event(seq=0, round=1, type="start", job="acme/j", data={"b": 1, "a": 2})
    other = replace(one, data={"a": 2, "b": 1})
    assert convert.event_to_proto(one).data_json == convert.event_to_proto(other).data_json == '{"a": 2, "b": 1}'
