#!/usr/bin/env python3
"""gpsd 3.22 and `serialgps watch` on the same feed through a pty, measured the same way.

    scripts/gpsd-bench.py [--serialgps PATH] [--epochs N] [--trials N] [--seconds S] [--json]

The feed is a u-blox-like receiver at 1 Hz (RMC, GGA, GSA, three GSV, GST: about 500 bytes
an epoch), written to the controller side of a pty; both programs open the device side.
Default PATH: .build/release/serialgps (build it with `swift build -c release --product
serialgps`).

1. Fix latency to a client: from just before an epoch is written (one write, ~500 bytes) to
   the client process's TPV line for that epoch read here. Clients: `gpspipe -w` on gpsd,
   and `serialgps watch --json` itself; both pass through one more process and a pipe to this
   script, so the harness costs both the same. (Timing from the epoch's last byte does not
   work for gpsd: it reports the cycle when its GSV ends, before the GST that closes the
   feed's epoch, so its TPV would come "before" the last byte.) One epoch at a time, about
   every 20 ms, after a warm-up in which both learn which sentence ends the cycle.
2. First fix after a client asks: gpsd without -n (it opens the device when a client
   watches): from sending ?WATCH to the first TPV with mode >= 2, and to gpsd's first answer;
   serialgps: from starting `serialgps watch --json --count 1` to its TPV line. The feed runs at
   1 Hz of wall time throughout, as a receiver that streams on its own does; each trial starts
   at another point of the feed's second. Also from the write of the epoch that TPV reports
   to the TPV: about 0 when the epoch was reported at its own end, about 1 s when the program
   waited for the next epoch to begin (NaN when the harness has no time for that epoch: its
   write had found the pty full while nobody read).
3. Wake-ups: context switches of every thread of the process, from /proc/PID/task/*/status,
   over S seconds (voluntary ones count the wake-ups; involuntary ones are preemptions): gpsd without -n and no client; gpsd -n (device open) with and without the
   feed; gpsd with a watching client at 1 Hz; `serialgps watch` at 1 Hz.
4. Memory while streaming to one client: VmRSS, VmHWM, RssAnon, RssFile from
   /proc/PID/status and Pss from /proc/PID/smaps_rollup.
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
import termios
import threading
import time
import tty


def sentence(body):
    checksum = 0
    for byte in body.encode():
        checksum ^= byte
    return "$%s*%02X\r\n" % (body, checksum)


def epoch(index):
    second = index % 86400
    t = "%02d%02d%02d.00" % (second // 3600, second // 60 % 60, second % 60)
    return (
        sentence("GNRMC,%s,A,4722.61420,N,00832.50210,E,0.012,,300326,,,A,V" % t)
        + sentence("GNGGA,%s,4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,," % t)
        + sentence("GNGSA,A,3,01,03,08,11,14,17,22,28,,,,,1.50,0.90,1.20,1")
        + sentence("GPGSV,3,1,10,01,40,120,38,03,20,300,35,08,65,045,42,11,12,190,30,1")
        + sentence("GPGSV,3,2,10,14,33,250,39,17,55,310,44,22,25,080,36,28,48,150,41,1")
        + sentence("GPGSV,3,3,10,30,05,020,,32,09,340,,1")
        + sentence("GNGST,%s,1.0,2.0,1.5,45.0,1.2,1.6,2.5" % t)
    ).encode()


def epoch_key(iso_time):
    """The epoch index (second of the day) of a TPV time `2026-03-30THH:MM:SS.000Z`."""
    clock = iso_time.split("T")[1]
    hours, minutes, seconds = clock.rstrip("Z").split(":")
    return int(hours) * 3600 + int(minutes) * 60 + int(float(seconds))


class Pty:
    """A pty whose controller side plays the receiver. This script keeps the device side open
    so that the pair survives programs opening and closing it."""

    def __init__(self):
        self.controller, self.device = os.openpty()
        tty.setraw(self.device)
        self.path = os.ttyname(self.device)
        # Like a real serial port: group dialout, read-write for the group. gpsd drops root
        # (to user gpsd, group dialout) when it does not open the device at once (no -n).
        try:
            import grp
            os.chown(self.path, -1, grp.getgrnam("dialout").gr_gid)
            os.chmod(self.path, 0o660)
        except (KeyError, PermissionError):
            pass
        os.set_blocking(self.controller, False)
        self.lock = threading.Lock()

    def write(self, data):
        """Writes what fits; a receiver's bytes are lost too while nobody reads."""
        with self.lock:
            try:
                return os.write(self.controller, data)
            except BlockingIOError:
                return 0

    def flush_input(self):
        """Discards what piled up on the device side while no program read it."""
        termios.tcflush(self.device, termios.TCIFLUSH)

    def drain_output(self):
        """Reads (and drops) what programs wrote to the receiver."""
        while True:
            try:
                if not os.read(self.controller, 4096):
                    return
            except (BlockingIOError, OSError):
                return


