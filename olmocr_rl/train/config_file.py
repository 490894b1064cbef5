"""What a training config says, read: a config file (YAML, TOML or JSON, or a packaged recipe by its
name: olmocr_rl/recipes/) into a mapping, and a `KEY=VALUE` override into its key and value. Only
the reading; olmocr_rl/train/keys.py checks the keys and values early (before trl is imported) and
olmocr_rl/train/config.py checks and applies them. A command reads its recipe once (`read_config`)
and hands the `ConfigFile` to both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.recipes import recipe_names, recipe_path


@dataclass(frozen=True)
class ConfigFile:
    """A recipe file, read once: `source` (the name it was given by, which errors name) and its mapping."""

    source: str
    data: dict


def read_config(config: str | os.PathLike[str] | ConfigFile | None) -> ConfigFile | None:
    """`config` read (`load_config_file`); a ConfigFile or None as it is."""
    if config is None or isinstance(config, ConfigFile):
        return config
    return ConfigFile(str(config), load_config_file(config))


def load_config_file(path: str | os.PathLike[str]) -> dict:
    """The mapping a config file holds (a packaged recipe's, when `path` names one and no such file
    exists); ConfigError naming the file for anything else."""
    p = Path(path)
    if not p.is_file() and (packaged := recipe_path(str(path))) is not None:
        p = packaged
    if not p.is_file():
        raise ConfigError(f"{p}: no such config file (packaged recipes: {', '.join(recipe_names())})")
    text = p.read_text(encoding="utf-8")
    suffix = p.suffix.lower()
    if suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: invalid TOML ({e})") from None
    elif suffix in (".yaml", ".yml", ".json"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: invalid YAML ({e})") from None
    else:
        raise ConfigError(f"{p}: config files must end in .yaml, .yml, .toml or .json")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of option names to values")
    return data


def parse_override(item: str) -> tuple[str, Any]:
    """`key=value` (value parsed as a YAML scalar/list); `rewards.eos=0.1` and
    `trl.top_k=50` set one entry of those mappings."""
    import yaml

    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected KEY=VALUE (e.g. num_generations=8)")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {item!r}: empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value
