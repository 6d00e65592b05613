#!/bin/sh
# Prints the serialgps version. Its one home is Sources/serialgps/Version.swift (what
# `serialgps --version` says); `make deb` names the package and its changelog from it.
set -eu
file="$(dirname "$0")/../Sources/serialgps/Version.swift"
version=$(sed -n 's/^ *static let serialgps = "\([0-9][0-9A-Za-z.+~]*\)"$/\1/p' "$file")
if [ -z "$version" ] || [ "$(printf '%s\n' "$version" | wc -l)" -ne 1 ]; then
  echo "version.sh: no single 'static let serialgps = \"X.Y.Z\"' line in $file" >&2
  exit 1
fi
printf '%s\n' "$version"
