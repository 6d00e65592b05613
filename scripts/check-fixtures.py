#!/usr/bin/env python3
"""Checks the fixtures in fixtures/ against their truth files, sharing no code with the
generator (scripts/make-fixtures.py).

    scripts/check-fixtures.py [DIR]

For every `NAME.nmea`: the header has its keys; a framer written here from the rules in
docs/fixtures.md (the same rules as the NMEA module's `NMEAFramer`) finds exactly the
sentences, rejects and UBX frames the truth file promises; every sentence fits its length
limit; cycles follow each other at the receiver's rate; the sampled epochs hold the promised
positions; speed and course agree with the distance between successive positions. Prints one
line per fixture and exits non-zero on the first disagreement.
"""

import json
import math
import os
import sys

REQUIRED_KEYS = ("Name", "Chipset", "Date", "Baud", "Description", "Generator")
MAX_SENTENCE = 128  # start character through checksum, without the line ending
MAX_BINARY = 1032


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


# MARK: - Reference framer


def is_hex(byte):
    return 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x46 or 0x61 <= byte <= 0x66


def frame(data):
    """Splits `data` into sentences and binary frames.

    Returns (events, statistics): events are ("sentence", bytes without `*hh`) and
    ("ubx", class, id, payload) in stream order.
    """
    stats = dict(sentences=0, badChecksum=0, missingChecksum=0, tooLong=0, malformed=0,
                 ubxFrames=0, sirfFrames=0, badBinaryFrames=0, garbageBytes=0)
    events = []
    n = len(data)
    i = 0
    while i < n:
        byte = data[i]
        if byte in (0x24, 0x21):  # $ or !: a sentence
            j = i + 1
            outcome = None
            while True:
                if j >= n:
                    outcome = "eof"
                    break
                b = data[j]
                if b == 0x0A:
                    outcome = "line"
                    break
                if b in (0x24, 0x21):
                    outcome = "restart"
                    break
                if (b < 0x20 and b != 0x0D) or b >= 0x7F:
                    outcome = "broken"
                    break
                j += 1
                if j - i > MAX_SENTENCE + 1:
                    outcome = "long"
                    break
            if outcome == "eof":
                return events, stats  # a sentence in progress when the data ends
            if outcome == "restart":
                stats["malformed"] += 1
                i = j
                continue
            if outcome == "broken":
                stats["malformed"] += 1
                i = j  # the byte is looked at again: it may start a binary frame
                continue
            if outcome == "long":
                stats["tooLong"] += 1
                # Skip to the end of the line, a new start, or a binary byte.
                while j < n:
                    b = data[j]
                    if b == 0x0A:
                        j += 1
                        break
                    if b in (0x24, 0x21) or (b < 0x20 and b != 0x0D) or b >= 0x7F:
                        break
                    j += 1
                i = j
                continue
            line = data[i:j]
            i = j + 1
            end = len(line)
            while end > 0 and line[end - 1] == 0x0D:
                end -= 1
            if line.count(b"\r") != len(line) - end or end < 2:
                stats["malformed"] += 1
                continue
            if end > MAX_SENTENCE:
                stats["tooLong"] += 1
                continue
            star = line.find(b"*")
            if star < 0:
                stats["missingChecksum"] += 1
                continue
            if star != end - 3 or not (is_hex(line[end - 2]) and is_hex(line[end - 1])):
                stats["malformed"] += 1
                continue
            checksum = 0
            for b in line[1:star]:
                checksum ^= b
            if checksum != int(line[end - 2 : end].decode("ascii"), 16):
                stats["badChecksum"] += 1
                continue
            if star < 2:
                stats["malformed"] += 1
                continue
            stats["sentences"] += 1
            events.append(("sentence", bytes(line[:star])))
            continue
        if byte == 0xB5 and i + 1 < n and data[i + 1] == 0x62:
            if i + 6 > n:
                return events, stats
            length = data[i + 4] | data[i + 5] << 8
            total = 6 + length + 2
            if total > MAX_BINARY:
                stats["badBinaryFrames"] += 1
                stats["garbageBytes"] += 1
                i += 1
                continue
            if i + total > n:
                return events, stats
            body = data[i + 2 : i + total - 2]
            a = b = 0
            for value in body:
                a = (a + value) & 0xFF
                b = (b + a) & 0xFF
            if bytes([a, b]) == data[i + total - 2 : i + total]:
                stats["ubxFrames"] += 1
                events.append(("ubx", data[i + 2], data[i + 3], bytes(data[i + 6 : i + total - 2])))
                i += total
            else:
                stats["badBinaryFrames"] += 1
                stats["garbageBytes"] += 1
                i += 1  # the rest is scanned again
            continue
        if byte == 0xA0 and i + 1 < n and data[i + 1] == 0xA2:
            if i + 4 > n:
                return events, stats
            length = data[i + 2] << 8 | data[i + 3]
            total = 4 + length + 4
            if total > MAX_BINARY:
                stats["badBinaryFrames"] += 1
                stats["garbageBytes"] += 1
                i += 1
                continue
            if i + total > n:
                return events, stats
            payload = data[i + 4 : i + total - 4]
            stated = data[i + total - 4] << 8 | data[i + total - 3]
            if (sum(payload) & 0x7FFF) == stated and data[i + total - 2 : i + total] == b"\xb0\xb3":
                stats["sirfFrames"] += 1
                i += total
            else:
                stats["badBinaryFrames"] += 1
                stats["garbageBytes"] += 1
                i += 1
            continue
        stats["garbageBytes"] += 1
        i += 1
    return events, stats


