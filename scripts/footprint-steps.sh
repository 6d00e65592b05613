#!/usr/bin/env bash
# What each step of scripts/build-static.sh buys: builds serialgps once per step, each step
# adding one change to the one before, and measures them all with scripts/footprint.py in
# one run beside the dynamic build, the package's static build and gpsd (BENCHMARKS.md,
# Footprint). Slow: one release build per step (in .build/steps/).
#
#   scripts/footprint-steps.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
steps=.build/steps
mkdir -p "$steps/libstdc++"
ln -sf "$("${CC:-gcc}" -print-file-name=libstdc++.a)" "$steps/libstdc++/libstdc++.a"

base=(-c release --product serialgps --static-swift-stdlib)
nosp=(-Xswiftc -Xfrontend -Xswiftc -disable-implicit-string-processing-module-import)
sections=(-Xswiftc -Xfrontend -Xswiftc -function-sections)
cxx=(-Xswiftc "-L$PWD/$steps/libstdc++")
lld=(-Xswiftc -use-ld=lld)
noexport=(-Xlinker --no-export-dynamic)
relr=(-Xlinker -z -Xlinker pack-relative-relocs -Xlinker -z -Xlinker now)

variants=()
build() { # NAME SCRATCH FLAGS...: build, strip into $steps/NAME, add it to the variants
  local name=$1 scratch=$2
  shift 2
  "$swift" build "${base[@]}" --scratch-path "$steps/$scratch" "$@" >&2
  strip -o "$steps/$name" "$("$swift" build "${base[@]}" --scratch-path "$steps/$scratch" "$@" \
    --show-bin-path)/serialgps"
  variants+=(--variant "$name=$steps/$name")
}
build 1-static-stdlib a
build 2-no-string-processing b "${nosp[@]}"
build 3-function-sections c "${nosp[@]}" "${sections[@]}"
build 4-static-libstdc++ d "${nosp[@]}" "${sections[@]}" "${cxx[@]}"
build 5-lld e "${nosp[@]}" "${sections[@]}" "${cxx[@]}" "${lld[@]}"
build 6-no-export-dynamic e "${nosp[@]}" "${sections[@]}" "${cxx[@]}" "${lld[@]}" "${noexport[@]}"
build 7-relr-now e "${nosp[@]}" "${sections[@]}" "${cxx[@]}" "${lld[@]}" "${noexport[@]}" "${relr[@]}"
# Not taken (docs/packaging.md): a position-dependent executable.
build x-no-pie f "${nosp[@]}" "${sections[@]}" "${cxx[@]}" "${lld[@]}" "${noexport[@]}" \
  -Xlinker -z -Xlinker now -Xswiftc -Xclang-linker -Xswiftc -no-pie

"$swift" build -c release --product serialgps >&2
dynamic=$("$swift" build -c release --show-bin-path)/serialgps
deb=$(scripts/make-deb.sh "$(SWIFT=$swift scripts/build-static.sh)" dist)
python3 scripts/footprint.py --dynamic "$dynamic" \
  --static .build/deb/src/debian/serialgps/usr/bin/serialgps --deb "$deb" "${variants[@]}" "$@"
