"""`olmocr-rl bench` carried out, as `olmocr_rl.train.plan` carries out `train`: the command line
(olmocr_rl/cli/bench.py) parses its options into a `BenchOptions` and calls `execute`.

    BenchOptions(...)        every option of the command, typed
    check_outputs(options)   --details, --report (and its folder), --output-failed: checked before
                             any work (a folder, a missing or read-only folder is refused)
    execute(options)         the run (with a progress bar on a terminal), the summary on stdout
                             (`--json` or the tables), then the optional outputs; raises BenchError
                             (a UserError: one `error:` line) for what the user must fix
    command_line(folder, c)  the `olmocr-rl bench` line other commands print to score what they
                             wrote: it works as printed

The summary is printed before the optional outputs are written, so a failing output loses no
score; a closed stdout (`| head -1`) stops the printing only: the outputs are still written and
named on stderr; `--strict` fails after everything else is done. The report states the
comparisons the terminal and `--json` state (with `--compare`: the same pairs, B − A in the order
`-c` named them).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.bench.folder import BenchError
from olmocr_rl.paths import shown


@dataclass(frozen=True)
class BenchOptions:
    """`olmocr-rl bench`'s options (their help is the command's)."""

    bench_dir: Path
    candidates: list[str] | None = None
    details: Path | None = None
    as_json: bool = False
    skip_baseline: bool = False
    force: bool = False
    workers: int | None = None
    bootstrap_samples: int = 1000
    confidence_level: float = 0.95
    seed: int = 0
    show_failures: bool = False
    compare: bool = False
    report: Path | None = None
    max_reports: int | None = None
    sample: int | None = None
    guard: str = "none"
    output_failed: Path | None = None
    strict: bool = False


def check_outputs(options: BenchOptions) -> dict[str, Path]:
    """Each output option -> its path, checked before any work (`--report` also names the folder
    the report keeps its images in); BenchError for one that cannot be written."""
    from olmocr_rl.atomic import check_output

    outputs = {"--details": options.details, "--report": options.report, "--output-failed": options.output_failed}
    checked: dict[str, Path] = {}
    for option, target in outputs.items():
        if target is not None:
            check_output(target, option, make_folders=option == "--report")  # the report makes its folder, as it always has
            checked[option] = target
    if options.report is not None:
        files_dir = options.report.with_name(options.report.stem + "_files")
        if files_dir.exists() and not files_dir.is_dir():
            raise BenchError(
                f"--report {options.report}: {files_dir} (where the report keeps its images) is a file; remove it or choose another name"
            )
        checked["--report's folder"] = files_dir
    return checked


@contextlib.contextmanager
def progress_display() -> Iterator[Any]:
    """A progress(message, done, total) function: a transient bar on a terminal (rich, loaded
    only then: it is a noticeable part of start-up), else one that does nothing."""
    bar = None
    maybe_terminal = sys.stderr.isatty() or any(os.environ.get(v) for v in ("FORCE_TERMINAL", "TTY_INTERACTIVE", "TTY_COMPATIBLE"))
    if maybe_terminal and not os.environ.get("CI"):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        err = Console(stderr=True)
        if err.is_terminal:
            columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            bar = Progress(*columns, console=err, transient=True)
            task = bar.add_task("loading the bench folder", total=None)

    def progress(msg: str, done: int | None = None, total: int | None = None) -> None:
        if bar is not None:
            bar.update(task, description=msg, completed=done or 0, total=total)

    if bar is None:
        yield progress
        return
    bar.start()
    try:
        yield progress
    finally:
        bar.stop()


def _say(message: str, aside: bool) -> bool:
    """A line beside the summary: on stdout, or on stderr (`aside`) when stdout holds `--json` or
    was closed. Returns `aside` for the next line: True once stdout is found closed."""
    if not aside:
        try:
            print(shown(message), flush=True)
            return False
        except BrokenPipeError:  # the reader read what it wanted and went away
            from olmocr_rl.procs import stdout_gone

            stdout_gone()
    print(shown(message), file=sys.stderr, flush=True)
    return True


def execute(options: BenchOptions) -> None:
    """Runs `olmocr-rl bench` (see the module docstring)."""
    from olmocr_rl.bench.run import run_bench

    outputs = check_outputs(options)  # every output path before any work
    try:
        with progress_display() as progress:
            summary = run_bench(
                options.bench_dir, options.candidates, skip_baseline=options.skip_baseline, force=options.force,
                details=options.details, threads=options.workers, bootstrap_samples=options.bootstrap_samples,
                confidence_level=options.confidence_level, seed=options.seed, progress=progress, sample=options.sample,
                keep_details=options.report is not None, guard=options.guard,  # type: ignore[arg-type]
                outputs={k: v for k, v in outputs.items() if k != "--details"},
            )  # fmt: skip
    except OSError as e:  # e.g. the details file cannot be written
        raise BenchError(str(e)) from None
    comparisons = _comparisons(options, summary)
    # The summary first: a failing optional output below loses no score. A closed stdout loses
    # only the rest of the summary: the lines below go to stderr then.
    aside = not _print(options, summary, comparisons) or options.as_json
    if options.report is not None:
        from olmocr_rl.report import bench_report

        try:
            written = bench_report(summary, options.report, max_reports=options.max_reports, workers=options.workers,
                                   comparisons=comparisons if options.compare else None)  # fmt: skip
        except OSError as e:
            raise BenchError(f"cannot write the report {options.report}: {e}") from None
        aside = _say(f"report: {written}", aside)
    if options.output_failed is not None:
        _write_failed(options, summary, aside)
    bad = [c.name for c in summary.candidates if c.failed]
    if options.strict and bad:
        raise BenchError(f"--strict: {len(bad)} candidate(s) FAILED (errors): {', '.join(bad)}")


def command_line(folder: str | os.PathLike[str], candidate: str) -> str:
    """The `olmocr-rl bench` line that scores `candidate` in `folder`, as `train` and `generate`
    print it: shell-quoted, with `--force` when a page of the folder's PDFs has no test (a curated
    split keeps some pages of a PDF), so that it works as printed."""
    import shlex

    from olmocr_rl.bench.folder import load_bench

    words = ["olmocr-rl", "bench", os.fspath(folder), "--candidate", candidate]
    try:
        if load_bench(folder, force=True).uncovered:
            words.append("--force")
    except BenchError:  # bench will say what is wrong with the folder, printed or not
        pass
    return shlex.join(shown(w) for w in words)


def _comparisons(options: BenchOptions, summary: Any) -> list[Any]:
    if not options.compare:
        return []
    from olmocr_rl.bench.compare import compare_summary

    if len(summary.candidates) < 2:
        raise BenchError("--compare needs two or more candidates")
    return compare_summary(summary, options.candidates[0] if options.candidates else None)


def _print(options: BenchOptions, summary: Any, comparisons: list[Any]) -> bool:
    """The summary on stdout; False when stdout was closed before it was all written (its reader
    went away, as `| head -1` does): stdout is then pointed at the null device, as the Python docs
    advise for SIGPIPE, so nothing written later fails."""
    try:
        _print_summary(options, summary, comparisons)
    except BrokenPipeError:
        from olmocr_rl.procs import stdout_gone

        stdout_gone()
        return False
    return True


def _print_summary(options: BenchOptions, summary: Any, comparisons: list[Any]) -> None:
    from olmocr_rl.bench.output import print_summary, summary_dict

    if options.as_json:
        import orjson

        sys.stdout.write(orjson.dumps(summary_dict(summary, comparisons), option=orjson.OPT_INDENT_2).decode() + "\n")
        bench = summary.bench
        for line in [f"warning: {w}" for w in bench.warnings] + [f"note: {n}" for n in bench.notes]:
            _say(line, True)  # also in the JSON; said here for whoever reads the terminal
    else:
        from rich.console import Console

        class PipedConsole(Console):
            def on_broken_pipe(self) -> None:  # rich's own ends the process (SystemExit(1)): the outputs are still to write
                self.quiet = True
                raise BrokenPipeError

        print_summary(summary, PipedConsole(), show_failures=options.show_failures, comparisons=comparisons)
    sys.stdout.flush()


def _write_failed(options: BenchOptions, summary: Any, aside: bool) -> None:
    """--output-failed: the records of the tests no candidate passed, as their files hold them;
    `aside`: say so on stderr."""
    from olmocr_rl.atomic import write_text
    from olmocr_rl.bench.output import failed_everywhere, test_records

    failed = failed_everywhere(summary)
    if not failed:
        _say("no test failed for every candidate: no file written", aside)
        return
    try:
        write_text(options.output_failed, "".join(line + "\n" for line in test_records(summary.bench, failed)))
    except OSError as e:
        raise BenchError(f"cannot write --output-failed {options.output_failed}: {e}") from None
    _say(f"{len(failed)} test(s) that no candidate passed: {options.output_failed}", aside)
