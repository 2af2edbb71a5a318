"""Statements of work: concurrency, a step value function and a distribution over (arrival, duration, signal)."""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from mechanism.payload import check_after, check_command, check_env, check_payload_size
from mechanism.platform import MAX_OUTCOMES, Platform
from mechanism.validation import number

if TYPE_CHECKING:  # numpy loads where a value or an outcome table is computed: a client checking a SoW skips it
    import numpy as np

Signal = str | None
PROBABILITY_TOLERANCE = 1e-9


class Outcome(BaseModel):
    """One possible realisation: arrival `arrival_offset` rounds after birth, running `duration` rounds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arrival_offset: int = Field(ge=0)
    duration: int = Field(ge=1)
    probability: float = Field(gt=0.0, le=1.0)
    signal: Signal = None

    _numbers = field_validator("arrival_offset", "duration", "probability", mode="before")(number)

    @field_validator("signal", mode="before")
    @classmethod
    def _signal_as_text(cls, v: Any) -> Any:
        # Labels travel as text everywhere (JSON, protobuf), so 3 and "3" are one signal.
        if isinstance(v, bool):
            raise ValueError("signal must be text, an integer or null")
        return str(v) if isinstance(v, int) else v


class SoW(BaseModel):
    """A statement of work as submitted. Validate with `SoW.parse(data, platform)` to check the platform bounds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int = Field(ge=1)
    value_steps: tuple[tuple[int, float], ...] = Field(min_length=1, max_length=10_000)
    outcomes: tuple[Outcome, ...] = Field(min_length=1)
    signal_mode: Literal["explicit", "none", "duration"] = "explicit"
    # The payload an executor runs (ignored by the mechanism) and the job's parents (docs/workloads-and-sows.md);
    # empty ones are left out of the SoW's dump, so a SoW without them is logged and hashed as before they existed.
    command: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    after: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (server snapshots) as the validated fields in plain tuples: pydantic's own pickling copies each
        model's state in Python, once per outcome, and the cached views (`signals`, `table`) are rebuilt on use."""
        outcomes = tuple((o.arrival_offset, o.duration, o.probability, o.signal, tuple(sorted(o.model_fields_set)))
                         for o in self.outcomes)
        return _sow_from_fields, (self.concurrency, self.value_steps, outcomes, self.signal_mode,
                                  tuple(sorted(self.model_fields_set)), self.command, self.env, self.after)

    @model_serializer(mode="wrap")
    def _without_empty_payload(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in ("command", "env", "after"):
            if not data.get(name, True):
                del data[name]
        return data

    @field_validator("command", "after", mode="before")
    @classmethod
    def _list_of_text(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                if not isinstance(x, str):
                    raise ValueError(f"{info.field_name}[{i}]={x!r} is not text")
        elif v is not None:
            raise ValueError(f"{info.field_name} must be a list of text")
        return v

    @field_validator("env", mode="before")
    @classmethod
    def _map_of_text(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError("env must be an object of text names and values")
        for name, value in v.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ValueError(f"env[{name!r}]={value!r}: names and values must be text")
        return v

    @field_validator("command")
    @classmethod
    def _command_bounded(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        check_command(v)
        return v

    @field_validator("env")
    @classmethod
    def _env_bounded(cls, v: dict[str, str]) -> dict[str, str]:
        check_env(v)
        return dict(sorted(v.items()))

    @field_validator("after")
    @classmethod
    def _after_bounded(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        check_after(v)
        return v

    @classmethod
    def parse(cls, data: Any, platform: Platform) -> SoW:
        """Validate `data` (a dict or a SoW) against its own rules and the bounds of `platform`."""
        if isinstance(data, SoW):
            data = data.model_dump()
        return cls.model_validate(data, context={"platform": platform})

    _concurrency = field_validator("concurrency", mode="before")(number)

    @field_validator("value_steps", mode="before")
    @classmethod
    def _steps_of_numbers(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            for i, step in enumerate(v):
                if isinstance(step, (list, tuple)):
                    for name, x in zip(("deadline k", "value v"), step, strict=False):
                        if isinstance(x, (bool, str)):
                            raise ValueError(f"value_steps[{i}] {name}={x!r} is not a number")
        return v

    @field_validator("outcomes", mode="before")
    @classmethod
    def _outcomes_from_lists(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)) and len(v) > MAX_OUTCOMES:
            raise ValueError(f"outcomes has {len(v)} entries, above the bound {MAX_OUTCOMES}")
        if isinstance(v, (list, tuple)):
            return [_outcome_from_row(row) for row in v]
        return v

    @field_validator("value_steps")
    @classmethod
    def _steps_monotone(cls, steps: tuple[tuple[int, float], ...]) -> tuple[tuple[int, float], ...]:
        check_value_steps(steps)
        return steps

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> SoW:
        total = math.fsum(o.probability for o in self.outcomes)
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            raise ValueError(f"outcomes probabilities sum to {total!r}, not 1 (tolerance {PROBABILITY_TOLERANCE})")
        seen: dict[tuple[int, int], int] = {}
        for i, o in enumerate(self.outcomes):
            key = (o.arrival_offset, o.duration)
            if key in seen:
                raise ValueError(
                    f"outcomes[{i}] repeats (arrival_offset={key[0]}, duration={key[1]}) of outcomes[{seen[key]}]"
                )
            seen[key] = i
            if self.signal_mode == "none" and o.signal is not None:
                raise ValueError(f"outcomes[{i}].signal={o.signal!r} given but signal_mode is 'none'")
            if self.signal_mode == "duration" and o.signal not in (None, str(o.duration)):
                raise ValueError(
                    f"outcomes[{i}].signal={o.signal!r} differs from its duration under signal_mode 'duration'"
                )
        check_payload_size(self.command, self.env)
        if self.after and self.signal_mode != "none":
            raise ValueError(f"signal_mode={self.signal_mode!r} with after: a job that waits for its parents arrives "
                             "when they complete, with no signal; signal_mode must be 'none'")
        platform = (info.context or {}).get("platform")
        if platform is not None:
            self.check_bounds(platform)
        return self

    def check_bounds(self, p: Platform) -> None:
        """Raise ValueError naming the field, value and bound of the first platform bound this SoW breaks."""
        if self.concurrency > p.C_m:
            raise ValueError(f"concurrency={self.concurrency} exceeds the bound C_m={p.C_m}")
        k_last = self.value_steps[-1][0]
        if k_last > p.S_m:
            raise ValueError(f"value_steps deadline k={k_last} exceeds the bound S_m={p.S_m}")
        v_first = self.value_steps[0][1]
        if v_first > p.H:
            raise ValueError(f"value_steps value v={v_first} exceeds the bound H={p.H}")
        v_last = self.value_steps[-1][1]
        if v_last < 1.0:
            raise ValueError(f"value_steps value v={v_last} is below the bound 1 (positive values lie in [1, H])")
        for i, o in enumerate(self.outcomes):
            if o.duration > p.D_m:
                raise ValueError(f"outcomes[{i}].duration={o.duration} exceeds the bound D_m={p.D_m}")
            if o.arrival_offset > p.S_m - 1:
                raise ValueError(f"outcomes[{i}].arrival_offset={o.arrival_offset} exceeds the bound S_m-1={p.S_m - 1}")

    # ---- derived views (computed once; the model is frozen) ----

    @cached_property
    def signals(self) -> tuple[Signal, ...]:
        """The observed label of every outcome after applying `signal_mode`."""
        if self.signal_mode == "none":
            return tuple(None for _ in self.outcomes)
        if self.signal_mode == "duration":
            return tuple(str(o.duration) for o in self.outcomes)
        return tuple(o.signal for o in self.outcomes)

    @cached_property
    def table(self) -> OutcomeTable:
        return OutcomeTable.from_sow(self)

    def value(self, completion_offset: np.ndarray | int) -> np.ndarray:
        """V at completion f, given f - b: the first step with f - b <= k_i, else 0."""
        import numpy as np

        ks = np.array([k for k, _ in self.value_steps], dtype=np.int64)
        vs = np.array([v for _, v in self.value_steps] + [0.0], dtype=np.float64)
        idx = np.searchsorted(ks, np.asarray(completion_offset), side="left")
        return vs[idx]

    def group_keys(self) -> list[tuple[int, Signal]]:
        """The (arrival_offset, signal) groups in canonical order: by arrival, then no-signal first, then label."""
        return sorted({(o.arrival_offset, s) for o, s in zip(self.outcomes, self.signals, strict=True)},
                      key=group_sort_key)


def _sow_from_fields(concurrency: int, value_steps: tuple[tuple[int, float], ...],
                     outcomes: tuple[tuple[int, int, float, Signal, tuple[str, ...]], ...],
                     signal_mode: Literal["explicit", "none", "duration"],
                     fields_set: tuple[str, ...], command: tuple[str, ...] = (),
                     env: dict[str, str] | None = None, after: tuple[str, ...] = ()) -> SoW:
    """Unpickle a SoW pickled by `SoW.__reduce__`: fields that were validated when it was first built."""
    rows = tuple(Outcome.model_construct(set(o[4]), arrival_offset=o[0], duration=o[1], probability=o[2], signal=o[3])
                 for o in outcomes)
    return SoW.model_construct(set(fields_set), concurrency=concurrency, value_steps=value_steps, outcomes=rows,
                               signal_mode=signal_mode, command=command, env={} if env is None else env, after=after)


def check_value_steps(steps: tuple[tuple[int, float], ...]) -> None:
    """Raise ValueError at the first step that breaks 1 <= k_1 < k_2 < ... and v_1 > v_2 > ... > 0 (finite)."""
    for i, (k, v) in enumerate(steps):
        if k < 1:
            raise ValueError(f"value_steps[{i}] deadline k={k} is below the bound 1")
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"value_steps[{i}] value v={v} must be positive and finite")
        if i > 0 and k <= steps[i - 1][0]:
            raise ValueError(f"value_steps[{i}] deadline k={k} must exceed the previous k={steps[i - 1][0]}")
        if i > 0 and v >= steps[i - 1][1]:
            raise ValueError(f"value_steps[{i}] value v={v} must be below the previous v={steps[i - 1][1]}")


def group_sort_key(key: tuple[int, Signal]) -> tuple[int, int, int, str, str]:
    """By arrival; no signal first, then numeric labels by value, then other labels as text."""
    a, sig = key
    if sig is None:
        return (a, 0, 0, "", "")
    if sig.isdecimal():  # by value, without int(): it refuses '²' (a digit, not decimal) and above 4,300 digits
        digits = "".join(str(unicodedata.decimal(ch)) for ch in sig).lstrip("0")
        return (a, 1, len(digits), digits, sig)
    return (a, 2, 0, "", sig)


def _outcome_from_row(row: Any) -> Any:
    """Accept `[arrival_offset, duration, probability, signal?]` rows as well as dicts."""
    if isinstance(row, (list, tuple)):
        if len(row) not in (3, 4):
            raise ValueError(
                f"an outcome row has {len(row)} fields; expected [arrival_offset, duration, probability, signal?]"
            )
        return {"arrival_offset": row[0], "duration": row[1], "probability": row[2],
                "signal": row[3] if len(row) == 4 else None}
    return row


# eq=False: array fields have no truth value, so comparing two tables raised, and with them two equal SoWs whose
# cached tables are both built (pydantic compares __dict__ first); by identity, SoW equality falls back to its fields.
@dataclass(frozen=True, eq=False)
class OutcomeTable:
    """The outcomes as arrays (offsets relative to birth), with each outcome's group index."""

    arrival: np.ndarray  # int64, arrival offset
    duration: np.ndarray  # int64
    probability: np.ndarray  # float64
    group: np.ndarray  # int64 index into `groups`
    groups: tuple[tuple[int, Signal], ...]
    group_arrival: np.ndarray  # int64, arrival offset of each group
    deadline: np.ndarray  # int64, the value steps' k_i (a launch plan's compiled value lookup)
    step_value: np.ndarray  # float64, their v_i and a trailing 0 (after the last deadline)

    @staticmethod
    def from_sow(sow: SoW) -> OutcomeTable:
        import numpy as np

        groups = tuple(sow.group_keys())
        index = {g: i for i, g in enumerate(groups)}
        return OutcomeTable(
            arrival=np.array([o.arrival_offset for o in sow.outcomes], dtype=np.int64),
            duration=np.array([o.duration for o in sow.outcomes], dtype=np.int64),
            probability=np.array([o.probability for o in sow.outcomes], dtype=np.float64),
            group=np.array([index[(o.arrival_offset, s)] for o, s in zip(sow.outcomes, sow.signals, strict=True)],
                           dtype=np.int64),
            groups=groups,
            group_arrival=np.array([a for a, _ in groups], dtype=np.int64),
            deadline=np.array([k for k, _ in sow.value_steps], dtype=np.int64),
            step_value=np.array([v for _, v in sow.value_steps] + [0.0], dtype=np.float64),
        )
