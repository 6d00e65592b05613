#!/usr/bin/env bash
# Makes dist/serialgps_<version>_<arch>.deb from a built serialgps with Debian's own tools
# (dpkg-shlibdeps, dpkg-gencontrol, dpkg-deb): see docs/packaging.md. `make deb` runs it
# after scripts/build-static.sh.
#
#   scripts/make-deb.sh BINARY [OUTDIR]      # prints the path of the .deb
#
# Environment: DEB_MAINTAINER ("Name <address>", default the one in contrib/debian/control),
# SOURCE_DATE_EPOCH (default: the last commit's time, else now) for the changelog, the man
# page and the files' times, so that the same tree gives the same package.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:?usage: scripts/make-deb.sh BINARY [OUTDIR]}
outdir=${2:-dist}
for tool in dpkg-deb dpkg-shlibdeps dpkg-gencontrol python3 gzip; do
  command -v "$tool" >/dev/null || {
    echo "make-deb: $tool is missing (make deb installs dpkg-dev and python3)" >&2
    exit 1
  }
done

version=$(scripts/version.sh)
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
commit=$(git rev-parse --short HEAD 2>/dev/null || true)

stage=.build/deb
rm -rf "$stage"
# The layout dpkg's tools expect: debian/control and debian/changelog, and the package's
# files under debian/serialgps.
debian=$stage/src/debian
root=$debian/serialgps
mkdir -p "$root/DEBIAN" "$debian"
doc=$root/usr/share/doc/serialgps

# The program, stripped as dh_strip does; the rules; the unit, started from /usr/bin.
install -D -m 0755 "$binary" "$root/usr/bin/serialgps"
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/serialgps"
install -D -m 0644 udev-rules/60-serialgps.rules "$root/usr/lib/udev/rules.d/60-serialgps.rules"
install -D -m 0644 contrib/systemd/61-serialgps-serve.rules \
  "$root/usr/lib/udev/rules.d/61-serialgps-serve.rules"
install -d "$root/usr/lib/systemd/system"
sed 's#^ExecStart=/usr/local/bin/serialgps #ExecStart=/usr/bin/serialgps #' \
  contrib/systemd/serialgps.service >"$root/usr/lib/systemd/system/serialgps.service"
chmod 0644 "$root/usr/lib/systemd/system/serialgps.service"
grep -q '^ExecStart=/usr/bin/serialgps ' "$root/usr/lib/systemd/system/serialgps.service" || {
  echo "make-deb: contrib/systemd/serialgps.service has no ExecStart=/usr/local/bin/serialgps to adapt" >&2
  exit 1
}
install -m 0644 contrib/systemd/serialgps.socket "$root/usr/lib/systemd/system/serialgps.socket"
# The recording `serialgps demo` replays (it looks in share/serialgps beside bin/).
install -D -m 0644 fixtures/ublox-m8-drive.nmea "$root/usr/share/serialgps/ublox-m8-drive.nmea"

# The man page, from the commands' own --help.
date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
install -d "$root/usr/share/man/man1"
python3 scripts/make-manpage.py "$root/usr/bin/serialgps" "$version" "$date" \
  >"$root/usr/share/man/man1/serialgps.1"
gzip -9n "$root/usr/share/man/man1/serialgps.1"

# Documentation: copyright, the changelog (a native package's is changelog.gz), how it
# lives beside gpsd, and the README.
maintainer=${DEB_MAINTAINER:-$(sed -n 's/^Maintainer: //p' contrib/debian/control)}
{
  echo "serialgps ($version) unstable; urgency=medium"
  echo
  if [ -n "$commit" ]; then
    echo "  * serialgps $version, packaged with \`make deb\` from the upstream tree at"
    echo "    commit $commit."
  else
    echo "  * serialgps $version, packaged with \`make deb\` from the upstream tree."
  fi
  echo
  echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} >"$debian/changelog"
install -D -m 0644 contrib/debian/copyright "$doc/copyright"
install -m 0644 contrib/debian/README.Debian "$doc/README.Debian"
install -m 0644 README.md "$doc/README.md"
gzip -9nc "$debian/changelog" >"$doc/changelog.gz"
gzip -9n "$doc/README.md"
chmod 0644 "$doc/changelog.gz" "$doc/README.md.gz"

# Control: run-time dependencies from the libraries the binary loads (dpkg-shlibdeps), the
# rest from contrib/debian/control and the changelog (dpkg-gencontrol, which also counts the
# installed size).
sed "s/^Maintainer: .*/Maintainer: $maintainer/" contrib/debian/control >"$debian/control"
echo "misc:Depends=" >"$debian/substvars"
# Packed relative relocations need glibc 2.36 (the binary says so with the version
# GLIBC_ABI_DT_RELR, which names no symbol, so dpkg-shlibdeps does not see it).
if readelf -V "$root/usr/bin/serialgps" | grep -q 'Name: GLIBC_ABI_DT_RELR'; then
  echo "relr:Depends=libc6 (>= 2.36)" >>"$debian/substvars"
else
  echo "relr:Depends=" >>"$debian/substvars"
fi
(
  cd "$stage/src"
  dpkg-shlibdeps -Tdebian/substvars debian/serialgps/usr/bin/serialgps
  dpkg-gencontrol -pserialgps -Pdebian/serialgps -Tdebian/substvars
)
for script in postinst prerm postrm; do
  install -m 0755 "contrib/debian/$script" "$root/DEBIAN/$script"
done
(cd "$root" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

arch=$(sed -n 's/^Architecture: //p' "$root/DEBIAN/control")
mkdir -p "$outdir"
deb=$outdir/serialgps_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
