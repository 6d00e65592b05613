#!/usr/bin/env bash
# Builds the libFuzzer target over the NMEA framer, parser and fix builder (Fuzz/) and runs
# it for SECONDS (default 60). Exit status 0 when nothing was found; otherwise libFuzzer's,
# with the input that failed saved under Fuzz/.build/artifacts/.
#
#   scripts/fuzz.sh [SECONDS] [position]
#
# With `position`, it runs the other target instead (FuzzPositionFile): a kept position's file
# (`serve --state-dir`) through its parser and the aiding encoders, seeded from
# Fuzz/PositionSeeds.
#
# The nested package builds into Fuzz/.build, never the main package's .build. Seeds come
# from Fuzz/Seeds (built in), the project's fixtures/ and gpsd's captures in corpus/gpsd,
# corpus/gpsd-ubx and corpus/gpsd-casic (corpus/README.md); each is cut into pieces of at most 2 KiB
# behind a header byte of 0 (no extra split points, strict checksums; 0x80 for the u-blox and
# CASIC logs: binary checksums fixed), which the fuzzer then mutates;
# Fuzz/nmea.dict gives it the values on both sides of every limit the parser enforces.
set -euo pipefail

seconds="${1:-60}"
target="${2:-decoder}"
case "$seconds" in
  '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [position]" >&2; exit 2 ;;
esac
case "$target" in
  decoder | position) ;;
  *) echo "usage: scripts/fuzz.sh [SECONDS] [position]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz="$root/Fuzz"
build="$fuzz/.build"
export SWIFT_BACKTRACE=enable=no
mkdir -p "$build"

# AddressSanitizer as well when this toolchain can link it; libFuzzer alone otherwise.
sanitizers=fuzzer,address
if ! swift build --package-path "$fuzz" -c release -Xswiftc -sanitize=$sanitizers \
  -Xswiftc -parse-as-library >"$build/fuzz-build.log" 2>&1; then
  echo "fuzz: building with AddressSanitizer failed; trying libFuzzer alone" >&2
  sanitizers=fuzzer
  if ! swift build --package-path "$fuzz" -c release -Xswiftc -sanitize=$sanitizers \
    -Xswiftc -parse-as-library >"$build/fuzz-build.log" 2>&1; then
    cat "$build/fuzz-build.log" >&2
    echo "fuzz: the fuzz target did not build (log above)" >&2
    exit 1
  fi
fi
bin="$(swift build --package-path "$fuzz" -c release --show-bin-path)"
binary="$bin/FuzzDecoder"

if [ "$target" = position ]; then
  corpus="$build/position-corpus"
  artifacts="$build/artifacts"
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz: the position file, $(ls "$fuzz/PositionSeeds" | wc -l) seeds, sanitizers $sanitizers, $seconds s" >&2
  exec "$bin/FuzzPositionFile" -max_total_time="$seconds" -max_len=1024 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "$fuzz/PositionSeeds"
fi

# Seeds, rebuilt each run; the working corpus (what the fuzzer found interesting) persists.
seeds="$build/seeds"
corpus="$build/corpus"
artifacts="$build/artifacts"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
cp "$fuzz"/Seeds/* "$seeds"/

add_recording() {
  local file="$1" header="${2:-\0}" name
  name="$(basename "$file")"
  local pieces="$build/pieces"
  rm -rf "$pieces"
  mkdir -p "$pieces"
  split -b 2048 -a 4 "$file" "$pieces/$name."
  for piece in "$pieces"/*; do
    { printf "$header"; cat "$piece"; } >"$seeds/$(basename "$piece")"
  done
  rm -rf "$pieces"
}

shopt -s nullglob
# The crafted 32-bit edge cases of the ARM check (docs/fuzzing.md, "32-bit boards").
add_recording "$root/Embedded/edge-cases.nmea"
for file in "$root"/fixtures/*; do
  [ -f "$file" ] && add_recording "$file"
done
corpus_dir="$root/corpus/gpsd"
if [ ! -f "$corpus_dir/bu353s4.log" ] || [ ! -f "$corpus_dir-ubx/ublox-neo-m8t.log" ]; then
  echo "fuzz: corpus/gpsd or corpus/gpsd-ubx is missing: the repository carries them;" \
    "restore them with 'git checkout -- corpus' or scripts/refresh-corpus.sh" >&2
  exit 1
fi
for file in "$corpus_dir"/*.log; do add_recording "$file"; done
# gpsd's u-blox binary logs, with UBX checksums fixed by the target (header bit 7), and its
# CASIC logs (corpus/gpsd-casic), whose CASIC checksums the same bit fixes.
for file in "$corpus_dir"-ubx/*.log "$corpus_dir"-casic/*.log; do add_recording "$file" '\x80'; done
echo "fuzz: $(ls "$seeds" | wc -l) seeds, sanitizers $sanitizers, $seconds s" >&2

"$binary" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict="$fuzz/nmea.dict" -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds"
