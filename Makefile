# The usual tasks. `make bench` (the main job) and `make test` (what CI runs) are the quickstart:
# each one installs what it needs first.
#
# Which Python runs the tasks: PYTHON=... on the command line (or in the environment) wins.
# Otherwise the project's virtual environment $(VENV) (default .venv) when it exists, else python3.
# `make bench` and `make test` first run `make env`: when that Python does not import this
# checkout's acp_fast with its native module and the modules of the extras the task needs
# (`make bench`: BENCH_EXTRAS, the `bench` extra; `make test`: TEST_EXTRAS, `test` and `lint`,
# with the analytics engines whose tests it runs), it creates $(VENV) (`python3 -m venv`) when
# missing and installs the package into it, editable, with those extras (the Rust core is built in
# release mode; pip's progress shows), so that they work where the system Python refuses pip
# installs; a second run finds everything and installs nothing. Nothing is ever installed into a
# Python this Makefile did not create: with the package already installed in python3
# (`pip install -e '.[test,lint]'` by hand) the tasks simply use it, and a PYTHON given on the
# command line or in the environment (CI's .ci/run gives its own venv's) that lacks something is an
# error, not an install.
# (`make wheels` and `make docs` keep their tools in environments of their own, .venv-build and
# .venv-docs, and do not need the package installed.)
VENV ?= .venv
PYTHON ?= $(shell if [ -x $(VENV)/bin/python ]; then echo $(VENV)/bin/python; else echo python3; fi)
# The extras `make env` installs into $(VENV): per task, and for `make env` itself.
BENCH_EXTRAS ?= bench
TEST_EXTRAS ?= test,lint
ENV_EXTRAS ?= $(TEST_EXTRAS)
bench: ENV_EXTRAS = $(BENCH_EXTRAS)
test: ENV_EXTRAS = $(TEST_EXTRAS)

.PHONY: install build env test test-rust test-python test-aarch64 miri fuzz soak soak-sessions hostile interop bench bench-suite bench-rust ab \
	lint format lint-format lint-ruff lint-mypy lint-stubtest lint-imports lint-mirror lint-rust schemas env-setup build-tools wheels wheel-test docs docs-tools docs-serve clean-venv

install:  ## build the Rust core (release) and install the package with its test and lint extras
	$(PYTHON) -m pip install -e '.[test,lint]'

build:  ## rebuild the native module in place after a Rust change
	$(PYTHON) -m pip install -e . --no-deps --no-build-isolation

# What `make env` checks: this checkout's package with its native module, and the modules of the
# extras named on the command line (ENV_EXTRAS). Exit status 1 (and a line saying what is missing)
# when something is. The extras' modules are found, not imported (importing ray takes seconds).
define ENV_CHECK
import importlib, importlib.util, pathlib, sys
MODULES = {
    "bench": ["msgspec", "acp", "jsonschema", "jsonschema_rs", "matplotlib", "pytest_benchmark"],
    "test": ["pytest", "hypothesis", "jsonschema", "jsonschema_rs", "pytest_benchmark", "acp", "msgspec",
             "pyarrow", "polars", "duckdb", "dask", "distributed", "ray", "mkdocs", "mkdocstrings", "griffe",
             "opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"],
    "lint": ["ruff", "mypy", "grimp"],
    "sdk": ["acp"], "schema": ["jsonschema_rs"], "arrow": ["pyarrow"], "dask": ["pyarrow", "dask"],
    "ray": ["pyarrow", "ray"], "docs": ["mkdocs", "mkdocstrings", "griffe"],
    "otel": ["opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"],
}
missing = []
for name in ("acp_fast", "acp_fast._native"):
    try:
        importlib.import_module(name)
    except ImportError as exc:
        missing.append(f"{name} ({exc})")
for extra in ",".join(sys.argv[1:]).split(","):
    for name in MODULES.get(extra, []) if extra else []:
        if importlib.util.find_spec(name) is None and f"{name} (extra {extra})" not in missing:
            missing.append(f"{name} (extra {extra})")
if "acp_fast" not in " ".join(missing):
    import acp_fast
    here = pathlib.Path.cwd().resolve()
    if here not in pathlib.Path(acp_fast.__file__).resolve().parents:
        missing.append(f"this checkout's acp_fast (it imports {acp_fast.__file__})")
