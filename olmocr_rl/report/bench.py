"""`olmocr-rl bench --report NAME.html`: NAME.html with its assets in NAME_files/ beside it.

NAME.html holds what a researcher reads first, as plain HTML: the run's facts (bench folder,
versions, date, the options that change what is scored or shown), each candidate's score with its
interval, per-JSONL and per-type tables, and with two or more candidates the paired comparison of
each pair (`olmocr_rl.bench.compare`: with `--compare`, the pairs it prints; else every pair, B − A
with A named first), candidates in the summary's order (as `-c` named them). Below, the pages: a
list with filters (failing tests, tests that flip between the chosen pair, errors; candidate, test
type, JSONL file, a search) and one page at a time: its image (click to enlarge), every test with
its definition and each candidate's verdict per repeat with every failing repeat's explanation,
and the candidates' texts side by side.

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
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import staged_folder, write_text
from olmocr_rl.bench.stats import NO_INTERVAL
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


def _fmt_pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


_SIGNIFICANCE = {1: "pos", -1: "neg", 0: "unclear"}  # the class of a B − A: by its interval, not its sign


def _header_html(summary: Any, comparisons: list[Any]) -> str:
    """What a researcher reads first: each pair's verdict (with one candidate, its score), then
    every choice that changed the scores (`olmocr_rl.bench.results.semantics`)."""
    from olmocr_rl.bench.compare import significance, verdict
    from olmocr_rl.bench.output import score_line
    from olmocr_rl.bench.results import describe_semantics

    b = summary.bench
    out = [f'<h1>olmOCR-bench report</h1><p class="sub">{esc(b.root)}</p><section id="verdicts">']
    for k, c in enumerate(comparisons):
        out.append(f'<p class="answer {_SIGNIFICANCE[significance(c.overall)]}" data-pair="{k}">{esc(verdict(c))}</p>')
    if not comparisons:  # each candidate's score, as the console's first lines state it
        for c in summary.candidates:
            out.append(f'<p class="answer" data-cand="{esc(c.name)}">{esc(score_line(c, summary.confidence_level))}</p>')
    sem = summary.semantics
    lines = describe_semantics(sem)
    guarded = sem["guard"] != "none"
    out.append(f'</section><section id="semantics" data-guard="{esc(sem["guard"])}"><h2>Scored with</h2><ul>'
               f'<li class="{"warn" if guarded else ""}" data-choice="guard">{esc(lines[0])}</li>'
               + "".join(f'<li data-choice="{k}">{esc(line)}</li>' for k, line in zip(("sample", "skip_baseline", "pass_rule"), lines[1:]))
               + "</ul></section>")  # fmt: skip
    return "".join(out)


def _scores_html(summary: Any, loops: list[list[int]]) -> str:
    cands = summary.candidates
    pct = f"{summary.confidence_level * 100:g}%"
    out = ['<section id="summary"><h2>Summary</h2><div class="scroll"><table id="scores"><tr><th>candidate</th>'
           f'<th class="num">score</th><th class="num">{pct} interval</th><th class="num">±</th><th class="num">tests</th>'
           '<th class="num">pages</th><th class="num">loops</th><th>errors</th></tr>']  # fmt: skip
    for c, looping in zip(cands, loops):
        pages = len({(o.pdf, str(o.page)) for o in c.outcomes})
        if c.failed:
            score = f'<span class="bad">FAILED (errors)</span><br><span class="muted">{_fmt_pct(c.score_ignoring_errors)} ignoring errors</span>'
            half = ""
        else:
            score, half = esc(c.status), "" if c.ci is None else f"{(c.ci[1] - c.ci[0]) / 2 * 100:.1f}"
        first = f'<span class="muted small">{len(c.errors)}: {esc(c.errors[0])}</span>' if c.errors else "0"
        ci = "" if c.ci is None else f' data-ci="{c.ci[0]!r},{c.ci[1]!r}"'  # none without resamples
        shown = "—" if c.ci is None else f"{_fmt_pct(c.ci[0])} – {_fmt_pct(c.ci[1])}"  # (NO_INTERVAL below the table)
        out.append(f'<tr data-cand="{esc(c.name)}" data-score="{c.score!r}"{ci}><td>{esc(c.name)}</td>'
                   f'<td class="num">{score}</td><td class="num">{shown}</td><td class="num">{half}</td>'
                   f'<td class="num">{len(c.outcomes)}</td><td class="num">{pages}</td>'
                   f'<td class="num{" bad" if looping else ""}" data-loops="{len(looping)}">{len(looping)}</td><td class="errors">{first}</td></tr>')  # fmt: skip
    out.append("</table></div>")
    interval = (f"{pct} interval: {summary.bootstrap_samples} bootstrap resamples within each JSONL file (seed {summary.seed})"
                if summary.bootstrap_samples > 0 else NO_INTERVAL)  # fmt: skip
    out.append(f'<p class="muted small">score: the mean of the per-JSONL pass rates (a test passes when most of its repeats pass); '
               f"{esc(interval)}. "
               "FAILED (errors): the candidate has errors and the reference scores it 0. loops: pages with a file that ends in a "
               f"repetition loop, marked ⟳ in the page list (the loop stop's rule, one character a token: {esc(_loop_rule())}).</p>")  # fmt: skip
    head = "".join(f'<th class="num">{esc(c.name)}</th>' for c in cands)
    out.append('<h3>By JSONL file <span class="muted small">(pass rate: a test passes when more than half of its repeats pass)</span></h3>'
               f'<div class="scroll"><table id="by-jsonl"><tr><th>JSONL file</th><th class="num">tests</th>{head}</tr>')  # fmt: skip
    for g in sorted({g for c in cands for g in c.by_jsonl}):
        n = max(c.by_jsonl.get(g, (0, 0))[1] for c in cands)
        cells = [f'<td class="num" data-value="{p / t!r}">{_fmt_pct(p / t)} <span class="muted small">{p}/{t}</span></td>' if t else "<td></td>"
                 for p, t in (c.by_jsonl.get(g, (0, 0)) for c in cands)]  # fmt: skip
        out.append(f'<tr data-key="{esc(g)}"><td>{esc(g)}</td><td class="num">{n}</td>{"".join(cells)}</tr>')
    out.append("</table></div>")
    out.append(f'<h3>By test type <span class="muted small">(the mean over tests of the share of repeats passed)</span></h3>'
               f'<div class="scroll"><table id="by-type"><tr><th>type</th><th class="num">tests</th>{head}</tr>')  # fmt: skip
    for kind in sorted({k for c in cands for k in c.by_type}):
        n = max(c.by_type.get(kind, (0.0, 0))[1] for c in cands)
        cells = [
            f'<td class="num" data-value="{s!r}">{_fmt_pct(s)}</td>' if m else "<td></td>"
            for s, m in (c.by_type.get(kind, (0.0, 0)) for c in cands)
        ]
        out.append(f'<tr data-key="{esc(kind)}"><td>{esc(kind)}</td><td class="num">{n}</td>{"".join(cells)}</tr>')
    out.append("</table></div>")
    for c in cands:
        if c.errors:
            more = f"<li>… and {len(c.errors) - 20} more (bench --json lists them)</li>" if len(c.errors) > 20 else ""
            out.append(f'<details><summary class="bad">{esc(c.name)}: {len(c.errors)} error(s)</summary><ul>'
                       + "".join(f"<li>{esc(e)}</li>" for e in c.errors[:20]) + more + "</ul></details>")  # fmt: skip
    out.append("</section>")
    return "".join(out)


def _loop_rule() -> str:
    from olmocr_rl.loops import LoopRule

    return LoopRule().describe()


def _comparison_html(summary: Any, comparisons: list[Any]) -> str:
    """The pair chosen in the header's select: per JSONL file, per type and the score, each section
    stating the rule its figures follow; B − A coloured by whether its interval excludes 0."""
    from olmocr_rl.bench.compare import FILE_RULE, SIGNIFICANT, TYPE_RULE, interval_text, significance

    pct = f"{summary.confidence_level * 100:g}%"
    if summary.bootstrap_samples > 0:
        how = (f"paired over tests: {pct} interval of {summary.bootstrap_samples} bootstrap resamples of tests within each JSONL "
               f"file, the same tests for both; differences in percentage points; {SIGNIFICANT} and colour: the interval excludes 0")  # fmt: skip
    else:
        how = f"paired over tests; differences in percentage points; {NO_INTERVAL}"
    out = ['<section id="compare"><h2>Comparison</h2><div class="controls"><label>pair <select id="f-pair">'
           + "".join(f'<option value="{k}">{esc(c.b)} − {esc(c.a)}</option>' for k, c in enumerate(comparisons))
           + f'</select></label><span class="muted small">{esc(how)}</span></div>']  # fmt: skip
    for k, c in enumerate(comparisons):
        out.append(f'<div class="pair{" cur" if k == 0 else ""}" data-pair="{k}"><div class="scroll"><table class="cmp">'
                   f'<tr><th></th><th class="num">tests</th><th class="num">A: {esc(c.a)}</th><th class="num">B: {esc(c.b)}</th>'
                   f'<th class="num">B − A</th><th class="num">{pct} interval</th><th class="num">gained</th><th class="num">lost</th></tr>')  # fmt: skip
        sections = [("JSONL file", f"by JSONL file: {FILE_RULE}", c.by_jsonl), ("type", f"by test type: {TYPE_RULE}", c.by_type),
                    ("", "the score: the mean of the JSONL files' pass rates", [c.overall])]  # fmt: skip
        for kind, rule, rows in sections:
            out.append(f'<tr class="sect"><td colspan="8">{esc(rule)}</td></tr>')
            for d in rows:
                sig = significance(d)
                mark = SIGNIFICANT if sig else ""
                label = "score" if not kind else f'{esc(d.name)} <span class="muted small">{kind}</span>'
                ci = "" if d.ci is None else f' data-ci="{d.ci[0]!r},{d.ci[1]!r}"'
                out.append(f'<tr class="{"total" if not kind else ""}" data-kind="{kind or "score"}" data-key="{esc(d.name)}" '
                           f'data-diff="{d.diff!r}"{ci} data-gained="{d.gained}" data-lost="{d.lost}">'
                           f'<td>{label}</td><td class="num">{d.tests}</td><td class="num">{_fmt_pct(d.a)}</td><td class="num">{_fmt_pct(d.b)}</td>'
                           f'<td class="num diff {_SIGNIFICANCE[sig]}">{_points(d.diff)}{mark}</td><td class="num">{"—" if d.ci is None else esc(interval_text(d))}</td>'
                           f'<td class="num">{d.gained}</td><td class="num">{d.lost}</td></tr>')  # fmt: skip
        out.append("</table></div>")
        out.extend(f'<p class="bad small">{esc(n)}</p>' for n in c.notes)
        out.append("</div>")
    out.append('<details id="flips"></details></section>')
    return "".join(out)


def _run_html(facts: list[tuple[str, str]], notes: list[str]) -> str:
    out = ['<section id="run"><h2>Run</h2><dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>"]
    if notes:
        out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    out.append("</section>")
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


def _verdicts(cands: list[Any], index: dict[str, int], page_of: dict[str, int], pages: int) -> tuple[list, list, list]:
    """Per candidate: each shown test's marks ("1" passed, "0" failed, "e" error, one per repeat),
    the explanations of its failing repeats ([repeat or -1, text]) and each page's md files."""
    verdicts, why, md = [], [], []
    for c in cands:
        v = [""] * len(index)
        w: dict[int, list[list[Any]]] = {}
        m: list[list[str]] = [[] for _ in range(pages)]
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
    return verdicts, why, md


