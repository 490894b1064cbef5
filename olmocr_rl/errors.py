"""One family for the errors a user fixes: bad input, a configuration to change, a missing file or
package. Every such error subclasses `UserError`; the command line catches it once, where it ends
(`olmocr_rl.cli.main`), and prints its message as one `error: ...` line. Any other exception is a
bug (ours or a library's): one line naming it as unexpected, or its traceback with `--debug`.

The concrete classes keep their older bases (ValueError, RuntimeError) so that callers who catch
those keep working.
"""


class UserError(Exception):
    """An error whose message tells the user what to fix."""


class UsageError(UserError, ValueError):
    """A value given to a function or an option that it cannot take (names the value)."""


class ConfigError(UserError, ValueError):
    """A configuration problem the user fixes by editing the config or the command line (an option,
    a model that does not load as one, a launcher that cannot start the ranks as asked)."""


# The modules of each optional extra (pyproject.toml's [project.optional-dependencies]) without which
# its commands cannot start: the extra's own requirements and theirs (packaging, huggingface_hub come
# with transformers). One missing: the extra is not installed, and the fix is `install_hint(extra)`,
# never "a bug". ALSO: modules of an extra that only some runs import (peft for LoRA); a
# ModuleNotFoundError of any of these is reported so (olmocr_rl.cli.main). tests/test_first_sight_train.py
# holds each module a requirement of its extra, or of one of them.
EXTRA_MODULES = {
    "train": ("torch", "transformers", "trl", "accelerate", "datasets", "safetensors", "tokenizers", "packaging", "huggingface_hub"),
    "deepspeed": ("deepspeed",),
    "vllm": ("vllm",),
    "synth": ("playwright", "bs4", "markdownify", "syntok", "wordfreq"),
}
ALSO = {"train": ("torchvision", "peft", "tensorboard")}


class MissingExtra(UserError):
    """An optional extra that a command needs is not installed."""


def install_hint(extra: str) -> str:
    return f"pip install 'olmocr-rl[{extra}]'"


def extra_missing(extra: str) -> list[str]:
    """The modules of `extra` that are not installed (located, not imported)."""
    import importlib.util

    missing = []
    for module in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


def need_extra(extra: str, what: str) -> None:
    """MissingExtra, naming the missing modules and the install command, when `what` (a command)
    cannot run without `extra`."""
    if missing := extra_missing(extra):
        raise MissingExtra(f"{what} needs the {extra} extra ({', '.join(missing)} not installed): {install_hint(extra)}")


def missing_module_error(error: BaseException) -> MissingExtra | None:
    """A ModuleNotFoundError of an extra's module as the one line that fixes it (None: another module)."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    for extra, modules in EXTRA_MODULES.items():
        if name in modules or name in ALSO.get(extra, ()):
            return MissingExtra(f"{name} is not installed (the {extra} extra): {install_hint(extra)}")
    return None
