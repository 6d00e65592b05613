#!/usr/bin/env bash
# Builds the `serialgps` that the Debian package ships (make static, make deb): release, the
# Swift runtime linked in, and only what the program uses loaded. What each flag buys, with
# figures, is in docs/packaging.md and BENCHMARKS.md (Footprint).
#
#   scripts/build-static.sh            # prints the path of the built (unstripped) binary
#
# Environment: SWIFT (default swift), STATIC_SCRATCH (default .build/static), CC (default
# gcc, asked where libstdc++.a is).
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
scratch=${STATIC_SCRATCH:-.build/static}
order=contrib/serialgps.order
layout=contrib/serialgps-text.ld

# libstdc++ (the Swift runtime is C++) linked statically, so only the few objects the runtime
# needs are in the program instead of the whole shared library: swiftc always links it with
# -lstdc++, so a directory holding only libstdc++.a is searched first.
libstdcxx=$("${CC:-gcc}" -print-file-name=libstdc++.a)
if [ ! -f "$libstdcxx" ]; then
  echo "build-static: libstdc++.a not found (install g++, which brings libstdc++-NN-dev)" >&2
  exit 1
fi
mkdir -p "$scratch/libstdc++"
ln -sf "$libstdcxx" "$scratch/libstdc++/libstdc++.a"

flags=(
  -c release --product serialgps --scratch-path "$scratch"
  # The Swift runtime and standard library inside the executable: only the pages used are
  # loaded, and the board needs no Swift toolchain.
  --static-swift-stdlib
  # No implicit _StringProcessing (regex support): one String.contains(String) or
  # firstRange(of:) would bring it and _RegexParser in (1.4 MB). Code linked into serialgps
  # uses the package's own substring search (Sources/NMEA/SubstringSearch.swift); with this
  # flag a new call fails here, at its line.
  -Xswiftc -Xfrontend -Xswiftc -disable-implicit-string-processing-module-import
  # One section per function, so that --gc-sections (SwiftPM's default for release
  # executables) drops our own unused functions too.
  -Xswiftc -Xfrontend -Xswiftc -function-sections
  # LLVM's linker, shipped with the Swift toolchain: it can pack relative relocations.
  -Xswiftc -use-ld=lld
  -Xswiftc "-L$PWD/$scratch/libstdc++"
  # The runtime's static-link arguments export every symbol; nothing looks them up.
  -Xlinker --no-export-dynamic
  # Position-independent (as Debian builds everything) with relative relocations packed
  # (DT_RELR, glibc 2.36): 0.6 MB less to load than Elf64_Rela entries.
  -Xlinker -z -Xlinker pack-relative-relocs
  # Debian's hardening: resolve every symbol at start, then make the GOT read-only.
  -Xlinker -z -Xlinker now
  # The functions `serve` runs while streaming laid out together, then those it runs only
  # to start (contrib/serialgps.order, made by scripts/symbol-order.py from a profile): the
  # kernel maps code in 64 KB windows, and scattered hot code keeps most of .text resident.
  # Names the code no longer has are skipped.
  -Xlinker "--symbol-ordering-file=$PWD/$order" -Xlinker --no-warn-symbol-ordering
  # Functions the compiler gives no symbol (a list cannot name them) together at the front,
  # instead of one cold 64 KB window each (contrib/serialgps-text.ld says more).
  -Xlinker -T -Xlinker "$PWD/$layout"
)
binary=$("$swift" build "${flags[@]}" --show-bin-path)/serialgps
# SwiftPM does not know the order file and the layout script are inputs of the link: either
# newer than the binary would otherwise leave the old layout in place.
if [ -e "$binary" ] && { [ "$order" -nt "$binary" ] || [ "$layout" -nt "$binary" ]; }; then
  rm "$binary"
fi
"$swift" build "${flags[@]}" >&2

# What the executable must not contain or load: Foundation (too large for a board; the
# driver core imports none), regex support, any Swift runtime library from a toolchain, or
# libmosquitto.
if nm "$binary" | grep -qE '\$s(10Foundation|20FoundationEssentials|17_StringProcessing|12_RegexParser)'; then
  echo "build-static: $binary contains Foundation or _StringProcessing code:" >&2
  nm "$binary" | grep -E '\$s(10Foundation|20FoundationEssentials|17_StringProcessing|12_RegexParser)' | head -5 >&2
  exit 1
fi
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if printf '%s\n' "$needed" | grep -qE '^lib(swift|Foundation|dispatch|BlocksRuntime|stdc\+\+)'; then
  echo "build-static: $binary still loads these shared libraries:" $needed >&2
  exit 1
fi
# libmosquitto (and through it libssl and libcrypto) is loaded with dlopen only when MQTT is
# used (docs/fleet.md): the executable must not link it.
if printf '%s\n' "$needed" | grep -qE '^lib(mosquitto|ssl|crypto)\.'; then
  echo "build-static: $binary links libmosquitto, libssl or libcrypto (they are loaded only" \
    "for MQTT):" $needed >&2
  exit 1
fi
# A layout is only as good as its list: say how much of it the code still has.
listed=$(grep -c . "$order")
found=$(nm --defined-only "$binary" | awk '{ print $3 }' | sort -u | comm -12 - <(sort -u "$order") | wc -l)
echo "build-static: $found of $listed functions of $order laid out first" >&2
if [ $((found * 100)) -lt $((listed * 80)) ]; then
  echo "build-static: warning: $order is stale (under 80% found); refresh it with" \
    "scripts/symbol-order.py (BENCHMARKS.md, Footprint)" >&2
fi
echo "$binary"
