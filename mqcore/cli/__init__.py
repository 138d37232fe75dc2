"""``python -m mqcore`` (also ``mqcore``): operate a deployment from a shell.

Human tables by default, ``--json`` for scripts (field names are a contract: add,
never rename). Unknown topic, bad id or bad arguments: exit code 2 and one line
on stderr, never a traceback. Redis unreachable: exit code 1, one line; so is a
health check that fails (``mqcore health``: Redis can lose messages).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from mqcore.cli import (
    browse,
    groups,
    health,
    letters,
    outside,
    position,
    produce,
    retention,
    retries,
    topics,
    workers,
)
from mqcore.cli.common import Out, Parser, UsageError
from mqcore.errors import ConnectionLostError, MQError

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


def build_parser() -> Parser:
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    common.add_argument("--redis-url", default=argparse.SUPPRESS)
    parser = Parser(prog="mqcore", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("MQ_REDIS_URL", "redis://127.0.0.1:6379/0"),
        help=(
            "Redis URL (env MQ_REDIS_URL); redis+cluster:// for Redis Cluster, "
            "redis+sentinel://host:26379,host2:26379/mymaster/0 for Sentinel"
        ),
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in (
        topics,
        produce,
        browse,
        groups,
        position,
        letters,
        retries,
        retention,
        workers,
        health,
        outside,
    ):
        group.add_parsers(sub.add_parser, common)
    return parser


_COMMANDS: dict[str, Callable[[argparse.Namespace, Out], int]] = {
    "topic": topics.cmd_topic,
    "produce": produce.cmd_produce,
    "browse": browse.cmd_browse,
    "message": browse.cmd_message,
    "lag": groups.cmd_lag,
    "pending": groups.cmd_pending,
    "leases": groups.cmd_leases,
    "group": position.cmd_group,
    "dlq": letters.cmd_dlq,
    "consume": workers.cmd_consume,
    "retry-mover": workers.cmd_retry_mover,
    "retries": retries.cmd_retries,
    "retention": retention.cmd_retention,
    "housekeep": retention.cmd_housekeep,
    "health": health.cmd_health,
    "outside-events": outside.cmd_outside_events,
}


def _fail(code: int, message: str) -> int:
    line = " ".join(str(message).split())
    print(f"mqcore: error: {line}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 Redis unreachable/failed, 2 bad input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _COMMANDS[args.command](args, Out(args.json))
    except UsageError as exc:
        return _fail(EXIT_USAGE, str(exc))
    except ConnectionLostError as exc:
        return _fail(EXIT_FAILURE, str(exc))
    except MQError as exc:
        from mqcore.errors import FencedError, LeaseLostError

        code = EXIT_FAILURE if isinstance(exc, FencedError | LeaseLostError) else EXIT_USAGE
        if type(exc) is MQError:
            code = EXIT_FAILURE
        return _fail(code, str(exc))
    except ValueError as exc:
        return _fail(EXIT_USAGE, str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the CLI never shows a traceback
        return _fail(EXIT_FAILURE, f"{type(exc).__name__}: {exc}")
