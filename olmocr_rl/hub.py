"""What a plan needs of a model on the Hugging Face hub, read without its weights: `config.json`, the
image processor's config (`processor_config.json` / `preprocessor_config.json`) and the safetensors
headers (every tensor's name, shape and dtype), a few hundred KB where the weights are 16 GB, so a
laptop plans the GPUs it will rent. `hub_model_files(repo)` is the one reader (olmocr_rl/train/shape.py
reads a hub id through it).

Everything goes through huggingface_hub's own functions, so `HF_ENDPOINT`, `HF_TOKEN`, the cache
(`HF_HUB_CACHE`, `HF_HOME`) and `HF_HUB_OFFLINE` mean what they mean to it (read by huggingface_hub
at import: a process sets them before it starts):

1. `HfApi().model_info(repo, files_metadata=True)`: one request (`GET /api/models/{repo}`), the
   commit and every file's size (which processor config the repo has, the weight files' sizes for
   the disk estimate);
2. `hf_hub_download` of config.json and the processor configs the repo has (they land in the
   cache, where loading the model later, or an offline plan, finds them);
3. `HfApi().get_safetensors_metadata(repo, revision=commit)`: the header of each weight file by an
   HTTP range request (the first 100,001 bytes, then the rest of a longer header; sharded: the
   index file, then each shard's header). No weight file is read.

A hub id whose files are all in the cache already (a downloaded model) is read from there with no
request. Offline (`HF_HUB_OFFLINE`), or when the hub cannot be reached, the cache is all there is:
config.json and the processor config from it, the headers from cached weight files if any (else the
shapes come from config.json: olmocr_rl/train/shape.py), and when config.json is not there the
error names what is missing and the command that fetches only those files.

The model argument's own check (does this folder or hub id exist at all?) is olmocr_rl/model_ref.py's; this
module answers only "what are this repo's planning files".
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

CONFIG = "config.json"
PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")  # olmocr_rl/image_tokens.py reads them
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
HEADER_RANGE = 100_001  # huggingface_hub's first range request of a header: bytes=0-100000

# A hub id: `name` or `owner/name` (what huggingface_hub accepts; checked by it again when used).
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


class HubUnavailable(Exception):
    """The planning files cannot be had: the message names what is missing and how to fetch it."""


@dataclass(frozen=True)
class HubModel:
    """A repo's planning files, local paths in the Hugging Face cache."""

    repo: str
    revision: str | None  # the commit read (None: unknown, read from the cache offline)
    files: dict[str, Path]  # config.json and the processor configs the repo has
    tensors: dict[str, tuple[tuple[int, ...], str]] | None  # from the safetensors headers; None: not read
    sizes: dict[str, int] = field(default_factory=dict)  # every file of the repo -> bytes ({} offline)
    fetched: int = 0  # bytes this call read over the network
    source: str = ""  # one line: what was read, from where

    @property
    def weight_bytes(self) -> int | None:
        sizes = [n for name, n in self.sizes.items() if name.endswith(".safetensors")]
        return sum(sizes) if sizes else None

    @property
    def other_bytes(self) -> int | None:
        """The repo's other files (tokenizer, processor, configs), as a checkpoint copies them."""
        if not self.sizes:
            return None
        return sum(n for name, n in self.sizes.items() if not name.endswith(".safetensors") and not name.startswith("."))


def read_headers(files: list[Path]) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) of every tensor in these safetensors files, from their headers alone
    (8 bytes of length, then the JSON header); ValueError naming a file that is not one."""
    import json
    import struct

    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for f in files:
        try:
            with open(f, "rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(size))
        except (OSError, ValueError, struct.error) as e:
            raise ValueError(f"{f}: not a readable safetensors file ({e})") from None
        for name, v in header.items():
            if name != "__metadata__":
                out[name] = (tuple(int(x) for x in v["shape"]), str(v["dtype"]))
    return out


def is_hub_id(model: str) -> bool:
    """Whether `model` has the form of a hub id (`name` or `owner/name`; huggingface_hub's rule: no
    `--` or `..`, not ending in `.` or `-`). The one rule: olmocr_rl/model_ref.py reads it too."""
    return bool(_HUB_ID.fullmatch(model)) and "--" not in model and ".." not in model and not model.endswith((".", "-"))


def offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def fetch_command(repo: str) -> str:
    """The command that fetches only the planning files (no weights)."""
    return f"hf download {repo} --include {CONFIG} --include '*processor_config.json'"


def _errors() -> tuple[type[BaseException], ...]:
    """What huggingface_hub raises when the hub cannot answer: its HTTP errors (OSError), offline
    mode (ConnectionError), unparsable headers, and the transport's own errors (httpx2 in
    huggingface_hub 2.x, httpx in 1.x)."""
    from huggingface_hub.errors import NotASafetensorsRepoError, SafetensorsParsingError

    out: list[type[BaseException]] = [OSError, ValueError, NotASafetensorsRepoError, SafetensorsParsingError]
    for name in ("httpx2", "httpx"):
        try:
            out.append(importlib.import_module(name).HTTPError)
        except (ImportError, AttributeError):
            continue
    return tuple(out)


def _cached(repo: str, name: str) -> Path | None | bool:
    """The cached file, False when the cache records that the repo has no such file, None unknown."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.file_download import _CACHED_NO_EXIST

    try:
        hit = try_to_load_from_cache(repo, name)
    except ValueError:  # not a valid repo id
        return None
    if hit is _CACHED_NO_EXIST:
        return False
    return Path(hit) if isinstance(hit, str) else None


