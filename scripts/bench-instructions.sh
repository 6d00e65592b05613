#!/usr/bin/env bash
# Instructions per sentence of nmea-bench's three stages, counted by valgrind (callgrind),
# which unlike wall-clock time does not depend on what else the machine is doing.
#
#   scripts/bench-instructions.sh [SENTENCES] [NMEA_BENCH]
#   scripts/bench-instructions.sh --ubx [MESSAGES] [NMEA_BENCH]
#
# Each stage is run once and twice (`--only STAGE --iterations 1` and `2`) and the
# difference of the two totals is one pass of that stage alone: stream generation, warm-up
# and the allocation-counting passes cancel out. SENTENCES defaults to 20000; NMEA_BENCH to
# the release build of this package (built if needed). With --ubx, the UBX stage instead:
# instructions per decoded UBX message of the whole decoder over gpsd's u-blox logs
# (corpus/gpsd-ubx), repeated to MESSAGES (default 20000).
set -euo pipefail

ubx=""
if [ "${1:-}" = "--ubx" ]; then
  ubx=1
  shift
fi
sentences="${1:-20000}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bench="${2:-}"
if [ -z "$bench" ]; then
  SERIALGPS_BENCHMARKS=1 swift build --package-path "$root" -c release --product nmea-bench >/dev/null
  bench="$(swift build --package-path "$root" -c release --show-bin-path)/nmea-bench"
fi
# Valgrind 3.19 cannot read the DWARF 5 the toolchain writes ("Possibly corrupted debuginfo
# file ... Giving up") and then counts nothing: count a stripped copy instead.
stripped="$(mktemp)"
trap 'rm -f "$stripped"' EXIT
strip -o "$stripped" "$bench"
bench="$stripped"

collected() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --sentences "$sentences" \
    --only "$1" --iterations "$2" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

if [ -n "$ubx" ]; then
  corpus="$root/corpus/gpsd-ubx"
  [ -f "$corpus/ublox-neo-m8t.log" ] || {
    echo "corpus/gpsd-ubx is missing: the repository carries it; restore it with" \
      "'git checkout -- corpus' or scripts/refresh-corpus.sh" >&2
    exit 1
  }
  counted() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --ubx-corpus "$corpus" \
      --ubx-messages "$sentences" --only ubx --iterations "$1" 2>&1 >/dev/null |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  messages="$("$bench" --ubx-corpus "$corpus" --ubx-messages "$sentences" --iterations 1 --json |
    sed -n 's/.*"ubx_messages":\([0-9]*\).*/\1/p')"
  once="$(counted 1)"
  twice="$(counted 2)"
  if [ -z "$once" ] || [ -z "$twice" ] || [ -z "$messages" ]; then
    echo "valgrind counted nothing for the UBX stage" >&2
    exit 1
  fi
  echo "ubx: $(((twice - once) / messages)) instructions/UBX message ($((twice - once)) for $messages messages)"
  exit 0
fi

for stage in framer parse pipeline; do
  once="$(collected "$stage" 1)"
  twice="$(collected "$stage" 2)"
  if [ -z "$once" ] || [ -z "$twice" ]; then
    echo "valgrind counted nothing for $stage; run it by hand to see why:" >&2
    echo "  valgrind --tool=callgrind --callgrind-out-file=/dev/null BENCH --sentences $sentences --only $stage --iterations 1" >&2
    exit 1
  fi
  echo "$stage: $(((twice - once) / sentences)) instructions/sentence ($((twice - once)) for $sentences sentences)"
done
