"""``manage.py collect --once [--cluster NAME]``: one collector pass in the foreground.

Prints what it gathered; the last line is ``collected <cluster> in <N> ms``.
Without ``--once`` it keeps collecting every COLLECT_INTERVAL_S until Ctrl-C.
The pass stores its sample only if it wins the (cluster, slot) claim, so running
it next to beat never duplicates a sample (each pass claims its time slot).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.clusters import cluster_names
from dashboard.collectors.notify import alert_notify
from dashboard.collectors.passes import PassResult, collect_cluster


class Command(BaseCommand):
    help = "Run collector passes in the foreground (one with --once) and print what was gathered."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one pass, then exit")
        parser.add_argument("--cluster", default=None, help="only this cluster (default: all)")

    def handle(self, *args: Any, **options: Any) -> None:
        names = cluster_names()
        if options["cluster"]:
            if options["cluster"] not in names:
                raise CommandError(f"unknown cluster {options['cluster']!r}; known: {names}")
            names = [options["cluster"]]
        verbose = int(options.get("verbosity", 1)) >= 2
        failed = False
        while True:
            for name in names:
                result = collect_cluster(name, gather_when_claimed=True)
                for event in result.events:
                    alert_notify(event)
                self._report(result, verbose)
                failed = failed or result.error is not None
            if options["once"]:
                break
            time.sleep(max(1, int(settings.COLLECT_INTERVAL_S)))
        if failed:
            raise CommandError("at least one cluster failed (see above)")

    def _report(self, result: PassResult, verbose: bool) -> None:
        out = self.stdout.write
        if result.error:
            out(f"cluster {result.cluster}: FAILED: {result.error}")
        elif not result.stored:
            out(f"cluster {result.cluster}: not stored: {result.skipped_reason}")
        snap = result.snapshot
        if snap is not None:
            topics = snap.topics
            groups = sum(len(t.groups) for t in topics)
            parts = sum(t.partitions for t in topics)
            out(
                f"cluster {result.cluster}: {len(topics)} topics, {parts} partitions, "
                f"{groups} groups, {len(snap.pipelines)} pipelines, "
                f"{snap.commands} commands" + ("; stored" if result.stored else "")
            )
            counts: dict[str, int] = {}
            for topic in topics:
                counts[topic.status.value] = counts.get(topic.status.value, 0) + 1
            out("topic status: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
            shown = topics if verbose else [t for t in topics if t.status != "OK"][:20]
            for topic in shown:
                out(
                    f"  {topic.topic}: {topic.status.value} lag={topic.lag} "
                    f"lag_ms={topic.lag_ms} pending={topic.pending} "
                    f"dlq={topic.dlq_length} - {topic.status_reason}"
                )
            for event in result.events:
                alert = event["alert"]
                out(f"  alert {event['event']}: {alert['rule']} {alert['entity']}")
        out(f"collected {result.cluster} in {round(result.elapsed_ms)} ms")
