"""HTML page -> one-page PDF in Chromium, as olmOCR's synthetic pipeline renders it, with the page
treated as untrusted input.

Rendering follows upstream's `render_pdf_with_playwright` (allenai/olmocr @ f7cfe4c): the page is
loaded at its viewport with KaTeX's stylesheet, script and auto-render added (math between \\( \\)
and \\[ \\], errors shown in place); a page with text cut off (clipped horizontally to half or less
by an overflow:hidden box, or covered by an opaque element: cutoff.js) is dropped, since a `present`
test of text the PDF does not show would be a silently wrong reward; then it is printed at scale
1.0, 0.9, ..., 0.5 (viewport shrunk alike) until the PDF has one page (counted by pypdf), else it
is dropped. Playwright drives the system's Chromium (Debian's `chromium`; `executable_path`, no
browser download), one browser for the whole run, a fresh context per load as upstream's
`browser.new_page`.

Upstream also drops every page whose math names a function or has a 3-digit number (`\\sin x`, `x = 100`): KaTeX writes each
formula twice, as the glyphs shown and as a MathML copy for screen readers inside `.katex-mathml`,
a 1 px box clipped on purpose, and the copy's `<mi>sin</mi>` or `<mn>100</mn>` (3 characters, clipped
to a few % of its width) counts as text cut off. `katex_mathml_ok` (`synth --keep-katex-math`, off by default, so the
default output stays upstream's) leaves that copy out of the judgement, and a page is then dropped
only for text a reader would miss. A departure from upstream, documented in docs/preparing.md.

Untrusted HTML, and what bounds it:
* no network: every request goes through a route that serves only files of the page's own folder
  (under the made-up origin http://synth.invalid/, resolved paths checked to stay inside the folder)
  and aborts anything else; WebSockets are never connected to a server; service workers are
  blocked; and Chromium itself resolves no host name and sends everything through a proxy that does
  not exist. The route alone is not enough: Chromium preconnects (opens an empty TCP connection)
  to the hosts a page names before the route sees the request; the proxy setting stops that
  (tests/test_synth.py listens on loopback and counts connections). file:// URLs are refused by
  Chromium from an http page.
* time: the whole page (all loads and prints) within `timeout_s`; memory: Chromium's renderer
  processes within `memory_mb` (proportional set size, polled every 0.1 s). Past either, a watchdog
  thread kills the browser (SIGKILL), the page is dropped with that reason and a new browser is
  started for the next page.
* Chromium runs without its sandbox (`--no-sandbox`) when the command runs as root, where the
  sandbox cannot start; the bounds above do not depend on it.
* every process dies with the command: Playwright's driver exits when the command's end of its pipe
  closes (kill -9 included) and takes the browser with it (tests/test_synth.py kills it to check).
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from olmocr_rl.errors import UserError

ORIGIN = "http://synth.invalid/"  # .invalid never resolves (RFC 2606)
SCALES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)
LONGEST_SIDE = 1024  # px: upstream renders the original page at this size and uses it as the viewport
MAX_ASSET_BYTES = 64 << 20
_CUTOFF_SOURCE = (Path(__file__).parent / "cutoff.js").read_text(encoding="utf-8")
CUTOFF_JS = _CUTOFF_SOURCE[_CUTOFF_SOURCE.index("(threshold) =>") :]  # the function, without the file's opening comment
KATEX_RENDER = (
    "renderMathInElement(document.body, {delimiters: ["
    "{left: '\\\\(', right: '\\\\)', display: false}, {left: '\\\\[', right: '\\\\]', display: true}], throwOnError: false});"
)
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-crash-reporter",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--dns-prefetch-disable",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://proxy.invalid:9",
    "--proxy-bypass-list=<-loopback>",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]


class RenderError(UserError, RuntimeError):
    """Chromium or Playwright is missing, or KaTeX's files are."""


@dataclass(frozen=True)
class Layout:
    """Where a page is laid out: the viewport at scale 1 (px) and the PDF page options."""

    width: int
    height: int
    pdf: dict = field(default_factory=dict)


@dataclass
class Rendered:
    ok: bool
    reason: str = ""
    scale: float | None = None
    cutoff: bool = False
    flagged: list[dict] = field(default_factory=list)  # the cutoff script's elements, clipped then occluded


def letter_layout_from_png(width: int, height: int) -> Layout:
    """Upstream's choice for a page whose original was rendered at `width` x `height` px: that
    viewport, and a Letter or A4 sheet when the aspect ratio is close to one (else Chromium's
    default, Letter)."""
    aspect = width / height
    pdf: dict = {}
    for low, high, w, h in ((0.73, 0.81, "8.5in", "11in"), (1.23, 1.35, "11in", "8.5in"), (0.67, 0.73, "210mm", "297mm"),
                            (1.36, 1.47, "297mm", "210mm")):  # fmt: skip
        if low <= aspect <= high:
            pdf = {"width": w, "height": h}
            break
    return Layout(width, height, pdf)


