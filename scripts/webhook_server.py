"""The local HTTP server that receives the console's alert webhooks where a run watches them:
the demo's soak run (:mod:`scripts.demo_soak`) and the incident drills' harness. Each JSON
body POSTed to it goes to a callback; a body that is not JSON is answered and dropped."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["WebhookServer"]


class WebhookServer:
    """Listens on a free port of 127.0.0.1 (``url`` ends in ``path``) until :meth:`close`;
    each POSTed JSON event is handed to ``on_event`` (from the server's threads), then
    answered 204."""

    def __init__(self, on_event: Callable[[Any], None], *, path: str = "/hook") -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    event = json.loads(self.rfile.read(length))
                except ValueError:
                    pass
                else:
                    on_event(event)  # before the answer: the sender sees it recorded
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