if missing:
    print(f"{sys.executable} lacks: " + "; ".join(missing))
    sys.exit(1)
endef
export ENV_CHECK

env-setup:
	@if $(PYTHON) -c "$$ENV_CHECK" $(ENV_EXTRAS) >/dev/null 2>&1; then \
		echo "make env: using $(PYTHON)"; \
	elif [ "$(origin PYTHON)" = "command line" ] || [ "$(origin PYTHON)" = "environment" ]; then \
		$(PYTHON) -c "$$ENV_CHECK" $(ENV_EXTRAS); echo "make env: PYTHON=$(PYTHON) cannot run the tasks (see above); install into it yourself, or leave PYTHON unset to use $(VENV)"; exit 1; \
	else \
		echo "make env: setting up $(VENV) (editable install with the $(ENV_EXTRAS) extras; builds the Rust core, a few minutes the first time)"; \
		[ -x $(VENV)/bin/python ] || python3 -m venv $(VENV) || { echo "make env: python3 -m venv failed (on Debian/Ubuntu: apt install python3-venv)"; exit 1; }; \
		$(VENV)/bin/python -m pip install --quiet --upgrade pip && \
		$(VENV)/bin/python -m pip install 'maturin>=1.9.4,<2' && \
		$(VENV)/bin/python -m pip install -e '.[$(ENV_EXTRAS)]' && touch $(VENV)/.built && \
		$(VENV)/bin/python -c "$$ENV_CHECK" $(ENV_EXTRAS) && echo "make env: $(VENV) is ready"; \
	fi

# A separate target so that $(PYTHON) is read again once env-setup may have created $(VENV).
env: env-setup  ## make sure $(PYTHON) has the package and ENV_EXTRAS (default test,lint); else create $(VENV) and install into it
	@if [ "$(PYTHON)" = "$(VENV)/bin/python" ] && [ -f $(VENV)/.built ] && \
		[ -n "$$(find rust build.rs Cargo.toml -newer $(VENV)/.built -type f 2>/dev/null | head -1)" ]; then \
		echo "make env: the Rust sources changed since $(VENV)'s native module was built: rebuilding it"; \
		$(VENV)/bin/python -m pip install -e . --no-deps --no-build-isolation && touch $(VENV)/.built; \
	fi

# The schema files under python/acp_fast/schema/, generated from the official schema crate by
# tools/schema-gen (its Cargo.toml pins the crate release; alpha5/Cargo.toml the release of draft
# alpha.5). Each feature set is a build of its own: a few minutes in all. The output is committed.
SCHEMA_DIR := $(CURDIR)/python/acp_fast/schema
schemas:  ## regenerate the ACP schema files (and v2/state.json, the x-state rules) from the crate
	cd tools/schema-gen && for f in "" unstable v2 v2,unstable; do \
		cargo run -q --release --features "$$f" -- $(SCHEMA_DIR) || exit 1; done
	cd tools/schema-gen/alpha5 && for f in alpha5 alpha5,unstable; do \
		cargo run -q --release --features "$$f" -- $(SCHEMA_DIR) || exit 1; done

clean-venv:  ## remove $(VENV)
	rm -rf $(VENV)

test: env  ## everything CI runs: cargo test and the whole pytest suite (installs what it needs first)
	$(MAKE) --no-print-directory test-rust test-python

test-rust:
	cargo test

test-python:  ## one pytest run; every behavioural test runs on both backends
	$(PYTHON) -m pytest

# The Rust core's tests on aarch64 (NEON and portable paths) under qemu; needs
# `rustup target add aarch64-unknown-linux-gnu` and `apt install gcc-aarch64-linux-gnu qemu-user-static`.
test-aarch64:  ## cargo test for aarch64 under qemu (not part of CI)
	CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu" \
	cargo test --release --target aarch64-unknown-linux-gnu

# The Rust core's tests under Miri (undefined behaviour in the unsafe code: uninitialised index
# words, unchecked string building); needs `rustup +nightly component add miri rust-src`. The
# property loops run fewer cases under Miri (`cfg!(miri)`): about 8 minutes here.
miri:  ## cargo test under Miri (nightly; not part of CI)
	MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test --lib

