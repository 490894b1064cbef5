"""The generation engines, one table (`ENGINES`: name -> builder, one line about it), and ONE builder,
`build_engine(name, settings, rows)`, that `olmocr-rl generate`, `olmocr-rl curate` and the final
outputs of `olmocr-rl train` use; the engine trl colocates in each training rank and the server
`train --vllm-gpus` starts are told the same (`colocated_llm_kwargs`, `vllm_engine_kwargs`).

`EngineSettings` is what every engine is told, one value per model and config (training's from the
training config: olmocr_rl/train/config.py `engine_settings`), so that the same model under the same
config generates the same way whoever asks:

* **The prompt layout.** Each prepared row's conversation (`prompts.row_conversation`: the page
  image and the instruction in the prompt's order; olmOCR 2's instruction comes first).
* **Placeholder tokens are never sampled.** A sampled `<|image_pad|>` (or `<|vision_start|>`, which
  Qwen's position code reads as the start of an image) makes the image-token count of the
  completion disagree with the image features in the log-prob pass ("tokens: 49, features: 48") and
  ends the step. transformers gets `suppress_tokens`; vLLM a logit bias of -100 (the lowest it
  accepts: e^-100 is no probability a sampler reaches).
* **One source of processor settings.** The transformers engines load the processor with the
  run's `max_pixels` (`EngineSettings.processor`); the vLLM engines get the same bounds stated
  outright as `mm_processor_kwargs` (the model folder's min/max pixels, `max_pixels` when the run
  sets it), so every engine expands an image into as many tokens as the trainer's processor does.
* **The run's seed reaches every engine.** trl seeds a colocated engine with the rank index alone
  (every run samples the same streams whatever its seed) and starts no server; here the engine of
  rank r gets `rank_seed(seed, r)`, the server `--seed seed`, and the offline engines the seed.
* **A page's samples are seeded by the page, not by the batch it shares** (`generate`, `curate`,
  the final outputs): sample j of a page is drawn with `sample_seed(seed, pdf, page, j)`, so the
  random draws a page gets do not depend on which other pages were generated before it or beside it,
  nor on how many workers share the job. vLLM takes a seed per request (`SamplingParams(seed=...)`),
  so one call mixes many pages (`Engine.mixes_pages`); transformers' `generate` samples a whole batch
  from one random stream, so its calls hold the rows of one page only, seeded with the first row's
  seed, and a call never mixes pages (the cost: no batching across pages; also what keeps the numbers
  equal, since a row's logits move in the last bits with the other rows of its batch).
* **What is reproducible.** On the CPU, everything: one worker and N write the same records and
  byte-identical files (tests/test_page_workers.py; vLLM's CPU build too, tests/test_vllm_real.py).
  On a GPU, the draws are, the logits are not: vLLM batches requests continuously and its GPU kernels
  give results that move with the batch's composition, so two runs (or one worker and eight) can
  part at a token where two choices are nearly tied, and the rest of that completion differs; the
  samples are equally likely either way. The transformers engine's calls hold one page's rows, so its
  batches do not change with the split, and what remains is the GPU's own run-to-run nondeterminism.
  Bit-for-bit on a GPU at best with vLLM's batch-invariant mode (`VLLM_BATCH_INVARIANT=1`), not
  checked here.
* **Loops stopped where asked** (`EngineSettings.loop_rule`; `generate --stop-loops`, `curate
  --stop-loops`): transformers ends a looping row with a stopping criterion (olmocr_rl/loop_stop.py),
  vLLM with a logits processor loaded at engine start (olmocr_rl/loop_stop_vllm.py) and switched on per
  request. A stopped completion is returned as the loop continued to the length limit
  (olmocr_rl/loops.py `project`), so it is scored as the full run would be if the loop went on; the
  engine's `loops` tally counts the stops and the decode tokens they saved. Off by default: a loop the
  model would have left is scored as if it had not. The transformers engine also reports the tokens
  of the call in progress (`Engine.live`), so a long page is never silent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.loops import VLLM_PROCESSOR, LoopRule, LoopTally
from olmocr_rl.prompts import row_conversation

# (images, one conversation per image (olmocr_rl.prompts.conversation), temperature, one seed per image
# (`sample_seed`)) -> one completion per image
GenerateFn = Callable[[list, list[list[dict]], float, list[int]], list[str]]

# Qwen-VL's vision tokens, by their config names (Qwen2-VL, Qwen2.5-VL, Qwen3-VL; other VLMs use a
# subset of these names).
PLACEHOLDER_KEYS = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
# vLLM clamps a logit bias to [-100, 100].
VLLM_BAN = -100.0
# Set by a command's --quiet (generate, curate, train) for itself and every process it starts: no
# weight-loading or download bars from transformers, huggingface_hub or vLLM (`quiet_loading`).
QUIET_ENV = "OLMOCR_RL_QUIET"


def quiet() -> bool:
    """Whether the command was given --quiet (QUIET_ENV), here or in the command that started this process."""
    import os

    return os.environ.get(QUIET_ENV, "").lower() in ("1", "true", "yes")


def quiet_loading() -> None:
    """--quiet (olmocr_rl/cli `QuietOption`): the weight-loading and download bars off, here and in
    the processes this one starts: transformers' "Loading weights" and huggingface_hub's downloads
    (HF_HUB_DISABLE_PROGRESS_BARS, read when they are imported; switched off here when they already
    are), vLLM's "Loading safetensors checkpoint shards" (`use_tqdm_on_load`, which
    `vllm_engine_kwargs` and `colocated_llm_kwargs` give when QUIET_ENV is set). Imports nothing
    heavy: `prepare --quiet` stays fast."""
    import os
    import sys

    os.environ[QUIET_ENV] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def rank_seed(seed: int, rank: int) -> int:
    """The sampling seed of one rank (or of one tensor-parallel group of colocated engines):
    `seed` itself on rank 0 (so one rank under a launcher reproduces a one-process run), a
    SplitMix64 mix of (seed, rank) on the others. trl seeds rank r with seed + r, so runs with seeds
    s and s + 1 would share all but one of their ranks' sampling streams: "independent" seeds for a
    soup would start from the same completions on most GPUs."""
    if rank == 0:
        return seed
    mask = (1 << 64) - 1
    x = (seed * 0x9E3779B97F4A7C15 + rank * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return (x ^ (x >> 31)) % (1 << 32)  # numpy's seed range


def sample_seed(seed: int, pdf: str, page: int, sample: int = 0) -> int:
    """The seed of sample `sample` of a page (its PDF key and page number) in a run seeded `seed`:
    the same whoever generates the page, in whatever company, in this process or a worker's."""
    import hashlib

    digest = hashlib.sha256(f"{int(seed)}\0{pdf}\0{int(page)}\0{int(sample)}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % (1 << 32)  # numpy's seed range, as rank_seed


def placeholder_token_ids(config: Any) -> list[int]:
    """The vision placeholder token ids a model config names (top level, or its text config)."""
    ids: list[int] = []
    for scope in (config, getattr(config, "text_config", None)):
        for key in PLACEHOLDER_KEYS:
            value = getattr(scope, key, None) if scope is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and value not in ids:
                ids.append(value)
    return ids


def transformers_suppression(config: Any) -> dict[str, Any]:
    """`generate` keyword arguments that keep the placeholders out of every completion."""
    ids = placeholder_token_ids(config)
    return {"suppress_tokens": ids} if ids else {}


def vllm_suppression(config: Any) -> dict[str, Any]:
    """vLLM `SamplingParams` keyword arguments (also what trl sends a server) that keep the
    placeholders out of every completion. JSON turns the keys into strings; vLLM reads them back."""
    ids = placeholder_token_ids(config)
    return {"logit_bias": {i: VLLM_BAN for i in ids}} if ids else {}


def pixel_bounds(max_pixels: int | None, model: str | None = None) -> dict[str, int]:
    """vLLM's `mm_processor_kwargs`: the image budget of the trainer's processor, stated outright
    (the model's min/max pixels, `max_pixels` when the run sets it), so that an engine with other
    defaults still cuts an image into as many tokens. Both bounds, whenever the model's processor
    config can be read: transformers 5.17 drops a `max_pixels` given without `min_pixels` in a
    processor call (qwen2_vl `_standardize_kwargs`)."""
    bounds = folder_pixel_bounds(model) if model else {}
    if max_pixels is not None:
        bounds["max_pixels"] = int(max_pixels)
    return bounds


def folder_pixel_bounds(model: str) -> dict[str, int]:
    """min/max pixels of the model's image processor config as transformers reads it
    (olmocr_rl/image_tokens.py: a folder's, or a hub id's from the Hugging Face cache, fetched without
    the weights when the cache lacks it); {} when there is none, or it is not a Qwen-VL processor."""
    from olmocr_rl.image_tokens import UnknownProcessor, budget_from_config, model_processor_config

    found = model_processor_config(model, fetch=True)
    if found is None:
        return {}
    try:
        budget = budget_from_config(*found)
    except UnknownProcessor:
        return {}
    return {"min_pixels": budget.min_pixels, "max_pixels": budget.max_pixels}


@dataclass(frozen=True)
class EngineSettings:
    """What an engine is told for one model and config (see the module docstring)."""

    model: str  # a model folder or hub id (a checkpoint, a LoRA adapter, a soup)
    max_new_tokens: int = 8000
    seed: int = 0
    max_pixels: int | None = None  # the run's image budget; None: the model folder's
    trust_remote_code: bool = False
    eager: bool | None = None  # vLLM without CUDA graphs or compilation; None: eager without CUDA
    tensor_parallel: int = 1  # GPUs one vLLM engine spans (vLLM's tensor_parallel_size)
    loop_rule: LoopRule | None = None  # stop completions that fall into a repetition loop (olmocr_rl/loops.py); None: never

    def __post_init__(self) -> None:
        if isinstance(self.loop_rule, dict):  # the settings sent to a worker as plain data (dataclasses.asdict)
            object.__setattr__(self, "loop_rule", LoopRule(**self.loop_rule))

    def pixel_bounds(self) -> dict[str, int]:
        return pixel_bounds(self.max_pixels, self.model)

    def processor(self) -> Any:
        """The model's processor with the run's image budget (the trainer's, for training's model)."""
        from olmocr_rl.modeling import load_processor

        return load_processor(self.model, trust_remote_code=self.trust_remote_code, max_pixels=self.max_pixels)


def vllm_engine_kwargs(settings: EngineSettings, *, cuda: bool) -> dict[str, Any]:
    """What a `vllm.LLM` of ours is given besides the model and its context: the seed, the processor
    bounds and eager mode (trl's colocated engine gets the same through `colocated_llm_kwargs`)."""
    kwargs: dict[str, Any] = {"seed": settings.seed, "enforce_eager": (not cuda) if settings.eager is None else settings.eager,
                              "trust_remote_code": settings.trust_remote_code, "tensor_parallel_size": settings.tensor_parallel}  # fmt: skip
    if bounds := settings.pixel_bounds():
        kwargs["mm_processor_kwargs"] = bounds
    if quiet():
        kwargs["use_tqdm_on_load"] = False  # vLLM's "Loading safetensors checkpoint shards" bar
    return kwargs


def colocated_llm_kwargs(settings: EngineSettings, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The `vllm.LLM` arguments trl's colocated engine is built with (`kwargs`, trl's fixed set),
    with this rank's seed (trl passes process_index // tensor_parallel_size: the same within a
    tensor-parallel group, as trl requires; here combined with the run's seed), our processor
    bounds, `enforce_eager` when the run asks for it, and with the loop stop its logits processor
    (by name, olmocr_rl/loop_stop_vllm.py; each request switches it on: `vllm_loop_stop`).
    olmocr_rl/train/trainer.py hands them to trl (`OlmocrGRPOTrainer.colocated_llm_kwargs`)."""
    out, bounds = dict(kwargs), settings.pixel_bounds()
    out["seed"] = rank_seed(settings.seed, int(kwargs.get("seed", 0)))
    if bounds:
        out["mm_processor_kwargs"] = {**(kwargs.get("mm_processor_kwargs") or {}), **bounds}
    if settings.eager:
        out["enforce_eager"] = True
    if settings.loop_rule is not None:
        out["logits_processors"] = [*(kwargs.get("logits_processors") or []), VLLM_PROCESSOR]
    if quiet():
        out["use_tqdm_on_load"] = False
    return out


def vllm_loop_stop(rule: LoopRule | None, processor: Any, model: str) -> dict[str, Any]:
    """vLLM `SamplingParams` keyword arguments (also what trl sends a server) that switch the loop
    stop on for a request: `extra_args` with the rule and the end token the logits processor forces
    (the tokenizer's end-of-sequence token); {} without a rule. ConfigError when the tokenizer of
    `model` names no end token."""
    if rule is None:
        return {}
    from olmocr_rl.loops import vllm_extra_args

    (end, *_) = end_token_ids(None, getattr(processor, "tokenizer", processor)) or [None]
    if end is None:
        raise ConfigError(f"{model}: the loop stop needs the tokenizer's end-of-sequence token, and it names none")
    return {"extra_args": vllm_extra_args(rule, end)}


# ---------------------------------------------------------------------------------------------
# the engines and the builder
# ---------------------------------------------------------------------------------------------


@dataclass
class LiveTokens:
    """The tokens generated so far by the call in progress, for engines that can tell (transformers):
    `report(n)` is called as they come when a caller sets it."""

    report: Callable[[int], None] | None = None

    def __call__(self, tokens: int) -> None:
        if self.report is not None:
            self.report(tokens)

    def follow(self, progress: Callable[[int, int, int], None] | None, done: int, todo: int, before: int) -> None:
        """While the next call runs: `progress(done, todo, before + its tokens so far)`, at most twice a
        second (None: stop reporting)."""
        if progress is None:
            self.report = None
            return
        import time

        last = [time.monotonic()]

        def report(tokens: int) -> None:
            if time.monotonic() - last[0] >= 0.5:
                last[0] = time.monotonic()
                progress(done, todo, before + tokens)

        self.report = report


@dataclass
class Engine:
    generate: GenerateFn
    count_tokens: Callable[[list[str]], list[int]]  # tokens of each completion (capped at max_new_tokens)
    # True: one call may hold the rows of several pages, each sampled with its own seed (vLLM); False:
    # one random stream per call, seeded with its first row's seed, so a call holds one page's rows.
    mixes_pages: bool = True
    loops: LoopTally | None = None  # with the loop stop on: what it stopped and saved (olmocr_rl/loops.py)
    live: LiveTokens = field(default_factory=LiveTokens)


@dataclass(frozen=True)
class EngineKind:
    build: Callable[[EngineSettings, Sequence[dict], Callable[[str], None]], Engine]  # (settings, rows to generate, warn)
    about: str
    tensor_parallel: bool = False  # one engine can span several GPUs
    # It starts processes of its own (vLLM's engine core): a worker stops it by unwinding as Ctrl-C
    # does on SIGTERM (olmocr_rl/procs.py SigtermAsInterrupt), not by dying at once.
    own_processes: bool = False


def build_engine(name: str, settings: EngineSettings, rows: Sequence[dict], warn: Callable[[str], None] = print) -> Engine:
    """THE builder: the engine `name` loaded for `settings`, sized for `rows` (prepared rows: the
    vLLM context fits the longest of their prompts). A model that cannot be loaded is a ConfigError
    naming it."""
    return engine_kind(name, settings.tensor_parallel).build(settings, rows, warn)


def engine_kind(name: str, tensor_parallel: int = 1) -> EngineKind:
    """The engine `name` of the table; ConfigError for a name it lacks, or tensor parallelism
    asked of an engine that cannot span GPUs."""
    if name not in ENGINES:
        raise ConfigError(f"--engine must be {' or '.join(ENGINES)}, not {name!r}")
    if tensor_parallel < 1:
        raise ConfigError(f"--tensor-parallel must be at least 1, got {tensor_parallel}")
    if tensor_parallel > 1 and not ENGINES[name].tensor_parallel:
        spans = " or ".join(n for n, k in ENGINES.items() if k.tensor_parallel)
        raise ConfigError(f"--tensor-parallel {tensor_parallel}: the {name} engine runs on one GPU; give --engine {spans}")
    return ENGINES[name]


def token_counter(processor: Any, max_new_tokens: int) -> Callable[[list[str]], list[int]]:
    tok = getattr(processor, "tokenizer", processor)

    def count(texts: list[str]) -> list[int]:
        # The completions re-tokenized: their generated length for real text; text decoded from
        # arbitrary tokens (a random model's bytes) can re-tokenize longer, so capped at the budget.
        return [min(len(ids), max_new_tokens) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]

    return count


def _transformers(settings: EngineSettings, rows: Sequence[dict], warn: Callable[[str], None]) -> Engine:
    import torch

    from olmocr_rl.modeling import inference_dtype, load_trained

    processor = settings.processor()
    cuda = torch.cuda.is_available()
    torch.manual_seed(settings.seed)
    model = load_trained(settings.model, dtype=inference_dtype(cuda), trust_remote_code=settings.trust_remote_code)
    model = model.to("cuda") if cuda else model
    model.eval()
    return transformers_engine(model, processor, max_new_tokens=settings.max_new_tokens, loop_rule=settings.loop_rule)


def transformers_engine(model: Any, processor: Any, *, max_new_tokens: int, loop_rule: LoopRule | None = None) -> Engine:
    """A loaded model (the engine's, or the trained one in memory) as an engine: one page per call."""
    tally, live = (LoopTally() if loop_rule is not None else None), LiveTokens()
    generate = transformers_generate(model, processor, max_new_tokens=max_new_tokens, loop_rule=loop_rule, tally=tally, live=live)
    return Engine(generate, token_counter(processor, max_new_tokens), mixes_pages=False, loops=tally, live=live)


def end_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokens that end a completion: the generation config's end tokens, else the tokenizer's."""
    source = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if source is None:
        source = getattr(tokenizer, "eos_token_id", None)
    return [source] if isinstance(source, int) else [int(x) for x in source or ()]


def transformers_generate(model: Any, processor: Any, *, max_new_tokens: int, loop_rule: LoopRule | None = None,
                          tally: LoopTally | None = None, live: Callable[[int], None] | None = None) -> GenerateFn:  # fmt: skip
    """Batched `model.generate` (left padding), image placeholder tokens suppressed, the batch
    sampled from one random stream seeded with its first row's seed. With `loop_rule`, a row that
    falls into a loop is stopped (olmocr_rl/loop_stop.py) and returned as the loop projected to
    `max_new_tokens` (olmocr_rl/loops.py `project`), counted in `tally`; `live(n)`: the tokens
    generated so far in the call."""

    def generate(images: list, messages: list[list[dict]], temperature: float, seeds: list[int]) -> list[str]:
        import torch

        texts = [processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in messages]
        tok = getattr(processor, "tokenizer", processor)
        side = tok.padding_side
        tok.padding_side = "left"  # generation continues from the right end of every row
        try:
            inputs = processor(text=texts, images=images, padding=True, return_tensors="pt")
        finally:
            tok.padding_side = side
        device = next(model.parameters()).device
        inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
        gen: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0}
        if temperature > 0:
            gen["temperature"] = temperature
        if tok.pad_token_id is not None:
            gen["pad_token_id"] = tok.pad_token_id
        gen.update(transformers_suppression(model.config))  # placeholders are never sampled
        from transformers import StoppingCriteriaList

        from olmocr_rl.loop_stop import LoopStoppingCriteria

        width = inputs["input_ids"].shape[1]
        watch = LoopStoppingCriteria(loop_rule, width, end_token_ids(model, tok), on_tokens=live)
        torch.manual_seed(seeds[0])  # CPU and every GPU
        with torch.no_grad():
            out = model.generate(**inputs, **gen, stopping_criteria=StoppingCriteriaList([watch]))
        if loop_rule is None:
            return processor.batch_decode(out[:, width:], skip_special_tokens=True)
        return stopped_texts(out[:, width:].tolist(), watch.loops, watch.lengths, max_new_tokens, tok, tally)

    return generate


def stopped_texts(rows: list[list[int]], loops: Sequence[Any], lengths: Sequence[int], limit: int, tokenizer: Any,
                  tally: LoopTally | None, texts: Sequence[str] | None = None) -> list[str]:  # fmt: skip
    """Each completion's text (`texts[i]`, else its ids decoded), a stopped one's as its loop projected
    to `limit` tokens; the stops counted in `tally` (`lengths`: the tokens each was generated with)."""
    from olmocr_rl.loops import project

    if tally is not None:
        tally.add(lengths, loops, limit)
    return [tokenizer.decode(project(ids, loop, limit), skip_special_tokens=True) if loop is not None
            else texts[i] if texts is not None else tokenizer.decode(ids, skip_special_tokens=True)
            for i, (ids, loop) in enumerate(zip(rows, loops))]  # fmt: skip


def _vllm(settings: EngineSettings, rows: Sequence[dict], warn: Callable[[str], None]) -> Engine:
    """vLLM's offline engine (`vllm.LLM`), one image per prompt, the prompt text from our
    processor's chat template, its context the longest prompt of `rows` plus the completion."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError as e:
        raise ConfigError(f"--engine vllm needs vLLM ({e}); pip install 'olmocr-rl[vllm]', or use --engine transformers") from None
    import torch

    from olmocr_rl.modeling import model_config

    processor = settings.processor()
    config = model_config(settings.model, trust_remote_code=settings.trust_remote_code)
    longest = longest_prompt(processor, rows)
    context, max_tokens = vllm_context(model_context_length(config), longest, settings.max_new_tokens)
    if max_tokens < settings.max_new_tokens:
        warn(f"warning: completions capped at {max_tokens} tokens: the model's context is {context} and a prompt takes up to {longest}")
    cuda = torch.cuda.is_available()
    # vLLM's CPU build (0.31) fails a seeded request whose prefill it cuts into chunks: it rewinds the
    # request's generator by an offset, which a CPU generator has not ("CPU Generator does not use
    # offset"). Without CUDA every prefill is scheduled whole.
    whole = {} if cuda else {"enable_chunked_prefill": False, "max_num_batched_tokens": max(context, 4096)}
    rule = settings.loop_rule
    stop = vllm_loop_stop(rule, processor, settings.model)
    if rule is not None:
        from olmocr_rl.loop_stop_vllm import LoopStopProcessor
    llm = LLM(model=settings.model, max_model_len=context, limit_mm_per_prompt={"image": 1}, **whole,
              **vllm_engine_kwargs(settings, cuda=cuda), **({"logits_processors": [LoopStopProcessor]} if rule else {}))  # fmt: skip
    suppression = vllm_suppression(config)
    tally = LoopTally() if rule is not None else None
    tok = getattr(processor, "tokenizer", processor)

    def generate(images: list, messages: list[list[dict]], temperature: float, seeds: list[int]) -> list[str]:
        # Each request its own seed: vLLM then samples it with a generator of its own (and, on a GPU,
        # with PyTorch's sampler instead of FlashInfer's, which takes no per-request generator).
        params = [SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=int(s), **suppression, **stop) for s in seeds]
        requests = [
            {"prompt": processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False), "multi_modal_data": {"image": im}}
            for im, m in zip(images, messages)
        ]
        outputs = [o.outputs[0] for o in llm.generate(requests, params, use_tqdm=False)]
        if rule is None:
            return [o.text for o in outputs]
        # The stopped ones ended with a forced end token after the cut: found again from the ids (the same loop).
        ids = [list(o.token_ids) for o in outputs]
        return stopped_texts(ids, [rule.find(i) for i in ids], [len(i) for i in ids], max_tokens, tok, tally, [o.text for o in outputs])

    return Engine(generate, token_counter(processor, max_tokens), loops=tally)


ENGINES: dict[str, EngineKind] = {
    "transformers": EngineKind(_transformers, "transformers' generate, batched (on the GPU when there is one)"),
    "vllm": EngineKind(_vllm, "vLLM's offline engine (pip install 'olmocr-rl[vllm]')", tensor_parallel=True, own_processes=True),
}


def model_context_length(config: Any) -> int | None:
    """The longest sequence a model config allows (its text model's position embeddings)."""
    for scope in (getattr(config, "text_config", None), config):
        value = getattr(scope, "max_position_embeddings", None) if scope is not None else None
        if isinstance(value, int) and value > 0:
            return value
    return None


def longest_prompt(processor: Any, rows: Sequence[dict]) -> int:
    """The longest prompt, in tokens, of `rows` as our processor builds it (chat template, image
    expanded into its tokens). The image's share is the one function every stage reads
    (olmocr_rl/image_tokens.py, from the page's width and height under this processor's bounds, the
    run's max_pixels in them); the text's is the processor's own, once per distinct instruction and
    layout, on that instruction's first page, whose image tokens are checked against the function.
    A processor the function does not compute is run on a blank image of every distinct size."""
    from PIL import Image

    from olmocr_rl.image_tokens import UnknownProcessor, processor_budget

    try:
        budget = processor_budget(processor.image_processor)
    except (UnknownProcessor, AttributeError):
        budget = None
    image_id = getattr(processor, "image_token_id", None)
    text: dict[tuple, int] = {}
    longest = 0
    for r in rows:
        width, height, prompt, layout = int(r["width"]), int(r["height"]), str(r["prompt"]), r.get("prompt_layout")
        key = (prompt, layout) if budget is not None else (prompt, layout, width, height)
        if key not in text:
            row = {"prompt": prompt, **({"prompt_layout": layout} if layout is not None else {})}
            template = processor.apply_chat_template(row_conversation(row), add_generation_prompt=True, tokenize=False)
            ids = list(processor(text=[template], images=[Image.new("RGB", (width, height))])["input_ids"][0])
            image = budget.tokens(width, height) if budget is not None else 0
            if budget is not None and image_id is not None and ids.count(image_id) != image:
                raise ConfigError(f"{type(processor.image_processor).__name__} makes {ids.count(image_id)} image tokens of a "
                                  f"{width}x{height} page, olmocr_rl/image_tokens.py {image}: report this")  # fmt: skip
            text[key] = len(ids) - image
        longest = max(longest, text[key] + (budget.tokens(width, height) if budget is not None else 0))
    return longest


def vllm_context(limit: int | None, longest_prompt: int, max_new_tokens: int) -> tuple[int, int]:
    """(vLLM's max_model_len, max tokens per completion): the longest prompt plus `max_new_tokens`,
    within the model's `limit` (vLLM refuses a context above it); completions are shortened to fit.
    ConfigError when not even one completion token fits."""
    need = longest_prompt + max_new_tokens
    if limit is None or need <= limit:
        return need, max_new_tokens
    if limit - longest_prompt < 1:
        raise ConfigError(f"the longest prompt needs about {longest_prompt} tokens, the model's whole context is {limit}")
    return limit, limit - longest_prompt
