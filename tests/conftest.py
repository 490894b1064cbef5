import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def text_cases() -> list[dict]:
    return read_jsonl(GOLDEN / "text_cases.jsonl")
