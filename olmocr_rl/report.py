"""Static HTML reports, one self-contained file each (styles, scripts and images inlined; the page
makes no network request):

* `bench_report(summary, path)`: `olmocr-rl bench --report FILE.html`. For each candidate, each
  page's rendered image beside its tests (pass/fail per repeat, the explanation of each failed
  repeat) and the candidate's text; pages with failures first; filters by status, test type and
  JSONL file.
* `run_report(run_dir, path)`: `olmocr-rl report RUN_DIR`. A training run at a glance: reward and
  per-type pass-rate curves over steps (train and eval, drawn as inline SVG), the resolved config,
  and the failing completions with their page image and failed tests.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}
.filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd;z-index:1}
.page{display:flex;gap:1em;border:1px solid #ddd;margin:1em 0;padding:.5em}
.page img{max-width:420px;max-height:560px;border:1px solid #eee;flex:none}
.page .body{flex:1;min-width:0}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eee;padding:2px 6px;text-align:left;vertical-align:top}
.rep{display:inline-block;width:1.3em;text-align:center;font-weight:bold}
.rep.pass{color:#1a7f37}.rep.fail{color:#cf222e}
tr.fail td.id{color:#cf222e}pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em;max-height:24em;overflow:auto}
.muted{color:#777}svg{background:#fff;border:1px solid #ddd;margin:.5em 1em .5em 0}
"""

