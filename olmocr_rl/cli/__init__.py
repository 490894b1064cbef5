"""The `olmocr-rl` command line, on argparse (the whole start-up of a command is Python's own
plus our imports). Each command lives in its own module with `add(subparsers)`, which declares
its arguments, and `run(args)`; heavy imports (torch, trl, rich) stay inside `run`, so
`olmocr-rl --help` is instant."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

# The command modules, in the order `--help` lists their commands.
_MODULES = ("check", "bench", "prepare", "train", "soup")


class CliError(Exception):
    """Ends a command: `message` to stderr as `error: ...`, exit status `code`."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 1) -> NoReturn:
    raise CliError(message, code)


def echo(message: str = "", *, err: bool = False) -> None:
    print(message, file=sys.stderr if err else sys.stdout, flush=err)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not >= 0")
    return value


def unit_float(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not in [0, 1]")
    return value


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="olmocr-rl",
        description="Train document-OCR models with GRPO on olmOCR-bench unit tests, scored in Rust.",
    )
    parser.add_argument("--version", action="store_true", help="Print the version and exit.")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in _MODULES:
        importlib.import_module(f"olmocr_rl.cli.{name}").add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (2 for a usage error, as argparse)."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # A command's free words (train's KEY=VALUE overrides) may follow its options, which
        # argparse does not collect into a positional already matched: gather them here.
        words = getattr(args, "takes_extra_words", None)
        if extra and words and not any(w.startswith("-") for w in extra):
            setattr(args, words, [*getattr(args, words), *extra])
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:  # --help, usage errors
        return int(e.code or 0)
    if args.version:
        from olmocr_rl import __version__

        echo(f"olmocr-rl {__version__}")
        return 0
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        code = args.run(args)
    except CliError as e:
        echo(f"error: {e}", err=True)
        return e.code
    return int(code or 0)


def console_main() -> None:
    """The `olmocr-rl` script."""
    sys.exit(main())
