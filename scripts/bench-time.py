#!/usr/bin/env python3
"""Serial time from `serialgps serve --time` and gpsd 3.22 against a simulated receiver's truth.

    scripts/bench-time.py [--serialgps PATH] [--epochs N] [--baud 9600,115200] [--json]

A simulated receiver writes one epoch a second (GGA, GSA, three GSV, RMC, VTG: about 500
bytes), its first byte `--delay` (100 ms) after the second it names, paced as a UART at the
baud rate sends it (16-byte chunks, each when its last byte would have arrived: a 16550's FIFO
trigger). The truth is the system time of the write of each epoch's first chunk: when its
first byte could be read.

- serialgps: `serve --time` on the pty's device side (`--baud` the same rate; a pty has no
  line rate, so nothing is dated back: the first chunk's read is the arrival).
- gpsd 3.22: gpsd refuses to give time from a pty (SOURCE_PTY in its timehint.c), so it reads
  `tcp://` from this script, which writes every chunk to that socket right after writing it to
  the pty (the same bytes, microseconds apart). That stands in for `socat` between the pty and
  gpsd, without socat's own relay latency.

Each server has a watcher with `?WATCH={"enable":true,"json":true,"pps":true}`; its TOFF
reports give, per epoch, the receiver's second (`real`) and the system time the server took as
the epoch's time (`clock`). Error = clock − truth, per epoch, after the first 10 epochs.
serialgps' `clock` is the first byte's arrival (no offset applied); gpsd 3.22's is the time it
latched the cycle (after its last sentence). Reported: count, p50, p99, max, in milliseconds.

Default PATH: .build/release/serialgps, else .build/debug/serialgps. Runs without chronyd
(TOFF carries the figures). serve writes NTP SHM units 70 and 71 (removed afterwards); gpsd,
as root, takes units 0 and 1 as it always does: do not run this where ntpd or chrony reads
them.
"""

import argparse
import json
import os
import platform
import select
import socket
import statistics
import subprocess
import sys
import threading
import time
import tty


def sentence(body):
    checksum = 0
    for byte in body.encode():
        checksum ^= byte
    return ("$%s*%02X\r\n" % (body, checksum)).encode()


