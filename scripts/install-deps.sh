#!/usr/bin/env bash
# Installs the Debian packages given as arguments when they are missing.
# Runs `apt-get update` at most once, and only when something has to be installed.
set -euo pipefail

missing=()
for package in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "serialgps: these Debian packages are needed: ${missing[*]}" >&2
  echo "serialgps: install them as root: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "serialgps: installing ${missing[*]}" >&2
stamp=/tmp/.serialgps-apt-updated
if [ ! -e "$stamp" ]; then
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  touch "$stamp"
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
