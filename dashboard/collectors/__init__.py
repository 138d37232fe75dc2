"""Collectors: one pass over a cluster, open -> read -> derive -> write.

- :mod:`.passes`: :func:`~.passes.collect_cluster`, the pass the Celery task and
  ``manage.py collect`` call, and the alert events it reports.
- :mod:`.read`: its read end on the MQ Redis (snapshot, checkpoints, probes, the
  retention rules' backlogs, the rotating memory probe).
- :mod:`.derive`: its derive stage (pure): the stored snapshot and state, health, alerts.
- :mod:`.series`: the time-series points of a pass.
- :mod:`.incidents`: incident events and lease ownership changes between two passes.
- :mod:`.retention_risk`: retention risks (pipeline groups' marks are derive's).
- :mod:`.notify`: delivery of alert opens/closes to the webhook (the worker's log of the
  passes is the task's: :mod:`dashboard.tasks.collect`).
"""
