#!/usr/bin/env bash
# Refreshes corpus/ (gpsd's receiver captures, corpus/README.md) from ../shared/corpus/ beside
# the repository: its gpsd/, gpsd-ubx/ and gpsd-casic/ are copied byte for byte, replacing
# what is here, so captures added there arrive and captures removed there leave. The licence
# and README of corpus/ stay.
#
#   scripts/refresh-corpus.sh [SOURCE]     (SOURCE defaults to ../shared/corpus)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source_dir=${1:-$root/../shared/corpus}
families=(gpsd gpsd-ubx gpsd-casic)

if [ ! -d "$source_dir" ]; then
  echo "refresh-corpus: $source_dir does not exist: there is nothing to refresh from." >&2
  echo "corpus/ in the repository is already complete; to restore it, run" \
    "'git checkout -- corpus'. To refresh from elsewhere: scripts/refresh-corpus.sh DIRECTORY" >&2
  exit 1
fi
for family in "${families[@]}"; do
  if [ ! -d "$source_dir/$family" ]; then
    echo "refresh-corpus: $source_dir/$family is missing; nothing was changed" >&2
    exit 1
  fi
done
for family in "${families[@]}"; do
  rm -rf "${root:?}/corpus/$family"
  mkdir -p "$root/corpus/$family"
  cp -p "$source_dir/$family"/* "$root/corpus/$family/"
  diff -r "$source_dir/$family" "$root/corpus/$family" >/dev/null ||
    { echo "refresh-corpus: corpus/$family differs from its source after copying" >&2; exit 1; }
  echo "corpus/$family: $(ls "$root/corpus/$family" | grep -c '\.log$') logs"
done
echo "Review with 'git status corpus' and update corpus/README.md's lists if captures were added."