# MARK: - Reading sentences


def fields_of(sentence):
    return sentence[1:].decode("ascii").split(",")


def coordinate(text, hemisphere):
    if not text:
        return None
    dot = text.index(".")
    value = int(text[: dot - 2]) + float(text[dot - 2 :]) / 60.0
    return -value if hemisphere in ("S", "W") else value


def seconds_of_day(text):
    return int(text[0:2]) * 3600 + int(text[2:4]) * 60 + float(text[4:])


def time_text(text):
    return f"{text[0:2]}:{text[2:4]}:{text[4:]}"


def distance(a, b):
    """Metres between two (latitude, longitude) points, on a sphere: plenty for a second."""
    radius = 6371008.8
    p1, p2 = math.radians(a[0]), math.radians(b[0])
    dp = p2 - p1
    dl = math.radians(b[1] - a[1])
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * radius * math.asin(math.sqrt(h))


def wrap(angle):
    """`angle` in -180..<180 degrees."""
    return (angle + 180.0) % 360.0 - 180.0


def bearing(a, b):
    p1, p2 = math.radians(a[0]), math.radians(b[0])
    dl = math.radians(b[1] - a[1])
    y = math.sin(dl) * math.cos(p2)
    x = math.cos(p1) * math.sin(p2) - math.sin(p1) * math.cos(p2) * math.cos(dl)
    return math.degrees(math.atan2(y, x)) % 360.0


# MARK: - Checks


