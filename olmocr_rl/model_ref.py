"""Where a model argument is (`--model` of train and curate, generate's MODEL, soup's checkpoints),
found once and quickly, before anything is loaded: a mistyped name is one `error:` line within
seconds, naming the folder that is not there and the names beside it, instead of minutes of
transformers retrying the network and blaming it.

`resolve_model(model)` tries, in order:

1. a folder here: that folder (it must hold config.json, or adapter_config.json for a LoRA adapter);
2. a path (`./x`, `../x`, `/x`, `~/x`, `x/y` where `x` is a folder here, more than one `/`, or a
   name no hub id can be): not here, so `ModelNotFound` naming the first part of it that does not
   exist and the close names in its folder (difflib); no network;
3. a hub id (`name` or `owner/name`) in the Hugging Face cache (its config.json there,
   `huggingface_hub.try_to_load_from_cache`): that snapshot; no network;
4. HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set: `ModelNotFound`, saying so and how to download it;
5. else ONE request, a GET of the id's config.json (a few KB) at HF_ENDPOINT through huggingface_hub's session
   (no retry: huggingface_hub retries only inside `http_backoff`, which this does not use; HF_TOKEN
   or the stored login sent as transformers would) with a short timeout: HF_HUB_ETAG_TIMEOUT when
   set, else HUB_TIMEOUT_S. Found: the id, for transformers to download. Any other answer (no such
   repository, a gated or private one, no config.json, a refused connection, no answer in time) is
   `ModelNotFound`: one line with what the hub said, the close local names, and how to download
   just the files a run reads (`hf download ID --include ...`).

Where the model's config.json is at hand (the folder's, the cache's, the hub's answer), it is read as
JSON and a model olmocr-rl cannot use is refused in the same line's time (olmocr_rl/families.py
`family_problem`): a text-only model for every command, and for `train` (`trains=True`) a
vision-language family it does not train.

The settings are read from the environment when a model is resolved, not when huggingface_hub was
imported, so that what a command's environment says is what it gets.

What this does not do: read the model's weights or build its config (olmocr_rl/train/shape.py reads
those for the plan's estimates; olmocr_rl/modeling.py loads the model).
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from olmocr_rl.errors import UserError
from olmocr_rl.hub import fetch_command, is_hub_id
from olmocr_rl.paths import shown

HUB_TIMEOUT_S = 3.0  # seconds for the one request (connect, then the answer): a hub that hangs is named within it
MODEL_FILES = ("config.json", "adapter_config.json")  # a model folder's marker: a full model, or a LoRA adapter
# The files a run reads from a hub model (weights, config, tokenizer, processor, chat template):
# not the other weight formats a repository may also hold (.bin, .gguf, .onnx, original/).
DOWNLOAD_PATTERNS = ("*.json", "*.safetensors", "*.txt", "*.model", "*.jinja")


class ModelNotFound(UserError, ValueError):
    """The model is neither a model folder here, nor in the cache, nor on the hub (the message says
    which of those was looked at and what was found)."""


@dataclass(frozen=True)
class ModelRef:
    """A model argument resolved: `where` is "folder" (a folder here), "cache" (a hub id found in
    the Hugging Face cache) or "hub" (a hub id the hub has, not downloaded yet)."""

    name: str  # as given
    where: str
    folder: Path | None = None  # the local folder (folder, cache); None for "hub"


def download_hint(model: str) -> str:
    """The command that downloads what a run reads of a hub model, and nothing else."""
    patterns = " ".join(f"'{p}'" for p in DOWNLOAD_PATTERNS)
    return f"hf download {model} --include {patterns} --local-dir DIR, then give DIR"


def looks_like_path(model: str) -> bool:
    """Whether `model` can only be a path here, never a hub id."""
    if model.startswith(("./", "../", "/", "~")) or model in (".", ".."):
        return True
    if not is_hub_id(model):
        return True  # not a name the hub takes
    return "/" in model and Path(model.split("/", 1)[0]).is_dir()  # x/y where x is a folder here


def local_problem(model: str, what: str = "--model") -> str | None:
    """Why `model` cannot be a model, found without the network: a path that is not a model folder
    (named, with the close names beside it); None when it is a model folder, or may be a hub id."""
    path = Path(model).expanduser()
    if path.is_dir():
        if not any((path / f).is_file() for f in MODEL_FILES):
            return f"{what} {shown(model)}: not a model folder (no config.json, nor a LoRA adapter's adapter_config.json)"
        return None
    if path.exists():
        return f"{what} {shown(model)}: not a folder (give the model's folder or a hub id)"
    if looks_like_path(model):
        return f"{what} {shown(model)}: no such model folder ({missing_part(path)})"
    return None


def missing_part(path: Path) -> str:
    """The first part of `path` that does not exist, where it was looked for, and the folders
    beside it with close names: `nothing named tinyy in /home/me; did you mean tiny?`."""
    base = Path(path.anchor) if path.is_absolute() else Path(".")
    for part in path.parts[1 if path.is_absolute() else 0 :]:
        if not (base / part).exists():
            close = close_names(base, part)
            hint = f"; did you mean {', '.join(shown(base / c) for c in close)}?" if close else ""
            return f"nothing named {shown(part)} in {shown(base.resolve())}{hint}"
        base = base / part
    return f"{shown(path)} exists"  # not reached for a missing path


def close_names(folder: Path, name: str, n: int = 3) -> list[str]:
    """The names of the folders in `folder` closest to `name` (difflib), best first."""
    try:
        entries = [e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return []
    return difflib.get_close_matches(name, entries, n=n, cutoff=0.6)


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")


def hub_settings() -> tuple[str, bool, float]:
    """(endpoint, offline, timeout) from the environment as it is now, huggingface_hub's defaults
    otherwise."""
    from huggingface_hub import constants

    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    offline = _env_true("HF_HUB_OFFLINE") or _env_true("TRANSFORMERS_OFFLINE") or bool(constants.HF_HUB_OFFLINE)
    try:
        timeout = float(os.environ["HF_HUB_ETAG_TIMEOUT"])
    except (KeyError, ValueError):
        timeout = HUB_TIMEOUT_S
    return endpoint, offline, timeout


def cached_folder(model: str) -> Path | None:
    """The snapshot folder of a hub id in the Hugging Face cache (HF_HUB_CACHE, or the default),
    when its config.json is there."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(model, "config.json", cache_dir=os.environ.get("HF_HUB_CACHE") or None)
    except ValueError:  # not a repo id huggingface_hub takes
        return None
    return Path(hit).parent if isinstance(hit, str) else None


