"""gunicorn settings for the console's web process (read from the working directory).

Threads, not one request per process: an open console keeps its connection alive
between polls, and a sync worker would sit on each idle connection (measured with
``make loadtest``: 50 users gave a p95 of seconds with 3 sync workers, ~100 ms
with these threads). Pages wait on Redis and the database, so threads overlap well.
"""

import os

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_WORKERS", "3"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "16"))
keepalive = int(os.environ.get("WEB_KEEPALIVE_S", "10"))  # > a page's poll interval
accesslog = os.environ.get("WEB_ACCESS_LOG", "-") or None  # "": none
