"""Config keys (and reward names) checked before anything heavy is imported: a typo in a config file or a KEY=VALUE is
refused in a fraction of a second, not after the 5-15 s that importing trl (and with it
transformers and torch) takes. The full check (olmocr_rl/train/config.py, with trl imported) runs
afterwards as before; this one only answers sooner, with the same message.

The key table is TrainConfig's fields (ours, and the trl options it states) plus trl.GRPOConfig's
fields. The first need no import. GRPOConfig's are read here without importing trl: its dataclass
and the classes it derives from (trl's `_BaseConfig`, transformers' `TrainingArguments`) are read
as source with `ast` from the installed packages' files (`importlib.util.find_spec`, which imports
neither), every annotated field of each class body except `field(init=False)` ones, as
`dataclasses.fields` would list them. tests/test_config_keys.py holds this read equal to the
imported GRPOConfig's fields. Where the files are not laid out as expected (another trl), the read
gives up (None) and only our own keys are checked early; trl's are checked by the full check.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError

_GRPO = ("trl", "trainer/grpo_config.py", "GRPOConfig")
# Where a base class imported by name from a package's top level is defined (the one trl uses).
_TOP_LEVEL = {("transformers", "TrainingArguments"): "training_args.py"}
_SANITY = ("learning_rate", "num_generations", "output_dir")  # a read that misses these is not trusted

_cache: dict[str, frozenset[str] | None] = {}


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)  # a top-level name: its package is located, not imported
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _class_fields(package: str, relpath: str, cls: str, depth: int = 0) -> set[str] | None:
    """The init fields of dataclass `cls` in `package/relpath` and of the classes it derives from."""
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
    names: set[str] = set()
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
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and not _not_init(stmt):
            names.add(stmt.target.id)
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


def trl_field_names() -> frozenset[str] | None:
    """GRPOConfig's init fields read from the installed sources (None: not readable so)."""
    if "trl" not in _cache:
        names = _class_fields(*_GRPO)
        _cache["trl"] = frozenset(names) if names is not None and all(n in names for n in _SANITY) else None
    return _cache["trl"]


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def check_keys(config: str | None, overrides: list[str]) -> str | None:
    """Refuses the first unknown key of the config file and the overrides, in the order the full
    check reads them, with its message (ConfigError); keys it cannot judge are left to it. Returns
    the model they set (the last `model`), for the command to find it before trl is imported."""
    from olmocr_rl.reward_registry import unknown_reward
    from olmocr_rl.train.config import _OWN_NAMES, _STATED_NAMES
    from olmocr_rl.train.config_file import load_config_file, parse_override
    from olmocr_rl.train.schema import suggest

    trl = trl_field_names()
    ours = _OWN_NAMES | _STATED_NAMES

    def flat(key: str, source: str) -> None:
        name = key.replace("-", "_")
        if name in ours or name == "trl" or trl is None or name in trl:
            return
        raise ConfigError(f"{source}: unknown key {key!r}{suggest(key, sorted(ours | trl))}: "
                          "neither an olmocr-rl option nor a trl.GRPOConfig one")  # fmt: skip

    def under_trl(key: str, source: str) -> None:
        if trl is None or key in _STATED_NAMES or key in trl:
            return
        raise ConfigError(f"{source}: trl.{key}: not a GRPOConfig option in trl {_version('trl')}{suggest(key, sorted(trl))}")

    model = None

    def rewards(value: object) -> None:  # the reward names (validate's check, sooner)
        for name in value if isinstance(value, dict) else ():
            if (error := unknown_reward(str(name))) is not None:
                raise error

    data: dict[str, Any] = load_config_file(config) if config is not None else {}
    for key, value in data.items():
        flat(str(key), str(config))
        model = value if str(key) == "model" else model
        if str(key).replace("-", "_") == "trl" and isinstance(value, dict):
            for sub in value:
                under_trl(str(sub), str(config))
        if str(key) == "rewards":
            rewards(value)
    for item in overrides:
        key, value = parse_override(item)
        source = f"override {item!r}"
        if "." in key:
            head, sub = key.split(".", 1)
            head = head.replace("-", "_")
            if head == "trl":
                under_trl(sub, source)
            elif head == "rewards":
                rewards({sub: None})
            elif head != "rewards" and trl is not None:
                raise ConfigError(f"{source}: unknown key {key!r}{suggest(key, sorted(ours | (trl or frozenset())))}: "
                                  "neither an olmocr-rl option nor a trl.GRPOConfig one")  # fmt: skip
        else:
            flat(key, source)
            model = value if key == "model" else model
            if key.replace("-", "_") == "trl" and isinstance(value, dict):
                for sub in value:
                    under_trl(str(sub), source)
            if key == "rewards":
                rewards(value)
    return model if isinstance(model, str) and model else None