# libFuzzer targets in fuzz/ (`cargo install cargo-fuzz`, nightly): `stream` (framer + parser +
# state engine on any bytes in any pieces), `json` (the validator against serde_json),
# `checkpoint` (ToolCallStore.from_json on any bytes: no panic, what it accepts round-trips) and
# `proxy_lines` (the framer's exact reading the proxy relays through: any bytes in any pieces
# come back byte-exact, oversized lines reported, line numbers consistent).
FUZZ_SECONDS ?= 300
fuzz:  ## run every fuzz target for FUZZ_SECONDS each (not part of CI)
	cd fuzz && cargo +nightly fuzz run stream -- -max_total_time=$(FUZZ_SECONDS) -max_len=65536
	cd fuzz && cargo +nightly fuzz run json -- -max_total_time=$(FUZZ_SECONDS) -max_len=4096
	mkdir -p fuzz/corpus/checkpoint  # a real checkpoint to start from (the package must be importable)
	$(PYTHON) -c "import acp_fast; from acp_fast import traffic; s = acp_fast.ToolCallStore(); s.feed(traffic.generate('v2', 80, seed=1)); open('fuzz/corpus/checkpoint/seed-v2.json', 'wb').write(s.to_json())"
	cd fuzz && cargo +nightly fuzz run checkpoint -- -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -dict=checkpoint.dict
	cd fuzz && cargo +nightly fuzz run proxy_lines -- -max_total_time=$(FUZZ_SECONDS) -max_len=65536

# The proxy under load (benches/soak.py): SOAK_MB megabytes of mixed agent traffic with 1 % garbage
# lines; every good frame checked byte-exact and in order on the editor side, every garbage line on
# stderr, the proxy's RSS sampled and required flat. tests/test_soak.py runs 25 MB of it in CI.
SOAK_MB ?= 1024
soak:  ## relay SOAK_MB (1024) megabytes through acp-fast proxy and check every byte and the RSS (not part of CI)
	$(PYTHON) benches/soak.py --mb $(SOAK_MB)

# Sessions mode of the same soak: SESSIONS distinct sessions (each copy of a corpus renamed to fresh
# session ids), through the plain proxy, then through --bridge 1:2 (a v2 agent, the editor side
# checked against the bridge's own conversion); both run even when the first fails. tests/test_soak.py
# runs a short one in CI.
SESSIONS ?= 1000000
soak-sessions:  ## relay SESSIONS (1000000) sessions through acp-fast proxy, then proxy --bridge 1:2; check bytes and RSS (not part of CI)
	status=0; $(PYTHON) benches/soak.py --sessions $(SESSIONS) || status=1; \
	$(PYTHON) benches/soak.py --sessions $(SESSIONS) --proxy-args --bridge 1:2 || status=1; exit $$status

# The hostile run (tests/hostile.py): ROUNDS corpora per profile (v2, mixed) of FRAMES valid frames
# with bad lines, the bridge's triggers and mutants interleaved, through the library, the bridge,
# `acp-fast proxy` with each option set, validate, inspect and export, on both backends; every run
# under a timeout, no traceback, no good frame lost, the proxy's RSS bounded. HOSTILE_ARGS adds
# options (--seed N, --backends python, --rss-limit MIB, ...). tests/test_hostile.py runs --short in CI.
ROUNDS ?= 3
FRAMES ?= 2000
HOSTILE_ARGS ?=
# `make interop`: the official ACP tools (crates.io) against acp-fast, in $(INTEROP).
INTEROP ?= .interop
TRACE_VIEWER_VERSION ?= 5.0.0
CONDUCTOR_VERSION ?= 5.0.0

interop:  ## the official ACP conductor (acp-fast in its chain), trace viewer (in headless Chromium) and Rust HTTP/WebSocket client and server against acp-fast; cargo into $(INTEROP); not part of make test
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { echo "make interop: needs Chromium (Debian: apt install chromium)"; exit 1; }
	@[ -x $(INTEROP)/bin/agent-client-protocol-trace-viewer ] || cargo install agent-client-protocol-trace-viewer --version $(TRACE_VIEWER_VERSION) --root $(INTEROP)
	@[ -x $(INTEROP)/bin/agent-client-protocol-conductor ] || cargo install agent-client-protocol-conductor --version $(CONDUCTOR_VERSION) --root $(INTEROP)
	cargo build --release --locked --manifest-path interop/rust-http/Cargo.toml --target-dir $(INTEROP)/rust-http-target
	ACP_FAST_TRACE_VIEWER=$(INTEROP)/bin/agent-client-protocol-trace-viewer ACP_FAST_CONDUCTOR=$(INTEROP)/bin/agent-client-protocol-conductor \
	ACP_FAST_RUST_HTTP_CLIENT=$(INTEROP)/rust-http-target/release/acp-rust-http-client ACP_FAST_RUST_HTTP_SERVER=$(INTEROP)/rust-http-target/release/acp-rust-http-server \
		$(PYTHON) -m pytest -q -p no:randomly -p no:cacheprovider interop/