class Feeder:
    """Writes epoch N at wall-clock second N (1 Hz) until stopped."""

    def __init__(self, pty, start_index=0):
        self.pty = pty
        self.index = start_index
        self.written = {}  # epoch key → monotonic ns when its write returned
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        next_time = time.monotonic()
        while self.running:
            if self.pty.write(epoch(self.index)):
                self.written[self.index % 86400] = time.monotonic_ns()
            self.pty.drain_output()
            self.index += 1
            next_time += 1.0
            time.sleep(max(0.0, next_time - time.monotonic()))

    def stop(self):
        self.running = False
        self.thread.join()


class LineReader:
    """Collects a child's output lines with the monotonic time each was read."""

    def __init__(self, stream):
        self.stream = stream
        self.lines = []
        self.condition = threading.Condition()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        buffer = b""
        descriptor = self.stream.fileno()
        while True:
            chunk = os.read(descriptor, 65536)
            now = time.monotonic_ns()
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                with self.condition:
                    self.lines.append((now, line.decode(errors="replace")))
                    self.condition.notify_all()

    def wait_for(self, predicate, timeout):
        """The first (time, line) after those already taken that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                for index, (stamp, line) in enumerate(self.lines):
                    if predicate(line):
                        del self.lines[: index + 1]
                        return stamp, line
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.condition.wait(remaining)


def tpv(line):
    if '"class":"TPV"' not in line:
        return None
    try:
        return json.loads(line)
    except ValueError:
        return None


def distribution(samples_us):
    ordered = sorted(samples_us)

    def pick(p):
        return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * p))]

    return {
        "median_us": round(statistics.median(ordered), 1),
        "p90_us": round(pick(0.9), 1),
        "p99_us": round(pick(0.99), 1),
        "max_us": round(ordered[-1], 1),
        "samples": len(ordered),
    }


def switches(pid):
    """Context switches per thread id: (name, voluntary, involuntary)."""
    result = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except FileNotFoundError:
        return result
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as status:
                fields = dict(
                    line.split(":", 1) for line in status.read().splitlines() if ":" in line
                )
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as comm:
                name = comm.read().strip()
        except FileNotFoundError:
            continue
        result[int(tid)] = (
            name,
            int(fields["voluntary_ctxt_switches"]),
            int(fields["nonvoluntary_ctxt_switches"]),
        )
    return result


def wakeups(pid, seconds):
    before = switches(pid)
    started = time.monotonic()
    time.sleep(seconds)
    after = switches(pid)
    elapsed = time.monotonic() - started
    threads = []
    for tid, (name, voluntary, involuntary) in sorted(after.items()):
        _, v0, i0 = before.get(tid, (name, 0, 0))
        threads.append(
            {"tid": tid, "name": name, "voluntary": voluntary - v0, "involuntary": involuntary - i0}
        )
    # A voluntary switch is a thread going to sleep: one wake-up. Involuntary ones are
    # preemptions of a running thread (other load).
    voluntary = sum(t["voluntary"] for t in threads)
    return {
        "seconds": round(elapsed, 1),
        "voluntary": voluntary,
        "involuntary": sum(t["involuntary"] for t in threads),
        "wakeups_per_second": round(voluntary / elapsed, 2),
        "threads": threads,
    }


def memory(pid):
    figures = {}
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                figures[key] = int(value.split()[0])
    try:
        with open("/proc/%d/smaps_rollup" % pid) as rollup:
            for line in rollup:
                key, _, value = line.partition(":")
                if key == "Pss":
                    figures["Pss"] = int(value.split()[0])
    except FileNotFoundError:
        pass
    return figures


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Gpsd:
    def __init__(self, device, nowait):
        self.port = free_port()
        self.control = "/tmp/gpsd-bench-%d.sock" % os.getpid()
        command = ["gpsd", "-N", "-S", str(self.port), "-F", self.control]
        if nowait:
            command.append("-n")
        command.append(device)
        self.command = command
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        time.sleep(0.5)

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        self.process.terminate()
        self.process.wait()
        try:
            os.unlink(self.control)
        except FileNotFoundError:
            pass


def fix_latency(pty, client_command, epochs, first_index):
    """Latency from the epoch's last byte to the client's TPV line, per epoch."""
    client = subprocess.Popen(client_command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    reader = LineReader(client.stdout)
    index = first_index
    # Warm-up: both learn the end of the cycle only after a few epochs.
    time.sleep(1.0)
    for _ in range(20):
        pty.write(epoch(index))
        index += 1
        time.sleep(0.05)
        pty.drain_output()
    time.sleep(0.5)
    with reader.condition:
        reader.lines.clear()
    samples = []
    missed = 0
    for _ in range(epochs):
        time.sleep(0.002)
        start = time.monotonic_ns()
        pty.write(epoch(index))
        key = index % 86400

        def matches(line, key=key):
            report = tpv(line)
            return report is not None and "time" in report and epoch_key(report["time"]) == key

        found = reader.wait_for(matches, timeout=3.0)
        if found is None:
            missed += 1
        else:
            samples.append((found[0] - start) / 1000)
        index += 1
        pty.drain_output()
        time.sleep(0.015)
    client.terminate()
    client.wait()
    return distribution(samples), missed, index


def gpsd_first_fix(pty, trials):
    """gpsd without -n: from ?WATCH to the first answer and to the first TPV with a fix."""
    gpsd = Gpsd(pty.path, nowait=False)
    feeder = Feeder(pty, start_index=40000)
    answers, fixes, after_epoch = [], [], []
    for trial in range(trials):
        # gpsd has closed the device after the last client left; each trial starts 0.37 s
        # later in the feed's second than the one before.
        time.sleep(2.5 + (trial * 0.37) % 1.0)
        pty.flush_input()
        connection = socket.create_connection(("127.0.0.1", gpsd.port))
        connection.recv(4096)  # the VERSION banner, sent on connect
        start = time.monotonic_ns()
        connection.sendall(b'?WATCH={"enable":true,"json":true}\n')
        buffer = b""
        first_answer = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([connection], [], [], 1.0)
            if not ready:
                continue
            chunk = connection.recv(65536)
            now = time.monotonic_ns()
            if not chunk:
                break
            if first_answer is None:
                first_answer = now
            buffer += chunk
            found = False
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                report = tpv(line.decode(errors="replace"))
                if report and report.get("mode", 0) >= 2:
                    fixes.append((now - start) / 1e6)
                    written = feeder.written.get(epoch_key(report["time"]))
                    after_epoch.append((now - written) / 1e6 if written else float("nan"))
                    found = True
                    break
            if found:
                break
        answers.append((first_answer - start) / 1e6 if first_answer else float("nan"))
        connection.close()
    feeder.stop()
    gpsd.stop()
    return answers, fixes, after_epoch, gpsd.command


def serialgps_first_fix(pty, serialgps, trials):
    feeder = Feeder(pty, start_index=50000)
    fixes, after_epoch = [], []
    for trial in range(trials):
        time.sleep(1.3 + (trial * 0.37) % 1.0)
        pty.flush_input()
        start = time.monotonic_ns()
        client = subprocess.Popen(
            [serialgps, "watch", pty.path, "--baud", "9600", "--chipset", "nmea", "--json",
             "--count", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        reader = LineReader(client.stdout)
        found = reader.wait_for(lambda line: (tpv(line) or {}).get("mode", 0) >= 2, 30)
        if found:
            fixes.append((found[0] - start) / 1e6)
            written = feeder.written.get(epoch_key(tpv(found[1])["time"]))
            after_epoch.append((found[0] - written) / 1e6 if written else float("nan"))
        client.wait()
    feeder.stop()
    return fixes, after_epoch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serialgps", default=".build/release/serialgps")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    serialgps = os.path.abspath(arguments.serialgps)
    if not os.access(serialgps, os.X_OK):
        sys.exit("no serialgps at %s: swift build -c release --product serialgps" % serialgps)
    version = subprocess.run(["gpsd", "-V"], capture_output=True, text=True).stdout.strip()
    results = {"machine": "%s, %d CPUs, Linux %s" % (
        platform.processor() or platform.machine(), os.cpu_count(), platform.release()),
        "gpsd": version}

    def log(text):
        print(text, file=sys.stderr, flush=True)

    pty = Pty()

    # 1. Fix latency.
    log("fix latency: gpsd -N -n with gpspipe -w, %d epochs" % arguments.epochs)
    gpsd = Gpsd(pty.path, nowait=True)
    results["gpsd_command"] = " ".join(gpsd.command)
    latency, missed, index = fix_latency(
        pty, ["gpspipe", "-w", "127.0.0.1:%d" % gpsd.port], arguments.epochs, 0)
    results["fix_latency_gpsd_gpspipe"] = dict(latency, missed=missed)
    gpsd.stop()
    log("fix latency: serialgps watch --json, %d epochs" % arguments.epochs)
    latency, missed, index = fix_latency(
        pty, [serialgps, "watch", pty.path, "--baud", "9600", "--chipset", "nmea", "--json"],
        arguments.epochs, index + 100)
    results["fix_latency_serialgps_watch"] = dict(latency, missed=missed)

    # 2. First fix after a client asks.
    log("first fix: gpsd, %d trials" % arguments.trials)
    answers, fixes, after_epoch, command = gpsd_first_fix(pty, arguments.trials)
    results["gpsd_first_answer_ms"] = [round(x, 1) for x in answers]
    results["gpsd_first_fix_ms"] = [round(x, 1) for x in fixes]
    results["gpsd_first_fix_after_its_epoch_ms"] = [round(x, 1) for x in after_epoch]
    log("first fix: serialgps watch, %d trials" % arguments.trials)
    fixes, after_epoch = serialgps_first_fix(pty, serialgps, arguments.trials)
    results["serialgps_first_fix_ms"] = [round(x, 1) for x in fixes]
    results["serialgps_first_fix_after_its_epoch_ms"] = [round(x, 1) for x in after_epoch]

    # 3 and 4. Wake-ups and memory.
    seconds = arguments.seconds
    log("wake-ups: gpsd without -n, no client, feed at 1 Hz")
    gpsd = Gpsd(pty.path, nowait=False)
    feeder = Feeder(pty, start_index=60000)
    time.sleep(1)
    results["gpsd_idle_no_client"] = wakeups(gpsd.pid, seconds)
    results["gpsd_idle_no_client_memory"] = memory(gpsd.pid)
    feeder.stop()
    gpsd.stop()

    log("wake-ups: gpsd -n, no client, silent receiver")
    gpsd = Gpsd(pty.path, nowait=True)
    time.sleep(1)
    results["gpsd_n_no_client_silent"] = wakeups(gpsd.pid, seconds)
    log("wake-ups: gpsd -n, no client, feed at 1 Hz")
    feeder = Feeder(pty, start_index=61000)
    time.sleep(3)
    results["gpsd_n_no_client_streaming"] = wakeups(gpsd.pid, seconds)
    log("wake-ups and memory: gpsd -n, one gpspipe -w client, feed at 1 Hz")
    client = subprocess.Popen(
        ["gpspipe", "-w", "127.0.0.1:%d" % gpsd.port],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    results["gpsd_streaming_one_client"] = wakeups(gpsd.pid, seconds)
    results["gpsd_streaming_memory"] = memory(gpsd.pid)
    client.terminate()
    client.wait()
    feeder.stop()
    gpsd.stop()

    log("wake-ups and memory: serialgps watch at 1 Hz")
    feeder = Feeder(pty, start_index=62000)
    client = subprocess.Popen(
        [serialgps, "watch", pty.path, "--baud", "9600", "--chipset", "nmea"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    results["serialgps_watch_streaming"] = wakeups(client.pid, seconds)
    results["serialgps_watch_memory"] = memory(client.pid)
    client.send_signal(2)
    client.wait()
    feeder.stop()

    if arguments.json:
        print(json.dumps(results, indent=1))
        return
    print("machine: %s; %s" % (results["machine"], results["gpsd"]))
    for key in ("fix_latency_gpsd_gpspipe", "fix_latency_serialgps_watch"):
        print("%-36s %s" % (key, results[key]))
    for key in ("gpsd_first_answer_ms", "gpsd_first_fix_ms", "gpsd_first_fix_after_its_epoch_ms",
                "serialgps_first_fix_ms", "serialgps_first_fix_after_its_epoch_ms"):
        values = results[key]
        known = [value for value in values if value == value] or [float("nan")]  # not NaN
        print("%-36s median %.1f ms, max %.1f ms: %s" % (
            key, statistics.median(known), max(known), values))
    for key in ("gpsd_idle_no_client", "gpsd_n_no_client_silent", "gpsd_n_no_client_streaming",
                "gpsd_streaming_one_client", "serialgps_watch_streaming"):
        figures = results[key]
        threads = ", ".join(
            "%s[%d] %d+%d" % (t["name"], t["tid"], t["voluntary"], t["involuntary"])
            for t in figures["threads"])
        print("%-36s %.2f wake-ups/s (%d voluntary, %d involuntary in %.1f s): %s" % (
            key, figures["wakeups_per_second"], figures["voluntary"], figures["involuntary"],
            figures["seconds"], threads))
    for key in ("gpsd_idle_no_client_memory", "gpsd_streaming_memory", "serialgps_watch_memory"):
        print("%-36s %s" % (key, results[key]))


if __name__ == "__main__":
    main()
