"""`olmocr-rl bench --report NAME.html`: NAME.html with its assets in NAME_files/ beside it.

NAME.html holds what a researcher reads first, as plain HTML: the run's facts (bench folder,
versions, date, the options that change what is scored or shown), each candidate's score with its
interval, per-JSONL and per-type tables, and with two or more candidates the paired comparison of
each pair (`olmocr_rl.bench.compare`). Below, the pages: a list with filters (failing tests, tests
that flip between the chosen pair, errors; candidate, test type, JSONL file, a search) and one page
at a time: its image (click to enlarge), every test with its definition and each candidate's
verdict per repeat with every failing repeat's explanation, and the candidates' texts side by side.

NAME_files/ holds each page image once (WebP), `data.js` (tests, verdicts, explanations) and the
texts in chunks (`text/<k>.js`, loaded when a page of the chunk is shown). Why a folder: at
olmOCR-bench's size (1,403 pages, two candidates) the images alone are ~60 MB, ~80 MB as base64
inside one file, which a browser must read in full before showing anything; beside the page they
load one at a time. The content security policy allows no network request, only these files.
"""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import staged_folder, write_text
from olmocr_rl.report.common import asset, document, esc, render_page, script_json

# Fields whose default decides the verdict (docs/checks.md §1.3), shown when a record leaves them
# out; a field whose default means "not checked" (first_n, up, max_length, ...) is not.
DEFAULTS: dict[str, dict[str, Any]] = {
    "present": {"case_sensitive": True, "max_diffs": 0},
    "absent": {"case_sensitive": True, "max_diffs": 0},
    "order": {"max_diffs": 0},
    "table": {"max_diffs": 0, "ignore_markdown_tables": False},
    "math": {"max_diffs": 0, "ignore_dollar_delimited": False},
    "baseline": {"max_repeats": 30, "check_disallowed_characters": True, "max_length_skips_image_alt_tags": False},
    "format": {"case_sensitive": True, "max_diffs": 0},
    "footnote": {"max_diffs": 0},
}
# Shown first, in this order, when present; then the record's other fields in its own order.
FIRST = ["text", "before", "after", "cell", "up", "down", "left", "right", "top_heading", "left_heading", "math", "format", "marker",
         "appears_before_marker", "appears_after_marker", "max_length", "max_diffs", "case_sensitive", "first_n", "last_n"]  # fmt: skip
TEXT_CHUNK = 50  # pages per text file
IMAGE_SIDE = 1024  # px, the longest side (as the reference's report): body text legible when enlarged
IMAGE_QUALITY = 30  # lossy WebP, for colour pages (grey ones are posterized, lossless): ~35-45 kB a page


def definition(record: dict[str, Any]) -> list[list[Any]]:
    """[field, value, is_default] for every field that decides the test: the record's own
    (id, pdf, page and type are shown apart) and the deciding defaults it leaves out."""
    fields = {k: v for k, v in record.items() if k not in ("id", "pdf", "page", "type")}
    for k, v in DEFAULTS.get(str(record.get("type")), {}).items():
        fields.setdefault(k, _Default(v))
    order = [k for k in FIRST if k in fields] + [k for k in fields if k not in FIRST]
    return [[k, fields[k].value, True] if isinstance(fields[k], _Default) else [k, fields[k], False] for k in order]


class _Default:
    def __init__(self, value: Any):
        self.value = value


def _page_sort_key(key: tuple[str, Any]) -> tuple:
    pdf, page = key
    return (pdf, 0, page, "") if isinstance(page, int) and not isinstance(page, bool) else (pdf, 1, 0, json.dumps(page))


def _render_to(job: tuple[str, int, str, int, int]) -> bool:
    pdf, page, dest, side, quality = job
    data = render_page(pdf, page, side, quality=quality)
    if data is None:
        return False
    with open(dest, "wb") as f:
        f.write(data)
    return True


