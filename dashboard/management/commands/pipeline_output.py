"""``manage.py pipeline_output NAME --sink redis|2pc|sql [--json]``: the pipeline's totals."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import pipelines
from dashboard.clusters import UnknownClusterError, cluster_config
from dashboard.selectors.pipelines import pipeline_output_get


class Command(BaseCommand):
    help = "Print a pipeline's output as {key: total}."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--sink", choices=pipelines.SINKS, default="redis")
        parser.add_argument("--cluster", default="default")
        parser.add_argument("--database-url", default="")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pipelines.get(options["name"])
            cluster_config(options["cluster"])
        except (LookupError, UnknownClusterError) as exc:
            raise CommandError(str(exc)) from None
        totals = pipeline_output_get(
            cluster=options["cluster"],
            name=options["name"],
            sink=options["sink"],
            database_url=options["database_url"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(totals, sort_keys=True))
            return
        for key, total in sorted(totals.items()):
            self.stdout.write(f"{key}\t{total}")
