"""`olmocr-rl synth` (issue 38): olmOCR's synthetic tests and markdown equal the reference's on our
HTML pages (golden files of allenai/olmocr @ f7cfe4c's own functions: tests/golden/gen_synth_cases.py),
its render and cutoff detection agree with upstream's, hostile pages are bounded, a killed run leaves
no process and resumes, the --from-pdf step works against a stand-in OpenAI-compatible server, and
the output goes through validate -> prepare -> train -> bench.

Chromium runs in one session per test that needs it (a few pages each)."""

from __future__ import annotations

import base64
import json
import random
import shutil
import signal
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from browser import chromium
from clirun import invoke
from conftest import GOLDEN, STRICT, need

HERE = Path(__file__).resolve().parent
PAGES = HERE / "fixtures" / "synth" / "html"
CASES = [json.loads(line) for line in (GOLDEN / "synth_cases.jsonl").read_text(encoding="utf-8").splitlines()]
CLI = [sys.executable, "-c", "import sys; from olmocr_rl.cli import main; sys.exit(main())"]


def need_synth() -> None:
    for module in ("bs4", "markdownify", "syntok", "wordfreq", "playwright"):
        need(module)


def need_chromium() -> None:
    need_synth()
    if chromium() is None:
        if STRICT:
            raise RuntimeError("chromium is missing: `make test` installs it (apt-get install chromium)")
        pytest.skip("no chromium here (make test installs it)")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# the reference's tests and markdown, exactly
# ---------------------------------------------------------------------------------------------


def test_markdown_and_tests_equal_the_references_on_every_page():
    need_synth()
    from olmocr_rl.synth.markdown import page_markdown
    from olmocr_rl.synth.page_tests import PageTestError, generate_page_tests

    assert len(CASES) >= 15 and sum(len(r.get("tests", [])) for c in CASES for r in c["runs"]) > 600
    wrong = []
    for case in CASES:
        html = (PAGES / case["page"]).read_text(encoding="utf-8")
        if page_markdown(html) != case["markdown"]:
            wrong.append(f"{case['page']}: markdown differs")
        for run in case["runs"]:
            try:
                got = [json.dumps(t, ensure_ascii=False) for t in generate_page_tests(html, case["pdf_id"], 1, random.Random(run["seed"]))]
            except PageTestError as e:
                got = [f"raises {e}"]
            want = [json.dumps(t, ensure_ascii=False) for t in run["tests"]] if "tests" in run else [run["raises"]]
            if got != want:
                first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                wrong.append(
                    f"{case['page']} seed {run['seed']}: test {first}: ours {got[first : first + 1]} reference {want[first : first + 1]}"
                )
    assert not wrong, "\n".join(wrong)


def test_the_golden_pages_cover_what_the_issue_names():
    """Tables with spans, math, headers/footers, multi-column, footnotes, non-Latin text; and every
    test type the generator writes."""
    kinds = {t["type"] for c in CASES for r in c["runs"] for t in r.get("tests", [])}
    assert kinds == {"absent", "table", "order", "present", "math", "format", "footnote", "baseline"}
    text = "".join((PAGES / c["page"]).read_text() for c in CASES)
    for needle in ('rowspan="2"', 'colspan="2"', "\\[", "<header>", "<footer>", "grid-template-columns", "<sup>1</sup>", "Отчёт",
                   "ναυτιλία", "航海"):  # fmt: skip
        assert needle in text, needle


# ---------------------------------------------------------------------------------------------
# rendering: the same verdicts as upstream's render_pdf_with_playwright
# ---------------------------------------------------------------------------------------------


def test_render_scale_and_cutoff_equal_the_references():
    need_chromium()
    from olmocr_rl.synth.assets import katex_files
    from olmocr_rl.synth.render import Renderer, letter_layout_from_png

    wrong = []
    with Renderer(katex_files()) as renderer:
        for case in CASES:
            want = case["render"]
            got, pdf, _ = renderer.render(
                (PAGES / case["page"]).read_text(encoding="utf-8"), PAGES, letter_layout_from_png(*want["viewport"])
            )
            flagged = [{**e, "hvis": round(e["hvis"], 3)} for e in got.flagged] if got.cutoff else []
            if (got.ok, got.scale, got.cutoff, flagged) != (want["success"], want["scale"], want["cutoff"], want["flagged"]):
                wrong.append(f"{case['page']}: ours {(got.ok, got.scale, got.cutoff, got.reason)}, reference {want}")
            assert (pdf is not None) == got.ok
    assert not wrong, "\n".join(wrong)
    assert {c["page"] for c in CASES if c["render"]["cutoff"]} == {"clipped.html", "occluded.html"}
    assert [c["render"]["scale"] for c in CASES if c["page"] in ("long.html", "too_long.html")] == [0.8, None]


# ---------------------------------------------------------------------------------------------
# untrusted HTML: no network, no files outside its folder, a time and memory bound per page
# ---------------------------------------------------------------------------------------------

