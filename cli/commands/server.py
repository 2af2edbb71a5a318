"""`sowsched serve` runs the gRPC server; `sowsched state-digest` prints the state hash of a server or a store."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from cli.args import add_output_arguments, nonempty
from cli.commands.jobs import add_connection_arguments, connect
from cli.verbs import add_verb


def register(sub: Any) -> None:
    p = add_verb(sub, "serve")
    p.add_argument("--listen", default="127.0.0.1:50051", help="HOST:PORT (port 0 picks a free one)")
    p.add_argument("--store", type=nonempty, required=True,
                   help="sqlite:///relative.db, sqlite:////absolute.db or a path")
    p.add_argument("--config", required=True, type=Path,
                   help="platform.toml (platform, operator, tenants); SIGHUP re-reads its tokens, tenants and limits")
    p.add_argument("--clock", choices=("simulated", "wall"), default="simulated",
                   help="simulated: AdvanceRound plays a round; wall: a round every --round-seconds")
    p.add_argument("--round-seconds", type=float, default=60.0, help="seconds per round with --clock wall")
    p.add_argument("--tls-cert", type=Path, help="PEM certificate chain (with --tls-key: serve TLS)")
    p.add_argument("--tls-key", type=Path, help="PEM private key")
    p.add_argument("--port-file", type=Path, help="write the bound port here once serving")
    p.add_argument("--workers", type=int, default=64, help="RPC worker threads (each open watch holds one)")
    p.add_argument("--max-watchers", type=int, default=None,
                   help="open WatchEvents streams at once (default: half of --workers); more are refused with "
                        "RESOURCE_EXHAUSTED so that unary calls always have threads")
    p.add_argument("--grace", type=_seconds, default=10.0, help="seconds calls in flight get on SIGTERM")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                   help="JSON log lines on stderr at this level and above")
    p.add_argument("--snapshot-every", type=int, default=1000,
                   help="logged commands between state snapshots, so a restart replays only the log after the "
                        "newest (0: never; a snapshot written by other code is ignored)")
    p.add_argument("--metrics-listen", type=nonempty, metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks a free one; off "
                        "by default)")
    p.add_argument("--min-ping-interval", type=_positive_seconds, default=10.0,
                   help="seconds: clients may send keepalive pings this often (default %(default)g)")
    p.add_argument("--keepalive-time", type=_positive_seconds, default=60.0,
                   help="seconds of quiet before the server pings a client (default %(default)g)")
    p.add_argument("--keepalive-timeout", type=_positive_seconds, default=20.0,
                   help="seconds without the ping's ack before the server drops the connection and frees its "
                        "event streams (default %(default)g)")
    p.set_defaults(func=serve)

    p = add_verb(sub, "backup")
    p.add_argument("--store", type=nonempty, required=True, help="the store to copy: sqlite:///x.db or a path")
    p.add_argument("--out", type=nonempty, required=True,
                   help="the new file, sqlite:///x.db or a path (an existing one is not overwritten)")
    add_output_arguments(p)
    p.set_defaults(func=backup)

    p = add_verb(sub, "state-digest")
    add_connection_arguments(p)
    p.add_argument("--store", type=nonempty, help="replay this store offline instead of asking --server")
    p.add_argument("--config", type=Path, help="platform.toml the store was written with (with --store)")
    p.add_argument("--full-replay", action="store_true",
                   help="with --store: replay the whole log, checking every logged reply, instead of starting "
                        "from the newest snapshot")
    add_output_arguments(p)
    p.set_defaults(func=state_digest)


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not (0.001 <= value <= 1e9):
        raise argparse.ArgumentTypeError(f"{value} is outside [0.001, 1e9] seconds")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{value} is not a number of seconds >= 0")
    return value


def serve(args: argparse.Namespace) -> int:
    from server.app import ServerOptions, StartupError, serve_until_signalled, setup_logging
    from server.config import ConfigError, load_config
    from server.store import StoreError

    setup_logging(args.log_level)
    try:
        config = load_config(args.config)
        options = ServerOptions(store=args.store, listen=args.listen, clock=args.clock,
                                round_seconds=args.round_seconds, tls_cert=args.tls_cert, tls_key=args.tls_key,
                                max_workers=args.workers, max_watchers=args.max_watchers, grace_seconds=args.grace,
                                snapshot_every=args.snapshot_every, metrics_listen=args.metrics_listen,
                                min_ping_interval=args.min_ping_interval, keepalive_time=args.keepalive_time,
                                keepalive_timeout=args.keepalive_timeout)
        return serve_until_signalled(config, options, args.port_file, reload=lambda: load_config(args.config))
    except (ConfigError, StoreError, StartupError, OSError) as exc:
        print(f"sowsched serve: {exc}", file=sys.stderr)
        return 2


def backup(args: argparse.Namespace) -> int:
    from server.backup import backup_store
    from server.store import StoreError, store_path

    try:
        result = backup_store(store_path(args.store), store_path(args.out))
    except (StoreError, OSError) as exc:
        print(f"sowsched backup: {exc}", file=sys.stderr)
        return 2
    out = {"out": str(result.path), "last_seq": result.last_seq, "snapshots": result.snapshots,
           "bytes": result.bytes, "seconds": round(result.seconds, 3)}
    print(json.dumps(out, sort_keys=True) if args.json else
          f"{result.path}: commands 1..{result.last_seq}, {result.snapshots} snapshots, {result.bytes} bytes, "
          f"{result.seconds:.2f} s")
    return 0


def state_digest(args: argparse.Namespace) -> int:
    from clients.client import RpcFailure

    try:
        out = _offline_digest(args) if args.store else _remote_digest(args)
    except RpcFailure as exc:
        from cli.commands.jobs import exit_code
        print(f"sowsched state-digest: {exc}", file=sys.stderr)
        return exit_code(exc)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"sowsched state-digest: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, sort_keys=True) if args.json else out["digest"])
    return 0


def _remote_digest(args: argparse.Namespace) -> dict[str, Any]:
    from clients.client import RpcFailure

    with connect(args) as client:
        s = client.status()
    if not s.state_digest:  # GetPlatform leaves the platform-wide fields out for a tenant
        raise RpcFailure("PERMISSION_DENIED", "the state digest needs the operator token")
    return {"digest": s.state_digest, "round": s.now, "events": s.events, "source": args.server}


def _offline_digest(args: argparse.Namespace) -> dict[str, Any]:
    from server.config import load_config
    from server.scheduler import SNAPSHOT_EVERY, DurableScheduler
    from server.service import encode_reply, legacy_replies
    from server.store import CommandStore, store_path

    if args.config is None:
        raise ValueError("--store needs --config, the platform.toml the store was written with")
    path = store_path(args.store)
    if not path.is_file():
        raise ValueError(f"store={args.store!r}: no such file {path}")
    config = load_config(args.config, resolve_tokens=False)  # replaying needs the platform, not the secrets
    started = time.perf_counter()
    sched = DurableScheduler(config, CommandStore(path, config.identity(), read_only=True), encode_reply,
                             snapshot_every=0 if args.full_replay else SNAPSHOT_EVERY, legacy=legacy_replies)
    replay_s = time.perf_counter() - started
    try:
        engine = sched.engine
        return {"digest": engine.digest(), "round": engine.now, "events": engine.history_marks().events,
                "snapshot_seq": sched.restored_from, "commands": sched.replayed, "replay_s": round(replay_s, 3),
                "source": str(path)}
    finally:
        sched.close()


def main(argv: list[str] | None = None) -> int:
    """`python -m cli.commands.server serve ...`: the same commands without importing the whole CLI."""
    parser = argparse.ArgumentParser(prog="python -m cli.commands.server")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
