# olmocr-rl: every target sets up what it needs (a venv in .venv, the Rust extension built in
# release mode), so `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: setup build demo test test-rust test-python lint bench golden clean

$(VENV)/.installed: pyproject.toml Cargo.toml Cargo.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

# Rebuild the extension in place (incremental) so Python sees the current Rust sources.
build: setup
	$(VENV)/bin/maturin develop --release -q

demo: build
	$(VENV)/bin/olmocr-rl validate bench_fixtures
	$(VENV)/bin/olmocr-rl check bench_fixtures bench_fixtures/demo_model/sample_paper_pg1_repeat1.md --pdf sample_paper.pdf
	$(VENV)/bin/olmocr-rl bench bench_fixtures

test-rust:
	cargo test --locked --release

test-python: build
	$(VENV)/bin/pytest -q --hypothesis-profile=ci

test: test-rust test-python

lint: setup
	cargo clippy --all-targets --features python -- -D warnings
	$(VENV)/bin/python -m mypy.stubtest --ignore-disjoint-bases olmocr_rl._core

bench: build
	$(PY) benchmarks/bench_text_checks.py
	$(PY) benchmarks/bench_tables.py
	$(PY) benchmarks/bench_reward.py

# Regenerate golden verdicts with the upstream reference (dev machines only; see tests/golden/README.md).
golden:
	@echo "see tests/golden/README.md"

clean:
	rm -rf $(VENV) target olmocr_rl/*.so

# The README's training demo: prepare the fixtures -> a few GRPO steps on CPU with a tiny random
# VLM -> bench what the trained model wrote. A few minutes on 2 cores.
.PHONY: train-demo
train-demo: build
	rm -rf target/train-demo
	$(VENV)/bin/olmocr-rl prepare bench_fixtures target/train-demo/prepared --eval-fraction 0.34 --longest-side 224 --quiet
	$(PY) bench_fixtures/tiny_vlm.py target/train-demo/tiny-vlm
	$(VENV)/bin/olmocr-rl train target/train-demo/prepared --model target/train-demo/tiny-vlm -o target/train-demo/run --config bench_fixtures/tiny_grpo.yaml
	$(VENV)/bin/olmocr-rl bench target/train-demo/run --candidate outputs