def check(path, truth_path):
    with open(path, "rb") as file:
        data = file.read()
    with open(truth_path, encoding="ascii") as file:
        truth = json.load(file)
    name = os.path.basename(path)[: -len(".nmea")]

    # Header.
    header = {}
    offset = 0
    while data.startswith(b"# ", offset):
        end = data.index(b"\n", offset)
        line = data[offset:end].decode("ascii")
        key, _, value = line[2:].partition(": ")
        header[key] = value
        offset = end + 1
    for key in REQUIRED_KEYS:
        expect(key in header, f"header lacks {key}")
    expect(header["Name"] == name, "header Name differs from the file name")
    expect(header["Generator"].endswith(" " + name), "Generator does not regenerate this file")
    expect(offset == truth["header_bytes"], f"header is {offset} bytes, truth says {truth['header_bytes']}")
    expect(int(header["Baud"]) == truth["baud"], "Baud differs from the truth file")
    body = data[offset:]
    expect(len(body) == truth["body_bytes"], "body length differs from the truth file")

    # Framing.
    events, stats = frame(body)
    whole_events, whole_stats = frame(data)
    expect(whole_stats["sentences"] == stats["sentences"], "the header hides or adds sentences")
    expect(whole_stats["garbageBytes"] == stats["garbageBytes"] + offset, "header bytes are not all garbage")
    expected = truth["expected_framer_statistics"]
    expect(set(expected) == set(stats), "expected_framer_statistics lacks a counter")
    for key, value in expected.items():
        expect(stats[key] == value, f"framer {key} = {stats[key]}, truth says {value}")
    corrupted = "corruption_events" in truth
    if not corrupted:
        rejects = {k: v for k, v in stats.items() if k not in ("sentences", "ubxFrames") and v}
        expect(not rejects, f"a clean fixture with rejects {rejects}")
    expect(stats["sentences"] == truth["sentences"], f"{stats['sentences']} sentences, truth says {truth['sentences']}")
    sentences = [e[1] for e in events if e[0] == "sentence"]
    by_type = {}
    for sentence in sentences:
        address = sentence[1 : sentence.index(b",")].decode("ascii")
        by_type[address] = by_type.get(address, 0) + 1
    expect(by_type == truth["sentences_by_type"], f"sentence types {by_type} differ from the truth file")

    # Line endings and lengths of every good line.
    limit = 128 if name.startswith("rtk") else 82
    longest = 0
    long_lines = 0
    for line in body.split(b"\n"):
        if not line.startswith(b"$") or b"*" not in line:
            continue
        star = line.rindex(b"*")
        if len(line) != star + 4 or not line.endswith(b"\r"):
            continue
        checksum = 0
        for b in line[1:star]:
            checksum ^= b
        if line[star + 1 : star + 3] != b"%02X" % checksum:
            continue
        length = len(line) + 1  # with CR LF
        longest = max(longest, length)
        if length > 82:
            long_lines += 1
        expect(length <= limit, f"a sentence of {length} bytes: {line[:40]!r}")
    expect(longest == truth["longest_sentence"], f"longest sentence {longest}, truth says {truth['longest_sentence']}")
    if name.startswith("rtk"):
        expect(long_lines == truth["longer_than_82"] and long_lines > 0, "RTK sentences over 82 characters missing")

    # Cycles. In a stream with corruption, cycles are counted by a sentence that is never
    # corrupted and whose time is checked alone.
    start_type = truth.get("cycle_marker", truth["cycle_starts_with"])
    marker_only = "cycle_marker" in truth
    cycles = []
    for sentence in sentences:
        fields = fields_of(sentence)
        if fields[0] == start_type:
            cycles.append([fields])
        elif cycles:
            cycles[-1].append(fields)
    expect(len(cycles) == truth["epochs"], f"{len(cycles)} cycles, truth says {truth['epochs']}")
    period = 1.0 / truth["rate_hz"]
    previous = None
    for cycle in cycles:
        kinds = ("GGA",) if marker_only else ("RMC", "GGA", "GLL")
        times = {f[1] if f[0][2:] in ("RMC", "GGA") else f[5] for f in cycle if f[0][2:] in kinds}
        times.discard("")
        expect(len(times) <= 1, f"one cycle holds several times: {sorted(times)}")
        if times:
            now = seconds_of_day(times.pop())
            if previous is not None:
                step = (now - previous) % 86400.0
                expect(abs(step - period) < 1e-6, f"cycle at {now} follows {previous}")
            previous = now

    # Dates carried across cycles, and the times and dates the truth file promises.
    date = None
    last_seconds = None
    cycle_dates = []
    for cycle in cycles:
        rmc = next((f for f in cycle if f[0][2:] == "RMC"), None)
        timed = next((f for f in cycle if f[0][2:] in ("RMC", "GGA") and f[1]), None)
        seconds = seconds_of_day(timed[1]) if timed else None
        if rmc and rmc[9]:
            day, month, year = int(rmc[9][0:2]), int(rmc[9][2:4]), 2000 + int(rmc[9][4:6])
            date = (year, month, day)
        elif date and seconds is not None and last_seconds is not None and seconds < last_seconds:
            import datetime

            date = (datetime.date(*date) + datetime.timedelta(days=1)).timetuple()[:3]
        if seconds is not None:
            last_seconds = seconds
        cycle_dates.append("%04d-%02d-%02d" % date if date and timed else None)
    if "dates" in truth:
        for index, entry in enumerate(truth["dates"]):
            expect(cycle_dates[index] == entry["date"], f"cycle {index}: carried date {cycle_dates[index]}")
    timed_cycles = [i for i, c in enumerate(cycles) if any(f[0][2:] in ("RMC", "GGA") and f[1] for f in c)]
    first_time = next(f[1] for f in cycles[timed_cycles[0]] if f[0][2:] in ("RMC", "GGA") and f[1])
    last_time = next(f[1] for f in cycles[timed_cycles[-1]] if f[0][2:] in ("RMC", "GGA") and f[1])
    expect(truth["first"]["time"] == time_text(first_time), "first time differs")
    expect(truth["last"]["time"] == time_text(last_time), "last time differs")
    expect(truth["last"]["date"] == cycle_dates[timed_cycles[-1]], "last date differs")

    # Sampled epochs: positions exactly as written.
    for sample in truth["samples"]:
        cycle = cycles[sample["epoch"]]
        gga = next(f for f in cycle if f[0][2:] == "GGA")
        expect(sum(1 for c in cycles for f in c if f[0][2:] == "GGA" and time_text(f[1]) == sample["time"]) == 1,
               f"epoch {sample['epoch']}: its time is not unique")
        expect(time_text(gga[1]) == sample["time"], f"epoch {sample['epoch']} time")
        expect((gga[2], gga[3], gga[4], gga[5]) == (
            sample["latitude"], sample["latitude_hemisphere"], sample["longitude"], sample["longitude_hemisphere"]
        ), f"epoch {sample['epoch']} position")
        expect(abs(coordinate(gga[2], gga[3]) - sample["latitude_degrees"]) < 1e-9, "latitude in degrees")
        expect(abs(coordinate(gga[4], gga[5]) - sample["longitude_degrees"]) < 1e-9, "longitude in degrees")
        expect(int(gga[6]) == sample["quality"], f"epoch {sample['epoch']} quality")
        if sample["altitude_msl"] is not None:
            expect(float(gga[9]) == sample["altitude_msl"], f"epoch {sample['epoch']} altitude")

    # Speed and course against the distance between successive positions.
    fixes = []
    for cycle in cycles:
        gga = next((f for f in cycle if f[0][2:] == "GGA"), None)
        rmc = next((f for f in cycle if f[0][2:] == "RMC" and f[2] == "A"), None)
        vtg = next((f for f in cycle if f[0][2:] == "VTG" and f[1]), None)
        if gga and gga[2] and gga[6] != "0":
            speed = course = None
            if rmc:
                speed, course = float(rmc[7]) * 1852 / 3600, float(rmc[8])
            elif vtg:
                speed, course = float(vtg[5]) * 1852 / 3600, float(vtg[1])
            fixes.append((seconds_of_day(gga[1]), (coordinate(gga[2], gga[3]), coordinate(gga[4], gga[5])), speed, course))
        else:
            fixes.append(None)
    speed_errors = []
    course_errors = []
    for a, b in zip(fixes, fixes[1:]):
        if not a or not b or a[2] is None or b[2] is None:
            continue
        dt = (b[0] - a[0]) % 86400.0
        moved = distance(a[1], b[1]) / dt
        reported = (a[2] + b[2]) / 2
        speed_errors.append(abs(moved - reported))
        if reported > 3.0:
            mean_course = a[3] + wrap(b[3] - a[3]) / 2
            course_errors.append(abs(wrap(bearing(a[1], b[1]) - mean_course)))
    speed_summary = ""
    if speed_errors:
        # The median: fixes jump when an RTK solution changes or a first fix settles.
        speed_errors.sort()
        median = speed_errors[len(speed_errors) // 2]
        tolerance = 0.05 if name.startswith("rtk") else (1.0 if name.startswith("mtk") else 0.5)
        expect(median < tolerance, f"speed disagrees with positions by {median:.2f} m/s (median)")
        speed_summary = f", speed vs positions median {median:.3f} m/s"
        if course_errors:
            course_errors.sort()
            median = course_errors[len(course_errors) // 2]
            expect(median < 6.0, f"course disagrees with positions by {median:.1f} degrees (median)")
            speed_summary += f", course median {median:.1f} deg"

    # Bandwidth: one cycle's bytes must go out within one period at the stated baud.
    budget = int(header["Baud"]) / 10 * period
    cycle_bytes = []
    start_marker = b"$" + start_type.encode("ascii") + b","
    positions = []
    search = 0
    while True:
        found = body.find(start_marker, search)
        if found < 0:
            break
        positions.append(found)
        search = found + 1
    for a, b in zip(positions, positions[1:]):
        cycle_bytes.append(b - a)
    busiest = max(cycle_bytes)
    expect(busiest <= budget, f"a cycle of {busiest} bytes exceeds {budget:.0f} bytes per period")
    if "max_bytes_per_second" in truth:
        expect(busiest <= truth["bytes_per_second_limit"], "SiRF second over 480 bytes")

    ubx = sum(1 for e in events if e[0] == "ubx")
    return (
        f"{name}: {len(data)} bytes, {stats['sentences']} sentences, {len(cycles)} cycles, "
        f"{ubx} UBX frames, longest {longest}, busiest cycle {busiest}/{budget:.0f} bytes{speed_summary}"
    )


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
    names = sorted(f for f in os.listdir(directory) if f.endswith(".nmea"))
    if not names:
        print(f"check-fixtures: no fixtures in {directory}", file=sys.stderr)
        return 1
    failed = 0
    for file_name in names:
        path = os.path.join(directory, file_name)
        truth_path = path[: -len(".nmea")] + ".truth.json"
        try:
            summary = check(path, truth_path)
        except (Failure, OSError, KeyError, ValueError, StopIteration) as error:
            print(f"check-fixtures: {file_name}: {type(error).__name__}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
