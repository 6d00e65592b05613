#!/usr/bin/env python3
"""Fleet benchmark: many receivers publishing through one local mosquitto to a consumer.

Publishers one after the other in the same run, on the same broker settings and the same
consumer:

  floor         the floor of the set-up: scripts/fleet-floor.c, libmosquitto publishing
                precomputed TPV+SKY payloads at the same instants, no driver behind them, one
                connection per receiver (floor-1: all through one connection)
  fleet-bench   FleetBridge with N in-process replays (GPSReceiver over ReplayConnector)
  serve         `serialgps serve --listen none --mqtt … --mqtt-gating always` reading N ptys
  gpsd          what people do today: per receiver a gpsd reading its pty and
                `gpspipe -w | mosquitto_pub -l` publishing every line it prints

The ptys are fed by this script: every epoch of the recording to every pty at the recorded
rate (all receivers in step, as GPS receivers are: their epochs are aligned on GPS time).
The consumer is mosquitto_sub on serialgps/+/tpv, which stamps each message as it arrives
(%U, CLOCK_REALTIME). Latency is from the epoch's completion to that stamp: for the ptys, the
moment os.write() of the epoch's last byte returned; for the in-process replays, the moment
the driver's reader took the epoch's last bytes (fleet-bench records it); for the floor, the
tick's instant, before its first publication.

Reported per publisher: TPVs delivered, latency p50 / p99 / max, CPU time of the publishing
processes (floor; fleet-bench; serve; gpsd + gpspipe + mosquitto_pub) per published fix, their
memory (PSS) per receiver, and the broker's CPU per fix.

    scripts/bench-fleet.py --repeat 3               # 200 receivers, 1 Hz and 10 Hz
    scripts/bench-fleet.py --receivers 50 --rates 10 --seconds 10 --publishers fleet-bench,gpsd

Needs: release builds of serialgps and fleet-bench (SERIALGPS_BENCHMARKS=1 swift build -c
release: the benchmarks are targets only with it set), mosquitto,
mosquitto-clients, gpsd and gpsd-clients; for the floor, cc and libmosquitto-dev.
"""

import argparse
import bisect
import importlib.util
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tty

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The helpers scripts/bench-server.py already has: a free port, a process's CPU time, a
# percentile, the machine's description.
_spec = importlib.util.spec_from_file_location(
    "bench_server", os.path.join(REPO, "scripts", "bench-server.py"))
bench_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_server)
free_port = bench_server.free_port
percentile = bench_server.percentile
machine = bench_server.machine
FIXTURES = {1: "fixtures/ublox-m8-drive.nmea", 10: "fixtures/rtk-high-precision.nmea"}
TIME = re.compile(rb'"time":"\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d\.\d\d\d)Z"')
CLASS_TPV = b'"class":"TPV"'


def epochs_of(path):
    """The recording's body as epochs (one burst per RMC), each with its RMC time as
    HH:MM:SS.mmm, the key the consumer's TPV time is matched on."""
    epochs, current, key = [], [], None
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"#"):
                continue
            line = line.rstrip(b"\r\n") + b"\r\n"
            if line[3:6] == b"RMC":
                if current:
                    epochs.append((key, b"".join(current)))
                current = []
                field = line.split(b",")[1].decode()
                fraction = (field[7:] + "000")[:3] if len(field) > 6 else "000"
                key = "%s:%s:%s.%s" % (field[0:2], field[2:4], field[4:6], fraction)
            current.append(line)
    if current:
        epochs.append((key, b"".join(current)))
    return epochs


def wait_for_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def cpu_seconds(pids):
    total = 0.0
    for pid in pids:
        try:
            total += bench_server.cpu_seconds(pid)
        except OSError:
            pass
    return total


