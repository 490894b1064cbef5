#!/usr/bin/env python3
"""Size and speed of `olmocr-rl bench --report` at olmOCR-bench's size.

    python benchmarks/bench_report.py [--bench DIR] [--keep DIR] [--workers N] [--no-browser]

Without --bench, generates (seeded) in a temporary folder a bench folder shaped like olmOCR-bench:
1,403 one-page PDFs in seven JSONL files with olmOCR-bench's counts of PDFs and tests per file
(arxiv_math 522 / 2,927 math tests, headers_footers 266 / 753 absent, long_tiny_text 62 / 442
present, multi_column 231 / 884 order, old_scans 98 / 526 present+absent+order, old_scans_math 36 /
458 math, table_tests 188 / 1,020 table: 7,010 tests, plus the 1,403 baseline tests the runner
adds), and two candidates: `model_a` with one repeat per page, `model_b` with three. Pages are
drawn as a model would meet them: dense vector text (two columns on multi_column pages, 7 pt on
long_tiny_text, a ruled table on table pages, a line plot on a third of the arXiv pages) and, for
the two old_scans files, grey raster scans with speckle noise. The texts are the page's text with
OCR-like damage, so tests pass and fail (and flip between the two) in realistic proportions.

Then prints: the time to score, the time to write the report (the `bench --report` command as a
whole is timed too, as a separate process), the report's size (the HTML file and its folder,
images apart), and the time to its first screen in headless Chromium: from navigation to the
summary, the page list and the first page's image shown (browser start-up excluded).
Targets (issue #30, two cores): written in <= 60 s, <= 80 MB, first screen <= 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
from bench_math_reference import change, formula, rewrite  # noqa: E402
from bench_runner import perturb, phrase  # noqa: E402

# (JSONL file, PDFs, tests, kind): olmOCR-bench's files and counts.
SHAPE = [
    ("arxiv_math", 522, 2927, "math"),
    ("headers_footers", 266, 753, "absent"),
    ("long_tiny_text", 62, 442, "present"),
    ("multi_column", 231, 884, "order"),
    ("old_scans", 98, 526, "scan"),
    ("old_scans_math", 36, 458, "scanmath"),
    ("table_tests", 188, 1020, "table"),
]
W, H = 612, 792  # US letter, points


class Words:
    """A vocabulary of 8,000 made-up words drawn with Zipf's law, so that the texts compress as
    English prose does (~3x with gzip), not as a forty-word list would."""

    def __init__(self, rng: random.Random, n: int = 8000):
        syllables = [a + b for a in "bcdfghklmnprstvwz" for b in ("a", "e", "i", "o", "u", "ai", "ou", "ea")]
        words = set()
        while len(words) < n:
            words.add("".join(rng.choice(syllables) for _ in range(rng.choice([1, 1, 2, 2, 2, 3, 3, 4]))))
        self.words = sorted(words)
        rng.shuffle(self.words)
        self.weights = [1 / (k + 1) for k in range(n)]

    def sentence(self, rng: random.Random, n: int) -> str:
        words = rng.choices(self.words, self.weights, k=n)
        if rng.random() < 0.3:
            words[rng.randrange(n)] = f"{rng.randint(1, 2024)}"
        if n > 6 and rng.random() < 0.4:
            words[rng.randrange(n - 1)] += ","
        return " ".join(words).capitalize() + "."


def make_page(rng: random.Random, words: Words) -> tuple[str, list[str], list[str]]:
    """A page of markdown (~3,000 characters), its heading texts and its paragraphs."""
    headings, paras, parts = [], [], []
    for s in range(rng.randint(2, 4)):
        h = f"{s + 1} {words.sentence(rng, 3)[:-1]}"
        headings.append(h)
        parts.append(f"## {h}")
        for _ in range(rng.randint(2, 4)):
            p = " ".join(words.sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(2, 5)))
            paras.append(p)
            parts.append(p)
    return "\n\n".join(parts), headings, paras


# ----------------------------------------------------------------------------------------------
# PDFs


def _pdf(content: bytes, image: tuple[int, int, bytes] | None = None) -> bytes:
    """A one-page PDF: a content stream with Helvetica (F1) and Times (F2), and optionally one
    DCT (JPEG) greyscale image XObject /Im1."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"]
    xobj = " /XObject << /Im1 7 0 R >>" if image else ""
    objects.append(
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {W} {H}] /Resources << /Font << /F1 5 0 R /F2 6 0 R >>{xobj} >> "
        f"/Contents 4 0 R >>".encode()
    )
    stream = zlib.compress(content)
    objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>")
    if image:
        w, h, jpeg = image
        objects.append(
            b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
            b"/Filter /DCTDecode /Length %d >>\nstream\n" % (w, h, len(jpeg)) + jpeg + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for num, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % num + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _esc(s: str) -> str:
    s = s.encode("latin-1", "replace").decode("latin-1")
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def _text_ops(blocks: list[tuple[str, str]], x: float, y: float, width: int, size: float, bottom: float = 50) -> tuple[list[str], float]:
    """Text blocks ("h" heading, "p" paragraph, "m" display math) as PDF operators, from (x, y)
    down; returns the operators and the y reached."""
    ops = []
    for kind, text in blocks:
        font, fs = ("F1", size * 1.25) if kind == "h" else ("F2", size)
        lines = _wrap(text, width if kind != "h" else int(width / 1.3))
        if kind == "m":
            lines = [f"    {ln}" for ln in _wrap(text, width - 8)]
        for ln in lines:
            if y < bottom:
                return ops, y
            ops.append(f"BT /{font} {fs:.1f} Tf {x:.1f} {y:.1f} Td ({_esc(ln)}) Tj ET")
            y -= fs * 1.22
        y -= size * 0.8
    return ops, y


def _plot_ops(rng: random.Random, x: float, y: float, w: float, h: float) -> list[str]:
    ops = ["0.4 w", f"{x} {y} m {x} {y + h} l {x} {y} m {x + w} {y} l S"]
    for color in ("0.12 0.47 0.71", "1 0.5 0.05", "0.17 0.63 0.17"):  # a coloured line plot
        pts, v = [], rng.random() * h
        for i in range(60):
            v = min(h, max(0, v + rng.uniform(-h / 10, h / 10)))
            pts.append((x + w * i / 59, y + v))
        ops.append(
            f"{color} RG 1.2 w " + f"{pts[0][0]:.1f} {pts[0][1]:.1f} m " + " ".join(f"{a:.1f} {b:.1f} l" for a, b in pts[1:]) + " S 0 G"
        )
    return ops


def _table_ops(rows: list[list[str]], x: float, y: float, col_w: float, row_h: float, size: float) -> list[str]:
    ops = ["0.5 w"]
    n_r, n_c = len(rows), len(rows[0])
    for r in range(n_r + 1):
        ops.append(f"{x} {y - r * row_h:.1f} m {x + n_c * col_w:.1f} {y - r * row_h:.1f} l S")
    for c in range(n_c + 1):
        ops.append(f"{x + c * col_w:.1f} {y} m {x + c * col_w:.1f} {y - n_r * row_h:.1f} l S")
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            font = "F1" if r == 0 else "F2"
            ops.append(f"BT /{font} {size} Tf {x + c * col_w + 3:.1f} {y - r * row_h - row_h + 4:.1f} Td ({_esc(cell)}) Tj ET")
    return ops


def _scan(rng: random.Random, blocks: list[tuple[str, str]]) -> tuple[int, int, bytes]:
    """A greyscale 150 dpi scan of the text: yellowed background, uneven ink, speckles; JPEG."""
    import io

    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    w, h = 1275, 1650
    img = Image.new("L", (w, h), 232)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=21)
    big = ImageFont.load_default(size=28)
    y = 120
    for kind, text in blocks:
        for ln in _wrap(text, 88 if kind != "h" else 60):
            if y > h - 120:
                break
            draw.text((110 + rng.randint(-2, 2), y), ln, fill=rng.randint(20, 70), font=big if kind == "h" else font)
            y += 40 if kind == "h" else 30
        y += 16
    for _ in range(5000):
        px, py = rng.randrange(w), rng.randrange(h)
        draw.point((px, py), fill=rng.randint(60, 200))
    img = img.filter(ImageFilter.GaussianBlur(0.6)).rotate(rng.uniform(-0.8, 0.8), fillcolor=232)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=70)
    return w, h, buf.getvalue()


