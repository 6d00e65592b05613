#!/usr/bin/env bash
# The C baseline of BENCHMARKS.md: minmea parsing the same stream as nmea-bench.
#
#   scripts/bench-minmea.sh MINMEA_DIR [RUNS]
#
# MINMEA_DIR holds minmea.c and minmea.h from a checkout of minmea made outside the project
# (for example under /tmp; it is not part of SerialGPS). The harness below splits the stream
# into lines with memchr, copies each into a NUL-terminated buffer as fgets would, validates
# it with minmea_sentence_id (checksum included) and parses RMC, GGA, GSA and GSV with their
# minmea_parse_* functions, reading a field of each so nothing is optimised away. Median of
# RUNS passes (default 7), in sentences per second.
set -euo pipefail

minmea="${1:?usage: scripts/bench-minmea.sh MINMEA_DIR [RUNS]}"
runs="${2:-7}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

SERIALGPS_BENCHMARKS=1 swift build --package-path "$root" -c release --product nmea-bench >/dev/null
"$root/.build/release/nmea-bench" --write-stream "$work/stream.nmea"

cat >"$work/harness.c" <<'EOF'
#include "minmea.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int runs = atoi(argv[2]);
  if (runs < 1 || runs > 64) runs = 7;
  FILE *file = fopen(argv[1], "rb");
  if (!file) { perror(argv[1]); return 2; }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *data = malloc(size);
  if (fread(data, 1, size, file) != (size_t)size) return 2;
  fclose(file);
  double rates[64];
  long sink = 0, parsed = 0, rejected = 0;
  for (int run = 0; run < runs; run++) {
    parsed = 0;
    rejected = 0;
    double start = now();
    char line[MINMEA_MAX_LENGTH + 8];
    const char *p = data, *end = data + size;
    while (p < end) {
      const char *newline = memchr(p, '\n', end - p);
      size_t length = (newline ? newline + 1 : end) - p;
      if (length < sizeof line) {
        memcpy(line, p, length);
        line[length] = 0;
        switch (minmea_sentence_id(line, false)) {
        case MINMEA_SENTENCE_RMC: {
          struct minmea_sentence_rmc s;
          if (minmea_parse_rmc(&s, line)) { parsed++; sink += s.time.seconds + s.speed.value; }
        } break;
        case MINMEA_SENTENCE_GGA: {
          struct minmea_sentence_gga s;
          if (minmea_parse_gga(&s, line)) { parsed++; sink += s.satellites_tracked + s.latitude.value; }
        } break;
        case MINMEA_SENTENCE_GSA: {
          struct minmea_sentence_gsa s;
          if (minmea_parse_gsa(&s, line)) { parsed++; sink += s.sats[0]; }
        } break;
        case MINMEA_SENTENCE_GSV: {
          struct minmea_sentence_gsv s;
          if (minmea_parse_gsv(&s, line)) { parsed++; sink += s.msg_nr + s.sats[0].snr; }
        } break;
        default: rejected++; break;
        }
      } else {
        rejected++;
      }
      p += length;
    }
    rates[run] = parsed / (now() - start);
  }
  qsort(rates, runs, sizeof(double), compare);
  printf("minmea: %ld sentences parsed, %ld not; median %.2f M sentences/s "
         "(min %.2f, max %.2f; %d runs) [digest %ld]\n",
         parsed, rejected, rates[runs / 2] / 1e6, rates[0] / 1e6, rates[runs - 1] / 1e6, runs,
         sink);
  return 0;
}
EOF

cc -O2 -march=native -I "$minmea" -o "$work/harness" "$work/harness.c" "$minmea/minmea.c"
"$work/harness" "$work/stream.nmea" "$runs"