def _render_all(jobs: list[tuple[str, int, str, int, int]], workers: int | None) -> list[bool]:
    """Renders the page images, in parallel processes (pdfium is not thread-safe)."""
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    if workers == 1 or len(jobs) < 8:
        return [_render_to(j) for j in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from olmocr_rl.procs import pool_worker_dies_with

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=pool_worker_dies_with, initargs=(os.getpid(),)) as pool:
        return list(pool.map(_render_to, jobs, chunksize=max(1, len(jobs) // (workers * 8))))


def _katex_fact(has_math: bool) -> str:
    from olmocr_rl._katex import KATEX_VERSION, find_katex_js

    found = find_katex_js()
    if found:
        return f"KaTeX {KATEX_VERSION} ({found})"
    return f"KaTeX {KATEX_VERSION} not installed" + ("" if has_math else " (no math tests)")


def _shown_pages(summary: Any, max_reports: int | None) -> dict[tuple[str, Any], list[Any]]:
    """(pdf, page) -> the tests shown on it, in the bench's order; `max_reports`: at most that
    many PDFs per JSONL file, the first ones in name order (the reference's `--max_reports`)."""
    pages: dict[tuple[str, Any], list[Any]] = defaultdict(list)
    for t in summary.bench.tests:
        page = t.page if isinstance(t.page, (int, str)) and not isinstance(t.page, bool) else json.dumps(t.page)
        pages[(t.pdf, page)].append(t)
    if max_reports is not None:
        keep: dict[str, list[str]] = defaultdict(list)
        group = summary.bench.group
        for (pdf, _), tests in sorted(pages.items(), key=lambda kv: _page_sort_key(kv[0])):
            for g in sorted({group[t.id] for t in tests}):
                if pdf not in keep[g] and len(keep[g]) < max_reports:
                    keep[g].append(pdf)
        allowed = {(g, p) for g, ps in keep.items() for p in ps}
        pages = {k: [t for t in v if (group[t.id], k[0]) in allowed] for k, v in pages.items()}
        pages = {k: v for k, v in pages.items() if v}
    return dict(sorted(pages.items(), key=lambda kv: _page_sort_key(kv[0])))


def _records(tests: Sequence[Any]) -> list[dict]:
    from olmocr_rl.bench import test_records

    out = []
    for line in test_records(tests):
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({})
    return out


def _fmt_pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


def _sign(x: float) -> str:
    return "pos" if x > 0 else "neg" if x < 0 else ""


def _summary_html(summary: Any, comparisons: list[Any], facts: list[tuple[str, str]], notes: list[str]) -> str:
    b = summary.bench
    cands = summary.candidates
    pct = f"{summary.confidence_level * 100:g}%"
    out = [f'<h1>olmOCR-bench report</h1><p class="sub">{esc(b.root)}</p>']
    out.append(
        '<section id="run"><h2>Run</h2><dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>"
    )
    if notes:
        out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    out.append("</section>")

    # Scores.
    out.append('<section id="summary"><h2>Summary</h2><div class="scroll"><table id="scores"><tr><th>candidate</th>'
               f'<th class="num">score</th><th class="num">{pct} interval</th><th class="num">±</th><th class="num">tests</th>'
               '<th class="num">pages</th><th>errors</th></tr>')  # fmt: skip
    for c in cands:
        pages = len({(o.pdf, str(o.page)) for o in c.outcomes})
        if c.failed:
            score = (
                f'<span class="bad">FAILED (errors)</span> <span class="muted">{_fmt_pct(c.score_ignoring_errors)} ignoring errors</span>'
            )
            half = ""
        else:
            score = esc(c.status)
            half = f"{(c.ci[1] - c.ci[0]) / 2 * 100:.1f}"
        first = f'<span class="muted small">{len(c.errors)}: {esc(c.errors[0])}</span>' if c.errors else "0"
        out.append(f'<tr data-cand="{esc(c.name)}" data-score="{c.score!r}" data-ci="{c.ci[0]!r},{c.ci[1]!r}"><td>{esc(c.name)}</td>'
                   f'<td class="num">{score}</td><td class="num">{_fmt_pct(c.ci[0])} – {_fmt_pct(c.ci[1])}</td><td class="num">{half}</td>'
                   f'<td class="num">{len(c.outcomes)}</td><td class="num">{pages}</td><td>{first}</td></tr>')  # fmt: skip
    out.append("</table></div>")
    out.append(f'<p class="muted small">score: the mean of the per-JSONL pass rates (a test passes when most of its repeats pass); '
               f"{pct} interval: {summary.bootstrap_samples} bootstrap resamples within each JSONL file (seed {summary.seed}). "
               "FAILED (errors): the candidate has errors and the reference scores it 0.</p>")  # fmt: skip

    head = "".join(f'<th class="num">{esc(c.name)}</th>' for c in cands)
    out.append(
        f'<h3>By JSONL file</h3><div class="scroll"><table id="by-jsonl"><tr><th>JSONL file</th><th class="num">tests</th>{head}</tr>'
    )
    for g in sorted({g for c in cands for g in c.by_jsonl}):
        n = max(c.by_jsonl.get(g, (0, 0))[1] for c in cands)
        cells = []
        for c in cands:
            p, t = c.by_jsonl.get(g, (0, 0))
            cells.append(
                f'<td class="num" data-value="{p / t!r}">{_fmt_pct(p / t)} <span class="muted small">{p}/{t}</span></td>'
                if t
                else "<td></td>"
            )
        out.append(f'<tr data-key="{esc(g)}"><td>{esc(g)}</td><td class="num">{n}</td>{"".join(cells)}</tr>')
    out.append("</table></div>")
    out.append(f'<h3>By test type <span class="muted small">(the mean over tests of the share of repeats passed)</span></h3>'
               f'<div class="scroll"><table id="by-type"><tr><th>type</th><th class="num">tests</th>{head}</tr>')  # fmt: skip
    for kind in sorted({k for c in cands for k in c.by_type}):
        n = max(c.by_type.get(kind, (0.0, 0))[1] for c in cands)
        cells = []
        for c in cands:
            s, m = c.by_type.get(kind, (0.0, 0))
            cells.append(f'<td class="num" data-value="{s!r}">{_fmt_pct(s)}</td>' if m else "<td></td>")
        out.append(f'<tr data-key="{esc(kind)}"><td>{esc(kind)}</td><td class="num">{n}</td>{"".join(cells)}</tr>')
    out.append("</table></div>")
    for c in cands:
        if c.errors:
            more = f"<li>… and {len(c.errors) - 20} more (bench --json lists them)</li>" if len(c.errors) > 20 else ""
            out.append(f'<details><summary class="bad">{esc(c.name)}: {len(c.errors)} error(s)</summary><ul>'
                       + "".join(f"<li>{esc(e)}</li>" for e in c.errors[:20]) + more + "</ul></details>")  # fmt: skip
    out.append("</section>")

    if comparisons:
        out.append('<section id="compare"><h2>Comparison</h2><div class="controls"><label>pair <select id="f-pair">'
                   + "".join(f'<option value="{k}">{esc(c.b)} − {esc(c.a)}</option>' for k, c in enumerate(comparisons))
                   + f'</select></label><span class="muted small">paired over tests: {pct} interval of {summary.bootstrap_samples} '
                   "bootstrap resamples of tests within each JSONL file, the same tests for both; differences in percentage points"
                   "</span></div>")  # fmt: skip
        for k, c in enumerate(comparisons):
            out.append(f'<div class="pair{" cur" if k == 0 else ""}" data-pair="{k}"><div class="scroll"><table class="cmp">'
                       f'<tr><th></th><th class="num">tests</th><th class="num">A: {esc(c.a)}</th><th class="num">B: {esc(c.b)}</th>'
                       f'<th class="num">B − A</th><th class="num">{pct} interval</th><th class="num">gained</th><th class="num">lost</th></tr>')  # fmt: skip
            sections = [("JSONL file", c.by_jsonl), ("type", c.by_type), ("", [c.overall])]
            for kind, rows in sections:
                for d in rows:
                    label = "score" if not kind else f'{esc(d.name)} <span class="muted small">{kind}</span>'
                    out.append(f'<tr class="{"total" if not kind else ""}" data-kind="{kind or "score"}" data-key="{esc(d.name)}" '
                               f'data-diff="{d.diff!r}" data-ci="{d.ci[0]!r},{d.ci[1]!r}" data-gained="{d.gained}" data-lost="{d.lost}">'
                               f'<td>{label}</td><td class="num">{d.tests}</td><td class="num">{_fmt_pct(d.a)}</td><td class="num">{_fmt_pct(d.b)}</td>'
                               f'<td class="num {_sign(d.diff)}">{_points(d.diff)}</td><td class="num">{_points(d.ci[0])} … {_points(d.ci[1])}</td>'
                               f'<td class="num">{d.gained}</td><td class="num">{d.lost}</td></tr>')  # fmt: skip
            out.append("</table></div>")
            o = c.overall
            if o.ci[0] > 0 or o.ci[1] < 0:
                verdict = f"{esc(c.b)} scores {'higher' if o.ci[0] > 0 else 'lower'} than {esc(c.a)}: the interval excludes 0"
            else:
                verdict = "no clear difference: the interval includes 0"
            out.append(f"<p><b>{_points(o.diff)} points</b> ({_points(o.ci[0])} … {_points(o.ci[1])}): {verdict}; "
                       f"{o.gained} tests pass only in {esc(c.b)}, {o.lost} only in {esc(c.a)}.</p>")  # fmt: skip
            out.extend(f'<p class="bad small">{esc(n)}</p>' for n in c.notes)
            out.append("</div>")
        out.append('<details id="flips"></details></section>')
    return "".join(out)


def _pages_html(types: list[str], jsonls: list[str], cands: list[Any]) -> str:
    def select(name: str, label: str, options: list[tuple[str, str]]) -> str:
        opts = "".join(f'<option value="{esc(v)}">{esc(t)}</option>' for v, t in options)
        return f'<label>{label} <select id="f-{name}">{opts}</select></label>'

    shows = [("fail", "pages with failing tests"), ("all", "all pages"), ("error", "tests with errors")]
    if len(cands) > 1:
        shows.insert(0, ("flip", "tests that flip between the pair"))
    return ('<section id="pages"><h2>Pages</h2><div class="filters controls">'
            + select("show", "show", shows)
            + select("cand", "failing for", [("any", "any candidate")] + [(str(k), c.name) for k, c in enumerate(cands)])
            + select("type", "type", [("all", "all")] + [(t, t) for t in types])
            + select("jsonl", "JSONL file", [("all", "all")] + [(j, j) for j in jsonls])
            + '<label>search <input id="f-q" type="search" placeholder="test id or PDF"></label>'
            + '<span id="count" class="muted"></span><span class="muted small">keys: j / k next / previous</span></div>'
            + '<div class="split"><ul id="toc"></ul><div id="detail"><p class="muted">loading…</p></div></div></section>'
            + '<div id="lightbox" title="click or Esc to close"><img id="lightimg" alt="the page, full size"></div>')  # fmt: skip


def bench_report(
    summary: Any,
    path: str | os.PathLike[str],
    *,
    max_reports: int | None = None,
    comparisons: list[Any] | None = None,
    workers: int | None = None,
    image_side: int = IMAGE_SIDE,
    image_quality: int = IMAGE_QUALITY,
) -> Path:
    """Writes the report (needs `run_bench(..., keep_details=True)`): `path` and its folder
    `<stem>_files/` beside it, each through a temporary name. `comparisons`: default every pair
    of candidates (`compare_summary(..., all_pairs=True)`). `workers`: processes rendering the
    page images (default: the cores)."""
    from olmocr_rl import __version__
    from olmocr_rl.bench.compare import compare_summary

    out = Path(path)
    files_dir = out.with_name(out.stem + "_files")
    bench = summary.bench
    cands = summary.candidates
    if any(not c.details and any(o.md_files for o in c.outcomes) for c in cands):
        raise ValueError("the bench report needs each (test, page file) verdict: run_bench(..., keep_details=True)")
    if comparisons is None:
        comparisons = compare_summary(summary, all_pairs=True) if len(cands) > 1 else []
    shown = _shown_pages(summary, max_reports)
    tests = [t for ts in shown.values() for t in ts]
    index = {t.id: i for i, t in enumerate(tests)}
    types = sorted({t.type for t in bench.tests})
    jsonls = sorted(set(bench.group.values()))
    records = _records(tests)

    pages = []
    page_of: dict[str, int] = {}
    for i, ((pdf, page), ts) in enumerate(shown.items()):
        pages.append([pdf, page, None, [index[t.id] for t in ts], i // TEXT_CHUNK])
        for t in ts:
            page_of[t.id] = i
    data_tests = [
        [t.id, types.index(t.type), jsonls.index(bench.group[t.id]), page_of[t.id], definition(r)] for t, r in zip(tests, records)
    ]

    verdicts, why, md = [], [], []
    for c in cands:
        v = [""] * len(tests)
        w: dict[int, list[list[Any]]] = {}
        m: list[list[str]] = [[] for _ in pages]
        rows_by_test: dict[str, list[dict]] = defaultdict(list)
        for row in c.details:
            rows_by_test[row["id"]].append(row)
        for o in c.outcomes:
            j = index.get(o.id)
            if j is None:
                continue
            i = page_of[o.id]
            if len(o.md_files) > len(m[i]):
                m[i] = list(o.md_files)
            marks, expl = [], []
            for row in rows_by_test.get(o.id, []):
                if row["md"] is None:
                    expl.append([-1, row["explanation"]])
                    continue
                r = o.md_files.index(row["md"])
                marks.append("1" if row["passed"] else "e" if row.get("error") else "0")
                if not row["passed"]:
                    expl.append([r, row["explanation"]])
            v[j] = "".join(marks)
            if expl:
                w[j] = expl
        verdicts.append(v)
        why.append(w)
        md.append(m)

    known = set(bench.pdf_keys)
    with staged_folder(files_dir) as stage:
        (stage / "img").mkdir()
        (stage / "text").mkdir()
        jobs = []
        for i, pg in enumerate(pages):
            pdf, page = pg[0], pg[1]
            number = int(page) if isinstance(page, str) and page.isdigit() else page
            # Only the PDFs found in pdfs/: a test's "pdf" is data, never a way out of the folder.
            if isinstance(number, int) and number >= 1 and pdf in known:
                jobs.append(
                    (i, (str(Path(bench.root) / "pdfs" / pdf), number, str(stage / "img" / f"{i}.webp"), image_side, image_quality))
                )
        done = _render_all([j for _, j in jobs], workers)
        for (i, _), ok in zip(jobs, done):
            if ok:
                pages[i][2] = f"img/{i}.webp"
        for start in range(0, len(pages), TEXT_CHUNK):
            chunk = []
            for i in range(start, min(start + TEXT_CHUNK, len(pages))):
                per_cand = []
                for k, c in enumerate(cands):
                    seen: dict[str, int] = {}
                    texts: list[Any] = []
                    for r, f in enumerate(md[k][i]):
                        try:
                            text = (Path(bench.root) / c.name / f).read_text(encoding="utf-8", errors="replace")
                        except OSError as e:
                            text = f"(cannot read {f}: {e.strerror or e})"
                        texts.append(seen[text] if text in seen else text)
                        seen.setdefault(text, r)
                    per_cand.append(texts)
                chunk.append(per_cand)
            # gzip + base64 (the page inflates it with DecompressionStream): a third of the size.
            packed = base64.b64encode(gzip.compress(script_json(chunk).encode(), compresslevel=6, mtime=0)).decode()
            (stage / "text" / f"{start // TEXT_CHUNK}.js").write_text(
                f'window.reportText({start // TEXT_CHUNK},"{packed}");\n', encoding="utf-8"
            )
        data = {
            "files": files_dir.name,
            "chunk": TEXT_CHUNK,
            "cands": [{"name": c.name, "failed": c.failed} for c in cands],
            "types": types,
            "jsonls": jsonls,
            "pages": pages,
            "tests": data_tests,
            "verdicts": verdicts,
            "why": why,
            "md": md,
            "pairs": [{"a": [c.name for c in cands].index(p.a), "b": [c.name for c in cands].index(p.b)} for p in comparisons],
        }
        (stage / "data.js").write_text(f"window.REPORT_DATA={script_json(data)};\n", encoding="utf-8")

        opts = summary.options or {}
        has_math = any(t.type == "math" for t in bench.tests)
        facts = [
            ("bench folder", str(bench.root)),
            ("test files", ", ".join(f.name for f in bench.jsonl_files)),
            ("PDFs", f"{len(bench.pdf_keys)}"),
            ("tests scored", f"{len(bench.tests)}" + (f" of {opts['tests_available']}" if opts.get("sample") else "")),
            ("candidates", ", ".join(c.name for c in cands)),
            ("olmocr-rl", __version__),
            ("math rendering", _katex_fact(has_math)),
            ("written", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ]
        notes = []
        if opts.get("sample"):
            notes.append(f"--sample {opts['sample']}: only {len(bench.tests)} of the {opts['tests_available']} tests were scored "
                         f"(drawn with seed {summary.seed}); every figure is the sample's.")  # fmt: skip
        if opts.get("skip_baseline"):
            notes.append("--skip-baseline: the baseline tests (the auto-added ones included) were dropped.")
        if opts.get("force"):
            notes.append("--force: pages without tests were allowed.")
        if max_reports is not None:
            notes.append(f"--max-reports {max_reports}: the page list holds at most {max_reports} PDFs per JSONL file: {len(pages)} of "
                         f"{len({(t.pdf, str(t.page)) for t in bench.tests})} pages and {len(tests)} of {len(bench.tests)} tests; "
                         "the summary and comparison cover every test.")  # fmt: skip
        if bench.warnings:
            notes.append(f"{len(bench.warnings)} warning(s); first: {bench.warnings[0]}")
        body = _summary_html(summary, comparisons, facts, notes) + _pages_html(types, jsonls, cands)
        head = f'<script defer src="{esc(files_dir.name)}/data.js"></script>'
        page = document(
            "olmOCR-bench report",
            body,
            style=asset("base.css") + asset("bench.css"),
            script=asset("bench.js"),
            head=head,
            files=files_dir.name,
        )
        page = page.replace("<body>", f'<body data-files="{esc(files_dir.name)}">', 1)
    write_text(out, page)
    return out