def thread_cpu_seconds(pids, name):
    """CPU time of the threads called `name` (serialgps-mqtt: the bridge's thread)."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            tasks = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for task in tasks:
            try:
                with open("/proc/%d/task/%s/comm" % (pid, task)) as handle:
                    if handle.read().strip() != name:
                        continue
                with open("/proc/%d/task/%s/stat" % (pid, task)) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / ticks
            except OSError:
                pass
    return total


def pss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/smaps_rollup" % pid) as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class Broker:
    def __init__(self, directory):
        self.port = free_port()
        config = os.path.join(directory, "mosquitto.conf")
        with open(config, "w") as handle:
            if os.geteuid() == 0:
                handle.write("user root\n")
            handle.write("persistence false\nlog_dest none\n")
            handle.write("listener %d 127.0.0.1\nallow_anonymous true\n" % self.port)
            # Room for every publisher's connection and the queued QoS 0 messages.
            handle.write("max_connections -1\nmax_queued_messages 10000\n")
        self.process = subprocess.Popen(["mosquitto", "-c", config],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_for_port(self.port):
            raise RuntimeError("mosquitto did not start")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class Consumer:
    """mosquitto_sub on serialgps/+/tpv: (receipt ns, receiver id, epoch key) per TPV."""

    def __init__(self, port):
        self.received = []
        self.process = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv5",
             "-t", "serialgps/+/tpv", "-F", "%U %t %p"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=1 << 20)
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        for line in self.process.stdout:
            if CLASS_TPV not in line:
                continue
            parts = line.split(b" ", 2)
            if len(parts) < 3:
                continue
            match = TIME.search(parts[2])
            if not match:
                continue
            seconds, _, fraction = parts[0].partition(b".")
            stamp = int(seconds) * 1_000_000_000 + int((fraction + b"000000000")[:9])
            receiver = parts[1].split(b"/")[1].decode()
            self.received.append((stamp, receiver, match.group(1).decode()))

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.thread.join(timeout=10)


class Feeder:
    """Writes every epoch to every pty at the recorded rate; stamps when each write returned."""

    def __init__(self, count, epochs, rate, spread):
        self.masters, self.paths, self.slaves = [], [], []
        for _ in range(count):
            master, slave = os.openpty()
            tty.setraw(slave)
            os.set_blocking(master, False)
            self.masters.append(master)
            self.slaves.append(slave)
            self.paths.append(os.ttyname(slave))
        self.epochs, self.interval, self.spread = epochs, 1.0 / rate, spread
        self.stamps = {}  # (receiver, key) -> [ns, …]
        self.dropped = 0
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.thread.start()

    def run(self):
        start = time.monotonic()
        index = 0
        while self.running:
            key, burst = self.epochs[index % len(self.epochs)]
            tick = start + index * self.interval
            for number, master in enumerate(self.masters):
                if self.spread:
                    delay = tick + self.interval * number / len(self.masters) - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                try:
                    written = os.write(master, burst)
                except BlockingIOError:
                    written = 0
                now = time.time_ns()
                if written < len(burst):
                    self.dropped += 1
                    continue
                self.stamps.setdefault(("r%d" % number, key), []).append(now)
            index += 1
            delay = start + index * self.interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def stop(self):
        self.running = False
        self.thread.join(timeout=10)
        for descriptor in self.masters + self.slaves:
            os.close(descriptor)


def stamps_from_file(path):
    stamps = {}
    with open(path) as handle:
        for line in handle:
            receiver, key, ns = line.split()
            stamps.setdefault((receiver, key), []).append(int(ns))
    return stamps


def match(received, stamps, window):
    """For each epoch completed in the window (and a little before its end, so its TPV can
    still arrive), the latency of its TPV: the first receipt after the completion of the same
    receiver's epoch with the same time (recordings loop, so a time recurs)."""
    for values in stamps.values():
        values.sort()
    arrivals = {}
    for stamp, receiver, key in received:
        arrivals.setdefault((receiver, key), []).append(stamp)
    for values in arrivals.values():
        values.sort()
    latencies = []
    completed = 0
    for key, values in stamps.items():
        got = arrivals.get(key, [])
        for value in values:
            if not window[0] <= value <= window[1] - 500_000_000:
                continue
            completed += 1
            position = bisect.bisect_left(got, value)
            if position < len(got):
                latencies.append(got[position] - value)
    return sorted(latencies), completed


