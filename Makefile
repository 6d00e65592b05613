# SerialGPS: the two commands a new user needs are `make run` and `make test`.
# Each installs the Debian packages it needs when they are missing.

SWIFT ?= swift
# Needed to build at all (the libudev and libmosquitto system libraries; <linux/pps.h> for the
# time service).
BUILD_PACKAGES := libudev-dev libmosquitto-dev pkg-config linux-libc-dev
# Needed by the tests: mock udev devices and udevadm (udev) for the rules test, real gpsd
# clients, the GPX schema check, Python for the fixture checker, chronyd and gpsd's ntpshmmon (in the gpsd package) for
# the time service, a real MQTT broker and its clients, openssl for the TLS test's certificates,
# systemd for systemd-socket-activate (serve under socket activation) and systemd-analyze,
# rtklib for str2str (a client of serve's raw port), dbus, GeoClue and its demos (where-am-i and
# the demo agent, in geoclue-2-demo) for serve's NMEA socket; qemu-user and the aarch64 and
# armhf cross compilers with their C libraries for the 32-bit board check (arm-check).
TEST_PACKAGES := $(BUILD_PACKAGES) umockdev libumockdev-dev udev socat gpsd-clients python3-gps \
	libxml2-utils util-linux python3 chrony gpsd gpsd-tools mosquitto mosquitto-clients openssl \
	systemd rtklib dbus geoclue-2.0 geoclue-2-demo qemu-user gcc-aarch64-linux-gnu \
	gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross

# Needed to make the Debian package (dpkg-shlibdeps, dpkg-gencontrol; python3 for the man page)
# and to check it (lintian; systemd for systemd-analyze verify; udev for udevadm; valgrind for
# the code layout check).
DEB_PACKAGES := $(BUILD_PACKAGES) dpkg-dev binutils python3
DEB_CHECK_PACKAGES := $(DEB_PACKAGES) lintian systemd udev man-db valgrind

# The version's one home is Sources/serialgps/Version.swift (docs/packaging.md).
VERSION := $(shell scripts/version.sh)

.PHONY: all deps test-deps build run test test-unit docs-check test-tsan fuzz-smoke fuzz bench bench-power format lint clean \
	fixtures fixtures-check goldens static deb deb-check footprint install

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
test: test-deps fixtures-check test-unit docs-check test-tsan arm-check fuzz-smoke deb-check

test-unit:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Every Swift block of README.md and docs/ built in an outside package that depends on this one
# by path, as a user's would (scripts/check-doc-snippets.py says how a block names what it needs).
docs-check: deps
	SWIFT=$(SWIFT) scripts/check-doc-snippets.py --keep .build/doc-snippets

# The concurrency-heavy suites again under ThreadSanitizer, in a build directory of their own.
TSAN_SUITES := SerialGPSTests|SerialPortTests|ReplayTests|GPSDServerTests|TimeServiceTests|FleetTests|POSIXTests|NTRIPTests
test-tsan:
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread \
		--scratch-path .build/tsan --filter '$(TSAN_SUITES)'

# The NMEA module in Embedded Swift for x86-64, aarch64 and armv7 hard-float, the corpus and
# the crafted 32-bit edge cases through each under qemu-user, output identical to x86-64's
# (docs/fuzzing.md, "32-bit boards"). CORPUS= another folder of captures.
arm-check: test-deps
	SWIFTC=$$(command -v swiftc || echo /opt/swift/usr/bin/swiftc) scripts/arm-check.sh $(CORPUS)

# A short libFuzzer run over framer, parser and fix builder (builds into Fuzz/.build).
fuzz-smoke: deps
	scripts/fuzz.sh 60
	scripts/fuzz.sh 20 position

# The serialgps a board runs: release, Swift runtime linked in, stripped in the package
# (scripts/build-static.sh says what each flag buys).
static: deps
	@SWIFT=$(SWIFT) scripts/build-static.sh

# dist/serialgps_<version>_<arch>.deb, made with dpkg's own tools (docs/packaging.md).
# Installs the release build as the Debian package does (program, man page, demo recording,
# udev rules, systemd units) under PREFIX; DESTDIR stages it. As root for the default PREFIX.
PREFIX ?= /usr/local
install: deps
	$(SWIFT) build -c release --product serialgps
	scripts/install.sh .build/release/serialgps "$(DESTDIR)" "$(PREFIX)"

deb:
	@scripts/install-deps.sh $(DEB_PACKAGES)
	@binary=$$(SWIFT=$(SWIFT) scripts/build-static.sh) && scripts/make-deb.sh "$$binary" dist

# What CI checks of the package: lintian, then install it, run the installed command, verify
# the installed unit, purge it and find nothing left behind (as root); and that the package's
# code layout still lists what `serve` runs (contrib/serialgps.order: a stale list costs
# resident memory and fails nothing else; valgrind, about a minute).
deb-check: deb
	@scripts/install-deps.sh $(DEB_CHECK_PACKAGES)
	scripts/check-deb.sh dist/serialgps_$(VERSION)_$$(dpkg --print-architecture).deb
	python3 scripts/symbol-order.py --check --binary "$$(SWIFT=$(SWIFT) scripts/build-static.sh)"

# serialgps serve (dynamic and static builds) and gpsd on the same simulated receiver: memory,
# sizes, time to the first TPV (BENCHMARKS.md, Footprint).
footprint: deps
	SWIFT=$(SWIFT) scripts/footprint.sh

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

# Framer, parser and pipeline throughput and allocations (see BENCHMARKS.md). The benchmarks
# (Benchmarks/) are targets of the package only with SERIALGPS_BENCHMARKS set (Package.swift).
bench: deps
	SERIALGPS_BENCHMARKS=1 $(SWIFT) run -c release nmea-bench

# Location requests' charge beside gpsd 3.22 on the simulated u-blox M8, cases (a)-(e) of
# issue 23, about 12.5 minutes (BENCHMARKS.md, "Location requests").
bench-power: test-deps
	$(SWIFT) build -c release --product serialgps
	python3 scripts/bench-power.py --serialgps .build/release/serialgps
	python3 scripts/bench-power.py --serialgps .build/release/serialgps --cases spread

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests Benchmarks

lint:
	$(SWIFT) format lint --recursive Package.swift Sources Tests Benchmarks

clean:
	rm -rf .build Fuzz/.build dist
