"""An event's canonical JSON (what the event chain hashes) is json.dumps of its record with sorted keys."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.events import Event

TEXT = st.text(max_size=12)  # any code point: quotes, backslashes, control characters, non-ASCII, surrogates
INTS = st.integers(-(2**70), 2**70)
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e-320, 1e300, math.pi])
GROUP = st.fixed_dictionaries({"arrival": INTS, "signal": st.none() | TEXT, "start": st.none() | INTS})


@settings(max_examples=300, deadline=None)
@given(INTS, INTS, TEXT, st.lists(GROUP, max_size=20), FLOATS)
def test_a_quote_events_canonical_json_is_json_dumps_with_sorted_keys(seq: int, round_: int, job: str,
                                                                      plan: list[dict[str, Any]],
                                                                      utility: float) -> None:
    event = Event(seq=seq, round=round_, type="quote", job=job, data={"plan": plan, "utility": utility})
    assert event.canonical_json() == json.dumps(event.to_dict(), sort_keys=True)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["quote", "start", "evict"]), TEXT,
       st.dictionaries(st.sampled_from(["plan", "utility", "executor", "start", "signal"]),
                       st.none() | st.booleans() | INTS | FLOATS | TEXT | st.lists(GROUP, max_size=3)
                       | st.lists(st.fixed_dictionaries({"arrival": st.booleans(), "start": INTS}), max_size=2)))
def test_any_other_events_canonical_json_is_json_dumps_with_sorted_keys(kind: str, job: str,
                                                                       data: dict[str, Any]) -> None:
    # Other kinds, other keys, and values a quote never holds (bools, missing or extra keys) take the encoder.
    event = Event(seq=3, round=1, type=kind, job=job, data=data)
    assert event.canonical_json() == json.dumps(event.to_dict(), sort_keys=True)


ODD_GROUP = (st.fixed_dictionaries({"arrival": st.booleans() | FLOATS, "signal": st.none(), "start": INTS})
             | st.fixed_dictionaries({"arrival": INTS, "signal": INTS, "start": INTS})
             | st.fixed_dictionaries({"arrival": INTS, "signal": st.none(), "start": st.booleans() | FLOATS})
             | st.fixed_dictionaries({"arrival": INTS, "signal": st.none(), "end": INTS})
             | st.fixed_dictionaries({"arrival": INTS, "stop": st.none(), "start": INTS})
             | st.fixed_dictionaries({"arrival": INTS, "start": INTS}))


@settings(max_examples=200, deadline=None)
@given(st.lists(GROUP, max_size=3), ODD_GROUP, st.lists(GROUP, max_size=3), FLOATS | INTS | st.none(),
       st.dictionaries(st.sampled_from(["executor", "note"]), INTS, max_size=1))
def test_a_quote_events_canonical_json_with_a_value_or_key_a_quote_never_has_is_json_dumps_too(
        before: list[dict[str, Any]], odd: dict[str, Any], after: list[dict[str, Any]], utility: Any,
        extra: dict[str, Any]) -> None:
    event = Event(seq=1, round=2, type="quote", job="j", data={"plan": [*before, odd, *after], "utility": utility,
                                                                **extra})
    assert event.canonical_json() == json.dumps(event.to_dict(), sort_keys=True)
