"""The durable scheduler: any command sequence, refusals included, replays from its log to the same state."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism.engine import Engine, EngineError
from server.config import ServerConfig
from server.scheduler import CLOCK, DurableScheduler, PermissionDenied, Refused, apply_command
from server.service import encode_reply
from server.store import CommandStore
from tests.conftest import random_sow, small_platform

PLATFORM = small_platform(C=6, samples=300)
CONFIG = ServerConfig(platform=PLATFORM, oracle="mc", tokens={"operator-token": "operator", "acme-token": "acme",
                                                               "globex-token": "globex"}, tenants=("acme", "globex"))


def open_scheduler(path: Path) -> DurableScheduler:
    return DurableScheduler(CONFIG, CommandStore(path, CONFIG.identity()), encode_reply)


def random_commands(seed: int, n: int) -> list[tuple[str, str, dict]]:
    """(caller, kind, body): submissions, arrivals with random signals, completions, rounds; many are refused."""
    rng = np.random.default_rng(seed)
    out: list[tuple[str, str, dict]] = []
    for i in range(n):
        kind = str(rng.choice(["submit", "arrive", "complete", "advance"], p=[0.35, 0.25, 0.15, 0.25]))
        caller = str(rng.choice(["acme", "globex", "operator"]))
        job = f"j{int(rng.integers(0, max(1, i // 2 + 1)))}"
        if kind == "submit":
            sow = random_sow(rng, PLATFORM, max_outcomes=3, signal_mode="duration")
            tenant = caller if caller != "operator" else str(rng.choice(["acme", "globex"]))
            out.append((caller, kind, {"job_id": job, "tenant": tenant, "sow": sow.model_dump(mode="json")}))
        elif kind == "arrive":
            out.append((caller, kind, {"job_id": job, "signal": str(int(rng.integers(1, PLATFORM.D_m + 1)))}))
        elif kind == "complete":
            out.append((caller, kind, {"job_id": job}))
        else:
            out.append(("operator" if rng.random() < 0.8 else caller, kind, {}))
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40))
def test_any_command_sequence_replays_to_the_same_digest_and_refusals_log_nothing(seed: int, n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.db"
        sched = open_scheduler(path)
        reference = Engine(PLATFORM)  # the same accepted commands, applied directly
        accepted = 0
        for i, (caller, kind, body) in enumerate(random_commands(seed, n)):
            try:
                sched.execute(caller, f"r{i}", kind, body)
            except (EngineError, Refused):
                continue
            apply_command(reference, kind, body)
            accepted += 1
        assert sched.store.count() == accepted
        digest = sched.engine.digest()
        assert digest == reference.digest()
        sched.close()
        again = open_scheduler(path)
        assert (again.replayed, again.engine.digest()) == (accepted, digest)
        again.close()


def test_tenants_cannot_touch_each_others_jobs_or_play_rounds(tmp_path: Path) -> None:
    sched = open_scheduler(tmp_path / "s.db")
    sow = random_sow(np.random.default_rng(0), PLATFORM, signal_mode="duration").model_dump(mode="json")
    sched.execute("acme", None, "submit", {"job_id": "a", "tenant": "acme", "sow": sow})
    with pytest.raises(PermissionDenied, match="job 'a' belongs to another tenant"):
        sched.execute("globex", None, "complete", {"job_id": "a"})
    with pytest.raises(PermissionDenied, match="cannot submit for tenant 'acme'"):
        sched.execute("globex", None, "submit", {"job_id": "b", "tenant": "acme", "sow": sow})
    with pytest.raises(PermissionDenied, match="AdvanceRound needs the operator token"):
        sched.execute("acme", None, "advance", {})
    sched.execute(CLOCK, None, "advance", {})
    assert sched.store.count() == 2 and sched.engine.now == 1


def test_concurrent_commands_are_group_committed_in_order_and_replay_to_the_same_state(tmp_path: Path) -> None:
    import threading

    sched = open_scheduler(tmp_path / "s.db")
    rng = np.random.default_rng(4)
    sows = [random_sow(rng, PLATFORM, signal_mode="duration").model_dump(mode="json") for _ in range(48)]
    replies: dict[str, bytes] = {}
    errors: list[BaseException] = []

    def client(k: int) -> None:
        for i in range(k, 48, 8):
            try:
                ack = sched.execute("acme", f"req-{i}", "submit", {"job_id": f"j{i}", "tenant": "acme", "sow": sows[i]})
                replies[f"j{i}"] = ack.reply
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(replies) == 48 and sched.store.count() == 48
    logged = [cmd.body["job_id"] for cmd in sched.store.commands()]
    assert [v.id for v in sorted((sched.engine.view(j) for j in logged), key=lambda v: v.seq)] == logged
    # a retry of an acknowledged request returns the logged reply and logs nothing
    assert sched.execute("acme", "req-5", "submit", {"job_id": "j5", "tenant": "acme", "sow": sows[5]}).reply == replies["j5"]
    digest = sched.engine.digest()
    sched.close()
    again = open_scheduler(tmp_path / "s.db")
    assert (again.replayed, again.engine.digest()) == (48, digest)
    again.close()


def test_a_pre_parsed_sow_gives_the_same_reply_and_the_ack_splits_writer_time(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    sow = random_sow(rng, PLATFORM, max_outcomes=3, signal_mode="duration")
    body = {"job_id": "j", "tenant": "acme", "sow": sow.model_dump(mode="json")}
    parsed = open_scheduler(tmp_path / "a.db").execute("acme", "r", "submit", body, sow)
    plain = open_scheduler(tmp_path / "b.db").execute("acme", "r", "submit", body)
    assert parsed.reply == plain.reply
    assert 0.0 <= parsed.commit_ms <= parsed.writer_ms


def test_the_settler_ends_with_the_scheduler_and_settling_never_changes_the_state(tmp_path: Path) -> None:
    sched = open_scheduler(tmp_path / "s.db")
    reference = Engine(PLATFORM)
    for i, (caller, kind, body) in enumerate(random_commands(9, 30)):
        with contextlib.suppress(Refused, EngineError, ValueError):
            sched.execute(caller, f"r{i}", kind, body)
            apply_command(reference, kind, body)
        with sched.reading() as engine:
            engine.settle()
    assert sched.engine.digest() == reference.digest()
    sched.close()
    sched._settler.join(timeout=10)
    assert not sched._settler.is_alive()
