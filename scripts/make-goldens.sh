#!/bin/sh
# Rewrites fixtures/NAME.golden.jsonl for every fixture: what `serialgps decode --json` prints
# for it now. Then checks the new files against the truth files (scripts/check-goldens.py):
# a golden file is the reference the tests hold the decoder to, so it must agree with what
# the generator says is in the recording. Review `git diff fixtures/` before committing.
set -eu
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
"$SWIFT" build --product serialgps
binary="$("$SWIFT" build --show-bin-path)/serialgps"
for recording in fixtures/*.nmea; do
	name=$(basename "$recording" .nmea)
	"$binary" decode --json "$recording" >"fixtures/$name.golden.jsonl.new"
	mv "fixtures/$name.golden.jsonl.new" "fixtures/$name.golden.jsonl"
	echo "goldens: wrote fixtures/$name.golden.jsonl ($(wc -l <"fixtures/$name.golden.jsonl") lines)"
done
if ! python3 scripts/check-goldens.py fixtures; then
	echo "goldens: the new golden files disagree with the truth files (above); fix the decoder," \
		"or explain why the truth is wrong, before committing them" >&2
	exit 1
fi
