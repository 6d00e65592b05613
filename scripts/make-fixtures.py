#!/usr/bin/env python3
"""Writes the receiver recordings in fixtures/ and their ground-truth sidecars.

Each fixture is simulated: a vehicle (or a receiver on a window sill) moves along a planned
path, a sky of satellites drifts overhead, and a model of one receiver family writes what
that receiver would send, byte for byte, with its own sentence order, field widths and
quirks. Everything random comes from one seeded generator per fixture, so the same seed
gives the same bytes. Standard library only.

    scripts/make-fixtures.py                      # every fixture, into fixtures/
    scripts/make-fixtures.py --out /tmp/f sirf-4800
    scripts/make-fixtures.py --list

Each `fixtures/NAME.nmea` starts with `# Key: value` header lines (LF endings) followed by
the receiver's bytes (CR LF endings); `fixtures/NAME.truth.json` holds what a decoder should
find in it. docs/fixtures.md describes every fixture; scripts/check-fixtures.py checks them
without sharing any code with this file.
"""

import argparse
import datetime
import json
import math
import os
import random
import struct
import sys

DEFAULT_SEED = 1
GENERATOR = "scripts/make-fixtures.py"

# GPS time ran ahead of UTC by 18 s from 2017 on; no leap second has been announced since.
GPS_LEAP_SECONDS = 18
GPS_EPOCH = datetime.date(1980, 1, 6)

KNOTS_PER_MPS = 3600.0 / 1852.0

# MARK: - Determinism


class Rand:
    """A seeded source of randomness that uses only `random.random()`.

    The helpers of `random.Random` (`choice`, `gauss`, `shuffle` …) have changed their
    algorithms between Python versions; `random()` after seeding with a string has not.
    """

    def __init__(self, seed, name):
        self._random = random.Random(f"serialgps-fixtures/{seed}/{name}")

    def unit(self):
        return self._random.random()

    def uniform(self, low, high):
        return low + (high - low) * self._random.random()

    def integer(self, low, high):
        """An integer in low...high, both included."""
        return low + min(int(self._random.random() * (high - low + 1)), high - low)

    def chance(self, probability):
        return self._random.random() < probability

    def gauss(self, sigma=1.0):
        u1 = 1.0 - self._random.random()  # (0, 1]
        u2 = self._random.random()
        return sigma * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def choice(self, items):
        return items[self.integer(0, len(items) - 1)]

    def sample(self, items, count):
        pool = list(items)
        for index in range(count):
            other = self.integer(index, len(pool) - 1)
            pool[index], pool[other] = pool[other], pool[index]
        return pool[:count]


class Wander:
    """A first-order Gauss-Markov process: noise that drifts instead of jumping."""

    def __init__(self, rand, sigma, tau, start=None):
        self.rand = rand
        self.sigma = sigma
        self.tau = tau
        self.value = rand.gauss(sigma) if start is None else start

    def step(self, dt):
        a = math.exp(-dt / self.tau)
        self.value = a * self.value + math.sqrt(1.0 - a * a) * self.rand.gauss(self.sigma)
        return self.value


# MARK: - Text of sentences


def nmea(body):
    """`$body*hh` with CR LF; `body` is everything between `$` and `*`."""
    raw = body.encode("ascii")
    checksum = 0
    for byte in raw:
        checksum ^= byte
    return b"$" + raw + b"*%02X\r\n" % checksum


def fixed(value, decimals):
    """`value` with `decimals` digits, never `-0.0`."""
    text = f"{value:.{decimals}f}"
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return text


def degrees_minutes(value, decimals, is_longitude):
    """Latitude `ddmm.mmm…` or longitude `dddmm.mmm…` and its hemisphere letter."""
    if is_longitude:
        hemisphere = "E" if value >= 0 else "W"
    else:
        hemisphere = "N" if value >= 0 else "S"
    scale = 10**decimals
    total = int(round(abs(value) * 60.0 * scale))
    whole_degrees, remainder = divmod(total, 60 * scale)
    minutes, fraction = divmod(remainder, scale)
    width = 3 if is_longitude else 2
    return f"{whole_degrees:0{width}d}{minutes:02d}.{fraction:0{decimals}d}", hemisphere


def decimal_degrees(text, hemisphere):
    """The exact value of a `ddmm.mmm…` field, as a float."""
    dot = text.index(".")
    whole_degrees = int(text[: dot - 2])
    minutes = int(text[dot - 2 : dot]) + int(text[dot + 1 :]) / 10 ** (len(text) - dot - 1)
    value = whole_degrees + minutes / 60.0
    return -value if hemisphere in ("S", "W") else value


def time_field(moment, decimals):
    """`hhmmss` with `decimals` digits of seconds, from a datetime."""
    text = moment.strftime("%H%M%S")
    if decimals:
        fraction = moment.microsecond // 10 ** (6 - decimals)
        text += "." + f"{fraction:0{decimals}d}"
    return text


def date_field(moment):
    return moment.strftime("%d%m%y")


def iso_time(moment, decimals):
    text = moment.strftime("%H:%M:%S")
    if decimals:
        text += "." + f"{moment.microsecond // 10 ** (6 - decimals):0{decimals}d}"
    return text


# MARK: - Motion


WGS84_A = 6378137.0
WGS84_E2 = 6.69437999014e-3


def radii(latitude):
    """Meridian and prime-vertical radii of curvature at `latitude`, metres."""
    s = math.sin(math.radians(latitude))
    w = math.sqrt(1.0 - WGS84_E2 * s * s)
    return WGS84_A * (1.0 - WGS84_E2) / (w * w * w), WGS84_A / w


def displaced(latitude, longitude, north, east):
    meridian, normal = radii(latitude)
    return (
        latitude + math.degrees(north / meridian),
        longitude + math.degrees(east / (normal * math.cos(math.radians(latitude)))),
    )


class Vehicle:
    """A point moving over the ellipsoid with bounded acceleration.

    A plan is a list of legs `(seconds, target speed m/s, turn rate °/s, grade)`; the speed
    eases towards each target, the heading turns at the given rate, and the grade (rise over
    run) lifts or lowers the altitude with the distance travelled.
    """

    def __init__(self, latitude, longitude, altitude, heading, plan, accel=1.6, brake=2.6):
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.heading = heading
        self.speed = 0.0
        self.climb = 0.0
        self.plan = plan
        self.accel = accel
        self.brake = brake
        self.time = 0.0
        self.distance = 0.0

    def leg(self, time):
        elapsed = 0.0
        for seconds, speed, turn, grade in self.plan:
            elapsed += seconds
            if time < elapsed:
                return speed, turn, grade
        return self.plan[-1][1:]

    def advance(self, seconds, step=0.05):
        steps = max(1, int(round(seconds / step)))
        h = seconds / steps
        for _ in range(steps):
            target, turn, grade = self.leg(self.time)
            change = target - self.speed
            limit = (self.accel if change > 0 else self.brake) * h
            self.speed += max(-limit, min(limit, change))
            if self.speed > 0.3:
                self.heading = (self.heading + turn * h) % 360.0
            run = self.speed * h
            self.latitude, self.longitude = displaced(
                self.latitude,
                self.longitude,
                run * math.cos(math.radians(self.heading)),
                run * math.sin(math.radians(self.heading)),
            )
            self.altitude += run * grade
            self.climb = self.speed * grade
            self.distance += run
            self.time += h


# MARK: - Sky


class Satellite:
    """One satellite: where it is, how it drifts, how strong it is received."""

    def __init__(self, rand, system, number, elevation, azimuth, rise=None, drift=None, strength=0.0):
        self.system = system  # "GP", "SB", "GL", "GA", "GB"
        self.number = number  # as the receiver writes it
        self.elevation0 = elevation
        self.azimuth0 = azimuth
        # Degrees per second; GNSS satellites move about half a degree a minute.
        self.rise = rand.uniform(-0.6, 0.6) / 60.0 if rise is None else rise / 60.0
        self.drift = rand.uniform(-0.5, 0.5) / 60.0 if drift is None else drift / 60.0
        self.strength = strength + rand.gauss(1.5)
        self.fade = Wander(rand, 1.3, 8.0)
        if system == "SB":
            self.rise = 0.0
            self.drift = 0.0

    def elevation(self, t):
        return self.elevation0 + self.rise * t

    def azimuth(self, t):
        return (self.azimuth0 + self.drift * t) % 360.0

    def cno(self, t, attenuation=0.0):
        """Carrier-to-noise density, dB-Hz, or None when the receiver cannot track it."""
        elevation = self.elevation(t)
        if elevation < 0.0:
            return None
        value = 26.0 + 21.0 * math.sqrt(math.sin(math.radians(max(elevation, 0.5))))
        value += self.strength + self.fade.value - attenuation
        value = int(round(min(value, 52.0)))
        return value if value >= 19 else None


