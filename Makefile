# The usual tasks. `make test` is the command the README and CI run.
PYTHON ?= python3

.PHONY: install build test test-rust test-python test-aarch64 miri fuzz soak bench bench-rust ab lint format \
	lint-format lint-ruff lint-mypy lint-stubtest lint-imports lint-rust

install:  ## build the Rust core (release) and install the package with its test and lint extras
	$(PYTHON) -m pip install -e '.[test,lint]'

build:  ## rebuild the native module in place after a Rust change
	$(PYTHON) -m pip install -e . --no-deps --no-build-isolation

test: test-rust test-python  ## everything CI runs

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

bench:  ## pytest-benchmark suite (release build), then the Rust core benches
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
PY_PATHS = python tests benches .ci
CHECK_ENV = PYTHONPATH=$(CURDIR)/python

lint: lint-format lint-ruff lint-mypy lint-stubtest lint-imports lint-rust  ## every static check

lint-format:  ## Python formatting (ruff format --check; `make format` fixes it)
	$(PYTHON) -m ruff format --check --output-format concise $(PY_PATHS)

lint-ruff:  ## Python lint rules
	$(PYTHON) -m ruff check $(PY_PATHS)

lint-mypy:  ## mypy --strict over the package (and tests/test_typing.py)
	$(CHECK_ENV) $(PYTHON) -m mypy

lint-stubtest:  ## the stub python/acp_fast/_native.pyi against the built native module
	$(CHECK_ENV) $(PYTHON) -m mypy.stubtest acp_fast._native --mypy-config-file pyproject.toml \
		--allowlist .ci/stubtest-allowlist.txt

lint-imports:  ## no import cycle between the package's modules
	$(CHECK_ENV) $(PYTHON) .ci/import_cycles.py acp_fast

lint-rust:  ## rustfmt, clippy with the [lints] of Cargo.toml as errors, the core without PyO3
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings
	cargo build --no-default-features

format:  ## apply rustfmt and ruff format
	cargo fmt
	$(PYTHON) -m ruff format $(PY_PATHS)
