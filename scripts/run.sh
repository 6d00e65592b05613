#!/bin/sh
# make run: the main job for a new user. With a GPS receiver attached (one that
# `serialgps list` finds, known or possible), watch it; with none, run the bundled demo,
# which replays a recorded drive on a virtual receiver and watches it through the driver.
set -eu
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}

"$SWIFT" build -c release --product serialgps
serialgps="$("$SWIFT" build -c release --show-bin-path)/serialgps"

# `list --json` prints the receiver candidates only (known first), one object each:
# [{"path":"/dev/ttyACM0","stablePath":"/dev/serial/by-id/…",…},…]. The first one is
# watched, by its stable path when it has one. No receiver, or no udev to ask (a
# container), gives the demo.
receivers=$("$serialgps" list --json 2>/dev/null || echo '[]')
device=$(printf '%s\n' "$receivers" |
	sed -n 's/^\[{"path":"\([^"]*\)","stablePath":\("\([^"]*\)"\|null\).*/\3 \1/p' |
	awk '{ print $1 }')

if [ -n "$device" ]; then
	echo "make run: watching the receiver at $device (Ctrl-C stops and puts it to standby)"
	exec "$serialgps" watch "$device"
fi
echo "make run: no GPS receiver attached; running the demo instead."
exec "$serialgps" demo
