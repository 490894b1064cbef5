"""`olmocr-rl synth`: HTML pages (or a model's HTML of your PDF pages) to a bench folder of olmOCR's
synthetic unit tests (see olmocr_rl/synth/run.py)."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from olmocr_rl.cli import QuietOption, app, echo, example, fail

if TYPE_CHECKING:
    from olmocr_rl.synth.run import SynthResult

DESCRIPTION = (
    "Render HTML pages to one-page PDFs with Chromium and write the unit tests and reference markdown olmOCR's synthetic "
    "pipeline derives from the HTML: an olmOCR-bench folder for `validate`, `prepare` and `bench`.\n\n"
    "`olmocr-rl synth HTML_DIR OUT_BENCH` takes the top-level .html files of HTML_DIR whose real path is in it (a link out is "
    "skipped, never read; their relative URLs are served from HTML_DIR; nothing else is reachable), page `X.html` named "
    "X_page1 as upstream names a synthetic page. `olmocr-rl synth OUT_BENCH --from-pdf PDFS --endpoint URL --model NAME` first has a "
    "model behind an OpenAI-compatible endpoint rewrite one random page of each PDF (or every page) as HTML, in olmOCR's "
    "conversation: the page images go to that endpoint (docs/preparing.md).\n\n"
    "A rerun does only the pages not done. Pages that cannot be used are listed with the reason; the others are written."
)

ENDPOINT_ONLY = ("--endpoint", "--model", "--all-pages", "--exclude", "--concurrency", "--retries", "--request-timeout",
                 "--max-tokens", "--budget")  # fmt: skip


@app.command(
    "synth",
    epilog=example("olmocr-rl synth html_pages my_bench"),
    help=DESCRIPTION,
    short_help="HTML pages (or a model's HTML of PDF pages) to PDFs + olmOCR's synthetic tests.",
)
def synth_command(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(help="HTML_DIR OUT_BENCH, or OUT_BENCH alone with --from-pdf.", metavar="[HTML_DIR] OUT_BENCH", show_default=False),
    ],
    name: Annotated[
        str, typer.Option("--name", help="The test file (NAME.jsonl) and the sub-folder of pdfs/ the pages go to.")
    ] = "synthetic",
    page_timeout: Annotated[float, typer.Option("--page-timeout", min=1, help="Seconds Chromium may take for one page.")] = 120.0,
    page_memory: Annotated[int, typer.Option("--page-memory", min=64, help="MB Chromium's renderer may use for one page.")] = 1024,
    from_pdf: Annotated[
        Optional[Path], typer.Option("--from-pdf", help="A PDF or folder of PDFs whose pages a model rewrites as HTML first.")
    ] = None,
    endpoint: Annotated[Optional[str], typer.Option("--endpoint", help="OpenAI-compatible API, e.g. http://localhost:8000/v1.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="The model name the endpoint serves.")] = None,
    all_pages: Annotated[bool, typer.Option("--all-pages", help="Every page of each PDF, not one random page.")] = False,
    exclude: Annotated[
        Optional[list[Path]], typer.Option("--exclude", help="PDFs (files or folders) never to use, by content hash (repeatable).")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Pages in conversation with the endpoint at once.")] = 4,
    retries: Annotated[int, typer.Option("--retries", min=0, help="Retries of a request after a 429, 5xx or timeout.")] = 3,
    request_timeout: Annotated[float, typer.Option("--request-timeout", min=0.1, help="Seconds to wait for one answer.")] = 300.0,
    max_tokens: Annotated[
        Optional[int], typer.Option("--max-tokens", min=1, help="Cap on each request's max_tokens (upstream: 1000 to 40000).")
    ] = None,
    budget: Annotated[
        Optional[int], typer.Option("--budget", min=1, help="Tokens (prompt + completion) after which no page starts.")
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            help="Added to each page's seed, which is upstream's: the first 8 hex digits of the sha1 of its file (the HTML, or "
            "--from-pdf's PDF) as an integer. 0: upstream's tests; another value draws other tests from the same pages.",
        ),
    ] = 0,
    keep_katex_math: Annotated[
        bool,
        typer.Option(
            "--keep-katex-math",
            help="Keep math pages whose only 'cut off' text is KaTeX's hidden MathML copy (\\sin, 3-digit numbers), which upstream "
            "drops as cut off; not upstream's output (docs/preparing.md).",
        ),
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit with status 1 if any page was dropped or skipped.")] = False,
    quiet: QuietOption = False,
) -> int:
    from olmocr_rl.synth.render import RenderError
    from olmocr_rl.synth.run import SynthError, SynthOptions, html_pages, pdf_pages, synthesize

    html_dir, out = _positional(ctx, paths, from_pdf)
    if "/" in name or name in ("", ".", "..") or name.startswith("."):
        fail(f"--name {name!r}: give a plain name (no '/', not starting with '.')", 2)
    options = SynthOptions(name=name, timeout_s=page_timeout, memory_mb=page_memory, keep_katex_math=keep_katex_math)
    try:
        if from_pdf is not None:
            from olmocr_rl.synth.endpoint import EndpointOptions

            if not endpoint or not model:
                fail("--from-pdf needs --endpoint and --model", 2)
            options.endpoint = EndpointOptions(endpoint, model, os.environ.get("OPENAI_API_KEY") or None, request_timeout, retries,
                                               max_tokens, budget, concurrency)  # fmt: skip
            pages, skipped = pdf_pages(from_pdf, out, name, all_pages, list(exclude or []), seed)
        else:
            pages, skipped = html_pages(html_dir, seed)
        result = synthesize(pages, out, options, skipped=skipped, progress=not quiet, manifest_options=_recorded(locals()))
    except (SynthError, RenderError) as e:
        fail(str(e))
    print_report(result)
    if not result.kept:
        fail("no page could be synthesized (see the reasons above)")
    if strict and (result.dropped or result.skipped):
        fail(f"{len(result.dropped) + len(result.skipped)} page(s) dropped or skipped and --strict was given")
    return 0


def _positional(ctx: typer.Context, paths: list[Path], from_pdf: Optional[Path]) -> tuple[Optional[Path], Path]:
    """(HTML_DIR, OUT_BENCH) from the arguments; usage errors name what is wrong."""
    sources = {o: ctx.get_parameter_source(o.lstrip("-").replace("-", "_")) for o in ENDPOINT_ONLY}
    given = [o for o, source in sources.items() if source is not None and source.name == "COMMANDLINE"]
    if from_pdf is None and given:
        fail(f"{given[0]} is an option of --from-pdf", 2)
    if from_pdf is not None:
        if len(paths) != 1:
            fail("with --from-pdf, give only OUT_BENCH", 2)
        return None, paths[0]
    if len(paths) != 2:
        fail("give HTML_DIR and OUT_BENCH (or OUT_BENCH with --from-pdf)", 2)
    return paths[0], paths[1]


def _recorded(values: dict[str, Any]) -> dict[str, Any]:
    """The options as synth.json records them (no API key: it is never on the command line)."""
    keep = ("name", "page_timeout", "page_memory", "from_pdf", "endpoint", "model", "all_pages", "exclude", "concurrency", "retries",
            "request_timeout", "max_tokens", "budget", "seed", "keep_katex_math")  # fmt: skip
    return {
        k: (str(v) if isinstance(v, Path) else [str(x) for x in v] if isinstance(v, list) else v) for k, v in values.items() if k in keep
    }


def print_report(result: "SynthResult") -> None:
    """A summary table, then one line per page dropped or skipped, then the warnings."""
    from rich.console import Console

    import olmocr_rl.tables as tables
    from olmocr_rl.paths import for_rich

    console = Console()
    by_type: dict[str, int] = {}
    for o in result.kept:
        for kind, n in o.by_type.items():
            by_type[kind] = by_type.get(kind, 0) + n
    rows = [
        ("pages kept", len(result.kept)),
        ("kept: synthesized now / reused", f"{result.kept_now} / {result.kept_reused}"),
        ("pages dropped", len(result.dropped)),
        ("pages skipped", len(result.skipped)),
        ("tests", f"{sum(by_type.values())} ({', '.join(f'{k} {v}' for k, v in sorted(by_type.items()))})"),
        ("tests failing their own reference", len(result.tests_failing_reference)),
    ]
    if result.tokens.get("requests"):
        rows.append(("endpoint tokens prompt / completion (requests)", f"{result.tokens['prompt']} / {result.tokens['completion']} "
                     f"({result.tokens['requests']})"))  # fmt: skip
    tables.show(console, tables.facts(rows), "olmocr-rl synth")
    if result.dropped or result.skipped:
        table = tables.table()
        tables.name_column(table, "page")
        tables.text_column(table, "reason")
        for o in result.dropped:
            table.add_row(for_rich(o.key), for_rich(o.reason))
        for s in result.skipped:
            table.add_row(for_rich(s.get("key") or s["source"]), for_rich(s["reason"]))
        tables.show(console, table, "pages not used")
    for o in result.kept:
        if o.warning:
            console.print(f"[yellow]warning:[/] {for_rich(o.key)}: {for_rich(o.warning)}", highlight=False)
    echo(f"wrote {result.out}: {result.name}.jsonl, pdfs/{result.name}/, claude_original/{result.name}/; details in synth.json")
