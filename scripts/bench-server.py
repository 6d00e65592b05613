#!/usr/bin/env python3
"""Fix latency and clients served at once: `serialgps serve` beside gpsd, on the same feed.

Feeds a recording (default fixtures/ublox-m8-drive.nmea) epoch by epoch into a pty; the server
under test reads the pty's other side. N clients connect, send ?WATCH={"enable":true,
"json":true} and read. For every epoch and client the latency is the time from the moment
os.write() of the epoch's bytes (its last byte included) returned to the moment that client
read the TPV carrying the epoch's time. Also reported: how many of the expected TPVs arrived,
how many clients the server accepted, and the server's CPU time per epoch.

    scripts/bench-server.py --server serialgps --binary .build/release/serialgps
    scripts/bench-server.py --server gpsd
    scripts/bench-server.py --server both --clients 1,10,64,200,1000 --epochs 200

All timestamps are CLOCK_MONOTONIC in this one process. The clients are read by one thread
with epoll, so with many clients the later ones in an epoll batch include the time spent
reading the earlier ones; that artefact is the same for both servers.
"""

import argparse
import os
import platform
import re
import resource
import select
import socket
import statistics
import subprocess
import sys
import time
import tty

from serve_harness import free_port

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def epochs_of(path):
    """The recording's body split into epochs (one burst per $xxRMC), with each epoch's
    ISO time as gpsd writes it (from RMC's time and date)."""
    lines = []
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"#"):
                continue
            lines.append(line.rstrip(b"\r\n") + b"\r\n")
    epochs = []
    current = []
    stamp = None
    for line in lines:
        if line[3:6] == b"RMC":
            if current:
                epochs.append((stamp, b"".join(current)))
            current = []
            fields = line.split(b",")
            hhmmss, date = fields[1].decode(), fields[9].decode()
            stamp = None
            if len(hhmmss) >= 6 and len(date) == 6:
                stamp = "20%s-%s-%sT%s:%s:%s.000Z" % (
                    date[4:6], date[2:4], date[0:2], hhmmss[0:2], hhmmss[2:4], hhmmss[4:6])
        current.append(line)
    if current:
        epochs.append((stamp, b"".join(current)))
    return epochs


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


class Server:
    def __init__(self, kind, binary, pty_path, port):
        self.kind = kind
        if kind == "gpsd":
            command = ["gpsd", "-N", "-n", "-S", str(port), pty_path]
        else:
            command = [binary, "serve", "--listen", "127.0.0.1:%d" % port, "--linger", "0",
                       "--baud", "9600", "--chipset", "nmea", "--max-clients", "4000",
                       pty_path]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        self.port = port

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


TIME = re.compile(rb'"time":"([^"]+)"')


