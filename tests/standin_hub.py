"""A stand-in for the Hugging Face hub on 127.0.0.1 (for HF_ENDPOINT), counting what it is asked:

* `found`: every HEAD/GET of `<repo>/resolve/<rev>/config.json` answers 200 with the headers
  huggingface_hub reads (ETag, X-Repo-Commit, Content-Length), for repositories in `have`, else
  404 with `X-Error-Code: RepoNotFound` (the hub's answer for a repository it does not have);
* `hang`: a socket that accepts connections (the kernel completes the handshake) and never answers;
* `refuse`: a port nothing listens on (connection refused).

`requests` lists the paths asked (found), `connections` counts the connections made (hang)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StandInHub:
    def __init__(self, mode: str = "found", have: tuple[str, ...] = ()) -> None:
        self.mode, self.have = mode, set(have)
        self.requests: list[str] = []
        self.connections = 0
        self._server: ThreadingHTTPServer | None = None
        self._sock: socket.socket | None = None
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> StandInHub:
        if self.mode == "found":
            hub = self

            class Handler(BaseHTTPRequestHandler):
                def do_HEAD(self) -> None:
                    hub.requests.append(self.path)
                    repo = self.path.lstrip("/").split("/resolve/")[0]
                    if repo in hub.have and self.path.endswith("/config.json"):
                        self.send_response(200)
                        self.send_header("ETag", '"0123456789abcdef"')
                        self.send_header("X-Repo-Commit", "0" * 40)
                        self.send_header("Content-Length", "2")
                    else:
                        self.send_response(404)
                        self.send_header("X-Error-Code", "RepoNotFound")
                        self.send_header("Content-Length", "0")
                    self.end_headers()

                do_GET = do_HEAD

                def log_message(self, *args: object) -> None:
                    pass

            self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self.port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
        elif self.mode == "hang":
            self._sock = socket.socket()
            self._sock.bind(("127.0.0.1", 0))
            self._sock.listen(16)
            self._sock.settimeout(0.1)
            self.port = self._sock.getsockname()[1]
            held: list[socket.socket] = []

            def accept() -> None:
                while not self._stop.is_set():
                    try:
                        conn, _ = self._sock.accept()  # type: ignore[union-attr]
                    except (TimeoutError, OSError):
                        continue
                    self.connections += 1
                    held.append(conn)  # held open, never answered
                for c in held:
                    c.close()

            threading.Thread(target=accept, daemon=True).start()
        else:  # refuse: a port taken and released, nothing listens there
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
            s.close()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._sock is not None:
            self._sock.close()