OK_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"></head><body>
<h1>Harbour dues</h1><p>Vessels above 300 tonnes pay the winter rate from November onwards.</p>
<img src="logo.png" alt=""></body></html>"""


class Listener:
    """A TCP listener on loopback that records every connection (none may come)."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()


def hostile_site(root: Path, port: int) -> Path:
    site = root / "site"
    site.mkdir(parents=True)
    (root / "secret.txt").write_text("the secret outside the folder")
    (site / "link.png").symlink_to(root / "secret.txt")
    (site / "link.txt").symlink_to(root / "secret.txt")
    (site / "inside.txt").write_text("a text file of the folder itself")
    (site / "logo.png").write_bytes(
        base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    )
    (site / "ok.html").write_text(OK_PAGE)
    shutil.copy(PAGES / "a4_page.html", site / "a4.html")  # @page { size: A4 }
    (site / "net.html").write_text(f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="http://127.0.0.1:{port}/style.css"><link rel="dns-prefetch" href="//example.com"></head><body>
<h1>Reaching out</h1><p>This page tries every way out it can think of, and none of them works.</p>
<img src="http://127.0.0.1:{port}/pixel.png"><img src="http://localhost:{port}/pixel.png"><img src="file:///etc/hostname">
<img src="link.png"><img src="../secret.txt"><img src="%2e%2e/secret.txt"><img src="logo.png">
<iframe src="file:///etc/hostname"></iframe><iframe src="http://127.0.0.1:{port}/frame"></iframe>
<iframe src="link.txt"></iframe><iframe src="../secret.txt"></iframe><iframe src="inside.txt"></iframe>
<script>
fetch("http://127.0.0.1:{port}/fetch").catch(() => 0);
try {{ new WebSocket("ws://127.0.0.1:{port}/ws"); }} catch (e) {{}}
navigator.sendBeacon && navigator.sendBeacon("http://127.0.0.1:{port}/beacon", "x");
new Image().src = "http://[::1]:{port}/six.png";
</script></body></html>""")
    (site / "hang.html").write_text(
        "<!DOCTYPE html><html><body><p>Never finishes loading.</p><script>while (true) {}</script></body></html>"
    )
    (site / "memory.html").write_text("<!DOCTYPE html><html><body><p>Eats memory.</p><script>const a = []; "
                                      "while (true) { const b = new Float64Array(1 << 24); b.fill(1.5); a.push(b); }</script></body></html>")  # fmt: skip
    return site


def test_hostile_pages_reach_nothing_and_are_bounded(tmp_path, monkeypatch):
    need_chromium()
    from olmocr_rl.synth import render

    listener = Listener()
    site = hostile_site(tmp_path, listener.port)
    # HTML files that are links out of the folder (issue 42): to a sibling folder's page, to a system file.
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "page.html").write_text("<!DOCTYPE html><html><body><p>The sibling folder's private page.</p></body></html>")
    (site / "sibling.html").symlink_to(tmp_path / "sibling" / "page.html")
    (site / "system.html").symlink_to("/etc/passwd")
    answered: list[tuple[str, object]] = []
    real = render._serve

    class Recorded:  # the route, recording how _serve answers it
        def __init__(self, route):
            self.route, self.request = route, route.request

        def fulfill(self, **kw):
            answered.append((self.request.url, kw.get("status")))
            self.route.fulfill(**kw)

        def abort(self, reason):
            answered.append((self.request.url, "aborted"))
            self.route.abort(reason)

    def spy(route, folder):
        real(Recorded(route), folder)

    monkeypatch.setattr(render, "_serve", spy)
    out = tmp_path / "out"
    start = time.monotonic()
    # 20 s a page: the memory page must reach its memory bound, not the time bound, on a loaded machine
    res = invoke(["synth", site, out, "--name", "hostile", "--page-timeout", "20", "--page-memory", "300", "-q"])
    took = time.monotonic() - start
    listener.stop = True
    assert res.exit_code == 0, res.output
    assert listener.connections == 0, "a page reached the loopback listener"
    manifest = json.loads((out / "synth.json").read_text())
    reasons = {d["key"]: d["reason"] for d in manifest["dropped"]}
    assert reasons["hang_page1"].startswith("took longer than 20 s"), reasons
    assert reasons["memory_page1"].startswith("used more than 300 MB"), reasons
    assert sorted(o["key"] for o in manifest["kept"]) == ["a4_page1", "net_page1", "ok_page1"]  # the browser came back after each kill
    assert (out / "hostile.jsonl").is_file() and (out / "pdfs" / "hostile" / "net_page1.pdf").is_file()
    # The links out of the folder were named and never read: nothing of them in any file written.
    skipped = {Path(s["source"]).name: s["reason"] for s in manifest["skipped"]}
    assert skipped.keys() == {"sibling.html", "system.html"}, skipped
    assert skipped["system.html"].startswith("a link to /etc/passwd, outside ") and "not read" in skipped["system.html"]
    assert f"a link to {tmp_path / 'sibling' / 'page.html'}, outside" in skipped["sibling.html"]
    written = b"".join(f.read_bytes() for f in out.rglob("*") if f.is_file())
    assert b"root:" not in written and b"private page" not in written
    # Every request that is not for the made-up origin was aborted; of the folder only its own files were served.
    assert any(how == "aborted" for _, how in answered) and all(u.startswith(render.ORIGIN) for u, how in answered if how != "aborted")
    served = {u.removeprefix(render.ORIGIN): how for u, how in answered if u.startswith(render.ORIGIN)}
    assert served["logo.png"] == 200 and served["link.png"] == 404 and served.get("secret.txt", 404) == 404, served
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(out / "pdfs" / "hostile" / "net_page1.pdf"))
    pdf_text = doc[0].get_textpage().get_text_range()
    assert "a text file of the folder itself" in pdf_text and "secret" not in pdf_text, pdf_text
    # The page size is the HTML's CSS @page size, else US Letter.
    sizes = {k: pdfium.PdfDocument(str(out / "pdfs" / "hostile" / f"{k}_page1.pdf"))[0].get_size() for k in ("a4", "ok")}
    assert abs(sizes["a4"][0] - 595.3) < 1.5 and abs(sizes["a4"][1] - 841.9) < 1.5 and sizes["ok"] == (612.0, 792.0), sizes
    assert took < 120, took


def test_a_request_outside_the_folder_is_answered_404():
    need_synth()
    from olmocr_rl.synth import render

    class Route:
        def __init__(self, url):
            self.request = type("R", (), {"url": url})()
            self.answer = None

        def fulfill(self, status, body="", content_type=None):
            self.answer = (status, body)

        def abort(self, reason):
            self.answer = ("aborted", reason)

    folder = PAGES
    for url, want in [
        (render.ORIGIN + "math.html", 200),
        (render.ORIGIN + "../../../etc/hostname", 404),
        (render.ORIGIN + "%2e%2e/golden/synth_cases.jsonl", 404),
        (render.ORIGIN + "nothing.png", 404),
        ("http://127.0.0.1:9/x", "aborted"),
        ("https://example.com/", "aborted"),
    ]:
        route = Route(url)
        render._serve(route, folder)
        assert route.answer[0] == want, (url, route.answer)


# ---------------------------------------------------------------------------------------------
# killed, resumed
# ---------------------------------------------------------------------------------------------


def test_a_killed_synth_leaves_no_process_and_a_rerun_finishes(tmp_path):
    need_chromium()
    from test_command_safety import drive

    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(PAGES / "table_spans.html", site / "a_table.html")
    (site / "b_hang.html").write_text("<!DOCTYPE html><html><body><p>Never ends.</p><script>while (true) {}</script></body></html>")
    out = tmp_path / "out"
    when = str(out / ".synth" / "synthetic" / "a_table_page1.json")
    r = drive(when, signal.SIGKILL, [*CLI, "synth", str(site), str(out), "--page-timeout", "500", "-q"], tmp_path / "log")
    assert r["code"] == -signal.SIGKILL and r["descendants_seen"] >= 3, r
    assert r["left"] == [], f"processes outlived the killed synth: {r['left']}"
    assert not (out / "synth.json").exists()
    res = invoke(["synth", site, out, "--page-timeout", "5", "-q"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "synth.json").read_text())
    assert [o["key"] for o in manifest["kept"]] == ["a_table_page1"] and [d["key"] for d in manifest["dropped"]] == ["b_hang_page1"]
    assert "0 / 1" in res.output  # kept: synthesized now / reused: the table page was not rendered again


TRIG_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><h1>Trigonometry</h1>
<p>The identity \\(\\sin^2 x + \\cos^2 x = 1\\) holds for every real x, as the notes show.</p>
<p>Ordinary text continues here for a while, so that the page has a body of prose to test.</p></body></html>"""


def test_math_pages_empty_pages_counts_and_seeds(tmp_path):
    """Issue 42's small things, in one Chromium session a run: a page whose math names a function is
    dropped as upstream drops it (KaTeX's hidden MathML copy measures as cut off) and kept with
    --keep-katex-math, which redoes only that page; an empty page is kept with a warning; the
    counts row counts kept pages only (a dropped page is not "reused"); each page's seed is
    upstream's, the first 8 hex digits of its file's sha1, and --seed N adds N to it. Two Chromium
    runs of three pages, and a rerun that starts none."""
    import hashlib

    need_chromium()
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(PAGES / "table_spans.html", site / "table.html")
    (site / "trig.html").write_text(TRIG_PAGE)
    (site / "empty.html").write_text("")
    out = tmp_path / "out"
    res = invoke(["synth", site, out, "-q"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "synth.json").read_text())
    assert [o["key"] for o in manifest["kept"]] == ["empty_page1", "table_page1"], manifest["kept"]
    (trig,) = manifest["dropped"]
    assert trig["key"] == "trig_page1" and trig["reason"].startswith("text cut off: <mi> 'sin' is clipped"), trig
    assert "warning: empty_page1: the page has no text (its markdown is empty): kept with only 1 test(s) (baseline)" in res.output
    assert (manifest["pages_kept_now"], manifest["pages_kept_reused"]) == (2, 0) and "2 / 0" in res.output
    for key, name in (("table_page1", "table.html"), ("empty_page1", "empty.html")):
        record = json.loads((out / ".synth" / "synthetic" / f"{key}.json").read_text())
        assert record["settings"] == {"seed": int(hashlib.sha1((site / name).read_bytes()).hexdigest()[:8], 16), "keep_katex_math": False}
    before = jsonl(out / "synthetic.jsonl")

    # Again with both options: every page redone (its settings changed), the math page kept.
    res = invoke(["synth", site, out, "-q", "--keep-katex-math", "--seed", "7"], env={"COLUMNS": "200"})
    manifest = json.loads((out / "synth.json").read_text())
    assert [o["key"] for o in manifest["kept"]] == ["empty_page1", "table_page1", "trig_page1"] and not manifest["dropped"]
    assert "kept: synthesized now / reused" in res.output and " 3 / 0" in res.output, res.output
    assert [t for t in jsonl(out / "synthetic.jsonl") if t["pdf"] == "synthetic/trig_page1.pdf"]
    record = json.loads((out / ".synth" / "synthetic" / "table_page1.json").read_text())
    assert record["settings"] == {"seed": int(hashlib.sha1((site / "table.html").read_bytes()).hexdigest()[:8], 16) + 7,
                                  "keep_katex_math": True}  # fmt: skip
    table = [t for t in before if t["pdf"] == "synthetic/table_page1.pdf"]
    assert [t for t in jsonl(out / "synthetic.jsonl") if t["pdf"] == "synthetic/table_page1.pdf"] != table  # other draws
    res = invoke(["synth", site, out, "-q", "--keep-katex-math", "--seed", "7"], env={"COLUMNS": "200"})
    assert " 0 / 3" in res.output and "synthesizing" not in res.output, res.output


def test_keep_katex_math_forgives_only_katexs_mathml_copy():
    """--keep-katex-math leaves out KaTeX's hidden MathML copy and nothing else: a page with other
    text cut off is still dropped, for that text; without the option, upstream's rule."""
    from olmocr_rl.synth.render import significant_cutoff

    mathml = {"tag": "MI", "text": "sin", "occluded": False, "hvis": 0.04, "katex_mathml": True}
    clipped = {"tag": "P", "text": "a paragraph cut in half", "occluded": False, "hvis": 0.4}
    covered = {"tag": "SPAN", "text": "under a box", "occluded": True, "hvis": 1.0, "katex_mathml": False}
    assert significant_cutoff([mathml, clipped]) is mathml
    assert significant_cutoff([mathml, clipped], katex_mathml_ok=True) is clipped
    assert significant_cutoff([mathml, covered], katex_mathml_ok=True) is covered
    assert significant_cutoff([mathml], katex_mathml_ok=True) is None


def test_a_run_that_cannot_start_leaves_no_folder(tmp_path, monkeypatch):
    """No Chromium: one error line, and no output folder left holding only a lock file; a folder
    that was there before is kept as it was."""
    need_synth()
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text(OK_PAGE)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no chromium on the PATH
    res = invoke(["synth", site, tmp_path / "out"])
    assert res.exit_code == 1 and "Chromium, which is not installed" in res.stderr, res.output
    assert not (tmp_path / "out").exists()
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("mine")
    res = invoke(["synth", site, tmp_path / "kept"])
    assert res.exit_code == 1 and (tmp_path / "kept" / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------------------------------------
# --from-pdf against a stand-in OpenAI-compatible server
# ---------------------------------------------------------------------------------------------

MODEL_HTML = """Here is the page.

```html
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><style>body { font-family: serif; margin: 50px; }</style></head>
<body>
<header>Ledger of the Kestrel Mill</header>
<h1>Water rights, upper leat</h1>
<p>The miller may draw water from the upper leat between Lady Day and Michaelmas, and at no other time.</p>
<table><tr><th>Season</th><th>Hours</th><th>Sluice</th></tr>
<tr><td>Spring</td><td>14</td><td>half</td></tr><tr><td>Summer</td><td>9</td><td>quarter</td></tr></table>
<footer>Page 3</footer>
</body></html>
```"""


def png_size(data_url: str) -> tuple[int, int]:
    raw = base64.b64decode(data_url.split(",", 1)[1])
    return struct.unpack(">II", raw[16:24])


def image_size(body: dict) -> tuple[int, int]:
    """The size of the page image a chat request carries."""
    return png_size(next(p["image_url"]["url"] for p in body["messages"][0]["content"] if p["type"] == "image_url"))


# The stand-in's stalled request outlasts the client's timeout; every other request (0.2 s of delay) must
# be answered well within it, also when the machine is loaded (a request timed out by load is asked
# again, and both would count as in flight).
TIMEOUT_S, STALL_S = 3, 8


class StandIn:
    """An OpenAI-compatible /v1/chat/completions on loopback. What it answers depends on the page
    image's size (each test PDF has its own page size): `behaviour[(w, h)]` is "ok", "malformed",
    "no-html", "timeout-once" (first request sleeps past the client's timeout) or "429-once"."""

    def __init__(self, behaviour: dict[tuple[int, int], str], delay: float = 0.0) -> None:
        self.behaviour = behaviour
        self.delay = delay
        self.requests: list[dict] = []
        self.sizes: list[tuple[int, int]] = []  # the page image's size of each request
        self.headers: list[dict] = []
        self.seen: set[tuple[str, tuple[int, int]]] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self.stalled: set[tuple[int, int]] = set()  # pages whose stalled request still counts as in flight
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with standin.lock:
                    standin.requests.append(body)
                    standin.headers.append(dict(self.headers))
                    size = image_size(body)
                    if size in standin.stalled:  # the client gave up on its stalled request to ask again
                        standin.stalled.discard(size)
                        standin.in_flight -= 1
                    stall = standin.stalls(size)
                    standin.in_flight += 1
                    standin.max_in_flight = max(standin.max_in_flight, standin.in_flight)
                if stall:  # in flight for the client until it asks again (it has given up by then)
                    time.sleep(STALL_S)
                    with standin.lock:
                        if size in standin.stalled:
                            standin.stalled.discard(size)
                            standin.in_flight -= 1
                    return
                try:
                    status, headers, data = standin.answer(body)
                finally:  # no longer in flight before the client can read the answer and ask its next question
                    with standin.lock:
                        standin.in_flight -= 1
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stalls(self, size: tuple[int, int]) -> bool:
        """The first request of a "timeout-once" page (called with the lock held)."""
        if self.behaviour.get(size) != "timeout-once" or ("timeout-once", size) in self.seen:
            return False
        self.seen.add(("timeout-once", size))
        self.stalled.add(size)
        self.sizes.append(size)
        return True

    def answer(self, body) -> tuple[int, dict[str, str], bytes]:
        """The status, headers and body of the answer to a request."""
        parts = body["messages"][0]["content"]
        size = image_size(body)
        text = "\n".join(p["text"] for p in parts if p["type"] == "text")
        how = self.behaviour.get(size, "ok")
        with self.lock:
            self.sizes.append(size)
            first = (how, size) not in self.seen
            self.seen.add((how, size))
        if how == "429-always":
            return 429, {}, b""
        time.sleep(self.delay)
        if how == "429-once" and first:
            return 429, {"Retry-After": "0"}, b""
        if how == "malformed":
            return self.json(b'{"choices": "nope"}')
        if "orientation" in text:
            reply = "RIGHT_SIDE_UP"
        elif "Analyze this document" in text:
            reply = "A single column with a heading, a paragraph and a small table."
        else:
            reply = "I cannot do that." if how == "no-html" else MODEL_HTML
        answer = {"choices": [{"message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 100, "completion_tokens": 20}}  # fmt: skip
        return self.json(json.dumps(answer).encode())

    @staticmethod
    def json(data: bytes) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": "application/json", "Content-Length": str(len(data))}, data


def blank_pdf(path: Path, sizes: list[tuple[float, float]]) -> Path:
    import pypdf

    writer = pypdf.PdfWriter()
    for w, h in sizes:
        writer.add_blank_page(width=w, height=h)
    with open(path, "wb") as f:
        writer.write(f)
    return path


def test_from_pdf_against_a_standin_endpoint(tmp_path):
    need_chromium()
    from olmocr_rl.synth.run import png_size as size_of

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    shapes = {"a_ok": (612, 792), "b_malformed": (600, 800), "c_timeout": (595, 842), "d_429": (620, 800), "e_nohtml": (610, 790)}
    for stem, shape in shapes.items():
        blank_pdf(pdfs / f"{stem}.pdf", [shape])
    (pdfs / "sub").mkdir()
    blank_pdf(pdfs / "sub" / "f_three.pdf", [(500, 700), (501, 700), (502, 700)])  # in a sub-folder: named sub/f_three_pageN
    bench_pdfs = tmp_path / "benchmark"
    bench_pdfs.mkdir()
    blank_pdf(bench_pdfs / "a_page_of_the_benchmark.pdf", [(612, 792)])  # the same bytes as a_ok.pdf
    behaviour = {size_of(*shapes[s]): how for s, how in [("b_malformed", "malformed"), ("c_timeout", "timeout-once"),
                                                         ("d_429", "429-once"), ("e_nohtml", "no-html")]}  # fmt: skip
    server = StandIn(behaviour, delay=0.2)
    out = tmp_path / "out"
    args = ["synth", out, "--from-pdf", pdfs, "--endpoint", server.url, "--model", "stand-in", "--request-timeout", str(TIMEOUT_S),
            "--retries", "1", "--concurrency", "2", "--max-tokens", "3000", "-q"]  # fmt: skip
    res = invoke([*args, "--exclude", bench_pdfs], env={"OPENAI_API_KEY": "sk-test"})
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "synth.json").read_text())
    kept = sorted(o["key"] for o in manifest["kept"])
    assert kept[:2] == ["c_timeout_page1", "d_429_page1"] and len(kept) == 3 and kept[2].startswith("sub/f_three_page"), kept
    skipped = {s["key"] if "key" in s else Path(s["source"]).stem: s["reason"] for s in manifest["skipped"]}
    assert "excluded" in skipped["a_ok"] and "a_page_of_the_benchmark.pdf" in skipped["a_ok"]
    assert "not a chat completion" in skipped["b_malformed_page1"], skipped
    assert "no ``` code block" in skipped["e_nohtml_page1"], skipped
    # The page of f_three is the one upstream's seed picks; its tests come from the model's HTML.
    import hashlib

    sha1 = hashlib.sha1((pdfs / "sub" / "f_three.pdf").read_bytes()).hexdigest()
    assert kept[2] == f"sub/f_three_page{random.Random(int(sha1[:8], 16)).randint(1, 3)}"
    assert (out / "claude_original" / "synthetic" / f"{kept[2]}_pg1_repeat1.md").is_file()
    res = invoke(["validate", out])
    assert res.exit_code == 0 and " 0 invalid" in res.output, res.output
    tests = jsonl(out / "synthetic.jsonl")
    assert {t["pdf"] for t in tests} == {f"synthetic/{k}.pdf" for k in kept}
    assert any(t["type"] == "absent" and t["text"] == "Ledger of the Kestrel Mill" for t in tests)
    assert (out / "html" / "synthetic" / "d_429_page1.html").read_text().startswith("<!DOCTYPE html>")
    # Four requests per page kept (orientation, analysis, HTML, revision), each as the wheel's turn says.
    assert server.max_in_flight == 2
    assert all(r["model"] == "stand-in" for r in server.requests)
    # The first request of the timeout page and of the 429 page was asked again (--retries 1, --request-timeout TIMEOUT_S).
    assert server.sizes.count(size_of(*shapes["c_timeout"])) == 5 and server.sizes.count(size_of(*shapes["d_429"])) == 5
    assert {r["max_tokens"] for r in server.requests} == {1000, 3000}  # 20000 and 40000 capped by --max-tokens
    assert {r["temperature"] for r in server.requests} == {0.0, 0.1, 0.2, 1.0}
    assert all(h.get("Authorization") == "Bearer sk-test" for h in server.headers)
    assert manifest["tokens"]["requests"] >= 12 and manifest["tokens"]["prompt"] == 100 * manifest["tokens"]["requests"]
    # A rerun asks only for the pages without HTML, and renders none of the others again: without --exclude now,
    # a_ok (4 requests), the malformed one (fails at its first) and the refused one (at its third).
    before = len(server.requests)
    res = invoke(args, env={"OPENAI_API_KEY": "sk-test"})
    assert res.exit_code == 0, res.output
    assert len(server.requests) - before == 4 + 1 + 3
    assert "1 / 3" in res.output  # synthesized now / reused
    again = json.loads((out / "synth.json").read_text())
    assert sorted(o["key"] for o in again["kept"]) == sorted([*kept, "a_ok_page1"])


def test_from_pdf_budget_all_pages_and_retries(tmp_path):
    need_chromium()
    from olmocr_rl.synth.run import png_size as png_size_of

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    blank_pdf(pdfs / "a_two.pdf", [(612, 792), (600, 800)])
    blank_pdf(pdfs / "b_one.pdf", [(595, 842)])
    server = StandIn({})
    out = tmp_path / "out"
    res = invoke(["synth", out, "--from-pdf", pdfs, "--endpoint", server.url, "--model", "m", "--all-pages", "--budget", "300",
                  "--concurrency", "1", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "synth.json").read_text())
    # 4 requests of 120 tokens for the first page pass the budget of 300: the other two pages never start.
    assert [o["key"] for o in manifest["kept"]] == ["a_two_page1"]
    assert sorted(s["key"] for s in manifest["skipped"]) == ["a_two_page2", "b_one_page1"]
    assert all("token budget (300) is spent" in s["reason"] for s in manifest["skipped"])
    assert len(server.requests) == 4
    # A server that always answers 429: the request is tried 1 + --retries times, then the page is skipped.
    blank_pdf(tmp_path / "c.pdf", [(300, 300)])
    server = StandIn({png_size_of(300, 300): "429-always"})
    res = invoke(["synth", tmp_path / "out2", "--from-pdf", tmp_path / "c.pdf", "--endpoint", server.url, "--model", "m",
                  "--retries", "2", "-q"])  # fmt: skip
    assert res.exit_code == 1 and "no page could be synthesized" in res.stderr
    (skip,) = json.loads((tmp_path / "out2" / "synth.json").read_text())["skipped"]
    assert "HTTP 429" in skip["reason"] and "after 2 retries" in skip["reason"] and len(server.requests) == 3


# ---------------------------------------------------------------------------------------------
# synth -> validate -> prepare -> train -> bench
# ---------------------------------------------------------------------------------------------


def test_synth_validate_prepare_train_bench(tmp_path, tiny_model):
    need_chromium()
    need("trl")
    from training import RECIPE

    site = tmp_path / "site"
    site.mkdir()
    for name in ("table_spans", "header_footer", "footnotes", "clipped"):
        shutil.copy(PAGES / f"{name}.html", site / f"{name}.html")
    out = tmp_path / "bench"
    strict = invoke(["synth", site, out, "--strict"])
    assert strict.exit_code == 1 and "1 page(s) dropped or skipped and --strict was given" in strict.output, strict.output
    assert "synthesizing" in strict.output  # the progress bar, without --quiet
    assert "text cut off" in strict.output and "clipped" in strict.output
    assert "kept: synthesized now / reused" in strict.output and "3 / 0" in strict.output, strict.output
    res = invoke(["synth", site, out, "-q"])  # a rerun: everything reused, exit 0 without --strict
    assert res.exit_code == 0 and "synthesizing" not in res.output and "0 / 3" in res.output, res.output
    # The bench folder: tests, one-page PDFs named as upstream names them (<id>_page<N>.pdf), the
    # reference markdown as files where olmOCR's trainer looks for them, all of it valid.
    kept = ("footnotes", "header_footer", "table_spans")
    tests = jsonl(out / "synthetic.jsonl")
    assert {t["pdf"] for t in tests} == {f"synthetic/{n}_page1.pdf" for n in kept}
    refs = sorted((out / "claude_original" / "synthetic").iterdir())
    assert [p.name for p in refs] == [f"{n}_page1_pg1_repeat1.md" for n in kept]
    assert all(p.is_file() and not p.is_symlink() for p in refs)
    assert (out / "claude_original" / "synthetic" / "table_spans_page1_pg1_repeat1.md").read_text() == next(
        c["markdown"] for c in CASES if c["page"] == "table_spans.html"
    )
    assert json.loads((out / "synth.json").read_text())["tests_failing_their_reference"] == []
    res = invoke(["validate", out])
    assert res.exit_code == 0 and f"{len(tests)} valid tests" in res.output and "0 invalid" in res.output, res.output
    res = invoke(["bench", out, "--candidate", "claude_original", "--json"])
    (cand,) = json.loads(res.output[res.output.index("{") :])["candidates"]
    assert res.exit_code == 0 and cand["score"] == 1.0, res.output  # every test passes on its own reference
    # prepare: every page gets its reference markdown (issue 42: it found none when synth named the
    # PDFs otherwise than olmOCR's trainer looks for their references).
    prepared = tmp_path / "prepared"
    res = invoke(["prepare", out, prepared, "--eval-fraction", "0.34", "--longest-side", "140", "--strict", "--quiet"])
    assert res.exit_code == 0 and "2 train + 1 eval pages" in res.output and "3 of 3 pages" in res.output, res.output
    rows = jsonl(prepared / "train.jsonl") + jsonl(prepared / "eval.jsonl")
    for row in rows:
        synthesized = out / "claude_original" / Path(row["pdf"]).with_suffix("").as_posix()
        assert (prepared / row["reference"]).read_text() == Path(f"{synthesized}_pg1_repeat1.md").read_text(), row
    # train (the tiny model, 2 steps) with a reward scored against the reference: it varies.
    run = tmp_path / "run"
    res = invoke(["train", prepared, "--model", tiny_model, "-o", run, "--config", RECIPE, "rewards.edit-distance=0.5"])
    assert res.exit_code == 0 and "step 2/2" in res.output, res.output[-3000:]
    assert "no prepared page has a reference output" not in res.output
    logged = [json.loads(line) for line in (run / "logs" / "metrics.jsonl").read_text().splitlines()]
    spread = [r["rewards/edit_distance/std"] for r in logged if "rewards/edit_distance/std" in r]
    assert spread and max(spread) > 0, logged  # not constant: the references reach the reward
    res = invoke(["bench", run, "--candidate", "outputs", "--json"])
    assert res.exit_code == 0, res.output
    (cand,) = json.loads(res.output[res.output.index("{") :])["candidates"]
    assert cand["name"] == "outputs" and not cand.get("errors")


# ---------------------------------------------------------------------------------------------
# the command line, the conversation, the wheel's files
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["OUT"], "give HTML_DIR and OUT_BENCH"),
        (["A", "B", "C"], "give HTML_DIR and OUT_BENCH"),
        (["A", "OUT", "--model", "m"], "--model is an option of --from-pdf"),
        (["A", "OUT", "--budget", "5"], "--budget is an option of --from-pdf"),
        (["OUT", "--from-pdf", "x.pdf"], "--from-pdf needs --endpoint and --model"),
        (["A", "OUT", "--from-pdf", "x.pdf", "--endpoint", "u", "--model", "m"], "with --from-pdf, give only OUT_BENCH"),
        (["A", "OUT", "--name", "a/b"], "--name 'a/b': give a plain name"),
    ],
)
def test_usage_errors_name_what_is_wrong(args, message):
    res = invoke(["synth", *args])
    assert res.exit_code == 2 and message in res.stderr, res.output