def random_sky(rand, system, numbers, low=12.0, high=82.0):
    satellites = []
    for index, number in enumerate(numbers):
        # Spread the azimuths so that the geometry, and so the DOPs, stay sensible.
        azimuth = (index * 360.0 / len(numbers) + rand.uniform(-20.0, 20.0) + rand.uniform(0, 360)) % 360.0
        elevation = rand.uniform(low, high)
        satellites.append(Satellite(rand, system, number, elevation, azimuth))
    return satellites


def dilution(used):
    """PDOP, HDOP, VDOP of the satellites `used` ((system, elevation, azimuth) triples).

    One receiver clock per satellite system, as multi-GNSS receivers solve for; `None` when
    the geometry cannot be solved.
    """
    systems = sorted({system for system, _, _ in used})
    unknowns = 3 + len(systems)
    if len(used) < unknowns:
        return None
    rows = []
    for system, elevation, azimuth in used:
        e = math.radians(elevation)
        a = math.radians(azimuth)
        row = [-math.cos(e) * math.sin(a), -math.cos(e) * math.cos(a), -math.sin(e)]
        row += [1.0 if system == other else 0.0 for other in systems]
        rows.append(row)
    normal = [[sum(r[i] * r[j] for r in rows) for j in range(unknowns)] for i in range(unknowns)]
    inverse = invert(normal)
    if inverse is None:
        return None
    hdop = math.sqrt(inverse[0][0] + inverse[1][1])
    vdop = math.sqrt(inverse[2][2])
    pdop = math.sqrt(inverse[0][0] + inverse[1][1] + inverse[2][2])
    return pdop, hdop, vdop


def dilution_2d(used):
    """HDOP of a 2D fix (altitude held): east, north and one clock."""
    if len(used) < 3:
        return None
    rows = []
    for _, elevation, azimuth in used:
        e = math.radians(elevation)
        a = math.radians(azimuth)
        rows.append([-math.cos(e) * math.sin(a), -math.cos(e) * math.cos(a), 1.0])
    normal = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    inverse = invert(normal)
    if inverse is None:
        return None
    return math.sqrt(inverse[0][0] + inverse[1][1])


def invert(matrix):
    size = len(matrix)
    work = [list(row) + [1.0 if i == j else 0.0 for j in range(size)] for i, row in enumerate(matrix)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(work[r][column]))
        if abs(work[pivot][column]) < 1e-12:
            return None
        work[column], work[pivot] = work[pivot], work[column]
        factor = work[column][column]
        work[column] = [value / factor for value in work[column]]
        for row in range(size):
            if row != column and work[row][column] != 0.0:
                scale = work[row][column]
                work[row] = [a - scale * b for a, b in zip(work[row], work[column])]
    return [row[size:] for row in work]


