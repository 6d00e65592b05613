#!/usr/bin/env python3
"""Location requests on a simulated receiver: charge, time on per fix and timeliness of
serialgps' doors beside gpsd 3.22 on the same simulated receiver (issue 23, "Benchmark").

    scripts/bench-power.py [--serialgps PATH] [--cases a,b,c,d,e] [--runs a=3,b=3,c=2,d=3,e=1]
                           [--json] [--logs DIR]
    scripts/bench-power.py --cases spread [--spread-runs 6] [--spread-minutes 5] [--seed N]

Every run of every case has a receiver of its own: `serialgps replay
fixtures/ublox-m8-drive.nmea --chipset ublox --physics --start hot --loop --energy-file F`, the
simulator's u-blox M8 (SAM-M8Q) figures: hot start 1 s, error 25 m converging on 3.0 m with
tau 3 s, 32 mA acquiring, 29 mA tracking, 30 uA in backup; the recording has GST, so each fix
carries its error. The charge is the energy file's, read at the case's start and end.

- serialgps: the receiver is first put to backup as serialgps leaves one nobody wants (this
  script writes UBX-RXM-PMREQ once), then the case's doors:
  (a) `serialgps watch DEV --interval 30 --accuracy 10 --json` for 180 s;
  (b) `serialgps serve --mqtt` with a gpsd client (?WATCH) for the first 60 s and a
      consumer's retained MQTT demand {"interval":60,"accuracy":10} for 240 s, its fixes read
      from serialgps/<id>/tpv;
  (c) `serialgps locate DEV --accuracy 10 --json` at 0, 120 and 240 s, window 360 s;
  (d) `serialgps serve` with a client that only sends ?POLL; every 5 s, for 60 s;
  (e) as (a) with the simulator's ephemeris valid 300 s (`--ephemeris-validity 300`), 720 s,
      and watch's refresh age scaled with it (`--ephemeris-refresh 150`: half the validity, as
      the default 2 h is half of 4 h; what a user who knows the validity sets).
  (spread) (`--cases spread` alone, scripts/bench_spread.py): (a) on receivers drawn at
      random (hot start 0.5-3 s, convergence time constant 1-5 s), each against its own limit.
  (f) (`--cases f` alone, `aiding_run`): a cold start after a fix, the simulator's supply cut
      without a backup battery, through `serve --state-dir` with and without `--no-aiding`.
- gpsd: `gpsd -b -N -n` (read-only) on a receiver of its own left running, as gpsd leaves
  one, with a ?WATCH client; for (a), (c) and (e) the delivery of each due fix is the first
  TPV from half a second before its due time that reaches the accuracy (the scheduler's rule).

Due times are the scheduler's (docs/requests.md): the first at the ask, the next an interval
after the last due time, or after the delivery when it came late. Lateness = arrival - due
(negative: early). Arrivals are this script's (a line read from a pipe or a socket), a few
milliseconds after the scheduler's, and so are the due times it derives from a late one: a
fix is taken from EARLIEST (0.5 s) before its due time, as the scheduler takes it, so that
those milliseconds never decide which epoch answers. The first fix of an interval request is
due at its ask, when no wake can have begun: it is judged as a one-shot of (c) is, against the
time to first fix plus the convergence plus 1 s (docs/requests.md, "The first fix"). The limit of a case is what its delivered fixes cost at least at the
data-sheet figures: per fix a hot start (1 s at the acquisition current) plus the convergence
to the accuracy asked (tau * ln((25 - 3.0) / (10 - 3.0)) = 3.44 s at the tracking current),
plus the backup current for the rest of the window. The first wake of a receiver the driver
knows nothing of also tracks 30 s to collect the ephemeris (docs/requests.md); the limit
leaves that out, so it is reported beside.

Scale: none (the data sheet's timings, 1x). The simulator can run its physics faster
(`--time-scale`), but the driver has no such clock: its wake margin (1 s), shortest sleep
(5 s) and request intervals would stay in real seconds beside a receiver 10x faster, which
distorts every figure here. The cases and their runs run concurrently instead, each on its
own receiver, so the whole benchmark takes about 12.5 minutes.

Needs: a release build of serialgps, gpsd 3.22 (gpsd), mosquitto and mosquitto-clients.
"""

import argparse
import json
import math
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import tty

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import REPO, free_port, start_replay, start_serve, stop  # noqa: E402

FIXTURE = os.path.join(REPO, "fixtures", "ublox-m8-drive.nmea")
# ReceiverFigures.ubloxM8 (Sources/Simulator/ReceiverFigures.swift; docs/simulator.md cites each).
FIGURES = {
    "name": "u-blox M8 (SAM-M8Q)", "hot_s": 1.0, "acquisition_mA": 32.0, "tracking_mA": 29.0,
    "backup_mA": 0.030, "first_error_m": 25.0, "converged_m": 3.0, "hot_tau_s": 3.0,
}
ACCURACY = 10.0
# RequestScheduler.Configuration.earliest: a fix answers a due time from this long before it.
EARLIEST = 0.5
DURATION = {"a": 180, "b": 240, "c": 360, "d": 60, "e": 720}
RUNS = {"a": 3, "b": 3, "c": 2, "d": 3, "e": 1}


def convergence(accuracy):
    f = FIGURES
    return f["hot_tau_s"] * math.log((f["first_error_m"] - f["converged_m"])
                                     / (accuracy - f["converged_m"]))