def test_bad_inputs_are_one_error_line(tmp_path):
    need_synth()
    res = invoke(["synth", tmp_path / "missing", tmp_path / "out"])
    assert res.exit_code == 1 and res.stderr.strip() == f"error: {tmp_path / 'missing'}: no such folder (give a folder of .html files)"
    (tmp_path / "empty").mkdir()
    res = invoke(["synth", tmp_path / "empty", tmp_path / "out"])
    assert res.exit_code == 1 and "no .html files in this folder" in res.stderr
    res = invoke(["synth", tmp_path / "out", "--from-pdf", tmp_path / "nothing", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"])
    assert res.exit_code == 1 and "--from-pdf" in res.stderr and "no such file or folder" in res.stderr


def test_the_conversation_is_read_from_the_wheel():
    need_synth()
    from olmocr_rl.synth.assets import pipeline_module
    from olmocr_rl.synth.endpoint import fill, read_conversation

    turns = read_conversation(pipeline_module())
    assert [(t.max_tokens, t.temperature) for t in turns] == [(1000, 0.0), (20000, 0.1), (20000, 0.2), (40000, 1.0)]
    assert [k for k, _ in turns[3].parts] == ["text", "image", "text", "image", "text", "text"]
    values = {"analysis_text": "<ANALYSIS>", "png_width": 791, "png_height": 1024, "initial_html": "<INITIAL>"}
    step2 = fill(turns[2].parts[1][1], values)
    assert "<ANALYSIS>" in step2 and "791" in step2 and "1024" in step2 and "{" not in step2.replace("{left", "")
    assert "<INITIAL>" in fill(turns[3].parts[5][1], values)


def test_a_conversation_that_would_run_code_is_refused(tmp_path):
    need_synth()
    from olmocr_rl.synth.endpoint import ConversationError, read_conversation

    module = tmp_path / "m.py"
    module.write_text('async def generate_html_from_image(client, image_base64):\n'
                      '    for _ in range(4):\n'
                      '        await client.messages.create(max_tokens=10, temperature=0, messages=[{"role": "user", "content": [\n'
                      '            {"type": "text", "text": f"{__import__(\'os\').system(\'true\')}"}]}])\n')  # fmt: skip
    with pytest.raises(ConversationError, match="does not understand"):
        read_conversation(module)


def test_install_katex_stores_what_synth_takes_from_the_wheel(tmp_path):
    need_synth()
    import zipfile

    from olmocr_rl import _katex
    from olmocr_rl.prompts import olmocr_prompts_file
    from olmocr_rl.synth.assets import katex_files, pipeline_module

    css, js, auto_render = katex_files()
    members = {_katex.WHEEL_MEMBER: js, _katex.PROMPTS_MEMBER: olmocr_prompts_file(), "olmocr/bench/katex/katex.min.css": css,
               "olmocr/bench/katex/auto-render.min.js": auto_render, "olmocr/bench/synth/mine_html_templates.py": pipeline_module()}  # fmt: skip
    wheel = tmp_path / "olmocr.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for member, path in members.items():
            z.writestr(member, path.read_bytes())
    res = invoke(["install-katex", "--from-wheel", wheel, "--dir", tmp_path / "k"])
    assert res.exit_code == 0, res.output
    for name in ("katex.min.js", "katex.min.css", "auto-render.min.js", "mine_html_templates.py", "prompts.py"):
        assert (tmp_path / "k" / name).is_file(), name
    with zipfile.ZipFile(tmp_path / "bad.whl", "w") as z:
        for member, path in members.items():
            z.writestr(member, path.read_bytes() + (b"\n" if member.endswith("auto-render.min.js") else b""))
    res = invoke(["install-katex", "--from-wheel", tmp_path / "bad.whl", "--dir", tmp_path / "k2"])
    assert res.exit_code == 1 and "auto-render.min.js is not olmocr 0.4.27's" in res.stderr


def test_where_the_reference_raises_the_page_is_refused_with_a_reason():
    """A <header> outside an empty <body>: upstream's generator raises IndexError on it."""
    need_synth()
    from olmocr_rl.synth.page_tests import PageTestError, generate_page_tests

    with pytest.raises(PageTestError, match="IndexError"):
        generate_page_tests("<html><head><header>Running head</header></head><body></body></html>", "p", 1, random.Random(0))
