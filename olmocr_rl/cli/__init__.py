"""The `olmocr-rl` command line: a Typer application (`app`), one module per command.

Each command module defines its Typer function with `Annotated` options and registers it on
`app`; heavy imports (torch, trl, the Rust scorer) stay inside the command bodies. User errors
(`olmocr_rl.errors.UserError`, raised anywhere, or `fail`) end a command with one `error: ...` line
on stderr and exit status 1, caught once in `main`; usage errors exit 2 naming the option; any other
exception is reported as unexpected (a bug), and `--debug` (or OLMOCR_RL_DEBUG=1) shows its
traceback instead of the one-line summary.
"""

import enum
import os
import sys
import traceback
from typing import Annotated, Any, NoReturn, Optional

import typer

from olmocr_rl.errors import UserError

app = typer.Typer(
    name="olmocr-rl",
    help="Train document-OCR models with GRPO on olmOCR-bench unit tests, scored in Rust.",
    no_args_is_help=True,
    rich_markup_mode=None,  # click's help: option names and defaults never cut, at any width, in a pipe too (tests/test_cli.py)
    pretty_exceptions_enable=False,  # errors are one line (or a plain traceback with --debug)
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state = {"debug": False}


class GuardChoice(str, enum.Enum):
    """`--guard` of bench and check: the rule set of the checks, one member per olmocr_rl.suite.GUARDS
    name (tests/test_guard.py holds them equal; the suite is not imported here, for a fast --help)."""

    none = "none"
    short_output = "short-output"
    short_output_footnote = "short-output+footnote"


class OneNamePerOption(typer.core.TyperCommand):
    """A command whose --help lists each option once: its first long name and its short one (`-c`).
    Its other long spellings (bench's `--skip_baseline`, ..., the reference runner's flags) still
    work, and are not listed (`@app.command(..., cls=OneNamePerOption)`)."""

    @staticmethod
    def listed(opts: list[str]) -> list[str]:
        """The names --help shows of an option named `opts`: the short ones and the first long one."""
        first = next((o for o in opts if o.startswith("--")), None)
        return [o for o in opts if not o.startswith("--") or o == first]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        import copy

        args, opts = [], []
        for param in self.get_params(ctx):
            if param.param_type_name == "option" and len(param.opts) > 1:
                param = copy.copy(param)
                param.opts = self.listed(param.opts)
            record = param.get_help_record(ctx)
            if record is not None and param.param_type_name in ("argument", "option"):
                (args if param.param_type_name == "argument" else opts).append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class CliError(UserError):
    """Ends a command: `message` to stderr as `error: ...`, exit status `code`."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# Options several commands share, declared once.
EagerOption = Annotated[
    Optional[bool],
    typer.Option("--eager/--no-eager", help="vLLM without CUDA graphs or compilation (default: eager without CUDA).", show_default=False),
]


def _quiet(value: bool) -> bool:
    if value:  # for this command and every process it starts (olmocr_rl/engines.py; main() restores the environment)
        from olmocr_rl.engines import quiet_loading

        quiet_loading()
    return value


QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", callback=_quiet, help="No progress bars or progress lines (weight loading's included).")
]
# The launch options of every command that starts processes on several machines (train, curate, generate).
NumMachinesOption = Annotated[int, typer.Option("--num-machines", min=1, help="Machines (nodes) in the run.")]
MachineRankOption = Annotated[int, typer.Option("--machine-rank", min=0, help="This machine's rank, 0 to --num-machines - 1.")]
MainProcessIpOption = Annotated[Optional[str], typer.Option("--main-process-ip", help="Address of the rank-0 machine (several machines).")]
MainProcessPortOption = Annotated[
    Optional[int], typer.Option("--main-process-port", help="Its port (default: a free one; 29500 for several machines).")
]
# curate's and generate's workers (olmocr_rl/launch/pages.py).
WorkersOption = Annotated[
    int,
    typer.Option(
        "--num-processes",
        min=1,
        help="Workers in all (every machine): one per GPU, or per --tensor-parallel group. 1: this process. Each page is seeded "
        "by itself: on the CPU the output does not depend on the number of workers; on a GPU vLLM's logits move with its batches, "
        "so samples are equally likely, not identical.",
    ),
]
TensorParallelOption = Annotated[
    int, typer.Option("--tensor-parallel", min=1, help="GPUs each worker's engine spans (vLLM's tensor parallel).")
]
PagesDryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the split (GPUs, workers, pages per worker) and the command, and exit.")
]
# curate's and generate's loop stop (olmocr_rl/loops.py): off there by default, since a loop the model would
# have left is scored as if it had gone on to the limit.
StopLoopsOption = Annotated[
    bool,
    typer.Option("--stop-loops", help="End completions caught in a repetition loop; write/score them as the loop run on to the limit."),
]
LoopRuleOption = Annotated[
    Optional[list[str]],
    typer.Option("--loop-rule", metavar="KEY=VALUE", help="The loop rule: max_period, min_span, min_repeats (repeatable; see docs)."),
]


def loop_rule_option(stop: bool, pairs: list[str] | None, base: Any = None) -> Any:
    """The loop rule of --stop-loops and --loop-rule (None without --stop-loops); `base`: the rule
    the pairs change (default LoopRule()). A bad pair ends the command naming it."""
    from olmocr_rl.loops import LoopRule, rule_with

    if pairs and not stop:
        fail("--loop-rule without --stop-loops: give --stop-loops to stop loops")
    if not stop:
        return None
    try:
        return rule_with(base or LoopRule(), pairs or [])
    except ValueError as e:
        fail(f"--loop-rule: {e}")


PLAIN_PROGRESS_S = 10.0  # outside a terminal: a progress line at most this often


def page_progress(label: str, quiet: bool):
    """A page job's one progress line (rich's, gone when it ends): pages done of all, the tokens
    generated and the tokens per second since the start, for the whole job whatever its number of
    workers; outside a terminal, a plain line on stderr at most every PLAIN_PROGRESS_S seconds.
    Returns (update(done, total, tokens) or None when quiet, close())."""
    if quiet:
        return None, lambda: None
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("pages"), TimeElapsedColumn(),
                   transient=True)  # fmt: skip
    task = bar.add_task(label, total=None)
    bar.start()
    start = time.monotonic()

    shown = [start]

    def update(done: int, total: int, tokens: int) -> None:
        now = time.monotonic()
        rate = tokens / max(now - start, 1e-6)
        bar.update(task, completed=done, total=total, description=f"{label}: {tokens:,} tokens, {rate:,.0f} tokens/s")
        if not bar.console.is_terminal and now - shown[0] >= PLAIN_PROGRESS_S:
            # No live bar outside a terminal (a log, a pipe): a plain line now and then, so a long job is never silent.
            shown[0] = now
            print(f"{label}: {done}/{total} pages, {tokens:,} tokens, {rate:,.0f} tokens/s", file=sys.stderr, flush=True)

    return update, bar.stop


def example(command_line: str) -> str:
    """A command's --help epilog: its one example, the command line cut into shell-continued lines
    (` \\`) that fit 60 columns, as click prints a `\\b` paragraph (unwrapped, indented 2)."""
    words, units = command_line.split(), []  # an option and its value stay on one line
    for w in words:
        if units and units[-1].startswith("-") and " " not in units[-1] and not w.startswith("-"):
            units[-1] += f" {w}"
        else:
            units.append(w)
    lines = [units[0]]
    for unit in units[1:]:
        lines[-1:] = [f"{lines[-1]} {unit}"] if len(lines[-1]) + 1 + len(unit) <= 52 else [lines[-1], unit]
    shown = [f"  {lines[0]}", *(f"    {line}" for line in lines[1:])]
    return "\b\nExample:\n" + " \\\n".join(shown)


def fail(message: str, code: int = 1) -> NoReturn:
    raise CliError(message, code)


def echo(message: str = "", *, err: bool = False) -> None:
    """Prints a line; a file name that is not UTF-8 in it is shown with \\xNN escapes."""
    from olmocr_rl.paths import shown

    print(shown(message), file=sys.stderr if err else sys.stdout, flush=err)


def debug_enabled() -> bool:
    return _state["debug"] or os.environ.get("OLMOCR_RL_DEBUG", "").lower() in ("1", "true", "yes")


def _version(value: bool) -> None:
    if value:
        from olmocr_rl._core import __version__

        echo(f"olmocr-rl {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors (also OLMOCR_RL_DEBUG=1).")] = False,
) -> None:
    _state["debug"] = debug


# The command modules, in the order `--help` lists their commands; importing one registers it.
from olmocr_rl.cli import check, bench, probe, prepare, synth, train, generate, curate, report, soup, install_katex  # noqa: E402,F401,I001


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (2 for a usage error). The caller's OLMOCR_RL_DEBUG is
    as it was afterwards (`train --debug` sets it for the ranks it starts, and for its own errors), and
    so are the variables --quiet sets (olmocr_rl/engines.py `quiet_loading`)."""
    names = ("OLMOCR_RL_DEBUG", "OLMOCR_RL_QUIET", "HF_HUB_DISABLE_PROGRESS_BARS")
    saved = {name: os.environ.get(name) for name in names}
    try:
        return _main(argv)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _main(argv: list[str] | None) -> int:
    from olmocr_rl.procs import Interrupted

    command = typer.main.get_command(app)
    _state["debug"] = False
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = command.main(args=args, prog_name="olmocr-rl", standalone_mode=False)
    except UserError as e:  # the one place user-facing errors end (olmocr_rl/errors.py)
        if debug_enabled():
            traceback.print_exc()
        echo(f"error: {e}", err=True)
        return getattr(e, "code", 1)
    except (KeyboardInterrupt, Interrupted):  # Interrupted: a signal its command did not turn into an error of its own
        echo("error: interrupted", err=True)
        return 130
    except Exception as e:  # noqa: BLE001 - sorted below: click's, then everything else as one error line
        # click's own exceptions (typer >= 0.29 vendors click, older ones use it): Exit after
        # --help/--version, Abort on Ctrl-C at a prompt, UsageError/BadParameter (status 2).
        name = type(e).__name__
        if name == "Exit":
            return int(getattr(e, "exit_code", 0) or 0)
        if name == "Abort":
            echo("error: aborted", err=True)
            return 130
        if name == "NoSuchOption" and getattr(e, "ctx", None) is not None:  # `train --learning_rate 1e-6`: a config key, said so
            from olmocr_rl.train.keys import option_hint

            e.message += option_hint(e.ctx.command.name, str(e.option_name), args)  # type: ignore[attr-defined]
        if hasattr(e, "show") and isinstance(getattr(e, "exit_code", None), int):
            e.show(file=sys.stderr)
            return int(e.exit_code)
        from olmocr_rl.errors import missing_module_error

        if isinstance(e, ModuleNotFoundError) and (missing := missing_module_error(e)) is not None and not debug_enabled():
            echo(f"error: {missing}", err=True)  # an extra not installed: its install line, not "a bug"
            return 1
        if debug_enabled():  # a bug or an unexpected failure of a library: one line unless asked
            traceback.print_exc()
        else:
            echo(f"error: unexpected {name}: {e} (a bug in olmocr-rl or a library it uses; run with --debug for the traceback)", err=True)
        return 1
    if code == 130:  # typer turns a KeyboardInterrupt its command did not catch into a silent Exit(130)
        echo("error: interrupted", err=True)
    return int(code or 0)


def console_main() -> None:
    """The `olmocr-rl` script."""
    sys.exit(main())