def gsv(talker, satellites, signal_id=None, count_width=2):
    """GSV sentences for `satellites` ((number, elevation, azimuth, cno) with `None` for an
    unknown value), four to a sentence."""
    sentences = []
    total = len(satellites)
    messages = max(1, (total + 3) // 4)
    for message in range(messages):
        fields = [talker + "GSV", str(messages), str(message + 1), f"{total:0{count_width}d}"]
        for number, elevation, azimuth, cno in satellites[message * 4 : message * 4 + 4]:
            fields.append(f"{number:02d}")
            fields.append("" if elevation is None else f"{elevation:02d}")
            fields.append("" if azimuth is None else f"{azimuth:03d}")
            fields.append("" if cno is None else f"{cno:02d}")
        if signal_id is not None:
            fields.append(str(signal_id))
        sentences.append(nmea(",".join(fields)))
    return sentences


def gsa_fields(numbers):
    """The twelve satellite fields of a GSA."""
    numbers = [f"{n:02d}" for n in numbers[:12]]
    return numbers + [""] * (12 - len(numbers))


# MARK: - Recording and truth


class Recording:
    """The bytes of one fixture as they are written, and what is true about them."""

    def __init__(self, name, seed):
        self.name = name
        self.seed = seed
        self.body = bytearray()
        self.epochs = []  # one dict per measurement cycle
        self.sentence_counts = {}
        self.extra = {}

    def sentence(self, data):
        """Appends one well-formed sentence and counts it."""
        self.body += data
        address = data[1 : data.index(b",")].decode("ascii")
        self.sentence_counts[address] = self.sentence_counts.get(address, 0) + 1

    def sentences(self, items):
        for item in items:
            self.sentence(item)

    def raw(self, data):
        self.body += data

    def header(self, chipset, date, baud, description):
        for forbidden in ("Serial:", "Date:", "Delay-Cookie:", "Transport:"):
            # gpsfake reads these words in comments as instructions.
            assert forbidden not in description, forbidden
        lines = [
            ("Name", self.name),
            ("Chipset", chipset),
            ("Date", date.isoformat()),
            ("Baud", str(baud)),
            ("Description", description),
            ("Generator", f"{GENERATOR} --seed {self.seed} {self.name}"),
        ]
        text = "".join(f"# {key}: {value}\n" for key, value in lines)
        assert all(32 <= ord(c) < 127 or c == "\n" for c in text) and "$" not in text and "!" not in text
        return text.encode("ascii")


def epoch_truth(moment, decimals, mode, quality, position, altitude, speed_knots, course,
                used, satellites_used_field, hdop, date_known=True, time_known=True, extra=None):
    """What one measurement cycle says, as written in the sentences."""
    entry = {
        "time": iso_time(moment, decimals) if time_known else None,
        "date": moment.date().isoformat() if (date_known and time_known) else None,
        "mode": mode,
        "quality": quality,
    }
    if position is not None:
        (lat, ns), (lon, ew) = position
        entry["latitude"] = lat
        entry["latitude_hemisphere"] = ns
        entry["longitude"] = lon
        entry["longitude_hemisphere"] = ew
        entry["latitude_degrees"] = round(decimal_degrees(lat, ns), 10)
        entry["longitude_degrees"] = round(decimal_degrees(lon, ew), 10)
    else:
        entry["latitude"] = None
        entry["longitude"] = None
    entry["altitude_msl"] = altitude
    entry["speed_knots"] = speed_knots
    entry["course"] = course
    entry["satellites_used"] = used
    entry["gga_satellites"] = satellites_used_field
    entry["hdop"] = hdop
    if extra:
        entry.update(extra)
    return entry


def valid_lines(body):
    """The lines of `body` that are whole sentences with a good checksum (without LF)."""
    lines = []
    for line in body.split(b"\n"):
        if not (line.startswith(b"$") and line.endswith(b"\r") and line[-4:-3] == b"*"):
            continue
        checksum = 0
        for byte in line[1:-4]:
            checksum ^= byte
        if b"%02X" % checksum == line[-3:-1]:
            lines.append(line)
    return lines


def summarise(recording, cycle_start, rate_hz, chipset, baud, header):
    epochs = recording.epochs
    modes = {"no_fix": 0, "2d": 0, "3d": 0}
    for epoch in epochs:
        modes[{1: "no_fix", 2: "2d", 3: "3d"}[epoch["mode"]]] += 1
    timed = [e for e in epochs if e["time"] is not None]
    # A handful of epochs in full: the first fix, two in between, the last.
    fixed_indices = [i for i, e in enumerate(epochs) if e["mode"] >= 2]
    picks = []
    if fixed_indices:
        first, last = fixed_indices[0], fixed_indices[-1]
        picks = sorted({first, first + (last - first) // 3, first + 2 * (last - first) // 3, last})
    samples = []
    for index in picks:
        sample = {"epoch": index}
        sample.update(epochs[index])
        samples.append(sample)
    lines = valid_lines(recording.body)
    truth = {
        "name": recording.name,
        "file": recording.name + ".nmea",
        "chipset": chipset,
        "baud": baud,
        "rate_hz": rate_hz,
        "seed": recording.seed,
        "header_bytes": len(header),
        "body_bytes": len(recording.body),
        "cycle_starts_with": cycle_start,
        "epochs": len(epochs),
        "epochs_by_mode": modes,
        "first": {"time": timed[0]["time"], "date": timed[0]["date"]} if timed else None,
        "last": {"time": timed[-1]["time"], "date": timed[-1]["date"]} if timed else None,
        "sentences": sum(recording.sentence_counts.values()),
        "sentences_by_type": dict(sorted(recording.sentence_counts.items())),
        "longest_sentence": max(len(line) + 1 for line in lines),
        "samples": samples,
    }
    truth.update(recording.extra)
    truth.setdefault(
        "expected_framer_statistics",
        {
            "sentences": truth["sentences"],
            "badChecksum": 0,
            "missingChecksum": 0,
            "tooLong": 0,
            "malformed": 0,
            "ubxFrames": 0,
            "sirfFrames": 0,
            "badBinaryFrames": 0,
            "garbageBytes": 0,
        },
    )
    return truth


# MARK: - Shared receiver behaviour


class ReceiverError:
    """The receiver's position error: a slow wander in metres north, east and up."""

    def __init__(self, rand, horizontal, vertical, tau):
        self.north = Wander(rand, horizontal, tau)
        self.east = Wander(rand, horizontal, tau)
        self.up = Wander(rand, vertical, tau)

    def step(self, dt):
        self.north.step(dt)
        self.east.step(dt)
        self.up.step(dt)

    def apply(self, vehicle, scale=1.0):
        latitude, longitude = displaced(
            vehicle.latitude, vehicle.longitude, self.north.value * scale, self.east.value * scale
        )
        return latitude, longitude, vehicle.altitude + self.up.value * scale


def reported_velocity(rand, vehicle, last_course, speed_noise=0.03, course_noise=0.4):
    """Speed (knots) and course (degrees) as a receiver reports them: Doppler-smooth, with
    the course held while standing still."""
    speed = max(0.0, vehicle.speed + rand.gauss(speed_noise))
    if vehicle.speed < 0.4:
        speed = abs(rand.gauss(speed_noise))
        course = last_course
    else:
        course = (vehicle.heading + rand.gauss(course_noise)) % 360.0
    return speed * KNOTS_PER_MPS, course


# MARK: - 1. u-blox M8 drive


def ublox_m8_drive(seed):
    name = "ublox-m8-drive"
    rand = Rand(seed, name)
    recording = Recording(name, seed)
    start = datetime.datetime(2026, 3, 14, 7, 41, 5)
    epochs = 300
    hot_start_epochs = 2
    separation = 47.6

    plan = [
        (10, 0.0, 0.0, 0.0),  # parked, engine running
        (14, 8.5, 0.0, 0.0),  # pulls out
        (12, 8.0, -7.5, 0.0),  # left at a junction
        (40, 14.0, 0.0, 0.045),  # up the hill through the village
        (20, 14.0, 2.0, 0.06),  # bending right, steeper
        (30, 22.0, 0.0, 0.0),  # over the top, country road
        (25, 22.0, -1.6, -0.03),  # long left curve, downhill
        (10, 5.0, 0.0, -0.02),  # slows for a junction
        (10, 5.0, 9.0, 0.0),  # right turn
        (40, 19.0, 0.0, -0.05),  # down into the valley
        (30, 19.0, 0.6, 0.02),
        (22, 0.0, 0.0, 0.0),  # brakes for a red light and waits
        (40, 12.0, 0.0, 0.01),  # moves off again
    ]
    vehicle = Vehicle(47.287120, 8.564310, 438.2, 62.0, plan)
    error = ReceiverError(rand, 0.9, 1.6, 90.0)

    gps = random_sky(rand, "GP", [2, 5, 6, 12, 13, 17, 19, 25, 29])
    gps.append(Satellite(rand, "GP", 15, -1.4, 101.0, rise=0.65, drift=0.2))  # rises
    gps.append(Satellite(rand, "GP", 24, 1.2, 318.0, rise=-0.55, drift=-0.3))  # sets
    sbas = [
        Satellite(rand, "SB", 36, 32.0, 196.0, strength=-3.0),  # EGNOS PRN 123
        Satellite(rand, "SB", 49, 30.0, 171.0, strength=-3.0),  # EGNOS PRN 136
    ]
    glonass = random_sky(rand, "GL", [65, 66, 72, 73, 74, 81, 82])
    glonass.append(Satellite(rand, "GL", 88, 0.9, 27.0, rise=-0.45, drift=0.25))
    galileo = random_sky(rand, "GA", [1, 3, 5, 9, 13, 21, 26, 31])
    beidou = random_sky(rand, "GB", [6, 9, 11, 12, 16, 22, 34], low=10.0, high=70.0)
    beidou.append(Satellite(rand, "GB", 19, -2.0, 130.0, rise=0.6, drift=0.1))
    systems = [("GP", 1, 1, gps + sbas), ("GL", 2, 1, glonass), ("GA", 3, 7, galileo), ("GB", 4, 1, beidou)]

    def attenuation(t, satellite):
        if 148 <= t <= 150:  # under a motorway bridge
            return 14.0
        if 60 <= t < 100 and satellite.elevation(t) < 35:  # trees along the hill road
            return 6.0
        return 0.0

    banner = [
        "u-blox ag - www.u-blox.com",
        "HW UBX-M8030 00080000",
        "ROM CORE 3.01 (107888)",
        "FWVER=SPG 3.01",
        "PROTVER=18.00",
        "GPS;GLO;GAL;BDS",
        "SBAS;IMES;QZSS",
        "GNSS OTP=GPS;GLO",
        "LLC=FFFFFFFF-FFFFFFED-FFFFFFFF-FFFFFFFF-FFFFFFED",
        "ANTSUPERV=AC SD PDoS SR",
        "ANTSTATUS=OK",
        "PF=3FF",
    ]
    for text in banner:
        recording.sentence(nmea(f"GPTXT,01,01,02,{text}"))

    course = vehicle.heading
    for index in range(epochs):
        t = float(index)
        if index:
            vehicle.advance(1.0)
            error.step(1.0)
        for satellite in gps + sbas + glonass + galileo + beidou:
            satellite.fade.step(1.0)
        moment = start + datetime.timedelta(seconds=index)
        hms = time_field(moment, 2)
        ddmmyy = date_field(moment)
        fix = index >= hot_start_epochs

        views = {}
        used = []
        for talker, system_id, signal_id, satellites in systems:
            view = []
            for satellite in sorted(satellites, key=lambda s: s.number):
                elevation = satellite.elevation(t)
                if elevation < 0.0:
                    continue
                cno = satellite.cno(t, attenuation(t, satellite))
                view.append((satellite.number, int(round(elevation)), int(round(satellite.azimuth(t))) % 360, cno))
                usable = cno is not None and cno >= 25 and elevation >= 10.0 and satellite.system != "SB"
                # Right after the first fix fewer satellites have ephemeris.
                if fix and usable and (index > 6 or satellite.number % 3 != 0):
                    used.append((talker, satellite.number, elevation, satellite.azimuth(t)))
            views[talker] = view
        dops = dilution([(talker, e, a) for talker, _, e, a in used]) if fix else None
        if fix and dops is None:
            raise RuntimeError("lost the fix at %d" % index)

        if fix:
            pdop, hdop, vdop = dops
            latitude, longitude, altitude = error.apply(vehicle, scale=max(0.7, hdop))
            position = (
                degrees_minutes(latitude, 5, False),
                degrees_minutes(longitude, 5, True),
            )
            (lat, ns), (lon, ew) = position
            knots, course = reported_velocity(rand, vehicle, course)
            speed_text = fixed(knots, 3)
            course_text = fixed(course, 2)
            altitude_text = fixed(altitude, 1)
            recording.sentence(
                nmea(f"GNRMC,{hms},A,{lat},{ns},{lon},{ew},{speed_text},{course_text},{ddmmyy},,,A,V")
            )
            recording.sentence(
                nmea(f"GNVTG,{course_text},T,,M,{speed_text},N,{fixed(knots * 1.852, 3)},K,A")
            )
            # GGA's count is a two-digit field that the M8 saturates at 12; the GSAs list all.
            gga_count = min(len(used), 12)
            recording.sentence(
                nmea(
                    f"GNGGA,{hms},{lat},{ns},{lon},{ew},1,{gga_count:02d},{fixed(hdop, 2)},"
                    f"{altitude_text},M,{fixed(separation, 1)},M,,"
                )
            )
            for talker, system_id, _, _ in systems:
                numbers = [n for t_, n, _, _ in used if t_ == talker]
                recording.sentence(
                    nmea(
                        "GNGSA,A,3," + ",".join(gsa_fields(numbers))
                        + f",{fixed(pdop, 2)},{fixed(hdop, 2)},{fixed(vdop, 2)},{system_id}"
                    )
                )
        else:
            position = None
            recording.sentence(nmea(f"GNRMC,{hms},V,,,,,,,{ddmmyy},,,N,V"))
            recording.sentence(nmea("GNVTG,,,,,,,,,N"))
            recording.sentence(nmea(f"GNGGA,{hms},,,,,0,00,99.99,,,,,,"))
            for talker, system_id, _, _ in systems:
                recording.sentence(nmea("GNGSA,A,1," + ",".join(gsa_fields([])) + f",99.99,99.99,99.99,{system_id}"))
        for talker, system_id, signal_id, _ in systems:
            recording.sentences(gsv(talker, views[talker], signal_id))
        if fix:
            recording.sentence(nmea(f"GNGLL,{lat},{ns},{lon},{ew},{hms},A,A"))
            sigma_h = 1.1 * hdop
            recording.sentence(
                nmea(
                    f"GNGST,{hms},{fixed(abs(error.north.value) + 9.0 * hdop / 10 + 0.8, 1)},,,,"
                    f"{fixed(sigma_h * 0.95, 1)},{fixed(sigma_h * 0.8, 1)},{fixed(1.7 * vdop, 1)}"
                )
            )
            recording.epochs.append(
                epoch_truth(
                    moment, 2, 3, 1, position, float(altitude_text), float(speed_text), float(course_text),
                    len(used), gga_count, float(fixed(hdop, 2)),
                    extra={"climb": round(vehicle.climb, 3), "satellites_in_view": sum(len(v) for v in views.values())},
                )
            )
        else:
            recording.sentence(nmea(f"GNGLL,,,,,{hms},V,N"))
            recording.sentence(nmea(f"GNGST,{hms},,,,,,,"))
            recording.epochs.append(
                epoch_truth(moment, 2, 1, 0, None, None, None, None, 0, 0, 99.99,
                            extra={"satellites_in_view": sum(len(v) for v in views.values())})
            )

    chipset = "u-blox M8 (UBX-M8030, SPG 3.01, protocol 18.00), NMEA 4.10"
    baud = 115200
    header = recording.header(
        chipset,
        start.date(),
        baud,
        "A five-minute drive at 1 Hz with GPS, GLONASS, Galileo and BeiDou (NMEA 4.10 system"
        " and signal IDs): power-on banner, two epochs of hot start without a fix, then 3D fixes"
        " while the car leaves a car park, climbs a hill, crosses under a bridge, turns at"
        " junctions and waits at a red light. Satellites rise and set. GNGGA counts at most 12"
        " satellites; the GNGSAs list all of them.",
    )
    recording.extra["climb_nonzero_epochs"] = sum(1 for e in recording.epochs if e.get("climb"))
    truth = summarise(recording, "GNRMC", 1, chipset, baud, header)
    return header, recording, truth


# MARK: - 2. MediaTek cold start


def mtk_cold_start(seed):
    name = "mtk-cold-start"
    rand = Rand(seed, name)
    recording = Recording(name, seed)
    start = datetime.datetime(2026, 2, 3, 22, 10, 5)
    epochs = 100
    time_known_at = 6  # first subframe decoded: time of day
    date_known_at = 18  # week number decoded
    separation = 22.6
    # (PRN, elevation, azimuth, seconds until tracked, seconds until ephemeris)
    plan = [
        (24, 58.0, 41.0, 2, 33),
        (15, 44.0, 162.0, 3, 33),
        (12, 37.0, 287.0, 2, 33),
        (19, 65.0, 226.0, 4, 38),
        (13, 22.0, 111.0, 7, 43),
        (2, 29.0, 345.0, 9, 47),
        (17, 14.0, 203.0, 11, 55),
        (6, 9.0, 64.0, 16, 62),
        (25, 6.0, 258.0, 24, 71),
    ]
    satellites = []
    for prn, elevation, azimuth, tracked, ephemeris in plan:
        satellite = Satellite(rand, "GP", prn, elevation, azimuth, strength=-4.0)
        satellite.tracked_at = tracked
        satellite.ephemeris_at = ephemeris
        satellites.append(satellite)
    vehicle = Vehicle(-33.868820, 151.209290, 42.0, 0.0, [(1000, 0.0, 0.0, 0.0)])
    error = ReceiverError(rand, 1.2, 2.0, 60.0)
    # The first fix is off by tens of metres and settles as more satellites join.
    settling = (rand.uniform(-22, -14), rand.uniform(10, 18), rand.uniform(-30, -20))

    recording.sentence(nmea("PMTK011,MTKGPS"))
    recording.sentence(nmea("PMTK010,001"))
    course = 0.0
    first_fix = None
    for index in range(epochs):
        t = float(index)
        if index:
            error.step(1.0)
        for satellite in satellites:
            satellite.fade.step(1.0)
        moment = start + datetime.timedelta(seconds=index)
        time_known = index >= time_known_at
        date_known = index >= date_known_at
        hms = time_field(moment, 3) if time_known else ""
        ddmmyy = date_field(moment) if date_known else ""

        view = []
        ready = []
        for satellite in satellites:
            if index < satellite.tracked_at:
                continue
            cno = satellite.cno(t)
            if cno is None:
                cno = 20  # weak but held
            if index >= satellite.ephemeris_at:
                elevation = int(round(satellite.elevation(t)))
                azimuth = int(round(satellite.azimuth(t))) % 360
                view.append((satellite.number, elevation, azimuth, cno))
                ready.append(satellite)
            else:
                view.append((satellite.number, None, None, cno))
        # MTK lists satellites with a position first, by elevation, then the others.
        view.sort(key=lambda v: (v[1] is None, -(v[1] or 0), v[0]))

        mode = 1
        if time_known and len(ready) >= 4:
            mode = 3
        elif time_known and len(ready) == 3:
            mode = 2
        used = ready if mode > 1 else []
        if mode > 1 and first_fix is None:
            first_fix = index
        geometry = [("GP", s.elevation(t), s.azimuth(t)) for s in used]

        if mode > 1:
            if mode == 3:
                pdop, hdop, vdop = dilution(geometry)
            else:
                hdop = dilution_2d(geometry)
                pdop, vdop = hdop, None
            since = index - first_fix
            weight = math.exp(-since / 12.0)
            latitude, longitude = displaced(
                vehicle.latitude,
                vehicle.longitude,
                error.north.value * hdop + settling[0] * weight,
                error.east.value * hdop + settling[1] * weight,
            )
            altitude = vehicle.altitude + error.up.value * 1.5 + settling[2] * weight if vdop else None
            position = (degrees_minutes(latitude, 4, False), degrees_minutes(longitude, 4, True))
            (lat, ns), (lon, ew) = position
            knots = abs(rand.gauss(0.04))
            if rand.chance(0.3):
                course = rand.uniform(0, 360)
            speed_text = fixed(knots, 2)
            course_text = fixed(course, 2)
            recording.sentence(nmea(f"GPRMC,{hms},A,{lat},{ns},{lon},{ew},{speed_text},{course_text},{ddmmyy},,,A"))
            recording.sentence(nmea(f"GPVTG,{course_text},T,,M,{speed_text},N,{fixed(knots * 1.852, 2)},K,A"))
            altitude_text = fixed(altitude, 1) if altitude is not None else ""
            recording.sentence(
                nmea(
                    f"GPGGA,{hms},{lat},{ns},{lon},{ew},1,{len(used)},{fixed(hdop, 2)},"
                    f"{altitude_text},M,{fixed(separation, 1)},M,,"
                )
            )
            recording.sentence(
                nmea(
                    f"GPGSA,A,{mode}," + ",".join(gsa_fields([s.number for s in used]))
                    + f",{fixed(pdop, 2)},{fixed(hdop, 2)},{fixed(vdop, 2) if vdop else ''}"
                )
            )
            recording.epochs.append(
                epoch_truth(
                    moment, 3, mode, 1, position, float(altitude_text) if altitude_text else None,
                    float(speed_text), float(course_text), len(used), len(used), float(fixed(hdop, 2)),
                    date_known=date_known, extra={"satellites_in_view": len(view)},
                )
            )
        else:
            recording.sentence(nmea(f"GPRMC,{hms},V,,,,,0.00,0.00,{ddmmyy},,,N"))
            recording.sentence(nmea("GPVTG,0.00,T,,M,0.00,N,0.00,K,N"))
            recording.sentence(nmea(f"GPGGA,{hms},,,,,0,0,,,M,,M,,"))
            recording.sentence(nmea("GPGSA,A,1," + ",".join(gsa_fields([])) + ",,,"))
            recording.epochs.append(
                epoch_truth(moment, 3, 1, 0, None, None, None, None, 0, 0, None,
                            date_known=date_known, time_known=time_known,
                            extra={"satellites_in_view": len(view)})
            )
        recording.sentences(gsv("GP", view, None))

    chipset = "MediaTek MT3339 (PMTK), NMEA 3.01"
    baud = 9600
    header = recording.header(
        chipset,
        start.date(),
        baud,
        "A cold start on a window sill at 1 Hz, in MTK order (RMC, VTG, GGA, GSA, GSV): the"
        " PMTK011/PMTK010 boot messages, cycles without time, then time without a date, then"
        " the date; satellites appear in GSV with signal strength only and gain elevation and"
        " azimuth as their ephemeris arrives; a 2D fix from three satellites (GSA mode 2, no"
        " altitude), then 3D. The first fixes are tens of metres off and settle.",
    )
    recording.extra.update(
        {
            "time_known_from_epoch": time_known_at,
            "date_known_from_epoch": date_known_at,
            "first_2d_epoch": next(i for i, e in enumerate(recording.epochs) if e["mode"] == 2),
            "first_3d_epoch": next(i for i, e in enumerate(recording.epochs) if e["mode"] == 3),
        }
    )
    truth = summarise(recording, "GPRMC", 1, chipset, baud, header)
    return header, recording, truth


# MARK: - 3. SiRF at 4800 baud


def sirf_4800(seed):
    name = "sirf-4800"
    rand = Rand(seed, name)
    recording = Recording(name, seed)
    start = datetime.datetime(2025, 10, 7, 16, 5, 0)
    epochs = 180
    gsv_every = 5
    separation = -16.9
    plan = [
        (8, 0.0, 0.0, 0.0),
        (20, 6.5, 0.0, 0.012),
        (8, 5.0, -11.0, 0.0),
        (45, 7.5, 0.0, 0.02),
        (15, 7.0, 3.0, 0.03),
        (40, 8.5, 0.0, -0.015),
        (14, 4.0, 6.5, 0.0),
        (60, 7.0, 0.0, -0.01),
    ]
    vehicle = Vehicle(40.015012, -105.270540, 1655.4, 172.0, plan, accel=0.8, brake=1.5)
    error = ReceiverError(rand, 1.4, 2.5, 50.0)
    gps = random_sky(rand, "GP", [3, 7, 8, 10, 16, 21, 26, 27, 31])
    gps.append(Satellite(rand, "GP", 18, 2.4, 287.0, rise=-0.7, drift=0.3))
    gps.append(Satellite(rand, "GP", 32, -0.6, 78.0, rise=0.6, drift=-0.2))
    gps.append(Satellite(rand, "GP", 46, 36.0, 199.0, strength=-4.0))  # WAAS PRN 133
    for satellite in gps:
        if satellite.number == 46:
            satellite.system = "SB"
            satellite.rise = satellite.drift = 0.0

    course = vehicle.heading
    per_second = []
    for index in range(epochs):
        t = float(index)
        if index:
            vehicle.advance(1.0)
            error.step(1.0)
        for satellite in gps:
            satellite.fade.step(1.0)
        moment = start + datetime.timedelta(seconds=index)
        hms = time_field(moment, 3)
        view = []
        used = []
        for satellite in sorted(gps, key=lambda s: -s.elevation(t)):
            elevation = satellite.elevation(t)
            if elevation < 0:
                continue
            cno = satellite.cno(t, 4.0 if 100 <= index < 115 else 0.0)
            view.append((satellite.number, int(round(elevation)), int(round(satellite.azimuth(t))) % 360, cno))
            if cno is not None and cno >= 28 and elevation >= 7.5 and satellite.system == "GP":
                used.append(satellite)
        used = used[:12]
        pdop, hdop, vdop = dilution([("GP", s.elevation(t), s.azimuth(t)) for s in used])
        latitude, longitude, altitude = error.apply(vehicle, scale=hdop)
        position = (degrees_minutes(latitude, 4, False), degrees_minutes(longitude, 4, True))
        (lat, ns), (lon, ew) = position
        knots, course = reported_velocity(rand, vehicle, course, 0.05, 0.8)
        before = len(recording.body)
        altitude_text = fixed(altitude, 1)
        recording.sentence(
            nmea(
                f"GPGGA,{hms},{lat},{ns},{lon},{ew},1,{len(used):02d},{fixed(hdop, 1)},"
                f"{altitude_text},M,{fixed(separation, 1)},M,,0000"
            )
        )
        recording.sentence(
            nmea(
                "GPGSA,A,3," + ",".join(gsa_fields([s.number for s in used]))
                + f",{fixed(pdop, 1)},{fixed(hdop, 1)},{fixed(vdop, 1)}"
            )
        )
        if index % gsv_every == 0:
            recording.sentences(gsv("GP", view[:12], None))
        speed_text = fixed(knots, 2)
        course_text = fixed(course, 2)
        recording.sentence(
            nmea(f"GPRMC,{hms},A,{lat},{ns},{lon},{ew},{speed_text},{course_text},{date_field(moment)},,")
        )
        per_second.append(len(recording.body) - before)
        recording.epochs.append(
            epoch_truth(
                moment, 3, 3, 1, position, float(altitude_text), float(speed_text), float(course_text),
                len(used), len(used), float(fixed(hdop, 1)), extra={"gsv": index % gsv_every == 0},
            )
        )
    assert max(per_second) <= 480, max(per_second)

    chipset = "SiRFstarIII (GSC3), NMEA 2.2"
    baud = 4800
    header = recording.header(
        chipset,
        start.date(),
        baud,
        "Three minutes of a bicycle ride at 1 Hz from a SiRF receiver at 4800 baud, in SiRF"
        " order (GGA, GSA, GSV, RMC) and NMEA 2.2 fields: no mode indicator in RMC, GGA"
        " station ID 0000 without corrections, negative geoid separation, west longitude."
        " GSV only every fifth second, as SiRF sends it by default, so that a second never"
        " holds more than the 480 bytes 4800 baud can carry.",
    )
    recording.extra.update(
        {
            "gsv_every_seconds": gsv_every,
            "max_bytes_per_second": max(per_second),
            "bytes_per_second_limit": 480,
        }
    )
    truth = summarise(recording, "GPGGA", 1, chipset, baud, header)
    return header, recording, truth


# MARK: - 4. Midnight rollover


def midnight_rollover(seed):
    name = "midnight-rollover"
    rand = Rand(seed, name)
    recording = Recording(name, seed)
    start = datetime.datetime(2026, 12, 31, 23, 59, 30)
    epochs = 61
    rmc_every = 4
    separation = 29.4
    vehicle = Vehicle(-33.402150, -70.712840, 512.0, 4.0, [(1000, 27.0, 0.0, 0.004)])
    vehicle.speed = 27.0
    error = ReceiverError(rand, 1.0, 1.8, 40.0)
    gps = random_sky(rand, "GP", [1, 4, 9, 11, 14, 18, 22, 28, 32])
    course = vehicle.heading
    dates = []
    for index in range(epochs):
        t = float(index)
        if index:
            vehicle.advance(1.0)
            error.step(1.0)
        for satellite in gps:
            satellite.fade.step(1.0)
        moment = start + datetime.timedelta(seconds=index)
        hms = time_field(moment, 2)
        used = [s for s in gps if (s.cno(t) or 0) >= 27 and s.elevation(t) >= 10.0]
        pdop, hdop, vdop = dilution([("GP", s.elevation(t), s.azimuth(t)) for s in used])
        latitude, longitude, altitude = error.apply(vehicle, scale=hdop)
        position = (degrees_minutes(latitude, 5, False), degrees_minutes(longitude, 5, True))
        (lat, ns), (lon, ew) = position
        knots, course = reported_velocity(rand, vehicle, course)
        speed_text = fixed(knots, 3)
        course_text = fixed(course, 2)
        altitude_text = fixed(altitude, 1)
        recording.sentence(
            nmea(
                f"GPGGA,{hms},{lat},{ns},{lon},{ew},1,{len(used):02d},{fixed(hdop, 2)},"
                f"{altitude_text},M,{fixed(separation, 1)},M,,"
            )
        )
        recording.sentence(
            nmea(
                "GPGSA,A,3," + ",".join(gsa_fields(sorted(s.number for s in used)))
                + f",{fixed(pdop, 2)},{fixed(hdop, 2)},{fixed(vdop, 2)}"
            )
        )
        has_rmc = moment.second % rmc_every == 2
        if has_rmc:
            recording.sentence(
                nmea(f"GPRMC,{hms},A,{lat},{ns},{lon},{ew},{speed_text},{course_text},{date_field(moment)},,,A")
            )
        recording.sentence(nmea(f"GPVTG,{course_text},T,,M,{speed_text},N,{fixed(knots * 1.852, 3)},K,A"))
        dates.append({"time": iso_time(moment, 2), "date": moment.date().isoformat(), "rmc": has_rmc})
        recording.epochs.append(
            epoch_truth(
                moment, 2, 3, 1, position, float(altitude_text), float(speed_text), float(course_text),
                len(used), len(used), float(fixed(hdop, 2)), extra={"rmc": has_rmc},
            )
        )

    chipset = "Generic NMEA 2.3 receiver (GP talker; GGA, GSA, RMC every 4 s, VTG)"
    baud = 9600
    header = recording.header(
        chipset,
        start.date(),
        baud,
        "A car on a motorway crossing midnight UTC at the turn of the year, 2026-12-31"
        " 23:59:30 to 2027-01-01 00:00:30, at 1 Hz, south and west of Greenwich. GGA comes"
        " before RMC in each cycle and RMC only every fourth second (at :58 and :02), so"
        " the epochs of 23:59:59, 00:00:00 and 00:00:01 have a time but no date of their own:"
        " the date must be carried and advanced across midnight.",
    )
    recording.extra.update({"rmc_every_seconds": rmc_every, "dates": dates})
    truth = summarise(recording, "GPGGA", 1, chipset, baud, header)
    return header, recording, truth


# MARK: - 5. RTK at 10 Hz


def rtk_high_precision(seed):
    name = "rtk-high-precision"
    rand = Rand(seed, name)
    recording = Recording(name, seed)
    start = datetime.datetime(2025, 9, 15, 17, 32, 10)
    rate = 10
    epochs = 300
    separation = -22.817
    # A tractor on a guidance line: up the field, a headland U-turn, back down.
    plan = [(14, 2.6, 0.0, 0.004), (8, 1.8, 22.5, 0.0), (8, 2.6, 0.0, -0.004)]
    vehicle = Vehicle(52.133218, -106.670044, 505.2, 359.6, plan, accel=0.6, brake=0.8)
    vehicle.speed = 2.6

    def quality_at(seconds):
        if seconds < 1.0:
            return 1  # corrections not yet received
        if seconds < 4.0:
            return 5  # float
        if seconds < 15.0:
            return 4  # fixed
        if seconds < 17.5:
            return 5  # trees at the headland: back to float
        return 4

    # Error of each solution type (horizontal and vertical sigma, metres) and how slowly it
    # wanders (seconds): the receiver's filter keeps a 10 Hz track smooth.
    sigma = {1: (0.9, 1.5, 600.0), 5: (0.18, 0.3, 300.0), 4: (0.009, 0.016, 30.0)}
    offsets = {
        q: (Wander(rand, h, tau), Wander(rand, h, tau), Wander(rand, v, tau)) for q, (h, v, tau) in sigma.items()
    }
    gps = random_sky(rand, "GP", [2, 5, 12, 13, 15, 18, 20, 23, 25, 29])
    glonass = random_sky(rand, "GL", [66, 67, 68, 76, 77, 82, 83])
    galileo = random_sky(rand, "GA", [2, 7, 8, 13, 15, 26, 30])
    beidou = random_sky(rand, "GB", [19, 20, 29, 35, 37])
    systems = [("GP", 1, gps), ("GL", 2, glonass), ("GA", 3, galileo), ("GB", 4, beidou)]
    mode_letters = {1: "A", 5: "F", 4: "R"}
    course = vehicle.heading
    transitions = []
    previous_quality = None
    for index in range(epochs):
        seconds = index / rate
        if index:
            vehicle.advance(1.0 / rate, step=0.02)
            for wanders in offsets.values():
                for wander in wanders:
                    wander.step(1.0 / rate)
        if index % rate == 0:
            for _, _, satellites in systems:
                for satellite in satellites:
                    satellite.fade.step(1.0)
        moment = start + datetime.timedelta(milliseconds=index * 100)
        hms = time_field(moment, 2)
        quality = quality_at(seconds)
        if quality != previous_quality:
            transitions.append({"epoch": index, "time": iso_time(moment, 2), "quality": quality})
            previous_quality = quality
        used = []
        for talker, _, satellites in systems:
            for satellite in satellites:
                cno = satellite.cno(seconds)
                if cno is not None and cno >= 30 and satellite.elevation(seconds) >= 10:
                    used.append((talker, satellite.number, satellite.elevation(seconds), satellite.azimuth(seconds)))
        pdop, hdop, vdop = dilution([(talker, e, a) for talker, _, e, a in used])
        north, east, up = (w.value for w in offsets[quality])
        latitude, longitude = displaced(vehicle.latitude, vehicle.longitude, north, east)
        altitude = vehicle.altitude + up
        position = (degrees_minutes(latitude, 8, False), degrees_minutes(longitude, 8, True))
        (lat, ns), (lon, ew) = position
        knots, course = reported_velocity(rand, vehicle, course, 0.01, 0.15)
        speed_text = fixed(knots, 3)
        course_text = fixed(course, 2)
        altitude_text = fixed(altitude, 4)
        letter = mode_letters[quality]
        recording.sentence(
            nmea(f"GNRMC,{hms},A,{lat},{ns},{lon},{ew},{speed_text},{course_text},{date_field(moment)},,,{letter},V")
        )
        age = "" if quality == 1 else fixed(0.4 + (index % 10) * 0.1, 1)
        station = "" if quality == 1 else "0217"
        # Unlike the M8 fixture, this receiver counts every satellite used in GGA.
        gga_count = len(used)
        recording.sentence(
            nmea(
                f"GNGGA,{hms},{lat},{ns},{lon},{ew},{quality},{gga_count:02d},{fixed(hdop, 2)},"
                f"{altitude_text},M,{fixed(separation, 3)},M,{age},{station}"
            )
        )
        for talker, system_id, _ in systems:
            numbers = [n for t_, n, _, _ in used if t_ == talker]
            recording.sentence(
                nmea(
                    "GNGSA,A,3," + ",".join(gsa_fields(numbers))
                    + f",{fixed(pdop, 2)},{fixed(hdop, 2)},{fixed(vdop, 2)},{system_id}"
                )
            )
        h, v, _ = sigma[quality]
        recording.sentence(
            nmea(
                f"GNGST,{hms},{fixed(h * 1.4, 3)},{fixed(h * 1.2, 3)},{fixed(h * 0.9, 3)},"
                f"{fixed(course % 180.0, 1)},{fixed(h, 3)},{fixed(h * 1.05, 3)},{fixed(v, 3)}"
            )
        )
        recording.epochs.append(
            epoch_truth(
                moment, 2, 3, quality, position, float(altitude_text), float(speed_text), float(course_text),
                len(used), gga_count, float(fixed(hdop, 2)), extra={"mode_indicator": letter},
            )
        )

    chipset = "u-blox ZED-F9P-style RTK rover (high-precision NMEA 4.10)"
    baud = 115200
    header = recording.header(
        chipset,
        start.date(),
        baud,
        "Thirty seconds of an RTK rover on a tractor at 10 Hz: GNRMC, GNGGA, four GNGSAs and"
        " GNGST per epoch, positions with 8 decimals of minutes and altitudes with 4, so GGA"
        " and RMC run past 82 characters (all stay under 128). GGA quality goes 1, then 5"
        " (float), 4 (fixed), back to 5 in the trees at the headland turn, and 4 again;"
        " RMC mode A, F, R to match. GGA counts every satellite used (more than 12).",
    )
    recording.extra["quality_transitions"] = transitions
    truth = summarise(recording, "GNRMC", rate, chipset, baud, header)
    truth["longer_than_82"] = sum(1 for line in valid_lines(recording.body) if len(line) + 1 > 82)
    return header, recording, truth


# MARK: - 6. Noisy u-blox with UBX


def fletcher(data):
    a = b = 0
    for byte in data:
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return bytes([a, b])


def ubx(message_class, message_id, payload):
    body = bytes([message_class, message_id]) + struct.pack("<H", len(payload)) + payload
    return b"\xb5\x62" + body + fletcher(body)


def nav_pvt(moment, latitude, longitude, height, msl, speed, heading, climb, used, pdop,
            h_acc=1800, v_acc=2900, head_acc=120000):
    days = (moment.date() - GPS_EPOCH).days
    gps_seconds = days * 86400 + moment.hour * 3600 + moment.minute * 60 + moment.second + GPS_LEAP_SECONDS
    itow = (gps_seconds % (7 * 86400)) * 1000 + moment.microsecond // 1000
    vel_n = int(round(speed * math.cos(math.radians(heading)) * 1000))
    vel_e = int(round(speed * math.sin(math.radians(heading)) * 1000))
    payload = struct.pack(
        "<IHBBBBBBIiBBBBiiiiIIiiiiiIIH6sihH",
        itow,
        moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second,
        0x07,  # validDate, validTime, fullyResolved
        28,  # tAcc, ns
        -412,  # nano
        3,  # 3D
        0x01,  # gnssFixOK
        0xE0,  # confirmed availability, date, time
        used,
        int(round(longitude * 1e7)), int(round(latitude * 1e7)),
        int(round(height * 1000)), int(round(msl * 1000)),
        h_acc, v_acc,
        vel_n, vel_e, int(round(-climb * 1000)), int(round(speed * 1000)),
        int(round(heading * 1e5)),
        350,  # sAcc, mm/s
        head_acc,
        int(round(pdop * 100)),
        b"\x00" * 6,
        0, 0, 0,
    )
    assert len(payload) == 92
    return ubx(0x01, 0x07, payload)


SPECIAL = (0x24, 0x21, 0xB5, 0xA0)  # bytes that start a sentence or a binary frame


def noisy_ublox(seed):
    name = "noisy-ublox"
    rand = Rand(seed, name)
    recording = Recording(name, seed)
    start = datetime.datetime(2026, 6, 2, 10, 14, 20)
    epochs = 60
    separation = 38.1
    plan = [(1000, 1.4, 0.0, 0.01)]
    vehicle = Vehicle(59.913870, 10.752245, 21.5, 118.0, plan)
    vehicle.speed = 1.4
    error = ReceiverError(rand, 0.8, 1.4, 40.0)
    gps = random_sky(rand, "GP", [3, 6, 11, 14, 17, 19, 22, 24, 28, 32])
    glonass = random_sky(rand, "GL", [65, 71, 72, 79, 80, 86, 87])

    # First build the clean stream as a list of pieces: ("s", sentence bytes, cycle) or
    # ("u", UBX frame bytes, kind). Corruption is applied afterwards to chosen pieces.
    pieces = []
    course = vehicle.heading
    clean_epochs = []
    for index in range(epochs):
        t = float(index)
        if index:
            vehicle.advance(1.0)
            error.step(1.0)
        for satellite in gps + glonass:
            satellite.fade.step(1.0)
        moment = start + datetime.timedelta(seconds=index)
        hms = time_field(moment, 2)
        views = {"GP": [], "GL": []}
        used = []
        for talker, satellites in (("GP", gps), ("GL", glonass)):
            for satellite in sorted(satellites, key=lambda s: s.number):
                elevation = satellite.elevation(t)
                if elevation < 0:
                    continue
                cno = satellite.cno(t)
                views[talker].append(
                    (satellite.number, int(round(elevation)), int(round(satellite.azimuth(t))) % 360, cno)
                )
                if cno is not None and cno >= 25 and elevation >= 10:
                    used.append((talker, satellite.number, elevation, satellite.azimuth(t)))
        pdop, hdop, vdop = dilution([(talker, e, a) for talker, _, e, a in used])
        latitude, longitude, altitude = error.apply(vehicle, scale=hdop)
        position = (degrees_minutes(latitude, 5, False), degrees_minutes(longitude, 5, True))
        (lat, ns), (lon, ew) = position
        knots, course = reported_velocity(rand, vehicle, course, 0.04, 2.0)
        speed_text = fixed(knots, 3)
        course_text = fixed(course, 2)
        altitude_text = fixed(altitude, 1)
        frame = nav_pvt(
            moment, latitude, longitude, altitude + separation, altitude, knots / KNOTS_PER_MPS, course,
            vehicle.climb, len(used), pdop,
        )
        pieces.append(("u", frame, "NAV-PVT", index))
        cycle = [
            f"GNRMC,{hms},A,{lat},{ns},{lon},{ew},{speed_text},{course_text},{date_field(moment)},,,A",
            f"GNVTG,{course_text},T,,M,{speed_text},N,{fixed(knots * 1.852, 3)},K,A",
            f"GNGGA,{hms},{lat},{ns},{lon},{ew},1,{min(len(used), 12):02d},{fixed(hdop, 2)},"
            f"{altitude_text},M,{fixed(separation, 1)},M,,",
        ]
        for talker in ("GP", "GL"):
            numbers = [n for t_, n, _, _ in used if t_ == talker]
            cycle.append(
                "GNGSA,A,3," + ",".join(gsa_fields(numbers)) + f",{fixed(pdop, 2)},{fixed(hdop, 2)},{fixed(vdop, 2)}"
            )
        for talker in ("GP", "GL"):
            cycle += [s[1:-5].decode("ascii") for s in gsv(talker, views[talker], None)]
        cycle.append(f"GNGLL,{lat},{ns},{lon},{ew},{hms},A,A")
        for body in cycle:
            pieces.append(("s", nmea(body), body[:5], index))
        clean_epochs.append(
            epoch_truth(
                moment, 2, 3, 1, position, float(altitude_text), float(speed_text), float(course_text),
                len(used), min(len(used), 12), float(fixed(hdop, 2)),
            )
        )
        if index == 1:
            # The host enabled NAV-PVT on the UART (CFG-MSG) twice and asked for a GNSS
            # configuration the firmware refused (CFG-GNSS).
            pieces.append(("u", ubx(0x05, 0x01, b"\x06\x01"), "ACK-ACK", index))
            pieces.append(("u", ubx(0x05, 0x01, b"\x06\x01"), "ACK-ACK", index))
            pieces.append(("u", ubx(0x05, 0x00, b"\x06\x3e"), "ACK-NAK", index))

    # Corruption plan. Each event lands on a different piece, away from the others, so that
    # every event has exactly one outcome in the framer's counters. GGA is never touched, so
    # every cycle keeps its time and position.
    events = (
        ["bit_flip_body"] * 8
        + ["bit_flip_checksum"] * 3
        + ["dropped_bytes"] * 3
        + ["cut_by_next_sentence"] * 4
        + ["binary_noise_inside"] * 3
        + ["lost_line_feed"] * 2
        + ["missing_checksum"] * 2
        + ["noise_between"] * 6
        + ["sync_lookalike_noise"] * 2
        + ["stray_dollar_noise"] * 2
        + ["overlong_line"] * 1
    )
    candidates = [
        i for i, p in enumerate(pieces)
        if p[0] == "s" and p[2] != "GNGGA" and 2 < p[3] < epochs - 2
    ]
    chosen = sorted(rand.sample(candidates, len(events) * 3))
    spaced = []
    for index in chosen:
        if not spaced or index - spaced[-1] >= 3:
            spaced.append(index)
    assert len(spaced) >= len(events), (len(spaced), len(events))
    spaced = sorted(rand.sample(spaced, len(events)))
    order = rand.sample(events, len(events))
    plan_by_piece = dict(zip(spaced, order))

    # Binary frames to spoil: one NAV-PVT with a flipped payload bit, one cut short. And the
    # NAV-PVT whose payload holds `$`, LF and a B5 62 sync pattern.
    pvt_indices = [i for i, p in enumerate(pieces) if p[0] == "u" and p[2] == "NAV-PVT"]
    special_pvt = pvt_indices[20]
    def spoil(frame):
        spoiled = bytearray(frame)
        spoiled[40] ^= 0x10
        return bytes(spoiled)

    corrupt_pvt = next(i for i in pvt_indices[30:] if i - 1 not in plan_by_piece and i + 1 not in plan_by_piece
                       and not any(b in SPECIAL for b in spoil(pieces[i][1])[1:]))
    truncated_pvt = next(i for i in pvt_indices[42:] if all(j not in plan_by_piece for j in range(i - 1, i + 4))
                         and not any(b in SPECIAL for b in pieces[i][1][1:40]))

    counts = {event: 0 for event in sorted(set(events))}
    out = bytearray()
    # The recording began in the middle of a sentence.
    lead = nmea("GNGLL,5954.82900,N,01045.13250,E,101419.00,A,A")
    out += lead[len(lead) // 2 :]
    garbage_note = len(lead) - len(lead) // 2
    # Bytes outside any sentence or frame, as a framer counts them: the partial sentence
    # above, line noise, the tail of a sentence after binary noise broke it, and the bytes
    # of binary frames that fail their checksum.
    garbage = garbage_note
    valid_by_type = {}
    ubx_counts = {}
    corrupted_by_type = {}

    def noise(length, allow=()):
        data = bytearray()
        while len(data) < length:
            byte = rand.integer(0, 255)
            if byte in SPECIAL and byte not in allow:
                continue
            if byte == 0x2A:  # keep '*' out so a noise run never looks like a checksum
                continue
            data.append(byte)
        return bytes(data)

    for index, piece in enumerate(pieces):
        kind, data = piece[0], piece[1]
        if kind == "u":
            if index == special_pvt:
                # hAcc 2596 mm is 24 0A 00 00: a `$` and a line feed inside the payload;
                # headAcc 25269e-5 degrees is B5 62 00 00: a UBX sync pattern inside it.
                payload = bytearray(data[6:-2])
                payload[40:44] = struct.pack("<I", 0x0A24)
                payload[72:76] = struct.pack("<I", 0x62B5)
                data = ubx(0x01, 0x07, bytes(payload))
                assert b"$\n" in data[6:-2] and b"\xb5\x62" in data[6:-2]
                ubx_counts["NAV-PVT"] = ubx_counts.get("NAV-PVT", 0) + 1
                out += data
            elif index == corrupt_pvt:
                spoiled = spoil(data)
                assert fletcher(spoiled[2:-2]) != bytes(spoiled[-2:])
                assert not any(b in SPECIAL for b in spoiled[1:])
                out += spoiled
                garbage += len(spoiled)
            elif index == truncated_pvt:
                # Cut after 40 bytes: the framer will take the next 60 bytes of NMEA as the
                # rest of the frame, fail the checksum and must find the sentences again.
                out += data[:40]
                garbage += 40
                following = b"".join(p[1] for p in pieces[index + 1 : index + 4])
                swallowed = data[:40] + following[:60]
                assert fletcher(swallowed[2:-2]) != swallowed[-2:]
            else:
                ubx_counts[piece[2]] = ubx_counts.get(piece[2], 0) + 1
                out += data
            continue

        address = data[1 : data.index(b",")].decode("ascii")
        event = plan_by_piece.get(index)
        if event is None:
            out += data
            valid_by_type[address] = valid_by_type.get(address, 0) + 1
            continue
        counts[event] += 1
        star = data.index(b"*")
        if event in ("noise_between", "sync_lookalike_noise", "stray_dollar_noise"):
            # Noise on the line before an intact sentence.
            before = len(out)
            if event == "noise_between":
                out += noise(rand.integer(5, 40))
                garbage += len(out) - before
            elif event == "sync_lookalike_noise":
                # B5 not followed by 62 and A0 not followed by A2: no frame starts here.
                out += noise(rand.integer(2, 8)) + b"\xb5" + bytes([rand.integer(0x63, 0x7E)]) + noise(2)
                out += b"\xa0" + bytes([rand.integer(0x30, 0x5A)]) + noise(rand.integer(2, 8))
                garbage += len(out) - before
            else:
                out += noise(rand.integer(2, 6)) + b"$" + bytes([rand.choice([0x83, 0x8E, 0x91, 0xC0, 0xF7])])
                out += noise(rand.integer(2, 9))
                garbage += len(out) - before - 1  # the `$` began a (malformed) sentence
            out += data
            valid_by_type[address] = valid_by_type.get(address, 0) + 1
            continue
        corrupted_by_type[address] = corrupted_by_type.get(address, 0) + 1
        clean_epochs[piece[3]].setdefault("corrupted_in_cycle", []).append(address)
        if event == "bit_flip_body":
            while True:
                position = rand.integer(1, star - 1)
                bit = 1 << rand.integer(0, 6)
                flipped = data[position] ^ bit
                if 0x20 <= flipped < 0x7F and flipped not in (0x24, 0x21, 0x2A):
                    break
            spoiled = bytearray(data)
            spoiled[position] = flipped
            out += spoiled
        elif event == "bit_flip_checksum":
            position = star + 1 + rand.integer(0, 1)
            for bit in (1, 2, 4, 8, 16):
                flipped = data[position] ^ bit
                if chr(flipped) in "0123456789ABCDEF":
                    break
            spoiled = bytearray(data)
            spoiled[position] = flipped
            out += spoiled
        elif event == "dropped_bytes":
            while True:
                begin = rand.integer(7, star - 8)
                length = rand.integer(1, 6)
                dropped = data[begin : begin + length]
                checksum = 0
                for byte in dropped:
                    checksum ^= byte
                if checksum:
                    break
            out += data[:begin] + data[begin + length :]
        elif event == "cut_by_next_sentence":
            out += data[: rand.integer(8, star - 1)]
        elif event == "binary_noise_inside":
            at = rand.integer(8, star - 2)
            burst = bytes([rand.choice([0x81, 0x9F, 0xC3, 0xE7, 0xFE, 0xFF])]) + noise(rand.integer(1, 12))
            out += data[:at] + burst + data[at:]
            garbage += len(burst) + len(data) - at
        elif event == "lost_line_feed":
            out += data[:-1]
        elif event == "missing_checksum":
            out += data[:star] + b"\r\n"
        elif event == "overlong_line":
            # A sentence whose end was lost, run on into printable line noise for longer than
            # any sentence may be.
            text = bytes(rand.integer(0x30, 0x5A) for _ in range(150))
            out += data[:star] + text.replace(b"*", b"+") + b"\r\n"

    # The recording stopped in the middle of a sentence.
    tail = nmea("GNRMC,101520.00,A,5954.79000,N,01045.20000,E,2.710,118.40,020626,,,A")
    out += tail[:23]

    recording.body = out
    recording.sentence_counts = valid_by_type
    recording.epochs = clean_epochs
    bad_checksum = counts["bit_flip_body"] + counts["bit_flip_checksum"] + counts["dropped_bytes"]
    malformed = (
        counts["cut_by_next_sentence"] + counts["binary_noise_inside"] + counts["lost_line_feed"]
        + counts["stray_dollar_noise"]
    )
    recording.extra.update(
        {
            "valid_sentences": sum(valid_by_type.values()),
            "corruption_events": counts,
            "corrupted_sentences": sum(corrupted_by_type.values()),
            "corrupted_sentences_by_type": dict(sorted(corrupted_by_type.items())),
            "ubx_frames": sum(ubx_counts.values()),
            "ubx_frames_by_message": dict(sorted(ubx_counts.items())),
            "bad_ubx_frames": {"bad_checksum": 1, "truncated": 1},
            "ubx_frame_with_dollar_and_line_feed": {
                "epoch": pieces[special_pvt][3],
                "message": "NAV-PVT",
                "note": "hAcc = 0x00000A24 (bytes 24 0A), headAcc = 0x000062B5 (bytes B5 62)",
            },
            "leading_partial_sentence_bytes": garbage_note,
            "trailing_partial_sentence_bytes": 23,
            "expected_framer_statistics": {
                "sentences": sum(valid_by_type.values()),
                "badChecksum": bad_checksum,
                "missingChecksum": counts["missing_checksum"],
                "tooLong": counts["overlong_line"],
                "malformed": malformed,
                "ubxFrames": sum(ubx_counts.values()),
                "sirfFrames": 0,
                "badBinaryFrames": 2,
                "garbageBytes": garbage,
            },
        }
    )
    chipset = "u-blox M8 (UBX-M8030), NMEA 4.0 with UBX NAV-PVT enabled"
    baud = 38400
    header = recording.header(
        chipset,
        start.date(),
        baud,
        "One minute of a walk at 1 Hz from a u-blox M8 with NMEA (GPS and GLONASS, GN talker,"
        " NMEA 4.0 numbering without system IDs) and binary UBX NAV-PVT on the same port, over a"
        " bad line: flipped bits, dropped bytes, sentences cut short or run together, bursts"
        " of binary noise, a stray B5 and A0, ACK-ACK/ACK-NAK frames, one NAV-PVT with a bad"
        " checksum, one cut short, and one whose payload holds a dollar sign, a line feed and"
        " a B5 62 pair. Starts and ends in the middle of a sentence. Exact counts are in"
        " noisy-ublox.truth.json.",
    )
    truth = summarise(recording, "GNRMC", 1, chipset, baud, header)
    # RMC is sometimes corrupted; GGA never is, so it marks each cycle.
    truth["cycle_marker"] = "GNGGA"
    return header, recording, truth


# MARK: - Driver

FIXTURES = {
    "ublox-m8-drive": ublox_m8_drive,
    "mtk-cold-start": mtk_cold_start,
    "sirf-4800": sirf_4800,
    "midnight-rollover": midnight_rollover,
    "rtk-high-precision": rtk_high_precision,
    "noisy-ublox": noisy_ublox,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="fixtures to write (default: all)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
    parser.add_argument("--list", action="store_true", help="list the fixtures and exit")
    arguments = parser.parse_args()
    if arguments.list:
        print("\n".join(FIXTURES))
        return 0
    names = arguments.names or list(FIXTURES)
    unknown = [n for n in names if n not in FIXTURES]
    if unknown:
        parser.error("unknown fixture: " + ", ".join(unknown) + " (see --list)")
    os.makedirs(arguments.out, exist_ok=True)
    for name in names:
        header, recording, truth = FIXTURES[name](arguments.seed)
        with open(os.path.join(arguments.out, name + ".nmea"), "wb") as file:
            file.write(header + bytes(recording.body))
        with open(os.path.join(arguments.out, name + ".truth.json"), "w", encoding="ascii", newline="\n") as file:
            file.write(json.dumps(truth, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
