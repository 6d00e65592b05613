#!/usr/bin/env python3
"""Checks each golden file (fixtures/NAME.golden.jsonl, `serialgps decode --json` output)
against the fixture's truth file (fixtures/NAME.truth.json), which the generator wrote and
which shares no code with the decoder.

What it checks, per fixture: one TPV per epoch and a SKY after each; the fix modes per epoch
(epochs_by_mode, first_2d_epoch, first_3d_epoch); the first and last timed epoch's time and
date; the date of every epoch where the truth lists them; every sampled epoch's time, date,
mode, position (to the golden's 9 decimals), altitude, speed, course, satellites used and
HDOP; RTK quality transitions as gpsd's status; a derived climb where the vehicle climbs.

Where the recording carries a valid UBX NAV-PVT for a sampled epoch, the decoder's fix holds
that binary solution (it ranks above NMEA: docs/ubx.md): the epoch's position, altitude,
speed and course are then held to the NAV-PVT's own integers, read here from the recording
with their checksum checked, and the NAV-PVT to the truth's NMEA within the rounding of the
NMEA fields (which the generator wrote from the same solution).

Usage: scripts/check-goldens.py [FIXTURES_DIRECTORY]
Exit status 0 when every golden agrees with its truth, 1 otherwise (each difference printed).
"""

import json
import os
import struct
import sys

KNOT = 1852.0 / 3600.0  # metres per second
# gpsd's status for GGA quality: 2 DGPS, 3 RTK fixed, 4 RTK float; plain GPS is omitted.
STATUS_FOR_QUALITY = {1: None, 2: 2, 4: 3, 5: 4}


def iso_time(date, time):
    """The TPV time for a truth date and `hh:mm:ss.ff…` time: milliseconds, Z."""
    hms, _, fraction = time.partition(".")
    milliseconds = (fraction + "000")[:3]
    return f"{date}T{hms}.{milliseconds}Z"


def nav_pvts(path):
    """The valid UBX NAV-PVT frames of a recording, by UTC time of day `hh:mm:ss`: latitude,
    longitude (degrees), altMSL (m), ground speed (m/s) and heading of motion (degrees)."""
    with open(path, "rb") as file:
        data = file.read()
    found = {}
    start = data.find(b"\xb5\x62\x01\x07")
    while start >= 0:
        if start + 6 <= len(data):
            length = data[start + 4] | data[start + 5] << 8
            end = start + 6 + length + 2
            if length >= 84 and end <= len(data):
                a = b = 0
                for byte in data[start + 2 : end - 2]:
                    a = (a + byte) & 0xFF
                    b = (b + a) & 0xFF
                if a == data[end - 2] and b == data[end - 1]:
                    p = data[start + 6 : end - 2]
                    hour, minute, second = p[8], p[9], p[10]
                    lon, lat, _, msl = struct.unpack_from("<iiii", p, 24)
                    speed, heading = struct.unpack_from("<ii", p, 60)
                    found[f"{hour:02d}:{minute:02d}:{second:02d}"] = {
                        "lat": lat * 1e-7, "lon": lon * 1e-7, "altMSL": msl / 1000,
                        "speed": speed / 1000, "track": heading * 1e-5,
                    }
        start = data.find(b"\xb5\x62\x01\x07", start + 1)
    return found


