#!/bin/sh
# The NMEA module built with Embedded Swift (no Foundation, no Glibc module; what a board's
# firmware links) for x86-64, aarch64 and armv7 hard-float, each with the driver
# Embedded/nmea-print.swift, linked with Debian's cross gcc and libc and run under qemu-user.
# Every capture of the corpus and the crafted edge cases (Embedded/edge-cases.nmea, and the UBX
# frames of Embedded/edge-cases.ubx from scripts/make-ubx-edge-cases.py) go
# through each; the output of aarch64 and armv7 must be byte for byte that of x86-64, and no
# run may trap. docs/fuzzing.md ("32-bit boards") says why.
#
# usage: scripts/arm-check.sh [CORPUS]   (default: corpus/ in the repository, else ../shared/corpus)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ $# -ge 1 ]; then
  corpus=$1
elif [ -d corpus ]; then
  corpus=corpus
elif [ -d ../shared/corpus ]; then
  corpus=../shared/corpus
elif [ -d /work/shared/corpus ]; then
  corpus=/work/shared/corpus
else
  echo "arm-check: no corpus: neither corpus/ in the repository nor ../shared/corpus exists; give its folder as the argument" >&2
  exit 2
fi
[ -d "$corpus" ] || { echo "arm-check: $corpus is not a folder of captures" >&2; exit 2; }

swiftc=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
embedded=$(dirname "$(readlink -f "$swiftc")")/../lib/swift/embedded
[ -d "$embedded" ] || { echo "arm-check: $swiftc has no lib/swift/embedded; a Swift 6 toolchain from swift.org has" >&2; exit 2; }
for tool in aarch64-linux-gnu-gcc arm-linux-gnueabihf-gcc arm-linux-gnueabihf-objcopy qemu-aarch64 qemu-arm; do
  command -v "$tool" >/dev/null || { echo "arm-check: $tool is missing; run make test-deps" >&2; exit 2; }
done

out=${ARM_CHECK_DIR:-.build/arm-check}
mkdir -p "$out"
flags="-enable-experimental-feature Embedded -enable-experimental-feature Extern -wmo -parse-as-library -package-name serialgps -O"

# build TRIPLE CC [swiftc options…]: the module and the driver into $out/TRIPLE/nmea-print.
build() {
  triple=$1 cc=$2
  shift 2
  dir=$out/$triple
  mkdir -p "$dir"
  # Untyped `rethrows` closures are warnings in Embedded Swift; errors stop the check.
  "$swiftc" $flags -target "$triple" "$@" -module-name NMEA -emit-module \
    -emit-module-path "$dir/NMEA.swiftmodule" -c -o "$dir/NMEA.o" Sources/NMEA/*.swift 2>"$dir/build.log" \
    || { cat "$dir/build.log" >&2; return 1; }
  "$swiftc" $flags -target "$triple" "$@" -module-name nmea_print -I "$dir" -c -o "$dir/main.o" \
    Embedded/nmea-print.swift 2>>"$dir/build.log" || { cat "$dir/build.log" >&2; return 1; }
  tables=$dir/libswiftUnicodeDataTables.a
  cp "$embedded/$triple/libswiftUnicodeDataTables.a" "$tables"
  # The tables are built for soft-float armv7; they hold no floating point, so the
  # attributes that would stop the hard-float link go.
  case $triple in armv7*) arm-linux-gnueabihf-objcopy --remove-section=.ARM.attributes "$tables" ;; esac
  "$cc" -o "$dir/nmea-print" "$dir/main.o" "$dir/NMEA.o" "$tables" -lm
}

start=$(date +%s)
build x86_64-unknown-linux-gnu cc &
x86=$!
build aarch64-none-none-elf aarch64-linux-gnu-gcc &
arm64=$!
build armv7-none-none-eabi arm-linux-gnueabihf-gcc -Xcc -mfloat-abi=hard -Xcc -mfpu=vfpv3-d16 &
arm32=$!
failed=0
wait $x86 || failed=1
wait $arm64 || failed=1
wait $arm32 || failed=1
[ $failed = 0 ] || { echo "arm-check: the Embedded Swift build failed (above)" >&2; exit 1; }
built=$(date +%s)

# run TRIPLE INPUT OUTPUT
run() {
  case $1 in
    x86_64*) "$out/$1/nmea-print" <"$2" >"$3" ;;
    aarch64*) qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/$1/nmea-print" <"$2" >"$3" ;;
    armv7*) qemu-arm -L /usr/arm-linux-gnueabihf "$out/$1/nmea-print" <"$2" >"$3" ;;
  esac
}

inputs=$(find "$corpus" -type f -name '*.log' | sort)
[ -n "$inputs" ] || { echo "arm-check: no .log captures under $corpus" >&2; exit 2; }
count=0
differ=0
for input in Embedded/edge-cases.nmea Embedded/edge-cases.ubx $inputs; do
  count=$((count + 1))
  name=$(echo "$input" | tr '/' '_')
  for triple in x86_64-unknown-linux-gnu aarch64-none-none-elf armv7-none-none-eabi; do
    if ! run "$triple" "$input" "$out/$triple/$name.out"; then
      echo "arm-check: $triple trapped or failed on $input" >&2
      differ=1
    fi
  done
  for triple in aarch64-none-none-elf armv7-none-none-eabi; do
    if ! cmp -s "$out/x86_64-unknown-linux-gnu/$name.out" "$out/$triple/$name.out"; then
      echo "arm-check: $triple decodes $input differently from x86-64:" >&2
      diff "$out/x86_64-unknown-linux-gnu/$name.out" "$out/$triple/$name.out" | head -20 >&2
      differ=1
    fi
  done
done
end=$(date +%s)
[ $differ = 0 ] || exit 1
echo "arm-check: $count inputs decode identically on x86-64, aarch64 and armv7 hard-float (Embedded Swift, qemu-user); build $((built - start)) s, runs $((end - built)) s"
