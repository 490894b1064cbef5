"""What a config key may hold: trl's options read from the installed `trl.GRPOConfig` (its fields are
the valid keys, with their types, defaults and help), and the converter that checks a value
against a field's annotation, ours or trl's. Also the trl window (`TRL_READ`): the trl releases
whose trainer this project was read against.

The converter is written by hand, on purpose: values arrive as YAML scalars from a config file or
`KEY=VALUE` (`"true"`, `"1e-6"`, `"none"`, `a,b` for a list), and a wrong one must be refused with
the key, the value and the closest choices named; a schema library's lax mode accepts other
spellings and words its errors its own way (pydantic, the only one installed, comes with DeepSpeed
and is not a dependency of ours).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
from collections.abc import Iterable
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from olmocr_rl.errors import ConfigError

_TRL_FIELDS: dict[str, tuple[Any, Any, str]] | None = None

# The trl minor releases, first and last, whose GRPOTrainer olmocr_rl/train/trainer.py was read
# against (its SEAMS; every patch release of them). Read by pyproject.toml's bound (which cannot
# import it: tests/test_trainer.py holds the two equal), the pre-flight (a trl outside refuses to
# train) and the docs. Upgrading trl: read the new release at trainer.py's seams, then move this.
TRL_READ = ("1.11", "1.16")


def trl_window() -> str:
    """TRL_READ as a requirement: `>=1.11.0,<1.17`."""
    major, minor = TRL_READ[1].split(".")
    return f">={TRL_READ[0]}.0,<{major}.{int(minor) + 1}"


def trl_fields() -> dict[str, tuple[Any, Any, str]]:
    """GRPOConfig's options for the installed trl: name -> (type, default, help)."""
    global _TRL_FIELDS
    if _TRL_FIELDS is None:
        from trl import GRPOConfig

        hints = get_type_hints(GRPOConfig)
        out = {}
        for f in dataclasses.fields(GRPOConfig):
            if not f.init:
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]
            out[f.name] = (hints.get(f.name, Any), None if default is dataclasses.MISSING else default, str(f.metadata.get("help", "")))
        _TRL_FIELDS = out
    return _TRL_FIELDS


def trl_version() -> str:
    import trl

    return str(trl.__version__)


def suggest(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def type_name(typ: Any) -> str:
    """An annotation as `--options` shows it."""
    if get_origin(typ) is Literal:
        return " | ".join(map(str, get_args(typ)))
    if get_origin(typ) in (Union, types.UnionType):
        args = [a for a in get_args(typ) if a is not type(None)]
        named = " or ".join(getattr(a, "__name__", str(a)) for a in args)
        return f"{named} or none" if len(args) < len(get_args(typ)) else named
    return getattr(typ, "__name__", str(typ))


def coerce(name: str, typ: Any, value: Any, source: str) -> Any:
    """Checks (and mildly converts) one value against the field's annotation (ours, or trl's)."""
    origin = get_origin(typ)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null") and str not in args):
            if len(args) < len(get_args(typ)) or value is None:
                return None
        if len(args) > 1:  # the first member that takes the value
            for a in args:
                try:
                    return coerce(name, a, value, source)
                except ConfigError:
                    continue
            raise ConfigError(f"{source}: {name} must be {' or '.join(getattr(a, '__name__', str(a)) for a in args)}, got {value!r}")
        typ = args[0]
        origin = get_origin(typ)
    if origin is Literal:
        choices = get_args(typ)
        if value in choices:
            return value
        raise ConfigError(
            f"{source}: {name} must be one of {', '.join(map(str, choices))}, not {value!r}{suggest(str(value), [str(c) for c in choices])}"
        )
    converted = _scalar(typ, origin, value)
    if converted is not _REFUSED:
        return converted
    tname = getattr(typ, "__name__", str(typ))
    raise ConfigError(f"{source}: {name} must be {tname}, got {value!r}")


_REFUSED = object()


def _scalar(typ: Any, origin: Any, value: Any) -> Any:
    """`value` as a bool, int, float, str, list or dict (`typ`), or _REFUSED."""
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
    elif typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif typ is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    elif typ is list or origin is list:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)):
            return list(value)
    elif typ is dict or origin is dict:
        if isinstance(value, dict):
            return dict(value)
    else:  # a type of trl's this reader does not know: as given (trl checks it)
        return value
    return _REFUSED


def trl_value(name: str, value: Any, source: str, recipe_default: Any = None, typ: Any = None) -> Any:
    """A trl option's value checked against trl's annotation (`typ`: that annotation, read without
    importing trl: olmocr_rl/train/keys.py); a whole number stays an int where trl annotates float
    (transformers 5's steps may also be ratios), unless the recipe's own default for it is a float."""
    numeric = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(recipe_default, float) and numeric:
        return float(value)
    if typ is None:
        typ = trl_fields()[name][0] if name in trl_fields() else type(recipe_default)
    if typ is float and numeric:
        return value
    return coerce(name, typ, value, source)


# What trl's scripts (ModelConfig, ScriptArguments) and transformers call a key of ours: an unknown key
# named so is pointed at ours (none of them is a key: tests/test_first_sight_train.py).
ALIASES = {
    "model_name_or_path": "model",
    "torch_dtype": "dtype",
    "use_peft": "lora",
    "dataset_name": "prepared_dir",
    "dataset_train_split": "train_split",
    "dataset_test_split": "eval_split",
    "max_prompt_length": "max_prompt_tokens",
}


def _suggestion(key: str, known: list[str]) -> str:
    name = key.replace("-", "_")
    if (ours := ALIASES.get(name)) is not None:
        return f" (did you mean {ours!r}? olmocr-rl's name for {name})"
    return suggest(key, known)


def unknown_key(key: str, source: str, known: Iterable[str]) -> ConfigError:
    """The refusal of a key that is neither ours nor trl's (`known`: every valid key)."""
    return ConfigError(
        f"{source}: unknown key {key!r}{_suggestion(key, sorted(known))}: neither an olmocr-rl option nor a trl.GRPOConfig one"
    )


def unknown_trl_key(key: str, source: str, known: Iterable[str], version: str) -> ConfigError:
    """The refusal of `trl.KEY` that the installed trl's GRPOConfig does not have."""
    return ConfigError(f"{source}: trl.{key}: not a GRPOConfig option in trl {version}{_suggestion(key, sorted(known))}")