def css_layout(width_pt: float, height_pt: float) -> Layout:
    """A page whose size its CSS gives (`@page { size }`), else US Letter: the viewport is that
    sheet at LONGEST_SIDE px, and Chromium keeps the CSS size when printing."""
    if height_pt >= width_pt:
        viewport = (round(LONGEST_SIDE * width_pt / height_pt), LONGEST_SIDE)
    else:
        viewport = (LONGEST_SIDE, round(LONGEST_SIDE * height_pt / width_pt))
    return Layout(*viewport, {"width": "8.5in", "height": "11in", "prefer_css_page_size": True})


def significant_cutoff(flagged: list[dict], *, katex_mathml_ok: bool = False) -> dict | None:
    """Upstream's `has_significant_cutoff`: the first flagged element of 3+ characters that is
    clipped to half its width or less, or occluded; None when there is none. `katex_mathml_ok`
    (synth --keep-katex-math, not upstream's): KaTeX's screen-reader MathML copy is not text cut off."""
    for element in flagged:
        if len(element["text"].strip()) < 3 or (katex_mathml_ok and element.get("katex_mathml")):
            continue
        if element.get("occluded") or element["hvis"] <= 0.5:
            return element
    return None


def ready() -> str:
    """Chromium's path, once Playwright imports and Chromium is installed; RenderError naming what
    is missing (before a command writes anything)."""
    try:
        import playwright.sync_api  # noqa: F401 - only whether it imports
    except ImportError:
        raise RenderError("synth needs Playwright and its other dependencies: pip install 'olmocr-rl[synth]'") from None
    return find_chromium()


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise RenderError("synth renders with Chromium, which is not installed: `apt-get install chromium` (or `make browser`)")


class _Watchdog(threading.Thread):
    """Kills the browser when the page in hand passes its time or memory bound."""

    def __init__(self, renderer: Renderer) -> None:
        super().__init__(daemon=True, name="olmocr-rl synth watchdog")
        self.renderer = renderer
        self.deadline: float | None = None
        self.reason = ""
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            if self.deadline is None or self.reason:
                continue
            if time.monotonic() > self.deadline:
                self.reason = f"took longer than {self.renderer.timeout_s:g} s to render"
            elif (used := self.renderer.renderer_memory_mb()) > self.renderer.memory_mb:
                self.reason = f"used more than {self.renderer.memory_mb} MB in Chromium's renderer ({used:.0f} MB)"
            if self.reason:
                self.renderer.kill_browser()


