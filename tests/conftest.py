import importlib
import importlib.util
import json
import os
from pathlib import Path

# No test reaches the Hugging Face hub: a hub id is looked up in the cache only (huggingface_hub reads
# this at import; tests/test_hub_plan.py serves a stand-in hub to the processes it starts).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
from hypothesis import settings

# `make test` (and so CI) runs the property tests with a fixed seed so a run is reproducible;
# plain `pytest` explores fresh random examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)

from olmocr_rl import BenchSuite

GOLDEN = Path(__file__).parent / "golden"


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def text_cases() -> list[dict]:
    return read_jsonl(GOLDEN / "text_cases.jsonl")


def golden_disagreement(case: dict, guard: str = "none") -> str | None:
    """How our result on one golden case differs from the reference's, or None if it agrees:
    load-time acceptance, verdict, error-ness and (when the reference does not raise) the exact
    explanation. Nondeterministic reference cases only need to load and run. `guard`: the rule
    set our checks use (the case's verdict must come from the matching reference)."""
    # Duplicate-key cases carry the record verbatim (the reference's JSON reader keeps the last).
    record = case.get("raw_test") or json.dumps(case["test"], ensure_ascii=False)
    suite = BenchSuite.from_jsonl(record, "case.jsonl", strict=False)
    if "load_error" in case:
        return f"reference rejects at load ({case['load_error']}), we accept" if len(suite) else None
    if not len(suite):
        if _refused_page(case["test"]) and all("page must be a whole number from 1" in e for e in suite.errors):
            return None  # on purpose (docs/bench.md, differences): the reference pastes any page into a regex
        return f"reference accepts, we reject: {suite.errors}"
    (test_id,) = suite.ids
    got = suite.check(test_id, case["text"], guard=guard)
    if case.get("nondeterministic"):
        return None
    if got.passed != case["passed"]:
        return f"verdict {got.passed} != reference {case['passed']} ({case['explanation']!r} / ours {got.explanation!r})"
    ref_error = case["explanation"].startswith("error:")
    if ref_error != got.error:
        return f"reference error={ref_error}, ours={got.error}: {case['explanation']!r} / {got.explanation!r}"
    if not ref_error and got.explanation != case["explanation"]:
        return f"explanation differs: {case['explanation']!r} != ours {got.explanation!r}"
    return None


def _refused_page(record: object) -> bool:
    """Whether a record's page is one we refuse and the reference loads: anything but a JSON
    integer >= 1 or a string of digits naming one."""
    page = record.get("page") if isinstance(record, dict) else None
    if isinstance(page, str):
        return not (page.isascii() and page.isdigit() and int(page) >= 1)
    return isinstance(record, dict) and "page" in record and not (type(page) is int and page >= 1)


def golden_failures(cases: list[dict], guard: str = "none") -> list[str]:
    """One line per case that disagrees with the reference."""
    return [f"{c['case']}: {why}" for c in cases if (why := golden_disagreement(c, guard))]


# `make test` (and so CI) sets OLMOCR_RL_STRICT=1: everything the suite tests must be installed there
# (the training stack, KaTeX, chromium), so a test that would skip fails instead, saying why it would
# have skipped. Outside it (a plain `pytest` on a partial install) tests skip as usual.
STRICT = os.environ.get("OLMOCR_RL_STRICT", "") not in ("", "0")


def need(module: str):
    """Imports a module the tests need: skips them without it, except under OLMOCR_RL_STRICT
    (make test), where the ImportError fails them."""
    if STRICT:
        return importlib.import_module(module)
    return pytest.importorskip(module)


def _strict_skip(report) -> None:
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"would have been skipped, which OLMOCR_RL_STRICT (make test) does not allow: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _strict_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _strict_skip(outcome.get_result())


def pytest_runtest_setup(item):
    """`vllm` tests need the real vLLM (`make test-vllm` builds its environment). Where it is not
    installed they are skipped with that reason, except under `make test-vllm`, where a missing
    vLLM is a failure."""
    if item.get_closest_marker("vllm") is None or importlib.util.find_spec("vllm") is not None:
        return
    if os.environ.get("OLMOCR_RL_REQUIRE_VLLM"):
        pytest.fail("vLLM is not importable in the vLLM test environment (scripts/vllm_env.py)")
    pytest.skip("needs the real vLLM: `make test-vllm` builds its environment and runs these tests")


# ---------------------------------------------------------------------------------------------
# The training tests' shared, read-only inputs (tests/training.py): built once per session. A test
# that writes into one fails the session at teardown: copy it first (shutil.copytree).
# ---------------------------------------------------------------------------------------------


def _unchanged(folder: Path, digest: str) -> None:
    from training import tree_digest

    assert tree_digest(folder) == digest, f"a test changed the shared fixture folder {folder}; tests must copy it before writing"


@pytest.fixture(scope="session")
def prepared(tmp_path_factory):
    from training import make_prepared, tree_digest

    folder = make_prepared(tmp_path_factory.mktemp("prepared") / "prep")
    digest = tree_digest(folder)
    yield folder
    _unchanged(folder, digest)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    need("transformers")
    from training import build_model, tree_digest

    folder = build_model(tmp_path_factory.mktemp("tiny") / "qwen2_5_vl")
    digest = tree_digest(folder)
    yield folder
    _unchanged(folder, digest)


@pytest.fixture(scope="session")
def tiny_family(tmp_path_factory):
    """bench_fixtures/tiny_vlm.py's tiny model of another family ("qwen3_vl", "qwen3_vl_moe", ...),
    each built once per session: `tiny_family("qwen3_vl")` -> its (read-only) folder."""
    need("transformers")
    from training import build_model, tree_digest

    built: dict[str, tuple[Path, str]] = {}

    def get(family: str) -> Path:
        if family not in built:
            folder = build_model(tmp_path_factory.mktemp("tiny") / family, family)
            built[family] = (folder, tree_digest(folder))
        return built[family][0]

    yield get
    for folder, digest in built.values():
        _unchanged(folder, digest)
