#!/usr/bin/env python3
"""Serial time from `serialgps serve --time` and gpsd 3.22 against a simulated receiver's truth.

    scripts/bench-time.py [--serialgps PATH] [--epochs N] [--baud 9600,115200]
                          [--pacing fifo,usb] [--no-chrony] [--json]
                          [--per-epoch] [--serve-log PATH]

A simulated receiver writes one epoch a second (GGA, GSA, three GSV, RMC, VTG: about 500
bytes), its first byte `--delay` (100 ms) after the second it names. Its bytes cross a UART at
the baud rate (byte i has arrived 10·(i+1)/baud after the epoch starts) and reach the reader
in one of two pacings:

- fifo: 16-byte chunks, each when its last byte has arrived (a 16550's FIFO trigger);
- usb: as a USB-serial bridge (FTDI) delivers them: a packet of what has arrived so far when
  62 bytes are waiting or when its 16 ms latency timer expires, whichever is first. A read
  then returns up to 62 bytes at once, late by up to 16 ms for its last byte.

The truth is when the epoch's first byte crossed the line (its stop bit), plus the least of
the simulator's lateness in writing the epoch's packets (its own scheduling, which no reader
can see). Not the lateness of the first packet alone: a byte cannot come faster than the line
rate, so every later packet of the epoch also bounds when the first byte crossed, and a first
packet written late (Python's sleep after most of a second idle wakes milliseconds late now
and then) is a late delivery a reader can see through, like its own late wake-up.

- serialgps: `serve --time` on the pty's device side (`--baud` the same rate). A pty has no
  modem lines, which makes serialgps take it for a line without a rate (`unpaced`); the
  script preloads a small shim (built with gcc) that answers the modem-line ioctls for it, so
  serialgps sees a UART at the baud rate, as it would a ttyS or ttyUSB, and dates each epoch's
  first byte back from the read that returned it (docs/time.md, the back-dating rule).
- gpsd 3.22: gpsd refuses to give time from a pty (SOURCE_PTY in its timehint.c), so it reads
  `tcp://` from this script, which writes every packet to that socket right after writing it
  to the pty (the same bytes, microseconds apart). That stands in for `socat` between the pty
  and gpsd, without socat's own relay latency.

Each server has a watcher with `?WATCH={"enable":true,"json":true,"pps":true}`; its TOFF
reports give, per epoch, the receiver's second (`real`) and the system time the server took as
the epoch's time (`clock`). Error = clock − truth, per epoch, after the first 10 epochs.
serialgps' `clock` is the first byte's arrival (no offset applied); gpsd 3.22's is the time it
latched the cycle (after its first timed sentence). Reported: count, p50, p99, max, in ms.

The same run feeds one chronyd (`chronyd -x`, refclocks `noselect`, poll 1 s): serialgps's SOCK
(refid SGPS) and SHM unit 70 (SGSH), gpsd's SHM unit 0 (GPSD, where gpsd as root puts serial
time); `chronyc sourcestats` at the end of each run gives chrony's own offset (the receiver's
delay, 100 ms, plus the server's error) and standard deviation for each.

--per-epoch prints, on standard error, each epoch's error for both servers beside the least
lateness of the simulator's writes and how its first four packets were written (lateness,
time the write took, bytes): an outlier the simulator caused shows there. --serve-log keeps
serve's standard error.

Default PATH: .build/release/serialgps, else .build/debug/serialgps. serve writes NTP SHM units
70 and 71 (removed afterwards); gpsd, as root, takes units 0 and 1 as it always does: do not
run this where ntpd or chrony reads them.
"""

import argparse
import shutil
import tempfile
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


MODEM_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/ioctl.h>

/* A pty answers the modem-line ioctls with ENOTTY; a UART does not. Answer them (DSR and CTS
   up, DCD down) so that serialgps treats the pty as a UART at its baud rate. TIOCMIWAIT is
   left alone: a PPS on DCD is refused as on a pty. */
