"""Config keys, reward names and value types checked before anything heavy is imported, with the
refusals of olmocr_rl/train/config.py's full check (`unknown_key`, `unknown_trl_key`, their one
home). A typo, or a value of the wrong type (`learning_rate: fast`), in a config file or a
KEY=VALUE is refused in a fraction of a second, not after the 5-15 s that importing trl (and with
it transformers and torch) takes. The full check (olmocr_rl/train/config.py, with trl
imported) runs afterwards as before; this one only answers sooner, with the same message.

The key table is TrainConfig's fields (ours, and the trl options it states) plus trl.GRPOConfig's
fields. The first need no import. GRPOConfig's are read here without importing trl: its dataclass
and the classes it derives from (trl's `_BaseConfig`, transformers' `TrainingArguments`) are read
as source with `ast` from the installed packages' files (`importlib.util.find_spec`, which imports
neither), every annotated field of each class body except `field(init=False)` ones, as
`dataclasses.fields` would list them, with its annotation where it names only builtins and
`typing` (`float`, `int | None`; one naming another class, an enum, is left to the full check).
tests/test_config_keys.py holds this read equal to the imported GRPOConfig's fields and types.
Where the files are not laid out as expected (another trl), the read gives up (None) and only our
own keys are checked early; trl's are checked by the full check.

An unknown key that is what trl's scripts or transformers call one of ours (`model_name_or_path`)
is pointed at ours (schema.py's `ALIASES`); so is a config key given as an option (`option_hint`).
"""

from __future__ import annotations

import ast
import importlib.util
import typing
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError

_GRPO = ("trl", "trainer/grpo_config.py", "GRPOConfig")
# Where a base class imported by name from a package's top level is defined (the one trl uses).
_TOP_LEVEL = {("transformers", "TrainingArguments"): "training_args.py"}
_SANITY = ("learning_rate", "num_generations", "output_dir")  # a read that misses these is not trusted

_cache: dict[str, Any] = {}


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)  # a top-level name: its package is located, not imported
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _class_fields(package: str, relpath: str, cls: str, depth: int = 0) -> dict[str, str] | None:
    """The init fields of dataclass `cls` in `package/relpath` and of the classes it derives from,
    each with its annotation's source (a class's own annotation over its bases')."""
    root = _package_dir(package)
    if root is None or depth > 5:
        return None
    path = root / relpath
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    if node is None:
        return None
    names: dict[str, str] = {}
    for base in node.bases:
        if not isinstance(base, ast.Name):
            return None
        where = _imported_from(tree, base.id, package, relpath)
        if where is None:
            return None
        inherited = _class_fields(*where, base.id, depth + 1)
        if inherited is None:
            return None
        names |= inherited
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if _not_init(stmt):
                names.pop(stmt.target.id, None)
            else:
                names[stmt.target.id] = ast.unparse(stmt.annotation)
    return names


def _not_init(stmt: ast.AnnAssign) -> bool:
    """A ClassVar, or a `field(..., init=False)`: not an argument of the dataclass."""
    ann = ast.unparse(stmt.annotation)
    if ann.startswith(("ClassVar", "typing.ClassVar")):
        return True
    value = stmt.value
    return isinstance(value, ast.Call) and any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in value.keywords
    )


def _imported_from(tree: ast.Module, name: str, package: str, relpath: str) -> tuple[str, str] | None:
    """(package, file) of the module `name` is imported from in `tree`: a relative import within
    the package, or a top-level import listed in _TOP_LEVEL."""
    for stmt in tree.body:
        if not isinstance(stmt, ast.ImportFrom) or not any(a.name == name and a.asname is None for a in stmt.names):
            continue
        if stmt.level:
            folder = Path(relpath).parent
            for _ in range(stmt.level - 1):
                folder = folder.parent
            return package, str(folder / (stmt.module or "").replace(".", "/")) + ".py"
        if stmt.module and (stmt.module, name) in _TOP_LEVEL:
            return stmt.module, _TOP_LEVEL[(stmt.module, name)]
        return None
    return None


def _trl_read() -> dict[str, str] | None:
    if "trl" not in _cache:
        fields = _class_fields(*_GRPO)
        _cache["trl"] = fields if fields is not None and all(n in fields for n in _SANITY) else None
    return _cache["trl"]


def trl_field_names() -> frozenset[str] | None:
    """GRPOConfig's init fields read from the installed sources (None: not readable so)."""
    fields = _trl_read()
    return frozenset(fields) if fields is not None else None


# What an annotation read as source may name: builtins and typing's forms (anything else: not judged early).
_TYPE_NAMES: dict[str, Any] = {**{n: getattr(typing, n) for n in ("Any", "Optional", "Union", "Literal", "List", "Dict", "Tuple")},
                               **{t.__name__: t for t in (int, float, str, bool, list, dict, tuple)}}  # fmt: skip


