#!/usr/bin/env bash
# Checks that `serialgps decode` prints exactly what it printed at an earlier commit, for
# every gpsd capture in corpus/gpsd, every fixture and nmea-bench's generated stream:
# the guard for changes that must not change behaviour (speed work, refactoring).
#
#   scripts/decode-identical.sh REFERENCE_COMMIT
#
# The reference commit is exported with `git archive` into a temporary directory (the
# worktree is not touched) and its release `serialgps` built there, once per commit (kept
# under ${TMPDIR:-/tmp}/serialgps-reference-COMMIT). The current tree's release build is then
# compared with it, output for output: `decode --json --stats` (stdout and stderr) and plain
# `decode`. Exit status 0 when everything is identical, 1 otherwise (with a diff).
set -euo pipefail

reference="${1:?usage: scripts/decode-identical.sh REFERENCE_COMMIT}"
root="$(cd "$(dirname "$0")/.." && pwd)"
commit="$(git -C "$root" rev-parse --verify "$reference^{commit}")"
cache="${TMPDIR:-/tmp}/serialgps-reference-$commit"

if [ ! -x "$cache/serialgps" ]; then
  echo "decode-identical: building serialgps at ${commit:0:12} (once)" >&2
  source_dir="$(mktemp -d)"
  trap 'rm -rf "$source_dir"' EXIT
  git -C "$root" archive "$commit" | tar -x -C "$source_dir"
  swift build --package-path "$source_dir" -c release --product serialgps >/dev/null
  mkdir -p "$cache"
  cp "$(swift build --package-path "$source_dir" -c release --show-bin-path)/serialgps" \
    "$cache/serialgps"
fi

swift build --package-path "$root" -c release --product serialgps >/dev/null
SERIALGPS_BENCHMARKS=1 swift build --package-path "$root" -c release --product nmea-bench >/dev/null
bin="$(swift build --package-path "$root" -c release --show-bin-path)"

work="$(mktemp -d)"
trap 'rm -rf "$work" ${source_dir:+"$source_dir"}' EXIT
"$bin/nmea-bench" --write-stream "$work/bench-stream.nmea"

inputs=()
corpus="$root/corpus/gpsd"
if [ ! -f "$corpus/bu353s4.log" ]; then
  echo "decode-identical: corpus/gpsd is missing: the repository carries it; restore it with" \
    "'git checkout -- corpus' or scripts/refresh-corpus.sh" >&2
  exit 1
fi
inputs+=("$corpus"/*.log)
inputs+=("$root"/fixtures/*.nmea "$work/bench-stream.nmea")

failures=0
for input in "${inputs[@]}"; do
  for mode in json plain; do
    args=(decode "$input")
    [ "$mode" = json ] && args+=(--json --stats)
    "$cache/serialgps" "${args[@]}" >"$work/ref.out" 2>"$work/ref.err" && ref_status=0 || ref_status=$?
    "$bin/serialgps" "${args[@]}" >"$work/new.out" 2>"$work/new.err" && new_status=0 || new_status=$?
    if [ "$ref_status" != "$new_status" ] || ! cmp -s "$work/ref.out" "$work/new.out" \
      || ! cmp -s "$work/ref.err" "$work/new.err"; then
      echo "DIFFERENT: $(basename "$input") ($mode; exit $ref_status vs $new_status)"
      diff "$work/ref.out" "$work/new.out" | head -10 || true
      diff "$work/ref.err" "$work/new.err" | head -10 || true
      failures=$((failures + 1))
    fi
  done
done

if [ "$failures" -gt 0 ]; then
  echo "decode-identical: $failures of $((2 * ${#inputs[@]})) outputs differ from ${commit:0:12}"
  exit 1
fi
echo "decode-identical: all $((2 * ${#inputs[@]})) outputs (${#inputs[@]} inputs, json+stats and plain) identical to ${commit:0:12}"