def _cached_weights(repo: str) -> list[Path] | None:
    """The repo's weight files, when every one of them is in the cache (a downloaded model)."""
    single = _cached(repo, SINGLE)
    if isinstance(single, Path):
        return [single]
    index = _cached(repo, INDEX)
    if not isinstance(index, Path):
        return None
    import json

    try:
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    paths = [_cached(repo, s) for s in shards]
    return [p for p in paths if isinstance(p, Path)] if all(isinstance(p, Path) for p in paths) and paths else None


def _from_cache(repo: str, why: str | None) -> HubModel:
    """The planning files as the cache holds them; HubUnavailable naming what is missing."""
    from huggingface_hub.constants import HF_HUB_CACHE

    config = _cached(repo, CONFIG)
    processors = {n: _cached(repo, n) for n in PROCESSOR_FILES}
    files = {n: p for n, p in ((CONFIG, config), *processors.items()) if isinstance(p, Path)}
    missing = ([] if isinstance(config, Path) else [CONFIG]) + (
        [] if any(p is not None for p in processors.values()) else ["its processor config"]
    )
    if CONFIG not in files:
        because = f"{why}; " if why else ""
        raise HubUnavailable(
            f"{because}the Hugging Face cache ({HF_HUB_CACHE}) lacks {repo}'s {' and '.join(missing)}; fetch only those "
            f"(a few KB, no weights): {fetch_command(repo)}"
        )
    weights = _cached_weights(repo)
    tensors = read_headers(weights) if weights else None
    what = "config.json" + (", the processor config" if len(files) > 1 else "") + (", the weights' headers" if tensors else "")
    note = f"{repo}: {what} from the Hugging Face cache" + (f" ({why})" if why else "")
    if missing:
        note += f"; missing there: {' and '.join(missing)} ({fetch_command(repo)})"
    return HubModel(repo, None, files, tensors, source=note)


def hub_model_files(repo: str, *, tensors: bool = True, network: bool = True) -> HubModel:
    """`repo`'s planning files (module docstring): from the cache when it holds the model, else from
    the hub (`tensors`: also the safetensors headers; `network=False`: never, as a training rank
    asks), else what the cache has; HubUnavailable when not even config.json can be had."""
    if not is_hub_id(repo):
        raise HubUnavailable(f"{repo}: not a model folder, nor a hub id")
    known = isinstance(_cached(repo, CONFIG), Path) and any(_cached(repo, n) is not None for n in PROCESSOR_FILES)
    if known and (not tensors or _cached_weights(repo)):
        return _from_cache(repo, None)
    if offline():
        return _from_cache(repo, "HF_HUB_OFFLINE is set")
    if not network:
        return _from_cache(repo, None)
    try:
        return _fetch(repo, tensors=tensors)
    except _errors() as e:
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

        if isinstance(e, GatedRepoError):
            raise HubUnavailable(f"{repo} is gated: accept its terms on the hub and set HF_TOKEN ({_first_line(e)})") from None
        if isinstance(e, RepositoryNotFoundError):
            raise HubUnavailable(f"{repo}: no such model on the hub, or a private one (set HF_TOKEN) ({_first_line(e)})") from None
        return _from_cache(repo, f"the hub did not answer: {_first_line(e)}")


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), text)


def _fetch(repo: str, *, tensors: bool) -> HubModel:
    from huggingface_hub import HfApi, constants, hf_hub_download

    api = HfApi()
    info = api.model_info(repo, files_metadata=True)
    commit = info.sha
    sizes = {s.rfilename: int(s.size or 0) for s in (info.siblings or [])}
    files: dict[str, Path] = {}
    fetched = 0
    for name in (CONFIG, *PROCESSOR_FILES):
        if name not in sizes:
            continue
        if not isinstance(_cached(repo, name), Path):
            fetched += sizes[name]
        # At the default revision, so that the cache's refs/main names the commit (offline reads find it).
        files[name] = Path(hf_hub_download(repo, name))
    if CONFIG not in files:
        raise HubUnavailable(f"{repo} has no {CONFIG} on the hub: not a transformers model")
    read: dict[str, tuple[tuple[int, ...], str]] | None = None
    if tensors:
        meta = api.get_safetensors_metadata(repo, revision=commit)
        read = {name: (tuple(int(x) for x in t.shape), str(t.dtype)) for f in meta.files_metadata.values() for name, t in f.tensors.items()}
        # One range request per weight file (a header over 100 KB takes a second one, not counted).
        fetched += sum(min(HEADER_RANGE, sizes.get(f, HEADER_RANGE)) for f in meta.files_metadata)
        if meta.sharded:
            fetched += sizes.get(INDEX, 0)
    shards = len([n for n in sizes if n.endswith(".safetensors")])
    what = ", ".join([*files] + ([f"the headers of {shards} weight file(s)"] if read is not None else []))
    source = (f"{repo}@{(commit or 'main')[:12]} from {constants.ENDPOINT}: {what}, {_kb(fetched)} fetched, no weights "
              f"(the weights: {_gb(sum(n for f, n in sizes.items() if f.endswith('.safetensors')))})")  # fmt: skip
    return HubModel(repo, commit, files, read, sizes, fetched, source)


def _kb(n: int) -> str:
    return f"{n / 1000:,.0f} KB" if n >= 1000 else f"{n} bytes"


def _gb(n: int) -> str:
    return f"{n / 1e9:,.1f} GB"