def _write_images(stage: Path, bench: Any, pages: list[list[Any]], workers: int | None, side: int, quality: int) -> None:
    """Each shown page's image (img/<i>.webp), its name set in `pages`; only the PDFs found in
    pdfs/ are rendered: a test's "pdf" is data, never a way out of the folder."""
    known = set(bench.pdf_keys)
    jobs = []
    for i, (pdf, page, *_) in enumerate(pages):
        number = int(page) if isinstance(page, str) and page.isdigit() else page
        if isinstance(number, int) and number >= 1 and pdf in known:
            jobs.append((i, (str(Path(bench.root) / "pdfs" / pdf), number, str(stage / "img" / f"{i}.webp"), side, quality)))
    for (i, _), ok in zip(jobs, _render_all([j for _, j in jobs], workers)):
        if ok:
            pages[i][2] = f"img/{i}.webp"


def _write_texts(stage: Path, bench: Any, cands: list[Any], md: list[list[list[str]]], pages: int) -> list[list[int]]:
    """The candidates' texts, TEXT_CHUNK pages a file (text/<k>.js), a repeat equal to an earlier
    one written as its index; gzip + base64 (the page inflates it with DecompressionStream): a
    third of the size. Returns, per candidate, the pages with a file the loop stop's detector calls
    a repetition loop (olmocr_rl/loops.py, its default rule, one character a token)."""
    from olmocr_rl.loops import LoopRule

    rule = LoopRule()
    loops: list[list[int]] = [[] for _ in cands]
    for start in range(0, pages, TEXT_CHUNK):
        chunk = []
        for i in range(start, min(start + TEXT_CHUNK, pages)):
            per_cand = []
            for k, c in enumerate(cands):
                seen: dict[str, int] = {}
                texts: list[Any] = []
                for r, f in enumerate(md[k][i]):
                    try:
                        text = (Path(bench.root) / c.name / f).read_text(encoding="utf-8", errors="replace")
                    except OSError as e:
                        text = f"(cannot read {f}: {e.strerror or e})"
                    if text not in seen and rule.find_text(text) is not None and (not loops[k] or loops[k][-1] != i):
                        loops[k].append(i)
                    texts.append(seen[text] if text in seen else text)
                    seen.setdefault(text, r)
                per_cand.append(texts)
            chunk.append(per_cand)
        packed = base64.b64encode(gzip.compress(script_json(chunk).encode(), compresslevel=6, mtime=0)).decode()
        (stage / "text" / f"{start // TEXT_CHUNK}.js").write_text(
            f'window.reportText({start // TEXT_CHUNK},"{packed}");\n', encoding="utf-8"
        )
    return loops


