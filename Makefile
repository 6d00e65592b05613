# SerialGPS: the two commands a new user needs are `make run` and `make test`.
# Each installs the Debian packages it needs when they are missing.

SWIFT ?= swift
# Needed to build at all (the libudev system library).
BUILD_PACKAGES := libudev-dev pkg-config
# Needed by the tests: mock udev devices and udevadm (udev) for the rules test, real gpsd
# clients, the GPX schema check, Python for the fixture checker.
TEST_PACKAGES := $(BUILD_PACKAGES) umockdev libumockdev-dev udev socat gpsd-clients python3-gps \
	libxml2-utils util-linux python3

.PHONY: all deps test-deps build run test test-unit test-tsan fuzz-smoke fuzz bench format lint clean \
	fixtures fixtures-check goldens

all: build

deps:
	@scripts/install-deps.sh $(BUILD_PACKAGES)

test-deps:
	@scripts/install-deps.sh $(TEST_PACKAGES)

build: deps
	$(SWIFT) build

# The main job: watch the receiver attached, or with none a clearly labelled demo
# (scripts/run.sh builds the release binary first).
run: deps
	SWIFT=$(SWIFT) scripts/run.sh

# Everything CI checks.
test: test-deps fixtures-check test-unit test-tsan fuzz-smoke

test-unit:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The concurrency-heavy suites again under ThreadSanitizer, in a build directory of their own.
TSAN_SUITES := POSIXTests|SerialGPSTests|SerialPortTests|ReplayTests|GPSDServerTests
test-tsan:
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread \
		--scratch-path .build/tsan --filter '$(TSAN_SUITES)'

# A short libFuzzer run over framer, parser and fix builder (builds into Fuzz/.build).
fuzz-smoke: deps
	scripts/fuzz.sh 60

# The recordings in fixtures/ come from a seeded generator (docs/fixtures.md).
fixtures:
	python3 scripts/make-fixtures.py
	python3 scripts/check-fixtures.py fixtures

# Two runs of the generator (with different hash seeds) must give the same bytes, and the
# bytes committed in fixtures/; then every fixture is checked against its truth file.
fixtures-check:
	@set -e; first=$$(mktemp -d); second=$$(mktemp -d); trap 'rm -rf "$$first" "$$second"' EXIT; \
	PYTHONHASHSEED=1 python3 scripts/make-fixtures.py --out "$$first"; \
	PYTHONHASHSEED=2 python3 scripts/make-fixtures.py --out "$$second"; \
	for file in "$$first"/*; do \
		name=$$(basename "$$file"); \
		cmp -s "$$file" "$$second/$$name" || { echo "fixtures: two runs of the generator differ in $$name" >&2; exit 1; }; \
		cmp -s "$$file" "fixtures/$$name" || { echo "fixtures: fixtures/$$name is not what the generator writes; run make fixtures" >&2; exit 1; }; \
	done; \
	echo "fixtures: the generator reproduces fixtures/ byte for byte"; \
	python3 scripts/check-fixtures.py fixtures; \
	python3 scripts/check-goldens.py fixtures

# The expected `serialgps decode --json` of every fixture (fixtures/*.golden.jsonl), rewritten
# and checked against the truth files; the golden test compares the decoder with them.
goldens: deps
	SWIFT=$(SWIFT) scripts/make-goldens.sh

# Longer fuzzing: make fuzz SECONDS=3600
SECONDS ?= 600
fuzz: deps
	scripts/fuzz.sh $(SECONDS)

# Framer, parser and pipeline throughput and allocations (see BENCHMARKS.md).
bench: deps
	$(SWIFT) run -c release nmea-bench

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

lint:
	$(SWIFT) format lint --recursive Package.swift Sources Tests

clean:
	rm -rf .build Fuzz/.build
