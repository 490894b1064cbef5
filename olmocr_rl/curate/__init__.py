"""Pages chosen by difficulty (`olmocr-rl curate`): sample N completions of every page with the
engines `olmocr-rl generate` uses (olmocr_rl/engines.py), score them with the training reward, and
keep for training the pages whose samples disagree (olmocr_rl/keep_rule.py).

    PREPARED/difficulty.jsonl   one line per scored page: split, pdf, page, samples, rewards, mean,
                                std, min, max, empty, tokens, the settings it was made with, key
    PREPARED/<name>.jsonl       the kept train pages, as prepared rows: a split `train` reads
                                (`olmocr-rl train PREPARED ... train_split=<name>`)

    records.py     the difficulty file: its records, the settings they were made with, appending
    sampling.py    the pages, sampled and scored (`curate`), with the training reward
    selection.py   the kept pages (`select`, by a KeepRule) and their split (`write_split`)
    job.py         the command's work from options to the split (`CurateJob`, `run_job`)

Which pages teach GRPO nothing depends on the policy, so they are measured by sampling it: a page is
kept when the (Bessel-corrected, as trl's) std of its N sample rewards exceeds `min_std` (default
0: any disagreement), optionally with its mean strictly between `min_mean` and `max_mean`.

The difficulty file is append-only: each page's line is written with one `write` and fsync'd
before the next page is generated, so a killed run leaves every finished page and at most a torn
last line, which the next run drops (rewriting the valid prefix through a temporary file) before
it appends. Pages already in the file with the same row (image, prompt, tests) are not generated
again; a row that changed since (prepare re-run) is scored again and its newest line wins. A file
made with other settings (model, samples, temperature, completion length, rewards, guard) is
refused rather than mixed. The selection split is written whole, to a temporary file and renamed.
"""

from olmocr_rl.curate.job import CurateJob, run_job
from olmocr_rl.curate.records import DIFFICULTY, CurateError, DifficultyFile, Settings, file_model, read_records, row_key
from olmocr_rl.curate.sampling import Page, Result, curate, source_pages, training_reward
from olmocr_rl.curate.selection import Selection, select, write_split
from olmocr_rl.keep_rule import KeepRule, statistics

__all__ = ["DIFFICULTY", "CurateError", "CurateJob", "DifficultyFile", "KeepRule", "Page", "Result", "Selection", "Settings", "curate",
           "file_model", "read_records", "row_key", "run_job", "select", "source_pages", "statistics", "training_reward", "write_split"]  # fmt: skip
