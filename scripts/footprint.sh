#!/usr/bin/env bash
# Footprint of `serialgps serve` (dynamic and static builds) and gpsd on the same simulated
# receiver, in one run (BENCHMARKS.md, Footprint). As root, with gpsd installed.
#
#   scripts/footprint.sh [--rounds N] [--idle S] [--stream S] [--json]
#
# Builds the dynamic release serialgps (swift build -c release) and the Debian package's
# static one (make deb), then runs scripts/footprint.py on them.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
command -v gpsd >/dev/null || {
  echo "footprint: gpsd is needed for the comparison: apt-get install gpsd" >&2
  exit 1
}
"$swift" build -c release --product serialgps >&2
dynamic=$("$swift" build -c release --show-bin-path)/serialgps
deb=$(scripts/make-deb.sh "$(SWIFT=$swift scripts/build-static.sh)" dist)
# The static binary measured is the one in the package (stripped), as make-deb staged it.
static=.build/deb/src/debian/serialgps/usr/bin/serialgps
python3 scripts/footprint.py --dynamic "$dynamic" --static "$static" --deb "$deb" "$@"