def epoch(second):
    moment = time.gmtime(second)
    hhmmss = time.strftime("%H%M%S", moment) + ".00"
    ddmmyy = time.strftime("%d%m%y", moment)
    out = sentence("GPGGA,%s,4807.0380,N,01131.0000,E,1,08,0.9,545.4,M,46.9,M,," % hhmmss)
    out += sentence("GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,1.8,0.9,1.5")
    for n in range(3):
        sats = ",".join(
            "%02d,%02d,%03d,%02d" % (1 + 4 * n + k, 20 + k, 40 * k + n, 30 + k) for k in range(4)
        )
        out += sentence("GPGSV,3,%d,12,%s" % (n + 1, sats))
    out += sentence(
        "GPRMC,%s,A,4807.0380,N,01131.0000,E,0.02,31.66,%s,,,A" % (hhmmss, ddmmyy)
    )
    out += sentence("GPVTG,31.66,T,,M,0.02,N,0.04,K,A")
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Watcher(threading.Thread):
    """Collects the TOFF reports of one server: {real second: clock seconds}."""

    def __init__(self, port, name):
        super().__init__(daemon=True)
        self.port = port
        self.name = name
        self.toff = {}
        self.stop = False

    def run(self):
        for _ in range(200):
            try:
                sock = socket.create_connection(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            print("%s: cannot connect to port %d" % (self.name, self.port), file=sys.stderr)
            return
        sock.sendall(b'?WATCH={"enable":true,"json":true,"pps":true};\n')
        buffer = b""
        while not self.stop:
            ready, _, _ = select.select([sock], [], [], 0.2)
            if not ready:
                continue
            data = sock.recv(65536)
            if not data:
                return
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    report = json.loads(line)
                except ValueError:
                    continue
                if report.get("class") == "TOFF":
                    self.toff[report["real_sec"]] = (
                        report["clock_sec"] + report["clock_nsec"] / 1e9,
                        report["real_nsec"],
                    )


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(baud, args, binary):
    master, slave = os.openpty()
    tty.setraw(slave)
    device = os.ttyname(slave)
    gpsd_feed = socket.socket()
    gpsd_feed.bind(("127.0.0.1", 0))
    gpsd_feed.listen(1)
    feed_port = gpsd_feed.getsockname()[1]
    serve_port = free_port()
    gpsd_port = free_port()
    null = open(os.devnull, "w")
    serve = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:%d" % serve_port, "--time", "--ntp-shm", "70",
         "--chrony-socket", "/tmp/serialgps-bench-time-absent.sock", "--baud", str(baud),
         "--chipset", "nmea", device],
        stdout=null, stderr=null)
    gpsd = subprocess.Popen(
        ["gpsd", "-N", "-n", "-S", str(gpsd_port), "tcp://127.0.0.1:%d" % feed_port],
        stdout=null, stderr=null)
    gpsd_feed.settimeout(10)
    feed, _ = gpsd_feed.accept()
    feed.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    watchers = [Watcher(serve_port, "serialgps"), Watcher(gpsd_port, "gpsd")]
    for watcher in watchers:
        watcher.start()
    time.sleep(1.5)
    truth = {}
    chunk = 16
    chunk_time = chunk * 10.0 / baud
    second = int(time.time()) + 1
    try:
        for _ in range(args.epochs):
            data = epoch(second)
            start = second + args.delay
            for offset in range(0, len(data), chunk):
                piece = data[offset:offset + chunk]
                due = start + (offset + len(piece)) * 10.0 / baud
                left = due - time.time()
                if left > 0:
                    time.sleep(left)
                if offset == 0:
                    # When the epoch's first byte can be read: the truth.
                    truth[second] = time.time()
                os.write(master, piece)
                feed.sendall(piece)
            second += 1
        time.sleep(1.5)
    finally:
        for watcher in watchers:
            watcher.stop = True
        serve.terminate()
        gpsd.terminate()
        serve.wait(10)
        gpsd.wait(10)
        os.close(master)
        os.close(slave)
        for unit in (70, 71):
            subprocess.call(["ipcrm", "-M", str(0x4E545030 + unit)], stdout=null, stderr=null)
        feed.close()
        gpsd_feed.close()
    results = {}
    for watcher in watchers:
        errors = [
            (clock - truth[real]) * 1000.0
            for real, (clock, _) in watcher.toff.items()
            if real in truth and real >= min(truth) + 10
        ]
        results[watcher.name] = {
            "count": len(errors),
            "p50_ms": round(percentile(errors, 0.5), 3) if errors else None,
            "p99_ms": round(percentile(errors, 0.99), 3) if errors else None,
            "max_ms": round(max(errors), 3) if errors else None,
            "real_nsec": sorted({nsec for _, nsec in watcher.toff.values()})[:3],
        }
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serialgps")
    parser.add_argument("--epochs", type=int, default=130)
    parser.add_argument("--baud", default="9600,115200")
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = args.serialgps
    if not binary:
        for kind in ("release", "debug"):
            candidate = os.path.join(root, ".build", kind, "serialgps")
            if os.access(candidate, os.X_OK):
                binary = candidate
                break
    if not binary:
        sys.exit("build serialgps first: swift build -c release --product serialgps")
    report = {
        "machine": "%s, %d cores, load %s" % (
            platform.processor() or platform.machine(), os.cpu_count(),
            open("/proc/loadavg").read().split()[0]),
        "serialgps": binary,
        "epochs": args.epochs,
        "delay_s": args.delay,
        "runs": {},
    }
    for baud in [int(b) for b in args.baud.split(",")]:
        report["runs"][str(baud)] = run(baud, args, binary)
    if args.json:
        print(json.dumps(report))
        return
    print("machine: %s; serialgps: %s; %d epochs, first byte %.0f ms after the second"
          % (report["machine"], binary, args.epochs, args.delay * 1000))
    print("%-7s %-10s %6s %9s %9s %9s" % ("baud", "server", "count", "p50 ms", "p99 ms", "max ms"))
    for baud, results in report["runs"].items():
        for name, figures in results.items():
            print("%-7s %-10s %6d %9s %9s %9s" % (
                baud, name, figures["count"], figures["p50_ms"], figures["p99_ms"],
                figures["max_ms"]))


if __name__ == "__main__":
    main()
