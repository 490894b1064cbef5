"""The difficulty file of `olmocr-rl curate` (PREPARED/difficulty.jsonl by default): one line per
scored page, appended with one write and fsync'd, a torn last line (a kill during its write)
dropped on the next open; and the settings its records were made with."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import atomic_write
from olmocr_rl.errors import UserError

DIFFICULTY = "difficulty.jsonl"
RECORD_KEYS = ("split", "pdf", "page", "key", "rewards", "settings")


class CurateError(UserError, ValueError):
    """A problem the user fixes (a file, an option); the message names the file and line."""


class CurateInterrupted(CurateError):
    """Ctrl-C or SIGTERM: the finished pages are in the difficulty file (exit status 130)."""

    code = 130


@dataclass(frozen=True)
class Settings:
    """What a page's statistics depend on; records made with other settings are not comparable."""

    model: str
    samples: int
    temperature: float
    max_new_tokens: int
    rewards: dict[str, float]  # the bench rewards of the training config, with their weights
    guard: str
    loop_rule: dict[str, int] | None = None  # --stop-loops: the loop rule (olmocr_rl/loops.py); None: loops run to the limit

    def to_dict(self) -> dict[str, Any]:
        # `loop_rule` only when set: files written before the loop stop existed stay comparable.
        return {"model": self.model, "samples": self.samples, "temperature": self.temperature,
                "max_new_tokens": self.max_new_tokens, "rewards": dict(self.rewards), "guard": self.guard,
                **({"loop_rule": dict(self.loop_rule)} if self.loop_rule is not None else {})}  # fmt: skip

    def describe(self) -> str:
        rewards = " + ".join(name if w == 1 else f"{w:g} x {name}" for name, w in self.rewards.items())
        loops = ", loops stopped" if self.loop_rule is not None else ""
        return f"{rewards}, guard {self.guard}, temperature {self.temperature:g}, <= {self.max_new_tokens} tokens{loops}"


def row_key(row: dict) -> str:
    """A fingerprint of what a page's samples depend on in its prepared row."""
    data = [row["pdf"], int(row["page"]), row["image"], row.get("width"), row.get("height"), str(row["prompt"]),
            sorted(str(t) for t in row["test_ids"])]  # fmt: skip
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()[:16]


def _check_record(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return "not a JSON object"
    missing = [k for k in RECORD_KEYS if k not in rec]
    if missing:
        return f"missing {', '.join(missing)}"
    rewards = rec["rewards"]
    if not isinstance(rewards, list) or not rewards or not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in rewards):
        return "rewards must be a list of numbers"
    if not isinstance(rec["settings"], dict):
        return "settings must be an object"
    return None


def read_records(path: str | os.PathLike[str]) -> tuple[list[tuple[int, dict]], int, bool]:
    """(line number, record) of every line, the byte length of the valid part, and whether a torn
    last line (what a kill during its write leaves: no newline, or not JSON) was left out. A bad
    line before the last one is an error naming the file and line."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return [], 0, False
    lines = data.split(b"\n")
    last = len(lines) - 1  # the part after the final newline: b"" when the file ends with one
    records: list[tuple[int, dict]] = []
    valid = 0
    for n, line in enumerate(lines):
        if n == last:
            return records, valid, bool(line.strip())
        if line.strip():
            try:
                rec = json.loads(line)
                problem = _check_record(rec)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                rec, problem = None, f"invalid JSON ({e})"
            if problem is not None:
                if n == last - 1 and rec is None:  # a complete but garbled last line: torn as well
                    return records, valid, True
                raise CurateError(f"{p}:{n + 1}: {problem} (not a line `olmocr-rl curate` wrote; move the file away)")
            records.append((n + 1, rec))
        valid += len(line) + 1
    return records, valid, False  # not reached: the last part returns above


class DifficultyFile:
    """The append-only difficulty file of one run: locked against a second writer, its torn last
    line cut off on open, each record appended with one write and fsync'd."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._f: Any = None

    def open(self) -> tuple[list[tuple[int, dict]], bool]:
        """Locks the file and returns its records (line number, record) and whether a torn last line
        was dropped."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        f = self._locked()
        records, valid, torn = read_records(self.path)
        if torn or valid != self.path.stat().st_size:
            # Keep the valid part only (a temporary file renamed over the old one), then append to it.
            with self.path.open("rb") as src, atomic_write(self.path, "wb", durable=True) as dst:
                dst.write(src.read(valid))
            f.close()
            f = self._locked()
        self._f = f
        if created:
            _fsync_dir(self.path.parent)
        return records, torn

    def _locked(self) -> Any:
        import fcntl

        f = self.path.open("ab")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise CurateError(f"{self.path}: another `olmocr-rl curate` is writing this file") from None
        return f

    def append(self, record: dict) -> None:
        self.append_all([record])

    def append_all(self, records: list[dict]) -> None:
        """The records' lines in one write, fsync'd (a kill during it leaves whole lines and at most
        one torn last line, which the next open drops)."""
        if records:
            self._f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode())
            self._f.flush()
            os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_model(path: str | os.PathLike[str]) -> str | None:
    """The model the difficulty file's records were made with (None: no file, no records)."""
    records, _, _ = read_records(path)
    models = {str(rec["settings"].get("model")) for _, rec in records}
    if len(models) > 1:
        raise CurateError(f"{path}: records of several models ({', '.join(sorted(models))}); give --model")
    return models.pop() if models else None