def run(kind, binary, count, epochs, interval, warmup, measured_epochs):
    master, slave = os.openpty()
    tty.setraw(slave)
    pty_path = os.ttyname(slave)
    port = free_port()
    server = Server(kind, binary, pty_path, port)
    clients = []
    refused = 0
    poller = select.epoll()
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setblocking(False)
            clients.append(sock)
        for sock in clients:
            try:
                sock.sendall(b'?WATCH={"enable":true,"json":true}\n')
            except OSError:
                pass  # refused: found closed below
        buffers = {sock.fileno(): b"" for sock in clients}
        alive = {sock.fileno(): sock for sock in clients}
        for sock in clients:
            poller.register(sock.fileno(), select.EPOLLIN)
        latencies = []
        received = 0
        expected = 0
        writes = {}

        def drain(until):
            nonlocal received
            while True:
                timeout = until - time.monotonic()
                if timeout <= 0:
                    return
                for fd, _ in poller.poll(timeout):
                    sock = alive.get(fd)
                    if sock is None:
                        continue
                    try:
                        data = sock.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    now = time.monotonic_ns()
                    if not data:
                        poller.unregister(fd)
                        del alive[fd]
                        continue
                    lines = (buffers[fd] + data).split(b"\n")
                    buffers[fd] = lines.pop()
                    for line in lines:
                        if b'"class":"TPV"' not in line:
                            continue
                        match = TIME.search(line)
                        if match and match.group(1) in writes:
                            latencies.append(now - writes[match.group(1)])
                            received += 1

        cpu_start = None
        for index, (stamp, burst) in enumerate(epochs[:warmup + measured_epochs]):
            if index == warmup:
                cpu_start = cpu_seconds(server.process.pid)
                latencies.clear()
                received = 0
            os.write(master, burst)
            written = time.monotonic_ns()
            if index >= warmup and stamp:
                writes[stamp.encode()] = written
                expected += len(alive)
            drain(time.monotonic() + interval)
        drain(time.monotonic() + 1.0)
        cpu = cpu_seconds(server.process.pid) - (cpu_start or 0)
        measured = max(1, len(writes))
        refused = count - len(alive)
        return {
            "latencies": sorted(latencies), "received": received, "expected": expected,
            "served": len(alive), "refused": refused, "cpu_per_epoch": cpu / measured,
        }
    finally:
        for sock in clients:
            sock.close()
        server.stop()
        os.close(master)
        os.close(slave)


def percentile(values, fraction):
    if not values:
        return float("nan")
    index = min(len(values) - 1, int(round(fraction * (len(values) - 1))))
    return values[index]


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores online, Linux %s" % (model, os.cpu_count(), platform.release())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["serialgps", "gpsd", "both"], default="both")
    parser.add_argument("--binary", default=os.path.join(REPO, ".build/release/serialgps"))
    parser.add_argument("--recording", default=os.path.join(REPO, "fixtures/ublox-m8-drive.nmea"))
    parser.add_argument("--clients", default="1,10,64,200,1000")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between epochs")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per server and client count, interleaved; latencies pooled")
    arguments = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    epochs = [epoch for epoch in epochs_of(arguments.recording)]
    kinds = ["serialgps", "gpsd"] if arguments.server == "both" else [arguments.server]
    print("machine: " + machine())
    with open("/proc/loadavg") as handle:
        print("load average at start: " + " ".join(handle.read().split()[:3]))
    print("feed: %s, %d epochs measured after %d warm-up, one every %.0f ms, %d run(s) each"
          % (os.path.basename(arguments.recording), arguments.epochs, arguments.warmup,
             arguments.interval * 1000, arguments.repeat))
    print()
    print("| server | clients asked | served | TPVs delivered | latency p50 | p99 | max | server CPU per epoch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    measured = min(arguments.epochs, len(epochs) - arguments.warmup)
    for count in [int(text) for text in arguments.clients.split(",")]:
        pooled = {kind: {"latencies": [], "received": 0, "expected": 0, "served": [], "cpu": []}
                  for kind in kinds}
        # Interleaved, so that both servers share whatever else the machine is doing.
        for _ in range(arguments.repeat):
            for kind in kinds:
                result = run(kind, arguments.binary, count, epochs, arguments.interval,
                             arguments.warmup, measured)
                total = pooled[kind]
                total["latencies"] += result["latencies"]
                total["received"] += result["received"]
                total["expected"] += result["expected"]
                total["served"].append(result["served"])
                total["cpu"].append(result["cpu_per_epoch"])
        for kind in kinds:
            total = pooled[kind]
            values = sorted(value / 1e6 for value in total["latencies"])
            delivered = total["received"] / total["expected"] if total["expected"] else 0
            print("| %s | %d | %d | %.1f %% | %.3f ms | %.3f ms | %.3f ms | %.3f ms |" % (
                kind, count, min(total["served"]), 100 * delivered,
                percentile(values, 0.5), percentile(values, 0.99),
                values[-1] if values else float("nan"),
                statistics.median(total["cpu"]) * 1000))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