class ModelUnsupported(UserError, ValueError):
    """The model is there, and olmocr-rl cannot use it (text-only; for `train`, a family it does not
    train): the message names what it is and what is taken."""


def resolve_model(model: str, what: str = "--model", *, trains: bool = False) -> ModelRef:
    """Where `model` is (see the module docstring); ModelNotFound, one line, when it is nowhere;
    ModelUnsupported when its config.json names a model olmocr-rl cannot use (`trains`: for `train`)."""
    from olmocr_rl.families import config_problem, family_problem

    if not model:
        raise ModelNotFound(f"{what} is required")
    if (why := local_problem(model, what)) is not None:
        raise ModelNotFound(why)
    path = Path(model).expanduser()
    if path.is_dir():
        if (why := config_problem(path, model, what, trains=trains)) is not None:
            raise ModelUnsupported(why)
        return ModelRef(model, "folder", path)
    try:
        import huggingface_hub  # noqa: F401 - transformers' dependency: with the train extra
    except ImportError:
        raise ModelNotFound(f"{what} {model}: no such folder here (and huggingface_hub, which would look on the hub, is not installed: "
                            "pip install 'olmocr-rl[train]')") from None  # fmt: skip
    if (folder := cached_folder(model)) is not None:
        if (why := config_problem(folder, model, what, trains=trains)) is not None:
            raise ModelUnsupported(why)
        return ModelRef(model, "cache", folder)
    here = f"{what} {model}: not a folder here ({missing_part(path)}), not in the Hugging Face cache"
    endpoint, offline, timeout = hub_settings()
    if offline:
        raise ModelNotFound(f"{here}, and the hub was not asked (HF_HUB_OFFLINE is set); where there is a network: {download_hint(model)} "
                            f"(to plan a run only, its config and processor config: {fetch_command(model)})")  # fmt: skip
    said, config = ask_hub(model, endpoint, timeout)
    if said is not None:
        raise ModelNotFound(f"{here}, and {said}")
    if config is not None and (why := family_problem(config, model, what, trains=trains)) is not None:
        raise ModelUnsupported(why)
    return ModelRef(model, "hub")


