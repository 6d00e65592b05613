#!/usr/bin/env python3
"""Bytes per navigation epoch of a u-blox receiver's NMEA and UBX output, from gpsd's logs.

    scripts/ubx-epoch-bytes.py [corpus/gpsd-ubx]

For each log: the epochs (distinct NAV iTOWs for UBX, distinct GGA/RMC times for NMEA), the
bytes per epoch of the NMEA sentences SerialGPS selects by default (GGA, GSA, GSV, RMC) and
of the UBX messages it would select (UBXMessageSelection.navigation: NAV-PVT, NAV-DOP,
NAV-SAT, NAV-TIMEGPS, NAV-STATUS, NAV-EOE; NAV-SAT and GSV as long as the log's are, the
fixed-length messages at their lengths where the log lacks them), and the share of a 9600
and a 115200 baud line each uses at 1 Hz (10 bits a byte: 8N1). Medians over the epochs.
"""
import os
import statistics
import sys

NMEA_DEFAULT = {"GGA", "GSA", "GSV", "RMC"}
# class, id -> name; the navigation selection and its fixed frame lengths (payload + 8).
UBX_SELECTION = {
    (0x01, 0x07): ("NAV-PVT", 92 + 8),
    (0x01, 0x04): ("NAV-DOP", 18 + 8),
    (0x01, 0x35): ("NAV-SAT", None),
    (0x01, 0x20): ("NAV-TIMEGPS", 16 + 8),
    (0x01, 0x03): ("NAV-STATUS", 16 + 8),
    (0x01, 0x61): ("NAV-EOE", 4 + 8),
}


def frames(data):
    """(kind, key, bytes) for each NMEA sentence and checksummed UBX frame."""
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b == 0xB5 and i + 6 <= n and data[i + 1] == 0x62:
            length = data[i + 4] | data[i + 5] << 8
            end = i + 6 + length + 2
            if end <= n:
                ck_a = ck_b = 0
                for x in data[i + 2 : i + 6 + length]:
                    ck_a = (ck_a + x) & 0xFF
                    ck_b = (ck_b + ck_a) & 0xFF
                if ck_a == data[end - 2] and ck_b == data[end - 1]:
                    yield "ubx", (data[i + 2], data[i + 3]), data[i:end]
                    i = end
                    continue
        if b == ord("$"):
            end = data.find(b"\n", i)
            if end < 0:
                return
            yield "nmea", None, data[i : end + 1]
            i = end + 1
            continue
        if b == ord("#") and (i == 0 or data[i - 1] == ord("\n")):
            end = data.find(b"\n", i)
            i = n if end < 0 else end + 1
            continue
        i += 1


def measure(path):
    data = open(path, "rb").read()
    nmea = {}  # time -> bytes of the default sentences
    ubx = {}  # iTOW -> {name: bytes}
    current_time = None
    for kind, key, raw in frames(data):
        if kind == "nmea":
            fields = raw.split(b"*")[0].decode("ascii", "replace").split(",")
            kind3 = fields[0][3:6]
            if kind3 in ("GGA", "RMC") and len(fields) > 1 and fields[1]:
                current_time = fields[1]
            if kind3 in NMEA_DEFAULT and current_time is not None:
                nmea[current_time] = nmea.get(current_time, 0) + len(raw)
        elif key in UBX_SELECTION and len(raw) >= 12:
            itow = int.from_bytes(raw[6:10], "little")
            name = UBX_SELECTION[key][0]
            ubx.setdefault(itow, {})[name] = ubx.get(itow, {}).get(name, 0) + len(raw)
    rows = {}
    if nmea:
        rows["nmea"] = statistics.median(nmea.values()), len(nmea)
    sat = [e["NAV-SAT"] for e in ubx.values() if "NAV-SAT" in e]
    if sat:
        # The selection at the log's own NAV-SAT lengths, fixed messages at their lengths.
        fixed = sum(size for name, size in UBX_SELECTION.values() if size)
        rows["ubx"] = statistics.median(fixed + s for s in sat), len(sat)
    return rows


def share(byte_count, baud):
    return 100.0 * byte_count * 10 / baud


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "gpsd-ubx")
    print(f"{'log':32} {'source':5} {'epochs':>6} {'bytes':>7} {'9600':>7} {'115200':>7}")
    for name in sorted(os.listdir(corpus)):
        if not name.endswith(".log"):
            continue
        for source, (median, count) in sorted(measure(os.path.join(corpus, name)).items()):
            print(
                f"{name:32} {source:5} {count:6} {median:7.0f} "
                f"{share(median, 9600):6.1f}% {share(median, 115200):6.2f}%")


if __name__ == "__main__":
    main()