def build_floor(directory):
    """Compiles scripts/fleet-floor.c into `directory`; returns the program's path."""
    program = os.path.join(directory, "fleet-floor")
    subprocess.run(["cc", "-O2", "-o", program, os.path.join(REPO, "scripts", "fleet-floor.c"),
                    "-lmosquitto"], check=True)
    return program


def floor_payloads(arguments, recording, directory):
    """The TPV and SKY payloads serialgps makes of the recording (the same encoder)."""
    path = os.path.join(directory, "payloads.jsonl")
    with open(path, "w") as handle:
        subprocess.run([os.path.join(arguments.binaries, "serialgps"), "decode", "--json",
                        recording], stdout=handle, check=True)
    return path


def run(publisher, arguments, rate):
    recording = os.path.join(REPO, FIXTURES[rate])
    epochs = epochs_of(recording)
    count = arguments.receivers
    directory = tempfile.mkdtemp(prefix="bench-fleet-")
    os.chmod(directory, 0o755)
    broker = Broker(directory)
    consumer = Consumer(broker.port)
    url = "mqtt://127.0.0.1:%d" % broker.port
    processes, feeder, stamps_file = [], None, None
    total = arguments.warmup + arguments.seconds
    try:
        time.sleep(0.3)  # the consumer subscribes
        if publisher in ("floor", "floor-1"):
            if arguments.spread:
                raise RuntimeError("the floor publishes its receivers' epochs all at once only")
            stamps_file = os.path.join(directory, "stamps")
            process = subprocess.Popen(
                [build_floor(directory), "--broker-port", str(broker.port),
                 "--receivers", str(count), "--rate", str(rate), "--seconds", str(total + 1),
                 "--payloads", floor_payloads(arguments, recording, directory),
                 "--stamps", stamps_file,
                 "--connections", "1" if publisher == "floor-1" else str(count)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            processes.append(process)
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError("fleet-floor did not start")
        elif publisher == "fleet-bench":
            stamps_file = os.path.join(directory, "stamps")
            process = subprocess.Popen(
                [os.path.join(arguments.binaries, "fleet-bench"), "--broker", url,
                 "--receivers", str(count), "--fixture", recording,
                 "--seconds", str(total + 1), "--stamps", stamps_file,
                 "--spread", str(int(1000 / rate) if arguments.spread else 0)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            processes.append(process)
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError("fleet-bench did not start")
        else:
            feeder = Feeder(count, epochs, rate, arguments.spread)
            if publisher == "serve":
                command = [os.path.join(arguments.binaries, "serialgps"), "serve", "--listen",
                           "none", "--linger", "0", "--chipset", "nmea", "--baud", "115200",
                           "--mqtt", url, "--mqtt-gating", "always"]
                for number in range(count):
                    command += ["--mqtt-id", "r%d" % number]
                processes.append(subprocess.Popen(command + feeder.paths,
                                                  stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))
            else:
                for number, path in enumerate(feeder.paths):
                    port = free_port()
                    gpsd = subprocess.Popen(["gpsd", "-N", "-n", "-S", str(port), path],
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
                    processes.append(gpsd)
                    wait_for_port(port)
                    pipe = subprocess.Popen(["gpspipe", "-w", "127.0.0.1:%d" % port],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                    publish = subprocess.Popen(
                        ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker.port), "-V",
                         "mqttv5", "-l", "-t", "serialgps/r%d/tpv" % number],
                        stdin=pipe.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    pipe.stdout.close()
                    processes += [pipe, publish]
            time.sleep(0.5)
            feeder.start()
        pids = [process.pid for process in processes]
        time.sleep(arguments.warmup)
        window_start = time.time_ns()
        cpu_start = cpu_seconds(pids)
        bridge_start = thread_cpu_seconds(pids, "serialgps-mqtt")
        broker_start = cpu_seconds([broker.process.pid])
        time.sleep(arguments.seconds)
        window_end = time.time_ns()
        cpu = cpu_seconds(pids) - cpu_start
        bridge_cpu = thread_cpu_seconds(pids, "serialgps-mqtt") - bridge_start
        broker_cpu = cpu_seconds([broker.process.pid]) - broker_start
        memory = pss_kib(pids)
        time.sleep(0.5)  # the last messages arrive
        if feeder:
            feeder.stop()
            stamps = feeder.stamps
        else:
            processes[0].wait(timeout=total + 60)
            stamps = stamps_from_file(stamps_file)
        latencies, completed = match(consumer.received, stamps, (window_start, window_end))
        return {
            "latencies": latencies, "completed": completed, "cpu": cpu,
            "bridge_cpu": bridge_cpu,
            "broker_cpu": broker_cpu, "pss_kib": memory,
            "dropped": feeder.dropped if feeder else 0,
        }
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        consumer.stop()
        broker.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--receivers", type=int, default=200)
    parser.add_argument("--rates", default="1,10", help="epochs per second: 1 and/or 10")
    parser.add_argument("--seconds", type=int, default=20, help="measured seconds per run")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--publishers", default="fleet-bench,serve,gpsd")
    parser.add_argument("--binaries", default=os.path.join(REPO, ".build/release"))
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds, interleaved; each figure is the median over them")
    parser.add_argument("--spread", action="store_true",
                        help="spread the receivers' epochs over the interval instead of "
                             "all at once (GPS receivers' are aligned on GPS time)")
    arguments = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    print("machine: " + machine())
    with open("/proc/loadavg") as handle:
        print("load average at start: " + " ".join(handle.read().split()[:3]))
    print("%d receivers, epochs %s, %d s measured after %d s warm-up per run, %d round(s), "
          "medians\n" % (arguments.receivers, "spread over the interval" if arguments.spread
                          else "all at once", arguments.seconds, arguments.warmup,
                          arguments.repeat))
    print("| publisher | rate | TPVs delivered | latency p50 | p99 | max | CPU per fix | "
          "of which the bridge thread | PSS per receiver | broker CPU per fix |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    publishers = arguments.publishers.split(",")
    for rate in [int(text) for text in arguments.rates.split(",")]:
        # Interleaved rounds, so that every publisher shares whatever else the machine does;
        # each figure is the median over the rounds.
        rounds = {publisher: [] for publisher in publishers}
        for _ in range(arguments.repeat):
            for publisher in publishers:
                rounds[publisher].append(run(publisher, arguments, rate))
        for publisher in publishers:
            figures = []
            for result in rounds[publisher]:
                latencies = [value / 1e6 for value in result["latencies"]]
                delivered = max(1, len(latencies))
                figures.append({
                    "delivered": len(latencies), "completed": result["completed"],
                    "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99),
                    "max": latencies[-1] if latencies else float("nan"),
                    "cpu": 1e6 * result["cpu"] / delivered,
                    "bridge": 1e6 * result["bridge_cpu"] / delivered,
                    "pss": result["pss_kib"] / arguments.receivers,
                    "broker": 1e6 * result["broker_cpu"] / delivered,
                    "dropped": result["dropped"],
                })

            def median(name):
                return statistics.median(figure[name] for figure in figures)

            delivered = sum(figure["delivered"] for figure in figures)
            completed = max(1, sum(figure["completed"] for figure in figures))
            bridge = ("%.1f µs" % median("bridge")
                      if publisher in ("fleet-bench", "serve") else "–")
            print("| %s | %d Hz | %d of %d (%.1f %%) | %.2f ms | %.2f ms | %.2f ms | %.1f µs | "
                  "%s | %.0f KiB | %.1f µs |" % (
                      publisher, rate, delivered, completed, 100.0 * delivered / completed,
                      median("p50"), median("p99"), median("max"), median("cpu"), bridge,
                      median("pss"), median("broker")))
            dropped = sum(figure["dropped"] for figure in figures)
            if dropped:
                print("|  | | (%d epochs could not be written: a pty was full) | | | | | | | |"
                      % dropped)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
