"""``manage.py timeline --cluster C [--topic T] [--kind K]... [--json]``: the incident timeline.

The same events as the timeline page and ``/api/v1/clusters/<c>/timeline`` (status
changes, lease take-overs and expiries, consumers, DLQ bursts, checkpoints, collector
gaps, Redis restarts, and the audited replays and position moves), newest first.
``--before`` takes the ``next_before`` of a previous ``--json`` answer. An operator's
shell sees every topic: there is no user to scope it to.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.clusters import cluster_names
from dashboard.selectors.pages.timeline import (
    KINDS,
    TimelineFilter,
    parse_kinds,
    parse_time,
    timeline_events,
)
from mqcore.clock import iso_from_ms


class Command(BaseCommand):
    help = "Print the incident timeline of a cluster (or one topic), newest first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", default=None, help="default: the only cluster")
        parser.add_argument("--topic", default=None)
        parser.add_argument("--kind", action="append", default=[], help=f"one of {KINDS}")
        parser.add_argument("--group", default=None)
        parser.add_argument("--since", default=None, help="epoch ms or ISO time (UTC)")
        parser.add_argument("--until", default=None, help="epoch ms or ISO time (UTC)")
        parser.add_argument("--limit", type=int, default=50)
        parser.add_argument("--before", default=None, help="next_before of a previous page")
        parser.add_argument("--json", action="store_true", help="JSON, like the API")

    def handle(self, *args: Any, **options: Any) -> None:
        names = cluster_names()
        cluster = options["cluster"] or (names[0] if len(names) == 1 else None)
        if cluster not in names:
            raise CommandError(f"--cluster must be one of {names}")
        if not 1 <= options["limit"] <= 500:
            raise CommandError("--limit must be between 1 and 500")
        try:
            wanted = TimelineFilter(
                topic=options["topic"],
                kinds=tuple(parse_kinds(options["kind"])),
                group=options["group"],
                since_ms=parse_time(options["since"], "since"),
                until_ms=parse_time(options["until"], "until"),
            )
            events, next_before = timeline_events(
                cluster, wanted, limit=options["limit"], before=options["before"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            out = {"cluster": cluster, "events": events, "next_before": next_before}
            self.stdout.write(json.dumps(out, default=str))
            return
        for e in events:
            where = "/".join(str(x) for x in (e.get("topic"), e.get("group")) if x) or "cluster"
            self.stdout.write(
                f"{iso_from_ms(int(e['at_ms']))}  {e.get('severity', ''):8}  "
                f"{e.get('kind', ''):10}  {where}: {e.get('text', '')}"
            )
        if not events:
            self.stdout.write("no events")
        if next_before:
            self.stdout.write(f"more: --before {next_before}")