def ask_hub(model: str, endpoint: str, timeout: float) -> tuple[str | None, dict | None]:
    """One GET of the id's config.json: (None, the config as a dict, or None when it is not a JSON
    object) when the hub has it, else (what went wrong, worded to end the error line with what to do,
    None).

    Sent through huggingface_hub's own session (its offline guard, its redirects) and read by its
    `hf_raise_for_status` (its errors: no such repository, gated, no such file), with the token it
    would send (`get_token`: HF_TOKEN or the stored login). Not through `get_hf_file_metadata`:
    its headers (`build_hf_headers`) first fetch the hub's AI-agent registry (huggingface_hub 2.x,
    `utils/_detect_agent.py`: a second request, with a 3 s timeout of its own) unless
    HF_HUB_DISABLE_TELEMETRY was set before it was imported."""
    from huggingface_hub import __version__, get_session, get_token, hf_hub_url, hf_raise_for_status

    from olmocr_rl._core import __version__ as ours

    url = hf_hub_url(model, "config.json", endpoint=endpoint)
    headers = {"user-agent": f"olmocr-rl/{ours}; hf_hub/{__version__}"}
    if token := get_token():
        headers["authorization"] = f"Bearer {token}"
    try:
        response = get_session().get(url, headers=headers, timeout=timeout)
        hf_raise_for_status(response)
    except Exception as e:  # noqa: BLE001 - the hub's errors, and the transport's (httpx's or httpx2's, by huggingface_hub version)
        return _hub_refusal(e, model, endpoint, timeout), None
    try:
        config = json.loads(response.content)
    except ValueError:
        return None, None
    return None, config if isinstance(config, dict) else None


def _hub_refusal(e: Exception, model: str, endpoint: str, timeout: float) -> str:
    """What the hub's answer (or its silence) `e` means, worded to end the error line with what to do."""
    from huggingface_hub.errors import EntryNotFoundError, GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    if isinstance(e, GatedRepoError):
        return (f"the hub ({endpoint}) has {model} but it is gated: accept its terms on its page and log in "
                "(hf auth login, or HF_TOKEN)")  # fmt: skip
    if isinstance(e, RepositoryNotFoundError):
        return f"the hub ({endpoint}) has no model {model} (or it is private: log in with hf auth login, or set HF_TOKEN)"
    if isinstance(e, EntryNotFoundError):
        return f"the hub's {model} ({endpoint}) has no config.json: not a transformers model"
    if isinstance(e, HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        return f"the hub ({endpoint}) answered {status or type(e).__name__} for its config.json; {download_hint(model)}"
    kind = type(e).__name__
    if "Timeout" in kind:
        why = f"did not answer within {timeout:g} s"
    else:
        why = f"could not be reached ({kind}: {str(e).strip() or 'no detail'})"
    return f"the hub ({endpoint}) {why}; where there is a network: {download_hint(model)}"