def limit_mAh(fixes, window, accuracy=ACCURACY):
    f = FIGURES
    conv = convergence(accuracy)
    on = fixes * (f["hot_s"] + conv)
    charge = fixes * (f["hot_s"] * f["acquisition_mA"] + conv * f["tracking_mA"]) / 3600
    return charge + max(0.0, window - on) * f["backup_mA"] / 3600


def ubx(cls, ident, payload):
    body = bytes([cls, ident]) + struct.pack("<H", len(payload)) + payload
    a = b = 0
    for byte in body:
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return b"\xb5\x62" + body + bytes([a, b])


PMREQ_BACKUP = ubx(0x02, 0x41, struct.pack("<II", 0, 2))


def accuracy_of(tpv):
    """The receiver's own horizontal error estimate, as serialgps takes it (GST's latitude
    and longitude sigmas, root sum of squares). gpsd 3.22's TPV `epx`/`epy`/`eph` are its
    own DOP x UERE figures (10 m and more here whatever the receiver says): for gpsd the
    estimate is its GST report of the same epoch, joined to the TPV by `Lines.tpvs`.
    serialgps' TPV carries the GST sigmas as `epx`/`epy`."""
    if "gst_error" in tpv:
        return tpv["gst_error"]
    if "epx" in tpv and "epy" in tpv:
        return math.hypot(tpv["epx"], tpv["epy"])
    return tpv.get("eph")


class Energy:
    """The energy file sampled every 200 ms: (monotonic time, summary)."""

    def __init__(self, path):
        self.path = path
        self.samples = []
        self.running = True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def read(self):
        for _ in range(50):
            try:
                with open(self.path) as handle:
                    return json.load(handle)
            except (OSError, ValueError):
                time.sleep(0.02)
        raise RuntimeError("cannot read " + self.path)

    def sample(self):
        while self.running:
            try:
                self.samples.append((time.monotonic(), self.read()))
            except RuntimeError:
                pass
            time.sleep(0.2)

    def now(self):
        summary = self.read()
        self.samples.append((time.monotonic(), summary))
        return summary

    def on_between(self, start, end):
        """Seconds the receiver was on (acquiring or tracking) between two instants, from the
        samples nearest them."""
        def at(instant):
            best = min(self.samples, key=lambda s: abs(s[0] - instant))
            return best[1]["on_s"]
        return at(end) - at(start)

    def stop(self):
        self.running = False
        self.thread.join(2)


