"""A stand-in for the Hugging Face hub's HTTP API, on 127.0.0.1, serving model repos from local
folders, with a log of every request: what `HF_ENDPOINT=http://127.0.0.1:PORT` clients
(huggingface_hub 1.33 to 2.4: `model_info`, `hf_hub_download`, `get_safetensors_metadata`) ask of
the hub, answered as the hub answers (read from huggingface_hub's side: file_download.py
`get_hf_file_metadata`, utils/_http.py `hf_raise_for_status`, hf_api.py):

    GET  /api/models/{repo}[/revision/{rev}]   {"id", "sha", "siblings": [{"rfilename", "size", ...}]}
    GET  /api/models/{repo}/tree/{rev}          [{"type": "file", "path", "size", "oid"}] (`hf download`)
    HEAD /{repo}/resolve/{rev}/{file}           X-Repo-Commit, ETag (LFS files: X-Linked-Etag,
                                                X-Linked-Size), Content-Length
    GET  /{repo}/resolve/{rev}/{file}           the file, or the bytes of a `Range: bytes=A-B` (206)

A file the repo lacks: 404 with `X-Error-Code: EntryNotFound`; a repo it does not serve: 404 with
`X-Error-Code: RepoNotFound`; a repo served with a token: 401 (RepoNotFound) without
`Authorization: Bearer TOKEN`; a gated repo (`gated=`): 403 with `X-Error-Code: GatedRepo`. The
model's siblings carry their size only when `?blobs=true` asks for them, as the hub's API does.
Safetensors files are LFS files (they may be sparse: only what is asked is read).

    with StandinHub({"allenai/m": folder}, token="hf_x") as hub:   # hub.url, hub.log, hub.requests

and a hub that does not answer (`DeadHub`): "hang", a socket that accepts connections (the kernel
completes the handshake) and never answers (`connections` counts them); "refuse", a port nothing
listens on (connection refused).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

SHA = "1f" * 20


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    auth: str | None
    sent: int  # body bytes sent


class StandinHub:
    def __init__(self, repos: dict[str, Path], token: str | None = None, gated: tuple[str, ...] = ()):
        self.repos = {k: Path(v) for k, v in repos.items()}
        self.token = token
        self.gated = set(gated)  # repos whose terms the token has not accepted: 403 GatedRepo
        self.log: list[Request] = []
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                hub._answer(self, head=True)

            def do_GET(self):
                hub._answer(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandinHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def requests(self) -> list[str]:
        """The paths asked, in order."""
        with self._lock:
            return [r.path for r in self.log]

    # -----------------------------------------------------------------------------------------

    def _record(self, h, sent: int) -> None:
        with self._lock:
            self.log.append(
                Request(h.command, unquote(urlparse(h.path).path), h.headers.get("Range"), h.headers.get("Authorization"), sent)
            )

    def _send(self, h, status: int, headers: dict[str, str], body: bytes = b"", *, head: bool = False) -> None:
        self._record(h, 0 if head else len(body))  # before the answer: the client may look at `requests` once it has it
        h.send_response(status)
        for k, v in ({"Content-Length": str(len(body))} | headers if head else headers | {"Content-Length": str(len(body))}).items():
            h.send_header(k, v)
        h.end_headers()
        if not head and body:
            h.wfile.write(body)

    def _error(self, h, status: int, code: str, head: bool) -> None:
        self._send(h, status, {"X-Error-Code": code, "X-Error-Message": code, "Content-Type": "application/json"},
                   b"" if head else json.dumps({"error": code}).encode(), head=head)  # fmt: skip

    def _repo(self, path: str) -> tuple[str, str] | None:
        for repo in self.repos:
            if path == repo or path.startswith(repo + "/"):
                return repo, path[len(repo) :]
        return None

    def _answer(self, h, *, head: bool) -> None:
        path = unquote(urlparse(h.path).path).lstrip("/")
        api = path.startswith("api/models/")
        found = self._repo(path.removeprefix("api/models/") if api else path)
        if found is None:
            return self._error(h, 404, "RepoNotFound", head)
        repo, rest = found
        if self.token is not None and h.headers.get("Authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "RepoNotFound", head)
        if repo in self.gated:
            return self._error(h, 403, "GatedRepo", head)
        folder = self.repos[repo]
        if api and re.fullmatch(rf"/tree/({SHA}|main)", rest.split("?")[0]):  # `hf download`'s listing (snapshot_download)
            tree = [
                {"type": "file", "path": p.name, "size": p.stat().st_size, "oid": _etag(p)} for p in sorted(folder.iterdir()) if p.is_file()
            ]
            return self._send(h, 200, {"Content-Type": "application/json"}, json.dumps(tree).encode(), head=head)
        if api:
            if rest not in ("", f"/revision/{SHA}", "/revision/main"):
                return self._error(h, 404, "RevisionNotFound", head)
            # The hub lists files' sizes and ids only when asked (`?blobs=true`: model_info(files_metadata=True)).
            blobs = "blobs=true" in urlparse(h.path).query.lower()
            siblings = [
                {"rfilename": p.name} | ({"size": p.stat().st_size, "blobId": _etag(p)} if blobs else {})
                for p in sorted(folder.iterdir())
                if p.is_file()
            ]
            body = json.dumps({"id": repo, "modelId": repo, "sha": SHA, "siblings": siblings, "private": False}).encode()
            return self._send(h, 200, {"Content-Type": "application/json"}, body, head=head)
        m = re.fullmatch(r"/resolve/([^/]+)/(.+)", rest)
        if m is None or m.group(1) not in (SHA, "main"):
            return self._error(h, 404, "RevisionNotFound" if m else "EntryNotFound", head)
        file = folder / m.group(2)
        if not file.is_file() or ".." in m.group(2):
            return self._error(h, 404, "EntryNotFound", head)
        size = file.stat().st_size
        headers = {"X-Repo-Commit": SHA, "ETag": f'"{_etag(file)}"', "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if file.suffix == ".safetensors":
            headers |= {"X-Linked-Etag": f'"{_etag(file)}"', "X-Linked-Size": str(size)}
        if head:
            return self._send(h, 200, {**headers, "Content-Length": str(size)}, head=True)
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", h.headers.get("Range") or "")
        with open(file, "rb") as f:
            if wanted is None:
                return self._send(h, 200, headers, f.read())
            start = int(wanted.group(1))
            end = min(size - 1, int(wanted.group(2)) if wanted.group(2) else size - 1)
            f.seek(start)
            body = f.read(max(0, end - start + 1))
        return self._send(h, 206, {**headers, "Content-Range": f"bytes {start}-{end}/{size}"}, body)


class DeadHub:
    """A hub that does not answer: "hang" (connections accepted, never answered) or "refuse"
    (nothing listens on the port)."""

    def __init__(self, mode: str) -> None:
        if mode not in ("hang", "refuse"):
            raise ValueError(mode)
        self.mode = mode
        self.connections = 0
        self._sock: socket.socket | None = None
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> DeadHub:
        if self.mode == "hang":
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
        else:  # a port taken and released: nothing listens there
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
            s.close()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()


def online(monkeypatch) -> None:
    """This process may ask a stand-in hub (tests/conftest.py sets HF_HUB_OFFLINE=1 for every test,
    and huggingface_hub read it at import)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def model_folder(root: Path, name: str) -> Path:
    """A folder a StandinHub can serve as a model repo: a config.json alone (what a check of the
    model's existence reads)."""
    folder = root / name.replace("/", "--")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "qwen2_5_vl"}\n')
    return folder


def _etag(path: Path) -> str:
    """A stable stand-in for the file's hash (its name and size: the files are sparse, not hashed)."""
    return hashlib.sha256(f"{path.name}:{path.stat().st_size}".encode()).hexdigest()