hostile:  ## the hostile corpus through everything on both backends, ROUNDS (3) corpora of FRAMES (2000) frames (not part of CI)
	$(PYTHON) tests/hostile.py --rounds $(ROUNDS) --frames $(FRAMES) $(HOSTILE_ARGS)

BENCH_ARGS ?=
bench: env  ## the main job: acp-fast bench (about 40 s on a quiet 2-core machine; BENCH_ARGS="--detail" etc.)
	$(PYTHON) -m acp_fast.cli bench $(BENCH_ARGS)

bench-suite:  ## pytest-benchmark suite (release build), then the Rust core benches
	$(PYTHON) -m pytest benches --benchmark-enable --benchmark-only
	$(MAKE) bench-rust

bench-rust:
	$(PYTHON) -c "from acp_fast import traffic; open('/tmp/acp-mixed.ndjson','wb').write(traffic.generate('mixed', 20000, seed=1)); open('/tmp/acp-large.ndjson','wb').write(traffic.generate('large', 1000, seed=1))"
	cargo bench --bench json_machinery -- /tmp/acp-mixed.ndjson /tmp/acp-large.ndjson
	cargo bench --bench state -- /tmp/acp-mixed.ndjson

ab:  ## A/B of two native builds in one process: make ab OLD=/tmp/old.so NEW=/tmp/new.so [AB_ARGS="--tasks decode state"]
	$(PYTHON) benches/ab.py $(OLD) $(NEW) $(AB_ARGS)

