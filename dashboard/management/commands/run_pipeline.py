"""``manage.py run_pipeline NAME --sink redis|2pc|sql [--available-now] [--master URL]``.

Runs a pipeline from ``pipelines/`` on Spark (``local[*]`` by default) against
one configured MQ deployment; ``--available-now`` drains what is there and exits.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import pipelines
from dashboard.clusters import UnknownClusterError, cluster_config


class Command(BaseCommand):
    help = "Run a stream pipeline with an exactly-once sink (Spark Structured Streaming)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help=f"pipeline: {', '.join(pipelines.names())}")
        parser.add_argument("--sink", choices=pipelines.SINKS, default="redis")
        parser.add_argument("--available-now", action="store_true", help="drain and exit")
        parser.add_argument("--master", default="local[*]", help="Spark master URL")
        parser.add_argument("--cluster", default="default", help="MQ deployment name")
        parser.add_argument(
            "--max-records",
            type=int,
            default=None,
            help="entries per micro-batch at most (default: adaptive, up to 500,000)",
        )
        parser.add_argument("--database-url", default="", help="SQL sink database URL")
        parser.add_argument("--trigger-ms", type=int, default=500)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pipelines.get(options["name"])
            config = cluster_config(options["cluster"])
        except (LookupError, UnknownClusterError) as exc:
            raise CommandError(str(exc)) from None
        if options["max_records"] is not None and options["max_records"] <= 0:
            raise CommandError("--max-records must be positive")
        opts = pipelines.RunOptions(
            name=options["name"],
            sink=options["sink"],
            config=config,
            master=options["master"],
            available_now=options["available_now"],
            max_records=options["max_records"],
            database_url=options["database_url"],
            trigger_ms=options["trigger_ms"],
        )
        try:
            pipelines.run(opts)
        except pipelines.CheckpointDirError as exc:
            raise CommandError(str(exc)) from None
