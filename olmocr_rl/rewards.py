"""Reward functions for trl's GRPOTrainer.

trl (1.x) calls each reward function with keyword arguments: `prompts`, `completions`,
`completion_ids`, `trainer_state`, `log_metric`, `log_extra` and every dataset column (here
`test_ids`, one list of olmOCR-bench test ids per completion). A reward returns one float per
completion, or None where it does not apply (trl then ignores it for that completion).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal, Union

from olmocr_rl.suite import TRAINING_GUARD, BenchSuite, Guard, PageScore, check_guard, check_threads

SuiteLike = Union[BenchSuite, str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def completion_text(completion: Any, index: int | None = None) -> str:
    """The text of a completion: a string as is; a conversational completion (a list of message
    dicts, as trl passes them) gives its first message's content, as the reference does (an
    empty list gives ""); multimodal content (a list of parts) gives its text parts joined.
    Anything else raises TypeError naming it (`index`: its place in the batch): a completion
    that cannot be read is a bug upstream, not a reward of None that trl would quietly skip."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        if not completion:
            return ""
        first = completion[0]
        content = first.get("content") if isinstance(first, dict) else None
        if isinstance(content, str):
            return content
        if isinstance(content, list) and all(isinstance(p, dict) for p in content):
            return "".join(p["text"] for p in content if p.get("type") == "text" and isinstance(p.get("text"), str))
    where = f"completion {index}" if index is not None else "a completion"
    raise TypeError(
        f"{where} is a {type(completion).__name__} ({_short(completion)}); expected a string or trl's conversational "
        "form, a list of message dicts whose first 'content' is a string or a list of {'type': 'text', 'text': ...} parts"
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def completion_texts(completions: Any) -> list[str]:
    """Every completion's text (`completion_text`); `completions` must be a sequence of them,
    not one string (which would be scored character by character)."""
    if isinstance(completions, (str, bytes)) or not isinstance(completions, Sequence):
        raise TypeError(
            f"completions must be a list with one completion per row, not a {type(completions).__name__}"
            + (" (wrap a single completion in a list)" if isinstance(completions, (str, bytes)) else "")
        )
    return [completion_text(c, i) for i, c in enumerate(completions)]


class BenchReward:
    """The olmOCR-bench pass rate of each completion on its page's tests.

    `average="micro"` (default): passed / total over the completion's tests, as olmOCR's
    `olmocr_bench_reward`; `"macro"`: the mean of per-type pass rates, so each test type counts
    equally; `"graded"`: a denser signal, the mean per-test credit (1 for a pass; a failed fuzzy
    present/format test earns its best similarity divided by its threshold, other failures 0). A completion without test ids gets None. An id missing from the suite raises
    KeyError naming it: a dataset built for another suite is a bug, not a zero reward.

    `guard="short-output+footnote"` (TRAINING_GUARD, the default) scores with allenai/olmocr PR
    #462's short-output guard: a completion too short to hold a `present` test's text fails it
    (and passes the `absent` tests), where the published checks would let an output of one
    newline pass every `present` test whose text holds a space (docs/checks.md §3.1.1); and with
    PR #476's rule for footnote tests: a stray character next to a marker does not match the
    test's before/after text (§3.7.1). `guard="short-output"`: PR #462's rule alone;
    `guard="none"`: the published benchmark's verdicts, as `olmocr-rl bench` gives them by default.

    Pass a loaded `BenchSuite` or what `BenchSuite.load` takes. Raises EnvironmentProblem when
    the suite holds tests this environment cannot check (math tests without KaTeX 0.16.21).
    Picklable; safe to call from several threads (the scoring runs in Rust with the GIL released).
    """

    def __init__(
        self,
        suite: SuiteLike,
        average: Literal["micro", "macro", "graded"] = "micro",
        *,
        threads: int | None = None,
        name: str | None = None,
        guard: Guard = TRAINING_GUARD,
    ):
        if average not in ("micro", "macro", "graded"):
            raise ValueError(f"average must be 'micro', 'macro' or 'graded', not {average!r}")
        self.guard: Guard = check_guard(guard)
        self.suite = suite if isinstance(suite, BenchSuite) else BenchSuite.load(suite)
        # Math tests without KaTeX would all fail as error verdicts: a silently wrong reward.
        self.suite.require_environment()
        self.average = average
        self.threads = check_threads(threads)
        # trl names the logged metrics after the reward function's __name__.
        self.__name__ = name or {"micro": "olmocr_bench", "macro": "olmocr_bench_macro"}.get(average, "olmocr_bench_graded")

    def score(self, completions: Sequence[Any], test_ids: Sequence[Sequence[str] | None]) -> list[PageScore | None]:
        return self.score_texts(completion_texts(completions), test_ids)

    def score_texts(
        self, texts: Sequence[str], test_ids: Sequence[Sequence[str] | None], *, details: bool = False
    ) -> list[PageScore | None]:
        """Page scores of completion texts; None where a row has no test ids."""
        idx = [i for i, ids in enumerate(test_ids) if ids]
        scores: list[PageScore | None] = [None] * len(texts)
        pages = [list(test_ids[i] or ()) for i in idx]
        got = self.suite.score([texts[i] for i in idx], pages, details=details, threads=self.threads, guard=self.guard)
        for i, s in zip(idx, got):
            scores[i] = s
        return scores

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        test_ids: Sequence[Sequence[str] | None] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        texts, test_ids = self.checked_inputs(completions, test_ids)
        scores = self.score_texts(texts, test_ids)
        if log_metric is not None:
            for name, value in self.metrics(scores, test_ids).items():
                log_metric(name, value)
        return self.rewards_of(scores)

    def checked_inputs(
        self, completions: Sequence[Any], test_ids: Sequence[Sequence[str] | None] | None
    ) -> tuple[list[str], Sequence[Sequence[str] | None]]:
        """The completions' texts and their test ids, checked to pair up."""
        texts = completion_texts(completions)
        if test_ids is None:
            raise TypeError(f"{self.__name__}: the dataset needs a 'test_ids' column (one list of test ids per row)")
        if len(test_ids) != len(texts):
            raise ValueError(f"{self.__name__}: {len(texts)} completions but {len(test_ids)} test_ids")
        return texts, test_ids

    def rewards_of(self, scores: Sequence[PageScore | None]) -> list[float | None]:
        """The reward of each page score under this reward's average (None: no tests)."""
        key = {"micro": "reward", "macro": "macro", "graded": "graded"}[self.average]
        return [getattr(s, key) if s is not None else None for s in scores]

    def metric_counts(self, scores: Sequence[PageScore | None], test_ids: Sequence[Sequence[str] | None]) -> dict[str, tuple[int, int]]:
        """(passed, total) of the batch by test type (`bench/<type>/pass_rate`) and by source
        JSONL (`bench/jsonl/<file>/pass_rate`): counts, so that batches (or ranks) add up."""
        counts: dict[str, list[int]] = {}
        for s, ids in zip(scores, test_ids):
            if s is None:
                continue
            for t, (p, n) in s.by_type.items():
                acc = counts.setdefault(f"bench/{t}/pass_rate", [0, 0])
                acc[0] += p
                acc[1] += n
            if ids:
                src = os.path.basename(self.suite.info(ids[0]).source)
                acc = counts.setdefault(f"bench/jsonl/{src}/pass_rate", [0, 0])
                acc[0] += s.passed
                acc[1] += s.total
        return {k: (p, n) for k, (p, n) in counts.items()}

    def metrics(self, scores: Sequence[PageScore | None], test_ids: Sequence[Sequence[str] | None]) -> dict[str, float]:
        """Batch pass rates by test type and by source JSONL, for logging."""
        return rates(self.metric_counts(scores, test_ids))


def rates(counts: dict[str, tuple[int, int]]) -> dict[str, float]:
    """passed / total for each counted metric with at least one test."""
    return {k: p / n for k, (p, n) in counts.items() if n}


class FrontMatterReward:
    """olmOCR's `reward_front_matter`: 0.0 when the completion is not a valid olmOCR page
    response (YAML front matter with primary_language, is_rotation_valid, rotation_correction,
    is_table, is_diagram, then the text); 0.5 when it is, plus 0.1 for each of those five fields
    equal to the reference output's (a dataset column, `claude_original` by default, holding the
    reference markdown with its front matter; missing or unparseable → no comparison)."""

    __name__ = "front_matter"

    def __init__(self, reference_column: str = "claude_original"):
        self.reference_column = reference_column

    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        from olmocr_rl.front_matter import FIELDS, FrontMatterError, parse_page_response

        refs = kwargs.get(self.reference_column)
        out = []
        for i, text in enumerate(completion_texts(completions)):
            try:
                mine = parse_page_response(text)
            except FrontMatterError:
                out.append(0.0)
                continue
            tenths = 5
            ref = refs[i] if refs is not None and i < len(refs) else None
            if ref:
                try:
                    theirs = parse_page_response(ref)
                    tenths += sum(getattr(mine, f) == getattr(theirs, f) for f in FIELDS)
                except FrontMatterError:
                    pass
            out.append(tenths / 10.0)
        return out


class EosReward:
    """1.0 when a completion's last token is the end-of-sequence token (it finished rather than
    hit the length limit), else 0.0; an empty completion gets 0.0. Give the tokenizer's
    `eos_token_id` (an int or a list of ids)."""

    __name__ = "eos"

    def __init__(self, eos_token_id: int | Sequence[int]):
        self.eos = {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id)

    def __call__(
        self, prompts: Any = None, completions: Sequence[Any] = (), completion_ids: Sequence[Sequence[int]] | None = None, **kwargs: Any
    ) -> list[float]:
        if completion_ids is None:
            raise TypeError("EosReward needs completion_ids (trl passes them to reward functions)")
        return [1.0 if ids and ids[-1] in self.eos else 0.0 for ids in completion_ids]


# ---------------------------------------------------------------------------------------------
# The rest of olmOCR's GRPO rewards (allenai/olmocr f7cfe4c, olmocr/train/grpo_train.py),
# computed in Rust (rust/rewards/). Each takes the reference output, where it needs one, from the
# `claude_original` column (upstream's name; `olmocr-rl prepare` fills it from a bench folder's
# claude_original/ files).
# ---------------------------------------------------------------------------------------------


def _references(kwargs: dict[str, Any], column: str, n: int) -> list[str | None]:
    refs = kwargs.get(column)
    if refs is None:
        return [None] * n
    if len(refs) != n:
        raise ValueError(f"{n} completions but {len(refs)} {column!r} references")
    return [r if isinstance(r, str) else None for r in refs]


def single_process(local: list) -> list[list]:
    """The gather of one process: its own list, as rank 0 of 1."""
    return [local]


class MedoidReward:
    """upstream's `medoid_reward`: each completion's Levenshtein distance d to the medoid of its
    group (the completion with the least mean distance to the others, the first on ties) gives
    `max(0, 1 - d / largest pairwise distance)`; the medoid gets 1.0, a lone completion 1.0.

    `group="page"` (default): the medoid of each page's completions (rows with the same `pdf`
    and `page` columns, or else the same prompt), gathered from every training rank when trl
    split a page's group across them (`gather`: a function from this rank's list to every
    rank's lists, in rank order, and `rank`), so a page's rewards do not depend on the world size.
    `group="batch"`: upstream's mode, one medoid over whatever list trl hands this rank (pages
    mixed); bit for bit upstream's values."""

    __name__ = "medoid"

    def __init__(
        self,
        group: Literal["page", "batch"] = "page",
        *,
        threads: int | None = None,
        gather: Callable[[list], list[list]] = single_process,
        rank: int = 0,
    ):
        if group not in ("page", "batch"):
            raise ValueError(f"group must be 'page' or 'batch', not {group!r}")
        self.group = group
        self.threads = check_threads(threads)
        self.gather = gather
        self.rank = rank
        self.__name__ = "medoid" if group == "page" else "medoid_batch"

    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        import olmocr_rl._core as _core

        texts = completion_texts(completions)
        if self.group == "batch":
            return list(_core.medoid_rewards(texts, None, self.threads))
        keys = page_keys(len(texts), prompts, kwargs)
        parts = self.gather(list(zip(keys, texts)))
        offset = sum(len(p) for p in parts[: self.rank])
        flat = [item for part in parts for item in part]
        mine = set(keys)
        # Only the groups this rank has members of; labels are the order of first appearance.
        wanted = [i for i, (k, _) in enumerate(flat) if k in mine]
        labels: dict[Any, int] = {}
        group_of = [labels.setdefault(flat[i][0], len(labels)) for i in wanted]
        rewards = _core.medoid_rewards([flat[i][1] for i in wanted], group_of, self.threads)
        at = {i: r for i, r in zip(wanted, rewards)}
        return [at[offset + j] for j in range(len(texts))]


def page_keys(n: int, prompts: Any, kwargs: dict[str, Any]) -> list[Any]:
    """What identifies a row's page: its (pdf, page) columns, else its prompt."""
    pdf, page = kwargs.get("pdf"), kwargs.get("page")
    if pdf is not None and page is not None:
        return [(str(pdf[i]), int(page[i])) for i in range(n)]
    if prompts is not None and len(prompts) == n:
        return [repr(p) for p in prompts]
    raise TypeError("the medoid reward groups completions by page: give the dataset 'pdf' and 'page' columns (or the prompts)")


class EditDistanceReward:
    """upstream's `bench_edit_distance_reward`: RapidFuzz `fuzz.ratio(completion, reference) /
    100` (the Indel similarity over code points), 0.0 without a reference."""

    __name__ = "edit_distance"

    def __init__(self, reference_column: str = "claude_original", *, threads: int | None = None):
        self.reference_column = reference_column
        self.threads = check_threads(threads)

    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        import olmocr_rl._core as _core

        texts = completion_texts(completions)
        return list(_core.edit_similarities(texts, _references(kwargs, self.reference_column, len(texts)), self.threads))


class ElementCountReward:
    """upstream's `reward_element_count`: 0.5 for each of (HTML tables, math spans) whose count in
    the completion equals the reference's (tables `<table...>...</table>`, math `$$..$$`,
    `\\(..\\)`, `\\[..\\]`), 0.0 without a reference."""

    __name__ = "element_count"

    def __init__(self, reference_column: str = "claude_original", *, threads: int | None = None):
        self.reference_column = reference_column
        self.threads = check_threads(threads)

    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        import olmocr_rl._core as _core

        texts = completion_texts(completions)
        return list(_core.element_count_rewards(texts, _references(kwargs, self.reference_column, len(texts)), self.threads))


class RectTablesReward:
    """upstream's `reward_rect_tables`: the share of the completion's HTML tables that are
    rectangular (every grid position filled, spans counted), 1.0 without HTML tables. Where
    upstream's table parser raises (and takes the training step down with it), 0.0."""

    __name__ = "rect_tables"

    def __init__(self, *, threads: int | None = None):
        self.threads = check_threads(threads)

    def __call__(self, prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any) -> list[float]:
        import olmocr_rl._core as _core

        return [0.0 if s is None else s for s in _core.rect_table_shares(completion_texts(completions), self.threads)]
