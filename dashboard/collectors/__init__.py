"""Collectors: what one pass over a cluster gathers, derives and stores.

- :mod:`.sources`: the collector classes, one ``fetch()`` each (admin snapshot,
  pipeline checkpoints).
- :mod:`.passes`: :func:`~.passes.collect_cluster`, the pass over one cluster that
  the Celery task and ``manage.py collect`` call.
- :mod:`.leases`: lease ownership changes between two passes (the lease timeline).
- :mod:`.series`: the time-series points of a pass and their roll-up tiers.
- :mod:`.thresholds`: status and alert thresholds from the settings.
- :mod:`.notify`: alert opens/closes of a pass, and their webhook delivery.
- :mod:`.memory`: per-topic memory, a rotating share of the topics sampled once a minute.
"""