def _facts(summary: Any, max_reports: int | None, shown_pages: int, shown_tests: int) -> tuple[list[tuple[str, str]], list[str]]:
    """The Run section: the run's facts, and notes on what the options left out (the choices that
    change scores are in the header, `_header_html`)."""
    from olmocr_rl._core import __version__

    bench, opts = summary.bench, summary.options or {}
    facts = [
        ("bench folder", str(bench.root)),
        ("test files", ", ".join(f.name for f in bench.jsonl_files)),
        ("PDFs", f"{len(bench.pdf_keys)}"),
        ("tests scored", f"{len(bench.tests)}" + (f" of {opts['tests_available']}" if opts.get("sample") else "")),
        ("candidates", ", ".join(c.name for c in summary.candidates)),
        ("olmocr-rl", __version__),
        ("math rendering", _katex_fact(any(t.type == "math" for t in bench.tests))),
        ("written", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
    ]
    notes = []
    if opts.get("force"):
        notes.append("--force: pages without tests were allowed.")
    if max_reports is not None:
        notes.append(f"--max-reports {max_reports}: the page list holds at most {max_reports} PDFs per JSONL file: {shown_pages} of "
                     f"{len({(t.pdf, str(t.page)) for t in bench.tests})} pages and {shown_tests} of {len(bench.tests)} tests; "
                     "the summary and comparison cover every test.")  # fmt: skip
    if bench.warnings:
        notes.append(f"{len(bench.warnings)} warning(s); first: {bench.warnings[0]}")
    return facts, notes


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
    `<stem>_files/` beside it, each through a temporary name. `comparisons`: those the console
    printed (`bench --compare`), default every pair of candidates (`compare_summary(...,
    all_pairs=True)`, in the summary's order). `workers`: processes rendering the
    page images (default: the cores)."""
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
    pages = []
    page_of: dict[str, int] = {}
    for i, ((pdf, page), ts) in enumerate(shown.items()):
        pages.append([pdf, page, None, [index[t.id] for t in ts], i // TEXT_CHUNK])
        page_of.update((t.id, i) for t in ts)
    # The suite's own records: no test file is read again.
    data_tests = [[t.id, types.index(t.type), jsonls.index(bench.group[t.id]), page_of[t.id], definition(bench.suite.record(t.id))]
                  for t in tests]  # fmt: skip
    verdicts, why, md = _verdicts(cands, index, page_of, len(pages))
    names = [c.name for c in cands]
    with staged_folder(files_dir) as stage:
        (stage / "img").mkdir()
        (stage / "text").mkdir()
        _write_images(stage, bench, pages, workers, image_side, image_quality)
        loops = _write_texts(stage, bench, cands, md, len(pages))
        data = {"files": files_dir.name, "chunk": TEXT_CHUNK, "cands": [{"name": c.name, "failed": c.failed} for c in cands],
                "types": types, "jsonls": jsonls, "pages": pages, "tests": data_tests, "verdicts": verdicts, "why": why, "md": md,
                "pairs": [{"a": names.index(p.a), "b": names.index(p.b)} for p in comparisons], "loops": loops}  # fmt: skip
        (stage / "data.js").write_text(f"window.REPORT_DATA={script_json(data)};\n", encoding="utf-8")
        facts, notes = _facts(summary, max_reports, len(pages), len(tests))
        body = (_header_html(summary, comparisons) + _scores_html(summary, loops) + (_comparison_html(summary, comparisons) if comparisons else "")
                + _run_html(facts, notes) + _pages_html(types, jsonls, cands))  # fmt: skip
        page = document("olmOCR-bench report", body, style=asset("base.css") + asset("bench.css"), script=asset("bench.js"),
                        head=f'<script defer src="{esc(files_dir.name)}/data.js"></script>', files=files_dir.name)  # fmt: skip
        page = page.replace("<body>", f'<body data-files="{esc(files_dir.name)}">', 1)
    write_text(out, page)
    return out