def _annotation(node: ast.expr) -> Any:
    """The type an annotation's source names (`int | None`, `dict[str, Any]`, `Literal["a"]`);
    KeyError for a name outside _TYPE_NAMES, ValueError for any other form."""
    if isinstance(node, ast.Name):
        return _TYPE_NAMES[node.id]
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, bool))):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _annotation(node.left) | _annotation(node.right)
    if isinstance(node, ast.Subscript):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        args = tuple(_annotation(e) for e in inner)
        return _annotation(node.value)[args if len(args) > 1 else args[0]]
    raise ValueError(ast.unparse(node))


def trl_field_types() -> dict[str, Any]:
    """The GRPOConfig fields whose annotation names only builtins and typing, as those types ({}
    when the sources are not readable)."""
    if "types" not in _cache:
        out = {}
        for name, source in (_trl_read() or {}).items():
            try:
                out[name] = _annotation(ast.parse(source, mode="eval").body)
            except (KeyError, ValueError, TypeError, SyntaxError):  # another class's name (an enum): the full check judges it
                continue
        _cache["types"] = out
    return _cache["types"]


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def check_keys(config: Any, overrides: list[str]) -> str | None:
    """`early_values`, for the model it sets (the last `model`), for the command to find it before
    trl is imported."""
    model = early_values(config, overrides).get("model")
    return model if isinstance(model, str) and model else None


def early_values(config: Any, overrides: list[str]) -> dict[str, Any]:
    """Refuses the first unknown key, unknown reward, reward weight that is not a number or value of
    the wrong type of the config file (a path, a packaged name or a read ConfigFile) and the
    overrides, in the order the full check reads them, with its message (ConfigError); what it
    cannot judge is left to it. Returns the keys they set, as checked (the last value of each)."""
    from typing import get_type_hints

    from olmocr_rl.train.config import _OWN_NAMES, _STATED_NAMES, GRPO_OVERRIDES, TrainConfig, check_rewards, unknown_key, unknown_trl_key
    from olmocr_rl.train.config_file import parse_override, read_config
    from olmocr_rl.train.schema import coerce, trl_value

    trl, types, hints = trl_field_names(), trl_field_types(), get_type_hints(TrainConfig)
    ours = _OWN_NAMES | _STATED_NAMES
    values: dict[str, Any] = {}

    def trl_option(name: str, value: Any, source: str, under: bool) -> None:
        if under and name not in _STATED_NAMES and trl is not None and name not in trl:
            raise unknown_trl_key(name, source, trl, _version("trl"))
        if name in types:
            trl_value(name, value, source, GRPO_OVERRIDES.get(name), typ=types[name])

    def flat(key: str, value: Any, source: str) -> None:
        name = key.replace("-", "_")
        if name == "trl":
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: trl must be a mapping of trl.GRPOConfig options, got {value!r}")
            for sub, v in value.items():
                trl_option(str(sub), v, source, under=True)
        elif name in _OWN_NAMES:
            if name == "rewards" and isinstance(value, dict):
                value = {str(k): v for k, v in value.items()}
            values[name] = coerce(name, hints[name], value, source)
            if name == "rewards":
                check_rewards(values[name])
        elif name in _STATED_NAMES or (trl is not None and name in trl):
            trl_option(name, value, source, under=False)
            values[name] = value
        elif trl is not None:
            raise unknown_key(key, source, ours | trl)

    recipe = read_config(config)
    if recipe is not None:
        if not isinstance(recipe.data, dict):
            raise ConfigError(f"{recipe.source}: expected a mapping of option names to values, got {type(recipe.data).__name__}")
        for key, value in recipe.data.items():
            flat(str(key), value, recipe.source)
    for item in overrides:
        key, value = parse_override(item)
        source = f"override {item!r}"
        if "." not in key:
            flat(key, value, source)
            continue
        head, sub = key.split(".", 1)
        head = head.replace("-", "_")
        if head == "trl":
            trl_option(sub, value, source, under=True)
        elif head == "rewards":
            check_rewards({sub: value})
        else:
            raise unknown_key(key, source, ours | (trl or frozenset()))
    return values


# The commands whose KEY=VALUE words are training config keys.
_KEY_COMMANDS = ("train", "curate")


def option_hint(command: str, option: str, args: list[str]) -> str:
    """For click's "No such option" of `command`: when the option (`--learning_rate`,
    `--learning-rate=1e-6`) names a config key, how to give it (" (... learning_rate=1e-6 ...)"); else ""."""
    if command not in _KEY_COMMANDS or not option.startswith("--"):
        return ""
    from olmocr_rl.train.config import _OWN_NAMES, _STATED_NAMES, ALIASES

    name = option[2:].split("=", 1)[0].replace("-", "_")
    name = ALIASES.get(name, name)
    if name not in _OWN_NAMES | _STATED_NAMES | (trl_field_names() or frozenset()):
        return ""
    value = "VALUE"
    for i, arg in enumerate(args):
        if arg == option and i + 1 < len(args) and not args[i + 1].startswith("-"):
            value = args[i + 1]
        elif arg.startswith(option + "="):
            value = arg.split("=", 1)[1]
    pair = f"{name}={value}"
    return f" ({name} is a config key: give it as {pair}, or --set {pair})"