class Lines(threading.Thread):
    """Reads a stream's lines, each stamped with time.monotonic() on arrival."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.lines = []
        self.start()

    def run(self):
        for line in self.stream:
            self.lines.append((time.monotonic(), line))

    def tpvs(self):
        """The TPVs with a fix, in order of arrival; a TPV with a GST report of the same
        epoch (same `time`) carries its error as `gst_error` and counts from the later of
        the two arrivals (a client has the fix's accuracy only then)."""
        reports = []
        for stamp, line in list(self.lines):
            text = line.decode(errors="replace") if isinstance(line, bytes) else line
            start = text.find("{")
            if start < 0:
                continue
            try:
                reports.append((stamp, json.loads(text[start:])))
            except ValueError:
                continue
        gsts = {}
        for stamp, report in reports:
            if (report.get("class") == "GST" and "time" in report
                    and "lat" in report and "lon" in report):
                gsts[report["time"]] = (stamp, math.hypot(report["lat"], report["lon"]))
        out = []
        for stamp, report in reports:
            if report.get("class") == "TPV" and report.get("mode", 0) >= 2:
                gst = gsts.get(report.get("time"))
                if gst:
                    report = dict(report, gst_error=gst[1])
                    stamp = max(stamp, gst[0])
                out.append((stamp, report))
        out.sort(key=lambda item: item[0])
        return out


class GPSDClient:
    """A gpsd-protocol client: ?WATCH (json) or nothing; collects every line."""

    def __init__(self, port, watch=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.settimeout(None)
        if watch:
            self.sock.sendall(b'?WATCH={"enable":true,"json":true};\n')
        self.reader = Lines(self.sock.makefile("rb"))

    def send(self, text):
        self.sock.sendall(text)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def deliveries_from(stream, start, interval, end, accuracy=ACCURACY):
    """The fixes a client of an always-on stream takes for an interval request asked at
    `start`: per due time the first TPV from EARLIEST before it that reaches the accuracy."""
    out = []
    due = start
    for stamp, tpv in stream:
        if stamp > end:
            break
        error = accuracy_of(tpv)
        if stamp < due - EARLIEST or error is None or error > accuracy:
            continue
        out.append({"due": due - start, "at": stamp - start, "late": stamp - due, "acc": error})
        due = max(due, stamp) + interval
    return out


def deliveries_scheduled(stream, start, interval, end):
    """Each TPV a request's door printed is one delivery; due times as the scheduler keeps
    them."""
    out = []
    due = start
    for stamp, tpv in stream:
        if stamp > end:
            break
        out.append({"due": due - start, "at": stamp - start, "late": stamp - due,
                    "acc": accuracy_of(tpv)})
        due = max(due, stamp) + interval
    return out


class Receiver:
    """One simulated receiver: the replay, its energy file, its device opened for gpsd."""

    def __init__(self, binary, scratch, name, extra, logs):
        self.energy_path = os.path.join(scratch, name + ".energy.json")
        self.log = open(os.path.join(logs, name + ".replay.log"), "w")
        arguments = [FIXTURE, "--chipset", "ublox", "--physics", "--start", "hot", "--loop",
                     "--energy-file", self.energy_path] + extra
        self.process, self.device = start_replay(binary, arguments, self.log)
        # gpsd drops root and cannot open a root-owned pty.
        os.chmod(os.path.realpath(self.device), 0o666)
        self.energy = Energy(self.energy_path)

    def put_to_backup(self):
        """As serialgps leaves a receiver nobody wants: UBX-RXM-PMREQ backup."""
        fd = os.open(self.device, os.O_RDWR | os.O_NOCTTY)
        try:
            tty.setraw(fd)
            os.write(fd, PMREQ_BACKUP)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                summary = self.energy.now()
                if "backup" in summary["states"]:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("the simulator did not go to backup")
        finally:
            os.close(fd)

    def close(self):
        self.energy.stop()
        stop(self.process)
        self.log.close()


def wait_until(instant):
    left = instant - time.monotonic()
    if left > 0:
        time.sleep(left)


def summarise(case, side, before, after, window, deliveries, extra=None):
    charge = after["charge_mAh"] - before["charge_mAh"]
    on = after["on_s"] - before["on_s"]
    starts = after["starts"][len(before["starts"]):]
    result = {
        "case": case, "side": side, "window_s": window, "charge_mAh": charge,
        "mAh_per_h": charge * 3600 / window, "on_s": on, "fixes": len(deliveries),
        "on_s_per_fix": on / len(deliveries) if deliveries else None,
        "deliveries": deliveries, "starts": [s["kind"] for s in starts],
        "warm_starts": sum(1 for s in starts if s["kind"] in ("warm", "cold")),
        "ttff_s": [s.get("ttff_s") for s in starts],
        "limit_mAh": limit_mAh(len(deliveries), window) if deliveries else None,
    }
    result.update(extra or {})
    return result


def run_serialgps(case, binary, scratch, logs, index, broker_port):
    name = "%s-serialgps-%d" % (case, index)
    extra = ["--ephemeris-validity", "300"] if case == "e" else []
    receiver = Receiver(binary, scratch, name, extra, logs)
    # The refresh age scaled with the validity, as a user who knows it sets it.
    refresh = ["--ephemeris-refresh", "150"] if case == "e" else []
    processes = []
    log = open(os.path.join(logs, name + ".log"), "w")
    try:
        receiver.put_to_backup()
        window = DURATION[case]
        before = receiver.energy.now()
        start = time.monotonic()
        end = start + window
        if case in ("a", "e"):
            watch = subprocess.Popen(
                [binary, "watch", receiver.device, "--chipset", "ublox", "--baud", "9600",
                 "--interval", "30", "--accuracy", str(ACCURACY), "--json"] + refresh,
                stdout=subprocess.PIPE, stderr=log)
            processes.append(watch)
            lines = Lines(watch.stdout)
            wait_until(end)
            after = receiver.energy.now()
            stop(watch)
            deliveries = deliveries_scheduled(lines.tpvs(), start, 30, end)
            return summarise(case, "serialgps", before, after, window, deliveries)
        if case == "b":
            ident = "bench-%d" % index
            serve, port = start_serve(
                binary, ["--chipset", "ublox", "--baud", "9600", "--mqtt",
                         "mqtt://127.0.0.1:%d" % broker_port, "--mqtt-id", ident,
                         receiver.device], log)
            processes.append(serve)
            sub = subprocess.Popen(
                ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker_port), "-V", "mqttv5",
                 "-R", "-t", "serialgps/%s/tpv" % ident],
                stdout=subprocess.PIPE, stderr=log)
            processes.append(sub)
            mqtt = Lines(sub.stdout)
            time.sleep(0.5)
            demand = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker_port), "-V",
                      "mqttv5", "-r", "-q", "1", "-t", "serialgps/%s/demand/bench" % ident]
            # The charge counts from here: serve started, nothing asked yet.
            before = receiver.energy.now()
            start = time.monotonic()
            end = start + window
            client = GPSDClient(port)
            subprocess.check_call(demand + ["-m", '{"interval":60,"accuracy":%g}' % ACCURACY])
            wait_until(start + 60)
            client.close()
            left = time.monotonic()
            wait_until(end)
            after = receiver.energy.now()
            subprocess.call(demand + ["-n"])
            client_fixes = len(client.reader.tpvs())
            deliveries = deliveries_from(mqtt.tpvs(), start, 60, end)
            # Continuous while the client was there: on from its first fix to its leaving;
            # scheduled after: off most of the time, on for each delivery.
            first = client.reader.tpvs()[0][0] if client_fixes else start
            on_with_client = receiver.energy.on_between(first, left)
            linger_end = left + 6  # serve's default linger, 5 s, and a second
            on_after = receiver.energy.on_between(linger_end, end)
            return summarise(case, "serialgps", before, after, window, deliveries, {
                "client_fixes": client_fixes,
                "on_fraction_with_client": on_with_client / max(1e-9, left - first),
                "on_s_after_client": on_after, "off_s_after_client":
                    (end - linger_end) - on_after})
        if case == "c":
            answers = []
            for k in range(3):
                wait_until(start + 120 * k)
                asked = time.monotonic()
                run = subprocess.run(
                    [binary, "locate", receiver.device, "--chipset", "ublox", "--baud", "9600",
                     "--accuracy", str(ACCURACY), "--timeout", "60", "--json"],
                    stdout=subprocess.PIPE, stderr=log)
                answered = time.monotonic()
                tpv = {}
                for line in run.stdout.decode().splitlines():
                    try:
                        tpv = json.loads(line)
                    except ValueError:
                        pass
                answers.append({"due": asked - start, "at": answered - start,
                                "late": answered - asked, "acc": accuracy_of(tpv),
                                "exit": run.returncode})
            wait_until(end)
            after = receiver.energy.now()
            bound = one_shot_bound()
            return summarise(case, "serialgps", before, after, window, answers,
                             {"answer_bound_s": bound})
        if case == "d":
            serve, port = start_serve(binary, ["--chipset", "ublox", "--baud", "9600",
                                               receiver.device], log)
            processes.append(serve)
            before = receiver.energy.now()
            start = time.monotonic()
            end = start + window
            client = GPSDClient(port, watch=False)
            polls = 0
            while time.monotonic() < end:
                client.send(b"?POLL;\n")
                polls += 1
                time.sleep(5)
            wait_until(end)
            after = receiver.energy.now()
            answered = sum(1 for _, line in client.reader.lines if b'"class":"POLL"' in line)
            client.close()
            result = summarise(case, "serialgps", before, after, window, [])
            result.update({"polls": polls, "polls_answered": answered})
            return result
    finally:
        for process in processes:
            stop(process)
        log.close()
        receiver.close()


