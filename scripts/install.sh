#!/usr/bin/env bash
# Installs serialgps as the Debian package does (scripts/make-deb.sh), for a machine without
# the package: the program, its man page, the recording `serialgps demo` replays, the udev
# rules and the systemd units, under PREFIX (default /usr/local). DESTDIR stages it elsewhere.
# udev reads no rules under /usr/local, so the rules go to /etc/udev/rules.d; systemd reads
# PREFIX/lib/systemd/system for /usr/local (and /usr), whose units start PREFIX/bin/serialgps.
#
#   scripts/install.sh BINARY [DESTDIR] [PREFIX]          (make install)
set -euo pipefail
binary=${1:?usage: scripts/install.sh BINARY [DESTDIR] [PREFIX]}
destdir=${2:-}
prefix=${3:-/usr/local}
cd "$(dirname "$0")/.."
[ -x "$binary" ] || { echo "install: $binary is not a program; build it first (make install does)" >&2; exit 1; }
root=$destdir$prefix
version=$(scripts/version.sh)

install -D -m 0755 "$binary" "$root/bin/serialgps"
install -D -m 0644 fixtures/ublox-m8-drive.nmea "$root/share/serialgps/ublox-m8-drive.nmea"
install -d "$root/share/man/man1"
python3 scripts/make-manpage.py "$root/bin/serialgps" "$version" "$(date -u +%Y-%m-%d)" \
  >"$root/share/man/man1/serialgps.1"
install -D -m 0644 udev-rules/60-serialgps.rules "$destdir/etc/udev/rules.d/60-serialgps.rules"
install -D -m 0644 contrib/systemd/61-serialgps-serve.rules \
  "$destdir/etc/udev/rules.d/61-serialgps-serve.rules"
units=$root/lib/systemd/system
install -d "$units"
sed "s#^ExecStart=/usr/local/bin/serialgps #ExecStart=$prefix/bin/serialgps #" \
  contrib/systemd/serialgps.service >"$units/serialgps.service"
chmod 0644 "$units/serialgps.service"
install -m 0644 contrib/systemd/serialgps.socket "$units/serialgps.socket"

echo "Installed serialgps $version: $root/bin/serialgps, its man page, the udev rules in" \
  "$destdir/etc/udev/rules.d and the units in $units."
if [ -z "$destdir" ]; then
  echo "Reload them: udevadm control --reload; systemctl daemon-reload;" \
    "systemctl enable --now serialgps.socket to serve gpsd's port (docs/packaging.md)."
fi