int ioctl(int fd, unsigned long request, ...) {
  static int (*real)(int, unsigned long, ...);
  if (!real) real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
  va_list arguments;
  va_start(arguments, request);
  void *argument = va_arg(arguments, void *);
  va_end(arguments);
  int result = real(fd, request, argument);
  if (result == -1 && errno == ENOTTY &&
      (request == TIOCMBIS || request == TIOCMBIC || request == TIOCMSET || request == TIOCMGET)) {
    if (request == TIOCMGET && argument) *(int *)argument = TIOCM_DSR | TIOCM_CTS;
    errno = 0;
    return 0;
  }
  return result;
}
"""


def build_modem_shim(directory):
    source = os.path.join(directory, "modem-lines.c")
    library = os.path.join(directory, "modem-lines.so")
    with open(source, "w") as f:
        f.write(MODEM_SHIM)
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-O2", "-o", library, source, "-ldl"])
    return library


class Chronyd:
    """chronyd without control of the clock, with a refclock for each server's serial time."""

    def __init__(self, directory, serialgps_socket):
        self.directory = directory
        self.command_socket = os.path.join(directory, "chronyd.sock")
        config = os.path.join(directory, "chrony.conf")
        with open(config, "w") as f:
            f.write("refclock SOCK %s refid SGPS poll 0 filter 8 noselect\n" % serialgps_socket)
            f.write("refclock SHM 70 refid SGSH poll 0 filter 8 noselect\n")
            f.write("refclock SHM 0 refid GPSD poll 0 filter 8 noselect\n")
            f.write("pidfile %s/chronyd.pid\nbindcmdaddress %s\ncmdport 0\nport 0\n"
                    % (directory, self.command_socket))
        self.process = subprocess.Popen(
            ["chronyd", "-x", "-u", "root", "-d", "-f", config],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(serialgps_socket):
                break
            time.sleep(0.01)

    def sourcestats(self):
        """{refid: (samples, offset ms, standard deviation ms)}."""
        run = subprocess.run(
            ["chronyc", "-n", "-c", "-h", self.command_socket, "sourcestats"],
            capture_output=True, text=True)
        figures = {}
        for line in run.stdout.splitlines():
            fields = line.split(",")
            if len(fields) >= 8:
                figures[fields[0]] = (
                    int(fields[1]), round(float(fields[6]) * 1000, 3),
                    round(float(fields[7]) * 1000, 3))
        return figures

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def packets(data, start, baud, pacing):
    """(due time, bytes) of each delivery of an epoch whose first byte starts at `start`."""
    byte_time = 10.0 / baud
    if pacing == "fifo":
        for offset in range(0, len(data), 16):
            piece = data[offset:offset + 16]
            yield start + (offset + len(piece)) * byte_time, piece
        return
    # usb: a packet when 62 bytes are waiting or 16 ms after the last packet, if any waits.
    offset = 0
    timer = start
    while offset < len(data):
        timer += 0.016
        full = start + (offset + 62) * byte_time
        due = min(timer, full)
        arrived = min(len(data), int((due - start) / byte_time + 1e-9))
        if arrived <= offset:
            continue
        count = min(arrived - offset, 62)
        due = min(due, start + (offset + count) * byte_time) if count == 62 else due
        yield due, data[offset:offset + count]
        offset += count
        timer = due



def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def per_epoch(baud, delay, truth, deliveries, watchers):
    """Prints, per epoch, each server's error and how the epoch's packets were written."""
    print("second      " + "  ".join("%10s" % w.name for w in watchers)
          + "  least late ms   first packets: due→write lateness ms, write took ms, bytes",
          file=sys.stderr)
    for second in sorted(truth):
        errors = []
        for watcher in watchers:
            clock = watcher.toff.get(second)
            errors.append("%10.3f" % ((clock[0] - truth[second]) * 1000) if clock else "%10s" % "-")
        packets_text = "; ".join(
            "%+.3f %.3f %d" % ((written - due) * 1000, (after - written) * 1000, count)
            for due, written, after, count in deliveries.get(second, []))
        least = (truth[second] - (second + delay + 10.0 / baud)) * 1000
        print("%d  %s  %13.3f   %s" % (second, "  ".join(errors), least, packets_text),
              file=sys.stderr)


def run(baud, pacing, args, binary, shim, scratch):
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
    directory = tempfile.mkdtemp(prefix="chronyd-", dir=scratch)
    serialgps_socket = os.path.join(directory, "serialgps.sock")
    chronyd = None if args.no_chrony else Chronyd(directory, serialgps_socket)
    environment = dict(os.environ, LD_PRELOAD=shim)
    serve = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:%d" % serve_port, "--time", "--ntp-shm", "70",
         "--chrony-socket", serialgps_socket, "--pps", "none", "--baud", str(baud),
         "--chipset", "nmea", device],
        stdout=null, stderr=open(args.serve_log or os.path.join(directory, "serve.log"), "w"), env=environment)
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
    second = int(time.time()) + 1
    reads = []
    deliveries = {}  # second: [(due, written, after the write, bytes)] of its first packets
    stats = {}
    try:
        for _ in range(args.epochs):
            data = epoch(second)
            start = second + args.delay
            first = True
            lateness = None
            for due, piece in packets(data, start, baud, pacing):
                left = due - time.time()
                if left > 0:
                    time.sleep(left)
                written = time.time()
                os.write(master, piece)
                after = time.time()
                feed.sendall(piece)
                if args.per_epoch and len(deliveries.setdefault(second, [])) < 4:
                    deliveries[second].append((due, written, after, len(piece)))
                late = max(0.0, written - due)
                lateness = late if lateness is None else min(lateness, late)
                if first:
                    reads.append(len(piece))
                    first = False
            # The first byte crossed the line 10/baud after the epoch started. Every packet of
            # the epoch bounds it (a byte cannot come faster than the line rate), so what no
            # reader can see is only the lateness all of them shared: the least of it is added.
            truth[second] = start + 10.0 / baud + lateness
            second += 1
        time.sleep(1.5)
        if chronyd:
            stats = chronyd.sourcestats()
    finally:
        for watcher in watchers:
            watcher.stop = True
        serve.terminate()
        gpsd.terminate()
        serve.wait(10)
        gpsd.wait(10)
        if chronyd:
            chronyd.stop()
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
    if args.per_epoch:
        per_epoch(baud, args.delay, truth, deliveries, watchers)
    results["first_packet_bytes"] = sorted(reads)[len(reads) // 2] if reads else None
    results["chronyc_sourcestats"] = stats
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serialgps")
    parser.add_argument("--epochs", type=int, default=130)
    parser.add_argument("--baud", default="9600,115200")
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--pacing", default="fifo,usb")
    parser.add_argument("--no-chrony", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve-log", help="keep serve's standard error in this file")
    parser.add_argument("--per-epoch", action="store_true",
                        help="print each epoch's error and its first packets' writes (stderr)")
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
    if not args.no_chrony and not shutil.which("chronyd"):
        sys.exit("chronyd is not installed (apt-get install chrony), or pass --no-chrony")
    scratch = tempfile.mkdtemp(prefix="serialgps-bench-time-")
    shim = build_modem_shim(scratch)
    loads = [open("/proc/loadavg").read().split()[0]]
    report = {
        "machine": "%s, %d cores" % (platform.processor() or platform.machine(), os.cpu_count()),
        "serialgps": binary,
        "epochs": args.epochs,
        "delay_s": args.delay,
        "runs": {},
    }
    try:
        for pacing in args.pacing.split(","):
            for baud in [int(b) for b in args.baud.split(",")]:
                report["runs"]["%s %d" % (pacing, baud)] = run(
                    baud, pacing, args, binary, shim, scratch)
                loads.append(open("/proc/loadavg").read().split()[0])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report["load_1min"] = loads
    if args.json:
        print(json.dumps(report))
        return
    print("machine: %s, 1-minute load %s; serialgps: %s; %d epochs, first byte %.0f ms after "
          "the second" % (report["machine"], "/".join(loads), binary, args.epochs,
                          args.delay * 1000))
    print("%-12s %-10s %6s %9s %9s %9s   %s" % (
        "run", "server", "count", "p50 ms", "p99 ms", "max ms",
        "chronyc sourcestats: refid samples offset ms sd ms"))
    refids = {"serialgps": ("SGPS", "SGSH"), "gpsd": ("GPSD",)}
    for name_run, results in report["runs"].items():
        stats = results["chronyc_sourcestats"]
        for name in ("serialgps", "gpsd"):
            figures = results[name]
            chrony = "; ".join(
                "%s %d %+.3f %.3f" % ((refid,) + tuple(stats[refid]))
                for refid in refids[name] if refid in stats)
            print("%-12s %-10s %6d %9s %9s %9s   %s" % (
                name_run, name, figures["count"], figures["p50_ms"], figures["p99_ms"],
                figures["max_ms"], chrony))


if __name__ == "__main__":
    main()
