"""Opens a local HTML file in headless Chromium (Debian's `chromium`) over the DevTools protocol
for the report tests: records every network request the page makes, evaluates JavaScript in it,
and takes a screenshot."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


class Page:
    """One headless browser with one page; a context manager."""

    def __init__(self, url: str, *, width: int = 1200, height: int = 1600, timeout: float = 60.0):
        import websocket

        exe = chromium()
        if exe is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium; `make test` does it)")
        self.profile = tempfile.mkdtemp(prefix="olmocr-rl-chromium-")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        import urllib.request

        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []
        self.timeout = timeout
        self.call("Network.enable")
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def call(self, method: str, **params: Any) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for e in self.events:
                if e.get("method") == method:
                    return e
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError(method)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and browser log errors (a content security
        policy violation, a file that did not load) seen so far."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = params["exceptionDetails"]
                out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(params["entry"].get("text", ""))
        return out

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        """Polls `expression` until it is truthy; returns its value (TimeoutError otherwise)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(expression)
            time.sleep(0.02)

    def set_width(self, width: int, height: int = 1200) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def screenshot(self, path: str | os.PathLike[str]) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