def run_gpsd(case, binary, scratch, logs):
    name = "%s-gpsd" % case
    extra = ["--ephemeris-validity", "300"] if case == "e" else []
    receiver = Receiver(binary, scratch, name, extra, logs)
    port = free_port()
    gpsd = subprocess.Popen(["gpsd", "-b", "-N", "-n", "-S", str(port), receiver.device],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("gpsd did not start listening")
                time.sleep(0.05)
        window = DURATION[case]
        client = GPSDClient(port)
        before = receiver.energy.now()
        start = time.monotonic()
        end = start + window
        wait_until(end)
        after = receiver.energy.now()
        client.close()
        stream = client.reader.tpvs()
        if case in ("a", "e"):
            deliveries = deliveries_from(stream, start, 30, end)
        elif case == "b":
            deliveries = deliveries_from(stream, start, 60, end)
        elif case == "c":
            deliveries = []
            for k in range(3):
                asked = start + 120 * k
                got = deliveries_from([s for s in stream if s[0] >= asked], asked, 1e9, end)
                if got:
                    d = got[0]
                    deliveries.append({"due": asked - start, "at": d["at"] + asked - start,
                                       "late": d["late"], "acc": d["acc"]})
        else:
            deliveries = []
        return summarise(case, "gpsd", before, after, window, deliveries,
                         {"tpvs": len(stream)})
    finally:
        stop(gpsd)
        receiver.close()


class Broker:
    def __init__(self, directory):
        self.port = free_port()
        config = os.path.join(directory, "mosquitto.conf")
        with open(config, "w") as handle:
            if os.geteuid() == 0:
                handle.write("user root\n")
            handle.write("persistence false\nlog_dest none\n")
            handle.write("listener %d 127.0.0.1\nallow_anonymous true\n" % self.port)
        self.process = subprocess.Popen(["mosquitto", "-c", config],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("mosquitto did not start")
                time.sleep(0.05)

    def stop(self):
        stop(self.process)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def one_shot_bound():
    """What a fix asked now can take at best, and 1 s: the time to first fix plus the
    convergence to the accuracy (the issue's aim (c))."""
    return FIGURES["hot_s"] + convergence(ACCURACY) + 1


def aims(case, runs, gpsd):
    """Whether each run met the case's aim, and why not."""
    verdicts = []
    for r in runs:
        notes = []
        if case == "a":
            later = r["deliveries"][1:]
            if r["limit_mAh"] and r["charge_mAh"] > 1.3 * r["limit_mAh"]:
                notes.append("charge %.2fx the limit" % (r["charge_mAh"] / r["limit_mAh"]))
            if gpsd and r["charge_mAh"] >= gpsd["charge_mAh"] / 4:
                notes.append("%.2f of gpsd's charge" % (r["charge_mAh"] / gpsd["charge_mAh"]))
            late = [d for d in later if abs(d["late"]) > 1.0]
            if late:
                notes.append("%d of %d fixes after the first more than 1 s off their due "
                             "time" % (len(late), len(later)))
            if r["deliveries"] and r["deliveries"][0]["late"] > one_shot_bound():
                notes.append("the first (asked at 0) came at %.2f s, over %.2f s" % (
                    r["deliveries"][0]["late"], one_shot_bound()))
            bad = [d for d in r["deliveries"] if d["acc"] is None or d["acc"] > ACCURACY]
            if bad:
                notes.append("%d fixes above %g m" % (len(bad), ACCURACY))
        elif case == "b":
            if r["on_fraction_with_client"] < 0.95:
                notes.append("on %.0f%% of the time with the client"
                             % (100 * r["on_fraction_with_client"]))
            if r["off_s_after_client"] < 0.5 * (r["window_s"] - 66):
                notes.append("on %.0f s of %.0f s after the client"
                             % (r["on_s_after_client"], r["window_s"] - 66))
            after = [d for d in r["deliveries"] if d["at"] > 66]
            late = [d for d in after if abs(d["late"]) > 1.0]
            if late:
                notes.append("%d of %d scheduled fixes more than 1 s off" % (len(late), len(after)))
        elif case == "c":
            slow = [d for d in r["deliveries"] if d["late"] > r["answer_bound_s"]]
            if slow:
                notes.append("%d of %d answers over %.2f s" % (
                    len(slow), len(r["deliveries"]), r["answer_bound_s"]))
            failed = [d for d in r["deliveries"] if d["exit"] != 0]
            if failed:
                notes.append("%d timed out" % len(failed))
        elif case == "d":
            if r["on_s"] > 0 or r["starts"]:
                notes.append("powered %.1f s, %d starts" % (r["on_s"], len(r["starts"])))
        elif case == "e":
            if r["warm_starts"] > 1:
                notes.append("%d warm starts" % r["warm_starts"])
        verdicts.append("met" if not notes else "missed: " + "; ".join(notes))
    return verdicts


def main():
    if bench_aiding_main(sys.argv[1:]):  # (f): its own receivers, runs and report
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serialgps")
    parser.add_argument("--cases", default="a,b,c,d,e")
    parser.add_argument("--runs", default="",
                        help="per case, such as a=3,e=1 (default a=3,b=3,c=2,d=3,e=1)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--logs", help="keep every process's standard error in this directory")
    parser.add_argument("--sleep-scale", type=float, default=4,
                        help="(g) only: the simulator's time scale (1: a real hour; default 4)")
    parser.add_argument("--spread-runs", type=int, default=6,
                        help="(spread) only: how many receivers, each drawn at random")
    parser.add_argument("--spread-minutes", type=float, default=5,
                        help="(spread) only: each run's window")
    parser.add_argument("--seed", type=int,
                        help="(spread) only: the seed of the draw (default: a new one, printed)")
    parser.add_argument("--sleep-receivers", metavar="PREFIX",
                        help="(g) only: the receivers whose name starts so (CASIC, Airoha …)")
    args = parser.parse_args()
    binary = args.serialgps
    if not binary:
        for kind in ("release", "debug"):
            candidate = os.path.join(REPO, ".build", kind, "serialgps")
            if os.access(candidate, os.X_OK):
                binary = candidate
                break
    if not binary:
        sys.exit("build serialgps first: swift build -c release --product serialgps")
    if args.cases == "g":
        return sleep_depth(binary, args.json, args.sleep_scale, args.sleep_receivers)
    if args.cases == "spread":
        import bench_spread
        sys.exit(bench_spread.main(sys.modules[__name__], binary, args.spread_runs,
                                   args.spread_minutes, args.seed, args.json, args.logs))
    for tool in ("gpsd", "mosquitto", "mosquitto_pub", "mosquitto_sub"):
        if subprocess.call(["which", tool], stdout=subprocess.DEVNULL) != 0:
            sys.exit("%s is not installed (make test-deps)" % tool)
    runs = dict(RUNS)
    for part in filter(None, args.runs.split(",")):
        key, _, value = part.partition("=")
        runs[key] = int(value)
    cases = args.cases.split(",")
    scratch = tempfile.mkdtemp(prefix="serialgps-bench-power-")
    logs = args.logs or scratch
    os.makedirs(logs, exist_ok=True)
    broker = Broker(scratch) if "b" in cases else None
    results = {case: {"serialgps": [], "gpsd": None} for case in cases}
    errors = []
    load_before = os.getloadavg()
    began = time.monotonic()

    def serialgps_lane(case):
        for index in range(runs[case]):
            try:
                results[case]["serialgps"].append(run_serialgps(
                    case, binary, scratch, logs, index, broker.port if broker else None))
            except Exception as error:  # a lane's failure is reported, the others go on
                errors.append("%s serialgps run %d: %r" % (case, index, error))

    def gpsd_lane(case):
        try:
            results[case]["gpsd"] = run_gpsd(case, binary, scratch, logs)
        except Exception as error:
            errors.append("%s gpsd: %r" % (case, error))

    threads = [threading.Thread(target=serialgps_lane, args=(c,)) for c in cases]
    threads += [threading.Thread(target=gpsd_lane, args=(c,)) for c in cases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if broker:
        broker.stop()
    load_after = os.getloadavg()
    report = {
        "machine": "%s, %d cores" % (os.uname().machine, os.cpu_count()),
        "load_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "binary": os.path.relpath(binary, REPO), "figures": FIGURES, "time_scale": 1,
        "wall_s": round(time.monotonic() - began, 1), "errors": errors, "cases": {},
    }
    for case in cases:
        runs_of = results[case]["serialgps"]
        gpsd = results[case]["gpsd"]
        report["cases"][case] = {
            "runs": runs_of, "gpsd": gpsd, "aims": aims(case, runs_of, gpsd),
            "median": {key: median([r[key] for r in runs_of])
                       for key in ("charge_mAh", "mAh_per_h", "on_s_per_fix", "limit_mAh",
                                   "fixes", "on_s")},
        }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_report(report)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)


# (g) Sleep depth (issue 24, "Sleep depth"): one fix every 10 minutes for an hour of the
# simulator's scaled time, with the sleeps the driver chooses against the quick-wake standby
# only (`watch --sleep standby`), for a u-blox M8 on a UART and a MediaTek MT3339, the
# MediaTek with and without a declared wake line (the simulator's FORCE_ON through its
# control FIFO: `watch --wake-pin control:FIFO`). `scripts/bench-power.py --cases g`.
SLEEP_RECEIVERS = [
    # (name, replay arguments, watch arguments)
    ("u-blox M8, standby only", ["ublox-m8-drive", "ublox"], ["--sleep", "standby"]),
    ("u-blox M8, chosen", ["ublox-m8-drive", "ublox"], []),
    ("MediaTek, standby only", ["mtk-cold-start", "mtk"], ["--sleep", "standby"]),
    ("MediaTek, chosen, no pin", ["mtk-cold-start", "mtk"], []),
    ("MediaTek, chosen, FORCE_ON", ["mtk-cold-start", "mtk"], ["--wake-pin"]),
    # The families added by issue 35, on a generic recording re-rendered by their physics
    # (docs/chipsets.md, "CASIC" and "Airoha"). CASIC has no sleep over the UART: without the
    # line it keeps running; with it, its standby input held low.
    ("CASIC L76K, standby only", ["midnight-rollover", "casic"], ["--sleep", "standby"]),
    ("CASIC L76K, chosen, STANDBY pin", ["midnight-rollover", "casic"], ["--wake-pin"]),
    ("Airoha LC76G, standby only", ["midnight-rollover", "airoha"], ["--sleep", "standby"]),
    ("Airoha LC76G, chosen, no pin", ["midnight-rollover", "airoha"], []),
    ("Airoha LC76G, chosen, wake pin", ["midnight-rollover", "airoha"], ["--wake-pin"]),
]


def sleep_depth(binary, as_json, scale, only=None):
    receivers = [r for r in SLEEP_RECEIVERS if not only or r[0].startswith(only)]
    scratch = tempfile.mkdtemp(prefix="serialgps-bench-sleep-")
    window = 3600.0 / scale
    interval = 600.0 / scale
    load_before = os.getloadavg()
    began = time.monotonic()
    results = [None] * len(receivers)

    def run(index):
        name, (fixture, chipset), extra = receivers[index]
        energy_path = os.path.join(scratch, "g%d.energy.json" % index)
        control = os.path.join(scratch, "g%d.control" % index)
        log = open(os.path.join(scratch, "g%d.log" % index), "w")
        replay, device = start_replay(binary, [
            os.path.join(REPO, "fixtures", fixture + ".nmea"), "--chipset", chipset,
            "--physics", "--start", "hot", "--loop", "--time-scale", "%g" % scale,
            "--energy-file", energy_path, "--control", control], log)
        energy = Energy(energy_path)
        if extra == ["--wake-pin"]:
            extra = ["--wake-pin", "control:" + control]
        watch = None
        try:
            before = energy.now()
            start = time.monotonic()
            watch = subprocess.Popen(
                [binary, "watch", device, "--chipset", chipset, "--baud", "9600",
                 "--interval", "%g" % interval, "--json"] + extra,
                stdout=subprocess.PIPE, stderr=log)
            lines = Lines(watch.stdout)
            wait_until(start + window)
            after = energy.now()
            states = {state: after["states"][state]["mAh"]
                      - before["states"].get(state, {}).get("mAh", 0)
                      for state in after["states"]}
            seconds = {state: after["states"][state]["s"]
                       - before["states"].get(state, {}).get("s", 0)
                       for state in after["states"]}
            results[index] = {
                "name": name, "charge_mAh": after["charge_mAh"] - before["charge_mAh"],
                "on_s": after["on_s"] - before["on_s"], "fixes": len(lines.tpvs()),
                "charge_by_state_mAh": states, "time_by_state_s": seconds,
                "starts": [s["kind"] for s in after["starts"][len(before["starts"]):]]}
        finally:
            if watch:
                stop(watch)
            energy.stop()
            stop(replay)
            log.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(receivers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    load_after = os.getloadavg()
    by_name = {r["name"]: r for r in results if r}
    for r in by_name.values():
        base = by_name.get(r["name"].split(",")[0] + ", standby only")
        r["of_standby_only"] = r["charge_mAh"] / base["charge_mAh"] if base else None
    report = {
        "case": "g", "machine": "%s, %d cores" % (os.uname().machine, os.cpu_count()),
        "load_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "binary": os.path.relpath(binary, REPO), "time_scale": scale,
        "window_s": window, "interval_s": interval,
        "wall_s": round(time.monotonic() - began, 1), "runs": results}
    if as_json:
        print(json.dumps(report, indent=1))
        return
    print("bench-power (g): one fix every 10 min for an hour at time scale %g (%.0f s, a fix "
          "every %.0f s); %s, load %s -> %s, %.0f s wall" % (
              scale, window, interval, report["machine"], report["load_1min"][0],
              report["load_1min"][1], report["wall_s"]))
    print("  %-32s %9s %9s %7s %6s  %s" % ("", "mAh", "of stdby", "on s", "fixes",
                                            "sleeping s (state: s, mAh)"))
    for r in results:
        if not r:
            continue
        sleeping = ", ".join("%s: %.0f s, %.4f" % (state, r["time_by_state_s"][state],
                                                   r["charge_by_state_mAh"][state])
                             for state in sorted(r["time_by_state_s"])
                             if state not in ("acquisition", "tracking")
                             and r["time_by_state_s"][state] > 0)
        print("  %-32s %9.4f %9s %7.1f %6d  %s" % (
            r["name"], r["charge_mAh"], fmt(r["of_standby_only"], 2), r["on_s"], r["fixes"],
            sleeping))


TITLES = {
    "a": "(a) one fix of 10 m every 30 s, 180 s",
    "b": "(b) a 1 Hz client for 60 s beside a 60-s request, 240 s",
    "c": "(c) a one-shot of 10 m every 2 min, 360 s",
    "d": "(d) passive only (?POLL every 5 s), 60 s",
    "e": "(e) (a) with ephemeris valid 300 s, 720 s",
}


def fmt(value, digits=3):
    return "-" if value is None else "%.*f" % (digits, value)


def print_report(report):
    print("bench-power: %s; %s, load %s -> %s; time scale 1 (data-sheet timings), %.0f s wall"
          % (report["figures"]["name"], report["machine"], report["load_1min"][0],
             report["load_1min"][1], report["wall_s"]))
    for case, data in report["cases"].items():
        print("\n" + TITLES[case])
        print("  %-12s %9s %8s %8s %6s %9s %9s  %s" % (
            "", "mAh", "mAh/h", "on s", "fixes", "on s/fix", "limit", "starts; aim"))
        for index, r in enumerate(data["runs"]):
            print("  %-12s %9.4f %8.3f %8.1f %6d %9s %9s  %s; %s" % (
                "serialgps %d" % (index + 1), r["charge_mAh"], r["mAh_per_h"], r["on_s"],
                r["fixes"], fmt(r["on_s_per_fix"], 1), fmt(r["limit_mAh"], 4),
                ",".join(r["starts"]) or "none", data["aims"][index]))
            if r["deliveries"]:
                print("  %12s lateness s / accuracy m: %s" % ("", "  ".join(
                    "%+.2f/%s" % (d["late"], fmt(d["acc"], 1)) for d in r["deliveries"])))
            for key in ("client_fixes", "on_fraction_with_client", "on_s_after_client",
                        "off_s_after_client", "polls", "polls_answered"):
                if key in r:
                    print("  %12s %s: %s" % ("", key, fmt(r[key], 2)
                                              if isinstance(r[key], float) else r[key]))
        m = data["median"]
        if len(data["runs"]) > 1:
            print("  %-12s %9s %8s %8s %6s %9s %9s" % (
                "median", fmt(m["charge_mAh"], 4), fmt(m["mAh_per_h"]), fmt(m["on_s"], 1),
                fmt(m["fixes"], 0), fmt(m["on_s_per_fix"], 1), fmt(m["limit_mAh"], 4)))
        g = data["gpsd"]
        if g:
            print("  %-12s %9.4f %8.3f %8.1f %6d %9s %9s  %s" % (
                "gpsd 3.22", g["charge_mAh"], g["mAh_per_h"], g["on_s"], g["fixes"],
                fmt(g["on_s_per_fix"], 1), fmt(g["limit_mAh"], 4), ",".join(g["starts"])
                or "none (on throughout)"))
            if g["deliveries"]:
                print("  %12s lateness s / accuracy m: %s" % ("", "  ".join(
                    "%+.2f/%s" % (d["late"], fmt(d["acc"], 1)) for d in g["deliveries"])))


# (f) a cold start with and without aiding (issue 24). Kept apart from the cases above: its
# own receivers, runs, judging and report, started by `--cases f` (bench_aiding_main).

GNSS_STOP = ubx(0x06, 0x04, bytes([0x00, 0x00, 0x08, 0x00]))


def aiding_run(binary, scratch, logs, aided, index):
    """One run of (f): `serialgps serve` on the simulated u-blox M8 without backup power.
    Wake 1 (a cold first start) gives serve a fix; the client leaves and serve puts the
    receiver to backup; the simulator's supply is then cut (`power-cycle` without a backup
    battery: everything forgotten) and its GNSS stopped, so that it waits for the host as a
    receiver serialgps left in GNSS stop does. Wake 2 is the cold start measured: from the
    client's ?WATCH to the first TPV with a position, its charge from the energy file, its TTFF
    from the simulator's start record, and the aiding the simulator received."""
    name = "f-%s-%d" % ("aided" if aided else "plain", index)
    energy_path = os.path.join(scratch, name + ".energy.json")
    control = os.path.join(scratch, name + ".control")
    replay_log = open(os.path.join(logs, name + ".replay.log"), "w")
    serve_log = open(os.path.join(logs, name + ".log"), "w")
    state = tempfile.mkdtemp(prefix=name + "-state-", dir=scratch)
    replay, device = start_replay(binary, [
        FIXTURE, "--chipset", "ublox", "--physics", "--start", "cold", "--no-backup", "--loop",
        "--energy-file", energy_path, "--control", control], replay_log)
    energy = Energy(energy_path)
    serve = None
    try:
        arguments = [device, "--chipset", "ublox", "--baud", "9600", "--linger", "0",
                     "--state-dir", state] + ([] if aided else ["--no-aiding"])
        serve, port = start_serve(binary, arguments, serve_log)

        def first_position(timeout, after=None):
            """?WATCH until a TPV with a position (dated after `after`: not the newcomer's
            replay of the last fix); (seconds to it, the TPV)."""
            client = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            began = time.monotonic()
            try:
                client.sendall(b'?WATCH={"enable":true,"json":true};\n')
                buffered = b""
                while time.monotonic() - began < timeout:
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    buffered += chunk
                    while b"\n" in buffered:
                        line, buffered = buffered.split(b"\n", 1)
                        report = json.loads(line)
                        if (report.get("class") == "TPV" and "lat" in report
                                and (after is None or iso_seconds(report["time"]) > after)):
                            return time.monotonic() - began, report
            finally:
                client.close()
            raise RuntimeError("no position within %d s" % timeout)

        def wait_for(condition, timeout, what):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                summary = energy.now()
                if condition(summary):
                    return summary
                time.sleep(0.1)
            raise RuntimeError("the simulator never " + what)

        def in_state(summary, state_name):
            return summary["states"].get(state_name, {}).get("s", 0)

        _, last = first_position(90)
        asleep = wait_for(lambda s: in_state(s, "backup") > 0, 20, "went to backup")
        with open(control, "w") as fifo:
            fifo.write("power-cycle\n")
        wait_for(lambda s: len(s["starts"]) > len(asleep["starts"]), 10, "booted")
        # A command written while it boots is lost, as on the chip: again until it stops.
        for _ in range(20):
            fd = os.open(device, os.O_RDWR | os.O_NOCTTY)
            try:
                tty.setraw(fd)
                os.write(fd, GNSS_STOP)
            finally:
                os.close(fd)
            time.sleep(0.5)
            if in_state(energy.now(), "gnssStopped") > 0:
                break
        stopped = wait_for(lambda s: in_state(s, "gnssStopped") > 0.5, 10, "stopped its GNSS")
        before = energy.now()
        seconds, tpv = first_position(90, after=iso_seconds(last["time"]))
        after = energy.now()
        index_of = len(stopped["starts"])
        # The start record has its TTFF at the energy file's next rewrite (100 ms).
        start = wait_for(lambda s: len(s["starts"]) > index_of
                         and "ttff_s" in s["starts"][index_of], 5, "recorded the first fix")[
            "starts"][index_of]
        aiding = [a for a in after["aiding"] if a["at_s"] >= before["clock_s"]]
        checks = []
        for aid in aiding:
            if aid["kind"] == "time":
                given = aid["given"]
                then = aid["utc_then"]
                checks.append(abs(iso_seconds(given) - iso_seconds(then)))
        position = next((a for a in aiding if a["kind"] == "position"), None)
        return {
            "aided": aided, "ttff_s": start.get("ttff_s"), "start": start["kind"],
            "to_first_tpv_s": seconds, "charge_mAh": after["charge_mAh"] - before["charge_mAh"],
            "aiding": [(a["kind"], a["phase"], a["usable"]) for a in aiding],
            "time_error_s": checks[0] if checks else None,
            "position_error_m": None if position is None else distance_m(
                position["lat"], position["lon"], last["lat"], last["lon"]),
            "first_fix": (tpv["lat"], tpv["lon"]),
            # The aim: the aiding right (time within 1 s of UTC, the last fix's
            # position) and in before the acquisition starts.
            "aim": ("met" if len(aiding) == 2 and all(p == "beforeAcquisition" and u
                                                     for _, p, u in [
                                                         (a["kind"], a["phase"], a["usable"])
                                                         for a in aiding])
                    and checks and checks[0] < 1 and position is not None
                    and distance_m(position["lat"], position["lon"], last["lat"],
                                   last["lon"]) < 1 else "not met") if aided else "-",
        }
    finally:
        if serve:
            stop(serve)
        energy.stop()
        stop(replay)
        replay_log.close()
        serve_log.close()


def iso_seconds(text):
    """Seconds of an ISO 8601 UTC time, to the millisecond."""
    import datetime
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def distance_m(lat1, lon1, lat2, lon2):
    """Great-circle distance in metres (a sphere of 6371 km)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371000 * math.asin(math.sqrt(h))


def bench_aiding_main(argv):
    """`--cases f [--runs f=N] [--serialgps PATH] [--json]`: (f) alone, its runs with and
    without aiding side by side (two lanes); True when it ran (the other cases then do not)."""
    if "--cases" not in argv or argv[argv.index("--cases") + 1] != "f":
        return False
    binary = argv[argv.index("--serialgps") + 1] if "--serialgps" in argv else os.path.join(
        REPO, ".build", "release", "serialgps")
    runs = 3
    if "--runs" in argv:
        runs = int(argv[argv.index("--runs") + 1].partition("f=")[2] or 3)
    scratch = tempfile.mkdtemp(prefix="serialgps-bench-aiding-")
    logs = argv[argv.index("--logs") + 1] if "--logs" in argv else scratch
    os.makedirs(logs, exist_ok=True)
    os.environ.setdefault("SERIALGPS_RUNTIME_DIR", scratch)
    load_before = os.getloadavg()
    began = time.monotonic()
    results = {True: [], False: []}
    errors = []

    def lane(aided):
        for index in range(runs):
            try:
                results[aided].append(aiding_run(binary, scratch, logs, aided, index))
            except Exception as error:
                errors.append("f %s run %d: %r" % ("aided" if aided else "plain", index, error))

    threads = [threading.Thread(target=lane, args=(a,)) for a in (True, False)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    load_after = os.getloadavg()
    report = {
        "machine": "%s, %d cores" % (os.uname().machine, os.cpu_count()),
        "load_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "binary": os.path.relpath(binary, REPO), "wall_s": round(time.monotonic() - began, 1),
        "errors": errors, "aided": results[True], "plain": results[False],
    }
    if "--json" in argv:
        print(json.dumps(report, indent=1))
    else:
        print("bench-power (f): %s; %s, load %s -> %s; time scale 1, %.0f s wall" % (
            FIGURES["name"], report["machine"], report["load_1min"][0],
            report["load_1min"][1], report["wall_s"]))
        print("(f) a cold start (backup lost) after a fix, with and without aiding")
        print("  %-11s %7s %9s %9s %7s %8s %7s %8s  %s" % (
            "", "TTFF s", "to TPV s", "mAh", "start", "time s", "pos m", "aim", "aiding (phase)"))
        for label, key in (("aided", True), ("not aided", False)):
            for index, r in enumerate(results[key]):
                print("  %-11s %7s %9.2f %9.4f %7s %8s %7s %8s  %s" % (
                    "%s %d" % (label, index + 1), fmt(r["ttff_s"], 2), r["to_first_tpv_s"],
                    r["charge_mAh"], r["start"], fmt(r["time_error_s"], 3),
                    fmt(r["position_error_m"], 1), r["aim"],
                    ", ".join("%s %s%s" % (k, p, "" if u else " unusable")
                              for k, p, u in r["aiding"]) or "none"))
            if results[key]:
                print("  %-11s %7s %9s %9s" % (
                    "median", fmt(median([r["ttff_s"] for r in results[key]]), 2),
                    fmt(median([r["to_first_tpv_s"] for r in results[key]]), 2),
                    fmt(median([r["charge_mAh"] for r in results[key]]), 4)))
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    return True


if __name__ == "__main__":
    main()