# ----------------------------------------------------------------------------------------------
# the bench folder


def _table(rng: random.Random, words: Words) -> list[list[str]]:
    cols = rng.randint(4, 6)
    header = ["Item"] + [f"{rng.choice(['Q', 'FY', 'Set', 'Run'])}{k}" for k in range(1, cols)]
    rows = [header]
    for _ in range(rng.randint(8, 14)):
        rows.append([words.sentence(rng, 2)[:-1]] + [f"{rng.uniform(0, 999):.1f}" for _ in range(cols - 1)])
    return rows


def _md_table(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def _damage(rng: random.Random, text: str, level: float) -> str:
    """OCR-like damage, more of it with a higher level (0..1)."""
    return perturb(rng, text) if rng.random() < level else text


def _page(rng: random.Random, words: Words, kind: str, key: str, n_tests: int, serial: int):
    """(pdf key, pdf bytes, tests, candidate(rng, damage level) -> markdown)."""
    md, headings, paras = make_page(rng, words)
    blocks = [("h", h) for h in headings[:1]] + [("p", p) for p in paras]
    tests: list[dict] = []
    pdf_key = f"{key.rsplit('_', 1)[0]}/{key}.pdf"

    def add(t: str, **kw):
        tests.append({"pdf": pdf_key, "page": 1, "id": f"{key}_{len(tests):02d}", "type": t, **kw})

    extra: list[str] = []
    ops: list[str] = []
    image = None
    if kind in ("math", "scanmath"):
        eqs = [formula(rng, serial * 10 + k) for k in range(n_tests)]
        for k, e in enumerate(eqs):
            blocks.insert(min(len(blocks), 1 + 2 * k), ("m", e))
            add("math", math=e)
        extra = eqs
    elif kind == "absent":
        header, footer = f"Journal of {words.sentence(rng, 2)[:-1]} Vol. {serial % 40}", f"Page {rng.randint(2, 400)}"
        ops += [f"BT /F1 8 Tf 54 760 Td ({_esc(header)}) Tj ET", f"BT /F1 8 Tf 290 30 Td ({_esc(footer)}) Tj ET"]
        for k in range(n_tests):
            add("absent", text=[header, footer, f"{header} {footer}"][k % 3], max_diffs=k % 2)
        extra = [header, footer]
    elif kind == "present":
        blocks += [("p", p) for p in make_page(rng, words)[2]]
        for k in range(n_tests):
            add("present", text=phrase(rng, rng.choice(paras), 8), max_diffs=k % 3)
    elif kind == "order":
        for _ in range(n_tests):
            a, b = sorted(rng.sample(range(len(paras)), 2))
            add("order", before=phrase(rng, paras[a], 5), after=phrase(rng, paras[b], 5), max_diffs=rng.choice([0, 1]))
    elif kind == "scan":
        for k in range(n_tests):
            roll = k % 3
            if roll == 0:
                add("present", text=phrase(rng, rng.choice(paras), 6), case_sensitive=False)
            elif roll == 1:
                add("absent", text=words.sentence(rng, 4))
            else:
                a, b = sorted(rng.sample(range(len(paras)), 2))
                add("order", before=phrase(rng, paras[a], 4), after=phrase(rng, paras[b], 4))
    elif kind == "table":
        rows = _table(rng, words)
        extra = [_md_table(rows)]
        for _ in range(n_tests):
            r, c = rng.randrange(1, len(rows) - 1), rng.randrange(1, len(rows[0]) - 1)
            rel = rng.choice(["up", "down", "left", "right", "top_heading"])
            other = {
                "up": rows[r - 1][c],
                "down": rows[r + 1][c],
                "left": rows[r][c - 1],
                "right": rows[r][c + 1],
                "top_heading": rows[0][c],
            }
            add("table", cell=rows[r][c], **{rel: other[rel]})
        ops += _table_ops(rows, 54, 430, min(500 / len(rows[0]), 100), 16, 8)
        blocks = blocks[:4]

    if kind in ("scan", "scanmath"):
        image = _scan(rng, blocks)
        ops = [f"q {W} 0 0 {H} 0 0 cm /Im1 Do Q"]
    elif kind == "order":
        half = len(blocks) // 2
        left, _ = _text_ops(blocks[:half], 54, 740, 50, 9.5)
        right, _ = _text_ops(blocks[half:], 318, 740, 50, 9.5)
        ops += left + right
    else:
        size, width = (7.0, 140) if kind == "present" else (10.0, 96)
        plot = kind == "math" and serial % 3 == 0  # a third of the arXiv pages have a figure
        text_ops, y = _text_ops(blocks, 54, 740, width, size, bottom=450 if kind == "table" else 260 if plot else 50)
        ops += text_ops
        if plot:
            ops += _plot_ops(rng, 120, 70, 380, 170)

    pdf = _pdf("\n".join(ops).encode("latin-1", "replace"), image)

    def candidate(crng: random.Random, level: float) -> str:
        parts = [md]
        if kind in ("math", "scanmath"):
            for e in extra:
                roll = crng.random()
                if roll < 1 - level:
                    parts.append(f"$$\n{e if crng.random() < 0.5 else rewrite(crng, e)}\n$$")
                elif roll < 1 - level / 3:
                    parts.append(f"$${change(crng, e)}$$")
        elif kind == "absent":
            if crng.random() < level:
                parts.insert(0, extra[0])
            if crng.random() < level:
                parts.append(extra[1])
        elif kind == "table":
            table = extra[0]
            if crng.random() < level:
                lines = table.split("\n")
                i = crng.randrange(2, len(lines))
                lines[i] = lines[i].replace("|", " ", 2)
                table = "\n".join(lines)
            parts.append(table)
        return _damage(crng, "\n\n".join(parts), level)

    return pdf_key, pdf, tests, candidate


def generate(root: Path, seed: int = 0) -> dict:
    rng = random.Random(seed)
    words = Words(rng)
    (root / "pdfs").mkdir(parents=True)
    cands = {"model_a": (1, 0.45), "model_b": (3, 0.35)}  # repeats, damage level
    serial = 0
    n_tests = 0
    for name, n_pdfs, tests_total, kind in SHAPE:
        (root / "pdfs" / name).mkdir()
        per = [tests_total // n_pdfs + (1 if i < tests_total % n_pdfs else 0) for i in range(n_pdfs)]
        lines = []
        for i in range(n_pdfs):
            key = f"{name}_{i:04d}"
            pdf_key, pdf, tests, candidate = _page(rng, words, kind, key, per[i], serial)
            serial += 1
            (root / "pdfs" / pdf_key).write_bytes(pdf)
            lines += [json.dumps(t) for t in tests]
            n_tests += len(tests)
            for cand, (repeats, level) in cands.items():
                folder = root / cand / name
                folder.mkdir(parents=True, exist_ok=True)
                for r in range(repeats):
                    (folder / f"{key}_pg1_repeat{r + 1}.md").write_text(candidate(rng, level), encoding="utf-8")
        (root / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"pdfs": serial, "tests": n_tests}


# ----------------------------------------------------------------------------------------------
# measuring


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def first_screen(html: Path, runs: int = 3) -> list[float]:
    """Seconds from navigation to: the summary and the page list drawn, and the first page's
    image decoded (Chromium already running), `runs` times; then the seconds to list every page
    (a filter) and to show the next page with its image and texts."""
    from browser import Page

    times = []
    with Page("about:blank") as page:
        for _ in range(runs):
            page.call("Page.navigate", url="about:blank")
            time.sleep(0.3)
            t0 = time.perf_counter()
            page.call("Page.navigate", url=html.resolve().as_uri())
            page.wait_for(
                "document.body && document.body.dataset.ready === '1' && document.querySelectorAll('#toc li').length > 0 && "
                "document.getElementById('pageimg') && document.getElementById('pageimg').complete && "
                "document.getElementById('pageimg').naturalWidth > 0",
                timeout=60,
            )
            times.append(time.perf_counter() - t0)
        # Interaction at this size: a filter that lists every page, then the next page shown.
        t0 = time.perf_counter()
        page.evaluate("(() => { const s = document.getElementById('f-show'); s.value = 'all'; s.dispatchEvent(new Event('change')); })()")
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        page.evaluate("document.getElementById('next').click()")
        page.wait_for("document.getElementById('pageimg').complete && document.querySelector('#texts pre') !== null", timeout=30)
        times.append(time.perf_counter() - t0)
        page.screenshot(html.with_suffix(".png"))
        errors = page.console_errors()
        if errors:
            raise SystemExit(f"console errors in the report: {errors[:3]}")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", help="an existing bench folder (default: generate one of olmOCR-bench's size)")
    ap.add_argument("--keep", help="generate into this folder and keep it (and the report)")
    ap.add_argument("--workers", type=int, default=None, help="threads/processes (default: all cores)")
    ap.add_argument("--no-browser", action="store_true", help="skip the first-screen measurement")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import olmocr_rl.report.bench as report_module
    from olmocr_rl.bench import run_bench
    from olmocr_rl.report import bench_report

    render_all = report_module._render_all
    spent = {"images": 0.0}

    def timed_render_all(*a, **kw):
        t0 = time.perf_counter()
        try:
            return render_all(*a, **kw)
        finally:
            spent["images"] += time.perf_counter() - t0

    report_module._render_all = timed_render_all

    tmp = None
    try:
        if args.bench:
            root = Path(args.bench)
            out_dir = Path(tempfile.mkdtemp(prefix="olmocr-rl-report-"))
            tmp = out_dir
        else:
            base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="olmocr-rl-report-"))
            tmp = None if args.keep else base
            root = base / "bench"
            out_dir = base
            if not root.exists():
                t0 = time.perf_counter()
                shape = generate(root, args.seed)
                print(f"generated {root}: {shape['pdfs']} PDFs, {shape['tests']} tests (+ baselines) in {time.perf_counter() - t0:.1f} s")
        html = out_dir / "report.html"
        print(f"cores: {os.cpu_count()}, workers: {args.workers or 'all'}")

        t0 = time.perf_counter()
        summary = run_bench(root, keep_details=True, threads=args.workers)
        t_score = time.perf_counter() - t0
        t0 = time.perf_counter()
        bench_report(summary, html, workers=args.workers)
        t_report = time.perf_counter() - t0
        n_tests = len(summary.bench.tests)
        print(
            f"scored {n_tests} tests x {len(summary.candidates)} candidates in {t_score:.1f} s; report written in {t_report:.1f} s "
            f"({spent['images']:.1f} s of it rendering the page images; in-process, {t_score + t_report:.1f} s together)"
        )

        cmd = [sys.executable, "-m", "olmocr_rl.cli", "bench", str(root), "--report", str(out_dir / "cli.html")]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "CI": "1"})
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        load = os.getloadavg()[0]
        print(
            f"`olmocr-rl bench DIR --report`, whole process: {wall:.1f} s wall, {cpu:.1f} s CPU over all its processes "
            f"(load average {load:.1f} on {os.cpu_count()} cores: other work slows the wall time)"
        )
        files = html.with_name("report_files")
        images = folder_size(files / "img")
        n_img = len(list((files / "img").iterdir()))
        texts = folder_size(files / "text")
        total = html.stat().st_size + folder_size(files)
        print(
            f"report size: {total / 1e6:.1f} MB = report.html {html.stat().st_size / 1e3:.0f} kB + data.js "
            f"{(files / 'data.js').stat().st_size / 1e6:.1f} MB + texts {texts / 1e6:.1f} MB + {n_img} images {images / 1e6:.1f} MB "
            f"({images / max(n_img, 1) / 1e3:.0f} kB each)"
        )
        if not args.no_browser:
            *times, t_filter, t_next = first_screen(html)
            print(
                f"first screen in headless Chromium: {min(times):.2f} s (best of {len(times)}; all: {', '.join(f'{t:.2f}' for t in times)}); "
                f"listing all {len(summary.bench.pdf_keys)} pages: {t_filter * 1000:.0f} ms; the next page: {t_next * 1000:.0f} ms"
            )
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
