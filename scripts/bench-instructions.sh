#!/usr/bin/env bash
# Instructions per sentence of nmea-bench's three stages, counted by valgrind (callgrind),
# which unlike wall-clock time does not depend on what else the machine is doing.
#
#   scripts/bench-instructions.sh [SENTENCES] [NMEA_BENCH]
#
# Each stage is run once and twice (`--only STAGE --iterations 1` and `2`) and the
# difference of the two totals is one pass of that stage alone: stream generation, warm-up
# and the allocation-counting passes cancel out. SENTENCES defaults to 20000; NMEA_BENCH to
# the release build of this package (built if needed).
set -euo pipefail

sentences="${1:-20000}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bench="${2:-}"
if [ -z "$bench" ]; then
  swift build --package-path "$root" -c release --product nmea-bench >/dev/null
  bench="$(swift build --package-path "$root" -c release --show-bin-path)/nmea-bench"
fi

collected() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --sentences "$sentences" \
    --only "$1" --iterations "$2" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

for stage in framer parse pipeline; do
  once="$(collected "$stage" 1)"
  twice="$(collected "$stage" 2)"
  echo "$stage: $(((twice - once) / sentences)) instructions/sentence ($((twice - once)) for $sentences sentences)"
done
