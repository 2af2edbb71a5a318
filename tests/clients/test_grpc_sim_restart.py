"""The simulation client survives a server killed with SIGKILL and restarted in the middle of a simulation."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from clients.grpc_sim import run_remote_simulation
from mechanism.engine import Engine
from models.simulation import SimulationResult, drive
from tests.clients.test_grpc_sim import quick
from tests.grpc_support import OP, PATIENT, Namespaced, ServerProcess, client


def test_a_simulation_across_a_sigkill_equals_the_in_process_run(tmp_path: Path) -> None:
    w = quick("overload", seed=1, rounds=15)
    proc = ServerProcess(tmp_path, w.platform.model_dump())
    port = proc.start()
    results: list[SimulationResult] = []
    try:
        op = client(port, OP, retry=PATIENT, timeout=5.0)
        sim = threading.Thread(target=lambda: results.append(run_remote_simulation(w, op)))
        sim.start()
        deadline = time.monotonic() + 10
        while op.status().now < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.kill()  # mid-simulation: a submit, report or advance may be in flight
        proc.start()
        sim.join(30)
        engine = Engine(w.platform)
        local = drive(w, Namespaced(engine))
        assert len(results) == 1 and results[0].rounds > 6
        assert results[0].summary() == local.summary()
        assert results[0].events == local.events and results[0].quotes == local.quotes
        assert op.status().state_digest == engine.digest()
    finally:
        proc.close()
