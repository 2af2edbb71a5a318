"""A durable server replays an engine priced by Lemma E.2's bundles (pricing 'stochastic') to the same digest."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mechanism.engine import Engine, EngineError
from server.config import ServerConfig
from server.errors import Refused
from server.replay import apply_command
from server.scheduler import DurableScheduler
from server.service import encode_reply
from server.store import CommandStore
from tests.conftest import random_sow
from tests.mechanism.test_bundle_truthfulness import random_bundle_platform


def test_a_durable_server_replays_a_stochastic_priced_engine(tmp_path: Path) -> None:
    platform = random_bundle_platform(np.random.default_rng(5), samples=200)
    config = ServerConfig(platform=platform, oracle="mc", tokens={"operator-token": "operator"}, tenants=("acme",))
    sched = DurableScheduler(config, CommandStore(tmp_path / "s.db", config.identity()), encode_reply)
    reference = Engine(platform)
    rng = np.random.default_rng(6)
    accepted = 0
    for i in range(30):
        kind = str(rng.choice(["submit", "arrive", "advance"], p=[0.4, 0.3, 0.3]))
        body: dict[str, object] = {}
        if kind == "submit":
            body = {"job_id": f"j{i}", "tenant": "acme",
                    "sow": random_sow(rng, platform, signal_mode="duration").model_dump(mode="json")}
        elif kind == "arrive":
            body = {"job_id": f"j{int(rng.integers(0, i + 1))}", "tenant": "acme",
                    "signal": str(int(rng.integers(1, platform.D_m + 1)))}
        try:
            sched.execute("operator", f"r{i}", kind, body)
        except (EngineError, Refused):
            continue
        apply_command(reference, kind, body)
        accepted += 1
    digest = sched.engine.digest()
    assert digest == reference.digest() and sched.engine.bundles is not None
    sched.close()
    again = DurableScheduler(config, CommandStore(tmp_path / "s.db", config.identity()), encode_reply)
    assert (again.replayed, again.engine.digest()) == (accepted, digest)
    again.close()


def test_get_price_menu_is_refused_with_failed_precondition_under_bundle_prices() -> None:
    import grpc
    import pytest

    from server.errors import status

    engine = Engine(random_bundle_platform(np.random.default_rng(5), samples=200))
    with pytest.raises(EngineError) as exc:
        engine.price_menu(0, 3)
    code, message = status(exc.value)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "no per-round unit prices" in message