class Renderer:
    """One Chromium for many pages (a context manager); `render` one page at a time."""

    def __init__(self, katex: tuple[Path, Path, Path], *, timeout_s: float = 120.0, memory_mb: int = 1024,
                 katex_mathml_ok: bool = False) -> None:  # fmt: skip
        self.katex = katex  # katex.min.css, katex.min.js, auto-render.min.js
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.katex_mathml_ok = katex_mathml_ok  # see significant_cutoff
        self.browser: Any = None
        self.driver_pid: int | None = None
        self._kinds: dict[int, bool] = {}
        self.watchdog = _Watchdog(self)

    def __enter__(self) -> Renderer:
        from playwright.sync_api import sync_playwright

        self.executable = ready()
        before = set(_children())
        self._playwright = sync_playwright().start()
        self.driver_pid = next((p for p in _children() if p not in before), None)
        try:
            self._launch()
        except BaseException:
            self._playwright.stop()
            raise
        self.watchdog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.watchdog.stopped.set()
        from playwright.sync_api import Error

        try:
            self.browser.close()
        except Error:
            pass
        self._playwright.stop()

    def _launch(self) -> None:
        from playwright.sync_api import Error

        args = CHROMIUM_ARGS + (["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])
        try:
            self.browser = self._playwright.chromium.launch(executable_path=self.executable, args=args, timeout=60_000)
        except Error as e:
            raise RenderError(f"Chromium ({self.executable}) did not start: {str(e).strip().splitlines()[0]}") from None

    def kill_browser(self) -> None:
        """SIGKILL to every process below Playwright's driver (the browser and its children)."""
        from olmocr_rl.procs import descendants

        if self.driver_pid is None:
            return
        for pid in descendants(self.driver_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def renderer_memory_mb(self) -> float:
        """Proportional set size of Chromium's renderer processes, MB."""
        from olmocr_rl.procs import descendants

        total = 0
        for pid in descendants(self.driver_pid) if self.driver_pid else []:
            if pid not in self._kinds:
                try:
                    self._kinds[pid] = b"--type=renderer" in Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
            if self._kinds[pid]:
                total += _pss_kb(pid)
        return total / 1024

    def render(self, html: str, folder: Path, layout: Layout | None) -> tuple[Rendered, bytes | None, Layout | None]:
        """Renders `html` (its files served from `folder`): the outcome, the one-page PDF and the
        layout used (`layout` None: the page's CSS size, else Letter)."""
        from playwright.sync_api import Error

        self.watchdog.reason = ""
        self.watchdog.deadline = time.monotonic() + self.timeout_s
        try:
            if layout is None:
                layout = css_layout(*self._css_page_size(html, folder))
            outcome, pdf = self._render(html, folder, layout)
            return outcome, pdf, layout
        except Error as e:
            reason = self.watchdog.reason or f"Chromium failed: {(str(e).strip().splitlines() or ['?'])[0]}"
            self._restart()
            return Rendered(False, reason), None, layout
        finally:
            self.watchdog.deadline = None

    def _restart(self) -> None:
        from playwright.sync_api import Error

        self.kill_browser()
        try:
            self.browser.close()
        except Error:
            pass
        self._kinds.clear()
        self._launch()

    def _open(self, html: str, folder: Path, width: int, height: int) -> tuple[Any, Any]:
        """A fresh context and page at this viewport with the page loaded and KaTeX run."""
        context = self.browser.new_context(viewport={"width": width, "height": height}, service_workers="block", accept_downloads=False)
        remaining = max(1.0, (self.watchdog.deadline or time.monotonic()) - time.monotonic())
        context.set_default_timeout(remaining * 1000)
        context.route("**/*", lambda route: _serve(route, folder))
        context.route_web_socket("**/*", lambda ws: None)  # a WebSocket never connected to a server: mocked, it reaches nothing
        page = context.new_page()
        page.goto(ORIGIN)
        page.set_content(html, wait_until="load")
        css, js, auto_render = self.katex
        page.add_style_tag(path=css)
        page.add_script_tag(path=js)
        page.add_script_tag(path=auto_render)
        page.evaluate(KATEX_RENDER)
        return context, page

    def _css_page_size(self, html: str, folder: Path) -> tuple[float, float]:
        """The page's sheet in points as Chromium prints it: its CSS `@page { size }`, else Letter."""
        import io

        import pypdf

        context, page = self._open(html, folder, 816, 1056)
        try:
            data = page.pdf(width="8.5in", height="11in", prefer_css_page_size=True)
        finally:
            context.close()
        box = pypdf.PdfReader(io.BytesIO(data)).pages[0].mediabox
        return float(box.width), float(box.height)

    def _render(self, html: str, folder: Path, layout: Layout) -> tuple[Rendered, bytes | None]:
        import io

        import pypdf

        context, page = self._open(html, folder, layout.width, layout.height)
        try:
            found = page.evaluate(CUTOFF_JS, 0.9)
        finally:
            context.close()
        flagged = [{"tag": e["tag"], "text": e["text"], "occluded": False, "hvis": e["horizontalVisibleRatio"], **_katex(e)}
                   for e in found["clipped"]]  # fmt: skip
        flagged += [{"tag": e["tag"], "text": e["text"], "occluded": True, "hvis": 1.0, **_katex(e)} for e in found["occluded"]]
        worst = significant_cutoff(flagged, katex_mathml_ok=self.katex_mathml_ok)
        if worst is not None:
            how = "covered by another element" if worst["occluded"] else f"clipped to {worst['hvis']:.0%} of its width"
            return Rendered(
                False, f"text cut off: <{worst['tag'].lower()}> {worst['text'][:60]!r} is {how}", cutoff=True, flagged=flagged
            ), None
        for scale in SCALES:
            context, page = self._open(html, folder, int(layout.width * scale), int(layout.height * scale))
            try:
                data = page.pdf(print_background=True, scale=scale, **layout.pdf)
            finally:
                context.close()
            if len(pypdf.PdfReader(io.BytesIO(data)).pages) == 1:
                return Rendered(True, scale=scale, flagged=flagged), data
        return Rendered(False, "more than one page even at scale 0.5", flagged=flagged), None


def _katex(element: dict) -> dict:
    """{"katex_mathml": True} for an element of KaTeX's MathML copy (cutoff.js), else nothing."""
    return {"katex_mathml": True} if element.get("katexMathml") else {}


def _serve(route: Any, folder: Path) -> None:
    """The page's own files under ORIGIN; anything else is aborted."""
    url = route.request.url
    if not url.startswith(ORIGIN):
        route.abort("blockedbyclient")
        return
    path = unquote(urlsplit(url).path).lstrip("/")
    if not path:
        route.fulfill(status=200, content_type="text/html", body="<!DOCTYPE html><html><head></head><body></body></html>")
        return
    from olmocr_rl.paths import inside

    target = inside(folder, path)  # links and .. resolved; None when it leads out of the folder
    try:
        ok = target is not None and target.is_file() and target.stat().st_size <= MAX_ASSET_BYTES
        body = target.read_bytes() if ok and target is not None else b""
    except OSError:
        ok, body = False, b""
    if not ok or target is None:
        route.fulfill(status=404, body="")
        return
    route.fulfill(status=200, body=body, content_type=mimetypes.guess_type(target.name)[0] or "application/octet-stream")


def _children() -> list[int]:
    from olmocr_rl.procs import _parents

    me = os.getpid()
    return [pid for pid, parent in _parents().items() if parent == me]


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0