def check(directory, name):
    problems = []

    def expect(condition, message):
        if not condition:
            problems.append(message)

    with open(os.path.join(directory, name + ".truth.json")) as file:
        truth = json.load(file)
    with open(os.path.join(directory, name + ".golden.jsonl")) as file:
        reports = [json.loads(line) for line in file if line.strip()]

    # One TPV per epoch, each followed by at most one SKY.
    epochs = []
    for report in reports:
        if report["class"] == "TPV":
            epochs.append({"tpv": report, "sky": None})
        elif report["class"] == "SKY":
            if not epochs or epochs[-1]["sky"] is not None:
                problems.append("a SKY report without a TPV before it")
                continue
            epochs[-1]["sky"] = report
        else:
            problems.append(f"unexpected report class {report['class']}")
    expect(len(epochs) == truth["epochs"], f"{len(epochs)} TPVs, truth has {truth['epochs']} epochs")

    modes = {"no_fix": 0, "2d": 0, "3d": 0}
    for epoch in epochs:
        modes[{1: "no_fix", 2: "2d", 3: "3d"}[epoch["tpv"]["mode"]]] += 1
    expect(modes == truth["epochs_by_mode"], f"modes {modes}, truth {truth['epochs_by_mode']}")
    for key, mode in (("first_2d_epoch", 2), ("first_3d_epoch", 3)):
        if key in truth:
            first = next((i for i, e in enumerate(epochs) if e["tpv"]["mode"] == mode), None)
            expect(first == truth[key], f"{key}: golden {first}, truth {truth[key]}")

    timed = [e for e in epochs if "time" in e["tpv"]]
    for which, epoch in (("first", timed[0] if timed else None), ("last", timed[-1] if timed else None)):
        expected = truth[which]
        if expected["date"] is None:
            continue
        got = epoch["tpv"].get("time") if epoch else None
        expect(got == iso_time(expected["date"], expected["time"]),
               f"{which} timed epoch at {got}, truth {iso_time(expected['date'], expected['time'])}")

    if "dates" in truth:
        # The date of every epoch, also those whose own sentences carry none (carried).
        for index, entry in enumerate(truth["dates"]):
            if index < len(epochs) and entry["date"] is not None:
                want = iso_time(entry["date"], entry["time"])
                got = epochs[index]["tpv"].get("time")
                expect(got == want, f"epoch {index}: time {got}, truth {want}")

    if "date_known_from_epoch" in truth:
        first_dated = next((i for i, e in enumerate(epochs) if "time" in e["tpv"]), None)
        expect(first_dated == truth["date_known_from_epoch"],
               f"first epoch with a date (a TPV time): {first_dated}, truth "
               f"{truth['date_known_from_epoch']}")

    binary = nav_pvts(os.path.join(directory, truth["file"]))
    for sample in truth["samples"]:
        index = sample["epoch"]
        if index >= len(epochs):
            problems.append(f"sample epoch {index} beyond the golden's {len(epochs)} epochs")
            continue
        tpv, sky = epochs[index]["tpv"], epochs[index]["sky"]
        where = f"epoch {index} ({sample['time']})"
        if sample["date"]:
            expect(tpv.get("time") == iso_time(sample["date"], sample["time"]),
                   f"{where}: time {tpv.get('time')}")
        expect(tpv["mode"] == sample["mode"], f"{where}: mode {tpv['mode']}, truth {sample['mode']}")
        pvt = binary.get(sample["time"].partition(".")[0])
        if pvt is not None:
            # Both round one solution: the NMEA to 5 decimals of minutes, decimetres, 3
            # decimals of knots and 2 of degrees; the NAV-PVT to 1e-7°, mm, mm/s and 1e-5°.
            # They are at most the two half units apart.
            expect(abs(pvt["lat"] - sample["latitude_degrees"]) <= 0.5e-5 / 60 + 0.5e-7 + 1e-12
                   and abs(pvt["lon"] - sample["longitude_degrees"]) <= 0.5e-5 / 60 + 0.5e-7 + 1e-12
                   and abs(pvt["altMSL"] - sample["altitude_msl"]) <= 0.05 + 0.0005 + 1e-9
                   and abs(pvt["speed"] - sample["speed_knots"] * KNOT) <= 0.0005 * KNOT + 0.0005 + 1e-9
                   and abs(pvt["track"] - sample["course"]) <= 0.005 + 0.5e-5 + 1e-9,
                   f"{where}: the recording's NAV-PVT {pvt} is not the solution its NMEA rounds")
            for key, tolerance in (("lat", 0.6e-9), ("lon", 0.6e-9), ("altMSL", 1e-4),
                                   ("speed", 0.0005 + 1e-9), ("track", 1e-4)):
                expect(abs(tpv.get(key, -1e9) - pvt[key]) <= tolerance,
                       f"{where}: {key} {tpv.get(key)}, the recording's NAV-PVT {pvt[key]}")
            sample = dict(sample, latitude_degrees=pvt["lat"], longitude_degrees=pvt["lon"],
                          altitude_msl=pvt["altMSL"], speed_knots=pvt["speed"] / KNOT,
                          course=pvt["track"])
        expect(abs(tpv.get("lat", 999) - sample["latitude_degrees"]) < 1e-9 * 0.6 + 1e-10,
               f"{where}: lat {tpv.get('lat')}, truth {sample['latitude_degrees']}")
        expect(abs(tpv.get("lon", 999) - sample["longitude_degrees"]) < 1e-9 * 0.6 + 1e-10,
               f"{where}: lon {tpv.get('lon')}, truth {sample['longitude_degrees']}")
        if sample["altitude_msl"] is None:
            expect("altMSL" not in tpv, f"{where}: altMSL {tpv.get('altMSL')}, truth none")
        else:
            expect(abs(tpv.get("altMSL", -1e9) - sample["altitude_msl"]) < 1e-4,
                   f"{where}: altMSL {tpv.get('altMSL')}, truth {sample['altitude_msl']}")
        expect(abs(tpv.get("speed", -1) - sample["speed_knots"] * KNOT) <= 0.0005 + 1e-9,
               f"{where}: speed {tpv.get('speed')} m/s, truth {sample['speed_knots']} kn")
        if sample["speed_knots"] > 0:
            expect(abs(tpv.get("track", -1) - sample["course"]) < 1e-4,
                   f"{where}: track {tpv.get('track')}, truth {sample['course']}")
        spoiled = sample.get("corrupted_in_cycle", [])
        # A spoiled GSA loses its satellites: the decoder can count only the others.
        if not any(kind.endswith("GSA") for kind in spoiled):
            expect(sky is not None and sky.get("uSat") == sample["satellites_used"],
                   f"{where}: uSat {sky and sky.get('uSat')}, truth {sample['satellites_used']}")
        expect(sky is not None and abs(sky.get("hdop", -1) - sample["hdop"]) < 1e-9,
               f"{where}: hdop {sky and sky.get('hdop')}, truth {sample['hdop']}")
        if "satellites_in_view" in sample and sky is not None and "nSat" in sky:
            expect(sky["nSat"] >= sample["satellites_in_view"],
                   f"{where}: nSat {sky['nSat']}, truth {sample['satellites_in_view']} in view")
        if "quality" in sample:
            expect(tpv.get("status") == STATUS_FOR_QUALITY.get(sample["quality"]),
                   f"{where}: status {tpv.get('status')}, quality {sample['quality']}")

    for transition in truth.get("quality_transitions", []):
        index = transition["epoch"]
        status = STATUS_FOR_QUALITY.get(transition["quality"])
        got = epochs[index]["tpv"].get("status") if index < len(epochs) else "missing"
        expect(got == status, f"quality transition at epoch {index}: status {got}, want {status}")

    if truth.get("climb_nonzero_epochs"):
        # The truth counts the vehicle's climb; the decoder derives it from altitudes rounded
        # to 0.1 m, so it only has to be there, not in the same epochs.
        nonzero = sum(1 for e in epochs if e["tpv"].get("climb", 0) != 0)
        expect(nonzero > 0, "no epoch with a non-zero climb, though the vehicle climbs")
    return problems


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "fixtures"
    names = sorted(f[: -len(".truth.json")] for f in os.listdir(directory) if f.endswith(".truth.json"))
    failed = False
    for name in names:
        if not os.path.exists(os.path.join(directory, name + ".golden.jsonl")):
            print(f"goldens: {name}: no golden file; run make goldens", file=sys.stderr)
            failed = True
            continue
        problems = check(directory, name)
        if problems:
            failed = True
            for problem in problems:
                print(f"goldens: {name}: {problem}", file=sys.stderr)
        else:
            print(f"goldens: {name}: agrees with its truth file")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