FILTER_SCRIPT = """
function applyFilters(){
  const st=document.getElementById('f-status').value, ty=document.getElementById('f-type').value,
        js=document.getElementById('f-jsonl').value;
  document.querySelectorAll('section.page').forEach(p=>{
    let shown=0;
    p.querySelectorAll('tr.test').forEach(r=>{
      const ok=(st==='all'||r.dataset.status===st)&&(ty==='all'||r.dataset.type===ty)&&(js==='all'||r.dataset.jsonl===js);
      r.style.display=ok?'':'none'; if(ok) shown++;
    });
    p.style.display=shown?'':'none';
  });
}
document.querySelectorAll('.filters select').forEach(s=>s.addEventListener('change',applyFilters));
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def png_data_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def render_page(pdf: str | os.PathLike[str], page: int, longest: int = 900) -> bytes | None:
    """The page as PNG bytes (pdfium, longest side `longest` px); None when it cannot be rendered."""
    try:
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(pdf))
        try:
            p = doc[int(page) - 1]
            w, h = p.get_size()
            bitmap = p.render(scale=longest / max(w, h, 1))
            buf = io.BytesIO()
            bitmap.to_pil().save(buf, format="PNG", optimize=True)
            return buf.getvalue()
        finally:
            doc.close()
    except Exception:  # noqa: BLE001 - an unrenderable page is shown without its image
        return None


def _select(name: str, label: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)
    return f'<label>{label} <select id="f-{name}"><option value="all">all</option>{opts}</select></label> '


def _document(title: str, body: str, script: str = "") -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src \'unsafe-inline\'; script-src \'unsafe-inline\'">'
            f"<style>{STYLE}</style></head><body>{body}<script>{script}</script></body></html>")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# bench


def bench_report(summary: Any, path: str | os.PathLike[str], *, max_reports: int | None = None) -> Path:
    """Writes the bench report (needs `run_bench(..., keep_details=True)`). `max_reports`: at
    most that many PDFs per JSONL file (the reference's `--max_reports`)."""
    bench = summary.bench
    images: dict[tuple[str, int], str | None] = {}
    types = sorted({t.type for t in bench.tests})
    jsonls = sorted(set(bench.group.values()))
    parts = [f"<h1>olmOCR-bench report: {_e(bench.root)}</h1>",
             '<div class="filters">' + _select("status", "status", ["fail", "pass"]) + _select("type", "type", types)
             + _select("jsonl", "JSONL file", jsonls) + "</div>"]  # fmt: skip
    for cand in summary.candidates:
        parts.append(f"<h2>{_e(cand.name)}: {_e(cand.status)}</h2>")
        if cand.errors:
            parts.append(f'<p class="muted">{len(cand.errors)} error(s), first: {_e(cand.errors[0])}</p>')
        by_test: dict[str, list[dict]] = defaultdict(list)
        for row in cand.details:
            by_test[row["id"]].append(row)
        pages: dict[tuple[str, Any], list[Any]] = defaultdict(list)
        for o in cand.outcomes:
            pages[(o.pdf, o.page)].append(o)
        if max_reports is not None:
            keep: dict[str, list[str]] = defaultdict(list)
            for (pdf, _), outs in sorted(pages.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
                for g in {o.group for o in outs}:
                    if pdf not in keep[g] and len(keep[g]) < max_reports:
                        keep[g].append(pdf)
            allowed = {(g, p) for g, ps in keep.items() for p in ps}
            pages = {k: [o for o in v if (o.group, k[0]) in allowed] for k, v in pages.items()}
            pages = {k: v for k, v in pages.items() if v}

        def failures(item: tuple[tuple[str, Any], list[Any]]) -> tuple:
            (pdf, page), outs = item
            return (-sum(not o.passed for o in outs), str(pdf), str(page))

        folder = Path(bench.root) / cand.name
        for (pdf, page), outs in sorted(pages.items(), key=failures):
            if (pdf, page) not in images:
                data = render_page(Path(bench.root) / "pdfs" / pdf, int(page)) if str(page).isdigit() else None
                images[(pdf, page)] = png_data_uri(data) if data else None
            img = images[(pdf, page)]
            rows = []
            md_files: list[str] = []
            for o in outs:
                marks = "".join(
                    f'<span class="rep {"pass" if r["passed"] else "fail"}" title="{_e(r["md"] or "no page file")}">{"✓" if r["passed"] else "✗"}</span>'
                    for r in by_test.get(o.id, [])
                    if r["passed"] is not None
                )
                why = next((r["explanation"] for r in by_test.get(o.id, []) if r["passed"] is False), "")
                status = "pass" if o.passed else "fail"
                rows.append(f'<tr class="test {status}" data-status="{status}" data-type="{_e(o.type)}" data-jsonl="{_e(o.group)}">'
                            f'<td class="id">{_e(o.id)}</td><td>{_e(o.type)}</td><td>{marks}</td><td>{_e(why)}</td></tr>')  # fmt: skip
                md_files = md_files or o.md_files
            texts = []
            for i, f in enumerate(md_files):
                try:
                    text = (folder / f).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = "(unreadable)"
                body = f"<pre>{_e(text)}</pre>"
                texts.append(body if i == 0 else f"<details><summary>{_e(f)}</summary>{body}</details>")
            n_fail = sum(not o.passed for o in outs)
            parts.append(
                f'<section class="page" data-status="{"fail" if n_fail else "pass"}">'
                + (f'<img alt="{_e(pdf)} page {_e(page)}" src="{img}">' if img else '<p class="muted">(no image)</p>')
                + f'<div class="body"><h3>{_e(pdf)} page {_e(page)}: {n_fail} of {len(outs)} tests failed</h3>'
                + f"<table><tr><th>test</th><th>type</th><th>repeats</th><th>explanation</th></tr>{''.join(rows)}</table>"
                + (f"<h4>{_e(md_files[0])}</h4>{''.join(texts)}" if md_files else '<p class="muted">no page files</p>')
                + "</div></section>"
            )
    out = Path(path)
    out.write_text(_document("olmOCR-bench report", "".join(parts), FILTER_SCRIPT), encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# a training run


COLORS = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#57606a", "#e16f24", "#0a3069"]


def svg_chart(title: str, series: dict[str, list[tuple[float, float]]], *, width: int = 520, height: int = 260) -> str:
    """A line chart of (step, value) series, as inline SVG with axes and a legend."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return ""
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(0.0, min(p[1] for p in pts)), max(1.0, max(p[1] for p in pts))
    left, right, top, bottom = 44, 150, 24, 30
    pw, ph = width - left - right, height - top - bottom

    def x(v: float) -> float:
        return left + (pw * (v - x0) / (x1 - x0) if x1 > x0 else pw / 2)

    def y(v: float) -> float:
        return top + ph - ph * (v - y0) / (y1 - y0)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{_e(title)}">',
           f'<text x="{left}" y="16" font-size="13" font-weight="bold">{_e(title)}</text>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#999"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#999"/>']  # fmt: skip
    for v in (y0, (y0 + y1) / 2, y1):
        out.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:g}</text>')
    for v in (x0, x1):
        out.append(f'<text x="{x(v):.1f}" y="{height - 10}" font-size="10" text-anchor="middle">{v:g}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 1}" font-size="10" text-anchor="middle">step</text>')
    for i, (name, s) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        s = sorted(s)
        if len(s) == 1:
            out.append(f'<circle cx="{x(s[0][0]):.1f}" cy="{y(s[0][1]):.1f}" r="3" fill="{color}"/>')
        else:
            pts_ = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in s)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts_}"/>')
        out.append(f'<text x="{left + pw + 8}" y="{top + 12 + 14 * i}" font-size="11" fill="{color}">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _series(logs: list[dict], keys: Sequence[str]) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for k in keys:
        pts = [(float(r["step"]), float(r[k])) for r in logs if k in r and "step" in r and isinstance(r[k], (int, float))]
        if pts:
            out[_label(k)] = pts
    return out


def _label(key: str) -> str:
    """A legend name: `bench/present/pass_rate` -> `present`, `rewards/medoid/mean` -> `medoid`."""
    for prefix, suffix in (("eval_bench/", "/pass_rate"), ("bench/", "/pass_rate"), ("rewards/", "/mean")):
        if key.startswith(prefix) and key.endswith(suffix):
            return key[len(prefix) : -len(suffix)]
    return key


def run_report(run_dir: str | os.PathLike[str], path: str | os.PathLike[str] | None = None, *, max_completions: int = 40) -> Path:
    """Writes RUN_DIR/report.html (or `path`) for a training run's output folder."""
    run = Path(run_dir)
    metrics = run / "logs" / "metrics.jsonl"
    if not metrics.is_file():
        raise FileNotFoundError(f"{run}: no logs/metrics.jsonl (is this an `olmocr-rl train` output folder?)")
    logs = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines() if line.strip()]
    config = json.loads((run / "train_config.json").read_text(encoding="utf-8")) if (run / "train_config.json").is_file() else {}
    keys = sorted({k for r in logs for k in r})
    train_types = [k for k in keys if k.startswith("bench/") and k.endswith("/pass_rate") and "/jsonl/" not in k]
    eval_types = [k for k in keys if k.startswith("eval_bench/") and k.endswith("/pass_rate") and "/jsonl/" not in k]
    rewards = [k for k in ("reward", "eval_reward") if k in keys] + [k for k in keys if k.startswith("rewards/") and k.endswith("/mean")]
    charts = [svg_chart("reward", _series(logs, rewards)), svg_chart("train pass rate by test type", _series(logs, train_types)),
              svg_chart("eval pass rate by test type", _series(logs, eval_types))]  # fmt: skip
    steps = [r["step"] for r in logs if "step" in r]
    parts = [f"<h1>Training run: {_e(run)}</h1>",
             f'<p>{len(steps) and max(steps)} steps logged; model {_e(config.get("model", "?"))}; '
             f'prepared data {_e(config.get("prepared_dir", "?"))}</p>',
             "<h2>Curves</h2>" + "".join(c for c in charts if c)]  # fmt: skip

    failing = []
    for f in sorted((run / "completions").glob("failing_*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                failing.append(json.loads(line))
    failing.sort(key=lambda r: (-int(r.get("step") or 0), r.get("reward") or 0))
    images = _prepared_images(config.get("prepared_dir"), {(r.get("pdf"), r.get("page")) for r in failing[:max_completions]})
    parts.append(f"<h2>Failing completions ({len(failing)} recorded; the latest {min(len(failing), max_completions)} shown)</h2>")
    for r in failing[:max_completions]:
        img = images.get((r.get("pdf"), r.get("page")))
        tests = "".join(f'<tr class="test fail"><td class="id">{_e(t["id"])}</td><td>{_e(t["type"])}</td><td>{_e(t["explanation"])}</td></tr>'
                        for t in r.get("failed", []))  # fmt: skip
        parts.append(
            '<section class="page">'
            + (f'<img alt="{_e(r.get("pdf"))} page {_e(r.get("page"))}" src="{img}">' if img else '<p class="muted">(no image)</p>')
            + f'<div class="body"><h3>{_e(r.get("mode"))} step {_e(r.get("step"))}: {_e(r.get("pdf"))} page {_e(r.get("page"))}, '
            + f"reward {r.get('reward', 0):.3f} ({_e(r.get('passed'))}/{_e(r.get('total'))} tests)</h3>"
            + f"<table><tr><th>failed test</th><th>type</th><th>explanation</th></tr>{tests}</table>"
            + f"<pre>{_e(r.get('completion', ''))}</pre></div></section>"
        )
    parts.append(f"<h2>Resolved config</h2><pre>{_e(json.dumps(config, indent=2))}</pre>")
    out = Path(path) if path else run / "report.html"
    out.write_text(_document(f"Training run {run.name}", "".join(parts)), encoding="utf-8")
    return out


def _prepared_images(prepared_dir: str | None, wanted: set) -> dict[tuple[str, int], str]:
    """(pdf, page) -> the prepared page image as a data URI, for the `wanted` pages."""
    if not prepared_dir:
        return {}
    root = Path(prepared_dir)
    out: dict[tuple[str, int], str] = {}
    for split in root.glob("*.jsonl"):
        for line in split.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                key = (row["pdf"], int(row["page"]))
                if key not in wanted or key in out:
                    continue
                out[key] = png_data_uri((root / row["image"]).read_bytes())
            except (ValueError, KeyError, OSError, TypeError):
                continue
    return out