# Static checks (CI runs `make lint` after `make test`; needs the `lint` extra: pip install -e '.[lint]').
# The Python tools check this checkout's package (PYTHONPATH=python), whatever else is installed.
# `make -k lint` runs every check even when one fails. Configuration: pyproject.toml ([tool.ruff],
# [tool.mypy]) and Cargo.toml ([lints]).
PY_PATHS = python tests benches .ci $(wildcard docs/*.py)
CHECK_ENV = PYTHONPATH=$(CURDIR)/python

lint: lint-format lint-ruff lint-mypy lint-stubtest lint-imports lint-mirror lint-rust  ## every static check

lint-format:  ## Python formatting (ruff format --check; `make format` fixes it)
	$(PYTHON) -m ruff format --check --output-format concise $(PY_PATHS)

lint-ruff:  ## Python lint rules
	$(PYTHON) -m ruff check $(PY_PATHS)

lint-mypy:  ## mypy --strict over the package (and tests/test_typing.py)
	$(CHECK_ENV) $(PYTHON) -m mypy

lint-stubtest:  ## the stub python/acp_fast/_native.pyi against the built native module
	$(CHECK_ENV) $(PYTHON) -m mypy.stubtest acp_fast._native --mypy-config-file pyproject.toml \
		--allowlist .ci/stubtest-allowlist.txt

lint-imports:  ## the import contract (.ci/import_cycles.py): no cycle, not even through TYPE_CHECKING; layers that do not point up
	$(CHECK_ENV) $(PYTHON) .ci/import_cycles.py acp_fast

lint-mirror:  ## the fallback mirrors rust/ function for function, and DESIGN's module map is MAP (tests/test_mirror.py)
	$(PYTHON) -m pytest tests/test_mirror.py -q

lint-rust:  ## rustfmt, clippy with the [lints] of Cargo.toml as errors, the core without PyO3
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings
	cargo build --no-default-features

format:  ## apply rustfmt and ruff format
	cargo fmt
	$(PYTHON) -m ruff format $(PY_PATHS)

# Wheels a user can install without Rust (docs/RELEASING.md). maturin builds them with zig as the
# linker against glibc 2.17 (manylinux2014 = manylinux_2_17: Ubuntu 20.04, Debian 11, RHEL 8 and
# older), for each CPython of WHEEL_PYTHONS found on this machine (python3.X on PATH, or pyenv's
# versions); `maturin sdist` adds the source distribution (with the tests). maturin checks the
# wheels' symbols against the manylinux policy, and `auditwheel show` prints what each one is
# consistent with: the most compatible tag, which must be MANYLINUX_TAG or an older glibc's. The
# tools live in their own virtual environment, $(BUILD_VENV).
BUILD_VENV ?= .venv-build
WHEEL_PYTHONS ?= 3.10 3.11 3.12 3.13
MANYLINUX ?= manylinux2014
# MANYLINUX by its PEP 600 name (manylinux2014 is manylinux_2_17, manylinux2010 manylinux_2_12,
# manylinux1 manylinux_2_5), and the glibc version it names, for the check of `make wheels`.
MANYLINUX_TAG = $(patsubst manylinux1,manylinux_2_5,$(patsubst manylinux2010,manylinux_2_12,$(patsubst manylinux2014,manylinux_2_17,$(MANYLINUX))))
MANYLINUX_GLIBC = $(word 2,$(subst _, ,$(MANYLINUX_TAG))) $(word 3,$(subst _, ,$(MANYLINUX_TAG)))
WHEEL_ARCH ?= x86_64
DIST ?= dist

define FIND_PYTHONS
for v in $(WHEEL_PYTHONS); do
  found=""
  if python$$v -c "import sys" >/dev/null 2>&1; then found=$$(python$$v -c "import sys; print(sys.executable)"); fi
  if [ -z "$$found" ]; then
    for p in $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v; do [ -x "$$p" ] && found="$$p"; done
  fi
  if [ -n "$$found" ]; then echo "$$found"; else echo "make wheels: no CPython $$v here: no wheel for it" >&2; fi
done
endef
export FIND_PYTHONS

build-tools:  ## maturin (with zig) and auditwheel in $(BUILD_VENV)
	@$(BUILD_VENV)/bin/python -c "import maturin, ziglang, auditwheel" >/dev/null 2>&1 || { \
		echo "make build-tools: setting up $(BUILD_VENV) (maturin, ziglang, auditwheel)"; \
		python3 -m venv $(BUILD_VENV) && \
		$(BUILD_VENV)/bin/python -m pip install 'maturin[zig]>=1.9.4,<2' 'auditwheel>=6'; }

wheels: build-tools  ## manylinux wheels (MANYLINUX, default manylinux2014) for CPython 3.10-3.13 and the sdist, in $(DIST)/
	rm -rf $(DIST)
	@pythons="$$(sh -c "$$FIND_PYTHONS")"; [ -n "$$pythons" ] || { echo "make wheels: no CPython found"; exit 1; }; \
		echo "$(BUILD_VENV)/bin/maturin build --release --zig --compatibility $(MANYLINUX) --out $(DIST) -i" $$pythons; \
		PATH="$(CURDIR)/$(BUILD_VENV)/bin:$$PATH" $(BUILD_VENV)/bin/maturin build --release --zig --compatibility $(MANYLINUX) \
			--out $(DIST) -i $$pythons
	$(BUILD_VENV)/bin/maturin sdist --out $(DIST)
	@set -- $(MANYLINUX_GLIBC); for wheel in $(DIST)/*.whl; do \
		tag=$$($(BUILD_VENV)/bin/auditwheel show "$$wheel" | tr '\n' ' ' | grep -o '"manylinux_[0-9]*_[0-9]*_$(WHEEL_ARCH)"' | head -n 1 | tr -d '"'); \
		major=$$(echo "$$tag" | cut -d _ -f 2); minor=$$(echo "$$tag" | cut -d _ -f 3); \
		{ [ -n "$$tag" ] && { [ "$$major" -lt "$$1" ] || { [ "$$major" -eq "$$1" ] && [ "$$minor" -le "$$2" ]; }; }; } \
			|| { $(BUILD_VENV)/bin/auditwheel show "$$wheel"; echo "make wheels: $$wheel is not $(MANYLINUX_TAG)_$(WHEEL_ARCH)"; exit 1; }; \
		echo "auditwheel: $$wheel is consistent with $$tag (at most $(MANYLINUX_TAG)_$(WHEEL_ARCH))"; \
	done
	@ls -l $(DIST)

# The wheel for the running CPython only, installed into a fresh virtual environment (no
# system site-packages, no cargo on PATH) with the test extra, and the whole suite run against
# it (not against the source tree). CI runs this after `make test`.
WHEEL_VENV ?= .venv-wheel
wheel-test: build-tools  ## build the wheel for python3, install it in a clean venv without cargo, run the suite on it
	rm -rf $(DIST)/wheel-test $(WHEEL_VENV)
	PATH="$(CURDIR)/$(BUILD_VENV)/bin:$$PATH" $(BUILD_VENV)/bin/maturin build --release --zig --compatibility $(MANYLINUX) \
		--out $(DIST)/wheel-test -i "$$(python3 -c 'import sys; print(sys.executable)')"
	python3 -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install "$$(ls $(DIST)/wheel-test/*.whl)[test]"
	env -u PYTHONPATH PATH="$(CURDIR)/$(WHEEL_VENV)/bin:/usr/local/bin:/usr/bin:/bin" $(WHEEL_VENV)/bin/python -c "$$WHEEL_CHECK"
	env -u PYTHONPATH PATH="$(CURDIR)/$(WHEEL_VENV)/bin:/usr/local/bin:/usr/bin:/bin" \
		$(WHEEL_VENV)/bin/python -m pytest -p no:cacheprovider tests

# The suite must test the wheel: the package from the clean environment's site-packages, with
# its compiled core and the metadata maturin wrote, and no Rust toolchain in reach.
define WHEEL_CHECK
import pathlib, shutil, acp_fast, acp_fast._native
from importlib.metadata import metadata
here = pathlib.Path.cwd().resolve()
where = pathlib.Path(acp_fast.__file__).resolve()
assert here / "python" not in where.parents and "site-packages" in where.parts, where
assert acp_fast.BACKEND == "rust" and acp_fast._native.build_profile == "release"
assert shutil.which("cargo") is None, shutil.which("cargo")
meta = metadata("acp-fast")
assert meta["Version"] == acp_fast.__version__ and meta["License-Expression"] == "MIT OR Apache-2.0", dict(meta)
print(f"wheel-test: acp-fast {acp_fast.__version__} from {where.parent}, no cargo on PATH")
endef
export WHEEL_CHECK

# The documentation site (mkdocs.yml): the README's tour, the guides of docs/ and the API reference
# generated from the docstrings, into site/. --strict makes every warning an error, among them a
# public name without a docstring (docs/hooks.py) and a broken link. mkdocs reads the sources
# (python/) without importing them, so the tools live in their own environment, $(DOCS_VENV),
# with the requirements of the `docs` extra of pyproject.toml.
DOCS_VENV ?= .venv-docs

define EXTRA_REQUIREMENTS
import re, sys
text = open("pyproject.toml", encoding="utf-8").read()
line = re.search(r"^" + sys.argv[1] + r" = \[(.*)\]$$", text, re.M).group(1)
print("\n".join(re.findall(r'"([^"]+)"', line)))
endef
export EXTRA_REQUIREMENTS

# (Set up again when the docs extra has changed since: $(DOCS_VENV)/requirements.txt is its copy.)
docs-tools:  ## mkdocs, mkdocstrings and ruff (the `docs` extra) in $(DOCS_VENV)
	@python3 -c "$$EXTRA_REQUIREMENTS" docs | cmp -s - $(DOCS_VENV)/requirements.txt && \
	$(DOCS_VENV)/bin/python -c "import mkdocs, mkdocstrings, griffe, ruff" >/dev/null 2>&1 || { \
		echo "make docs-tools: setting up $(DOCS_VENV) (the docs extra)"; \
		{ [ -x $(DOCS_VENV)/bin/python ] || python3 -m venv $(DOCS_VENV); } && \
		python3 -c "$$EXTRA_REQUIREMENTS" docs > $(DOCS_VENV)/requirements.txt && \
		$(DOCS_VENV)/bin/python -m pip install -r $(DOCS_VENV)/requirements.txt; }

docs: docs-tools  ## build the documentation site into site/, warnings as errors
	$(DOCS_VENV)/bin/mkdocs build --strict

# site/index.html also opens from disk (file://): the pages link to page.html files
# (use_directory_urls: false in mkdocs.yml), not to folders.
docs-serve: docs-tools  ## serve the documentation site on http://127.0.0.1:8000 while editing
	$(DOCS_VENV)/bin/mkdocs serve
