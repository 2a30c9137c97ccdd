# The usual tasks. `make test` is the command the README and CI run.
PYTHON ?= python3

.PHONY: install build test test-rust test-python test-aarch64 bench bench-rust ab lint format

install:  ## build the Rust core (release) and install the package with its test extras
	$(PYTHON) -m pip install -e '.[test]'

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

bench:  ## pytest-benchmark suite (release build), then the Rust core benches
	$(PYTHON) -m pytest benches --benchmark-enable --benchmark-only
	$(MAKE) bench-rust

bench-rust:
	$(PYTHON) -c "from acp_fast import traffic; open('/tmp/acp-mixed.ndjson','wb').write(traffic.generate('mixed', 20000, seed=1)); open('/tmp/acp-large.ndjson','wb').write(traffic.generate('large', 1000, seed=1))"
	cargo bench --bench json_machinery -- /tmp/acp-mixed.ndjson /tmp/acp-large.ndjson
	cargo bench --bench state -- /tmp/acp-mixed.ndjson

ab:  ## A/B of two native builds in one process: make ab OLD=/tmp/old.so NEW=/tmp/new.so [AB_ARGS="--tasks decode state"]
	$(PYTHON) benches/ab.py $(OLD) $(NEW) $(AB_ARGS)

lint:
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings
	cargo build --no-default-features

format:
	cargo fmt
