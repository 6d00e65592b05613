#!/usr/bin/env bash
# CI's check of the Debian package (make deb-check; docs/packaging.md), as root:
#   1. lintian reports no error;
#   2. in a private mount namespace whose /run says that udev and systemd run (so that the
#      maintainer scripts take their reload paths), with udevadm, systemctl,
#      deb-systemd-invoke and deb-systemd-helper replaced by stubs that record their
#      arguments: install with dpkg -i, install again (an upgrade), run the installed
#      serialgps --version and demo, systemd-analyze verify the installed units (service and
#      socket), check the man page, purge with dpkg --purge;
#   3. the maintainer scripts reloaded udev and systemd on install and removal, enabled and
#      started serialgps.socket on install, and stopped socket and service on removal and
#      purged the socket's enablement;
#   4. nothing the package installed is left, and no path under /etc, /usr or /var/lib was
#      added or removed.
#
#   scripts/check-deb.sh dist/serialgps_<version>_<arch>.deb
set -euo pipefail
deb=$(realpath "${1:?usage: scripts/check-deb.sh PACKAGE.deb}")
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "check-deb: run as root: it installs and purges the package" >&2
  exit 1
fi
if dpkg-query -W -f='${Status}' serialgps 2>/dev/null | grep -q installed; then
  echo "check-deb: serialgps is already installed here; this check installs and purges it," \
    "so remove it first (dpkg --purge serialgps)" >&2
  exit 1
fi
version=$(dpkg-deb -f "$deb" Version)
failed=0
fail() {
  echo "check-deb: FAILED: $*" >&2
  failed=1
}

echo "== lintian $deb"
# Info tags (the Swift runtime's strings that look misspelt, no fortified functions, no
# init.d script) are shown but do not fail; warnings and errors are listed, errors fail.
lintian_status=0
lintian --fail-on error --display-info "$deb" >"${TMPDIR:-/tmp}/check-deb-lintian.$$" 2>&1 ||
  lintian_status=$?
grep -v 'running with root privileges' "${TMPDIR:-/tmp}/check-deb-lintian.$$" || true
rm -f "${TMPDIR:-/tmp}/check-deb-lintian.$$"
[ "$lintian_status" -eq 0 ] || fail "lintian reports errors (exit status $lintian_status)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
snapshot() {
  find /etc /usr /var/lib -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt \) -prune \
    -o -print 2>/dev/null | LC_ALL=C sort
}
snapshot >"$work/before"

stubs=$work/stubs
mkdir -p "$stubs"
# systemctl is-active says inactive (3), as with no gpsd running; deb-systemd-helper
# was-enabled says "enable" (0), as for a new install.
for tool in udevadm systemctl deb-systemd-invoke deb-systemd-helper; do
  printf '#!/bin/sh\necho "%s $*" >>%s/calls\n' "$tool" "$work" >"$stubs/$tool"
  [ "$tool" = systemctl ] && printf '[ "$1" = is-active ] && exit 3\nexit 0\n' >>"$stubs/$tool"
  chmod 755 "$stubs/$tool"
done
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./#/#' | grep -v '/$' >"$work/files"
# gpsd's captures (corpus/) are for the tests only: none is packaged.
if grep -E '/corpus/|\.log(\.chk)?$' "$work/files"; then
  fail "the package carries test captures (above); corpus/ is for the tests only"
fi

# Everything that installs, runs and removes happens in its own mount namespace, with a
# /run of its own: the stubs stand in for udevd and systemd, which do not run here.
unshare --mount --propagation private env WORK="$work" DEB="$deb" STUBS="$stubs" \
  VERSION="$version" bash -euo pipefail -c '
  mount -t tmpfs none /run
  mkdir -p /run/udev /run/systemd/system
  phase() { echo "-- $1" >>"$WORK/calls"; }

  echo "== dpkg -i (install)"
  phase install
  PATH="$STUBS:$PATH" dpkg -i "$DEB"
  echo "== dpkg -i (the same version again: an upgrade)"
  phase upgrade
  PATH="$STUBS:$PATH" dpkg -i "$DEB"

  echo "== serialgps --version"
  said=$(/usr/bin/serialgps --version)
  echo "$said"
  [ "$said" = "serialgps $VERSION" ] || { echo "says \"$said\", the package is $VERSION" >&2; exit 1; }

  echo "== serialgps demo (from an empty directory: the recording comes from /usr/share)"
  mkdir "$WORK/empty"
  (cd "$WORK/empty" && SWIFT_BACKTRACE=enable=no timeout 120 /usr/bin/serialgps demo --speed 20 --fixes 5) \
    >"$WORK/demo.out" 2>&1 || { cat "$WORK/demo.out" >&2; echo "demo failed" >&2; exit 1; }
  tail -3 "$WORK/demo.out"
  grep -q "Demo over" "$WORK/demo.out" || { echo "the demo did not finish" >&2; exit 1; }

  for unit in serialgps.service serialgps.socket; do
    echo "== systemd-analyze verify /usr/lib/systemd/system/$unit"
    systemd-analyze verify "/usr/lib/systemd/system/$unit" 2>&1 | tee "$WORK/verify"
    [ ! -s "$WORK/verify" ] || { echo "systemd-analyze verify complained about $unit" >&2; exit 1; }
  done

  echo "== man serialgps"
  [ "$(man -w serialgps)" = /usr/share/man/man1/serialgps.1.gz ]
  LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l /usr/share/man/man1/serialgps.1.gz 2>"$WORK/man.err" |
    grep -q "serialgps serve" || { echo "the man page does not show serialgps serve" >&2; exit 1; }
  [ ! -s "$WORK/man.err" ] || { cat "$WORK/man.err" >&2; echo "man warns" >&2; exit 1; }

  echo "== dpkg --purge"
  phase purge
  PATH="$STUBS:$PATH" dpkg --purge serialgps
' || fail "install, run or purge (above)"

echo "== maintainer scripts' calls"
cat "$work/calls"
expect() {
  # The calls recorded between "-- $1" and the next phase must include $2.
  awk -v phase="-- $1" '$0 ~ /^-- / {on = ($0 == phase); next} on' "$work/calls" |
    grep -qxF "$2" || fail "on $1, no '$2'"
}
for phase in install upgrade purge; do
  expect "$phase" "udevadm control --reload-rules"
  expect "$phase" "udevadm trigger --subsystem-match=tty --subsystem-match=gnss --action=change"
  expect "$phase" "systemctl --system daemon-reload"
done
expect upgrade "deb-systemd-invoke restart serialgps.service"
expect install "deb-systemd-helper enable serialgps.socket"
expect install "deb-systemd-invoke start serialgps.socket"
expect upgrade "deb-systemd-helper enable serialgps.socket"
expect purge "deb-systemd-invoke stop serialgps.socket serialgps.service"
expect purge "deb-systemd-helper purge serialgps.socket"

echo "== nothing left behind"
if dpkg-query -W serialgps >/dev/null 2>&1; then
  fail "dpkg still knows serialgps: $(dpkg-query -W -f='${Status}' serialgps)"
fi
while read -r file; do
  [ ! -e "$file" ] || fail "$file is still there"
done <"$work/files"
snapshot >"$work/after"
if ! diff "$work/before" "$work/after" >"$work/diff"; then
  cat "$work/diff" >&2
  fail "paths under /etc, /usr or /var/lib differ after the purge (above)"
fi

if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "check-deb: $deb: lintian clean of errors, installs, runs, verifies, purges without a trace"
