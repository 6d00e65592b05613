#!/usr/bin/env python3
"""Server memory with clients that never read: peak, and what comes back once they are dropped.

`serialgps replay FIXTURE --fast --loop` feeds `serialgps serve --linger 0` as fast as the
server reads. N watchers connect, send ?WATCH={"enable":true,"json":true}; and never read a
byte: the receiver is powered while they are connected. The server should drop each of them
when its backlog passes the limit (256 KiB by default), then put the receiver to standby. The
server's VmRSS and RssAnon are sampled from /proc every 50 ms the whole time:

  baseline   median over 2 s before the watchers connect (listening, receiver in standby)
  bound      baseline + 4 MB (a running receiver's own cost) + N x 256 KiB
  peak       the highest sample while the non-readers are connected
  after      median over the last 2 s of a 5 s quiet period after the last one was dropped
             (or, when the server did not drop them all within --timeout, after they closed)

    scripts/stress-server-memory.py                      # N = 1, 20, 60, debug build
    scripts/stress-server-memory.py --clients 60 --binary .build/release/serialgps
    scripts/stress-server-memory.py --serve-arg=--client-send-buffer=kernel
    scripts/stress-server-memory.py --reader      # plus one watcher that reads throughout

With --reader, one more watcher connects first and reads everything (a thread of this script);
the baseline is then taken with it connected and the receiver running. At --fast the feed can
outrun a Python reader on a loaded machine: the server then drops it too, as it should.

Everything is on loopback and bounded in time (--timeout per run, 60 s by default). The bound
the server promises: peak <= baseline + N x backlog limit, after <= baseline + a few MB.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

from serve_harness import REPO, machine_line, split_serve_args, start_replay, start_serve, stop

# What a running receiver costs beyond the idle baseline (its threads' stacks, the decoder,
# code and data pages first touched), and what "a few MB" is for the memory coming back.
SLACK_KIB = 4 * 1024
WATCH = b'?WATCH={"enable":true,"json":true};\n'


def memory_kib(pid):
    """(VmRSS, RssAnon) in KiB, or None once the process is gone."""
    try:
        with open("/proc/%d/status" % pid) as handle:
            text = handle.read()
    except OSError:
        return None
    values = {}
    for key in ("VmRSS", "RssAnon"):
        match = re.search(r"^%s:\s+(\d+) kB" % key, text, re.M)
        values[key] = int(match.group(1)) if match else 0
    return values["VmRSS"], values["RssAnon"]


class Sampler(threading.Thread):
    """Samples the server's memory every 50 ms, each sample tagged with the current phase."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples = []  # (time, phase, rss, anon)
        self.phase = "start"
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            values = memory_kib(self.pid)
            if values is None:
                return
            self.samples.append((time.monotonic(), self.phase, values[0], values[1]))
            time.sleep(0.05)

    def of(self, phase, last_seconds=None):
        chosen = [s for s in self.samples if s[1] == phase]
        if last_seconds is not None and chosen:
            end = chosen[-1][0]
            chosen = [s for s in chosen if s[0] >= end - last_seconds]
        return chosen


class Reader(threading.Thread):
    """The watcher that reads everything; counts the TPVs it gets."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(WATCH)
        self.tpvs = 0
        self.stopped = threading.Event()

    def run(self):
        self.sock.settimeout(0.5)
        marker = b'"class":"TPV"'
        tail = b""
        while not self.stopped.is_set():
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            # Counted without splitting lines: this client must keep up with a fast server.
            self.tpvs += (tail + data[:len(marker) - 1]).count(marker) + data.count(marker)
            tail = data[-(len(marker) - 1):]

    def close(self):
        self.stopped.set()
        self.join(2)
        self.sock.close()


def run_once(args, clients):
    log_path = "/tmp/stress-server-memory-%d.log" % os.getpid()
    log = open(log_path, "w+")
    replay, device = start_replay(args.binary, [args.fixture, "--fast", "--loop"],
                                  subprocess.DEVNULL)
    serve = None
    result = {"clients": clients}
    sampler = None
    reader = None
    stalled = []
    try:
        serve, port = start_serve(args.binary, ["--linger", "0", "--max-clients",
                                                str(max(64, clients + 2))]
                                  + args.serve_arg + [device], log)
        sampler = Sampler(serve.pid)
        sampler.phase = "idle"
        sampler.start()
        time.sleep(1)
        if args.reader:
            reader = Reader(port)
            reader.start()
            time.sleep(args.settle)
        sampler.phase = "baseline"
        time.sleep(2)
        tpvs_before = reader.tpvs if reader else 0
        sampler.phase = "stalled"
        begin = time.monotonic()
        for _ in range(clients):
            sock = socket.create_connection(("127.0.0.1", port))
            if args.client_receive_buffer:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.client_receive_buffer)
            sock.sendall(WATCH)
            stalled.append(sock)
        # Dropped clients are seen in the server's log ("dropped client …: it stopped reading").
        dropped = 0
        while time.monotonic() - begin < args.timeout:
            log.seek(0)
            dropped = log.read().count("dropped client")
            if dropped >= clients:
                break
            time.sleep(0.1)
        result["dropped"] = dropped
        result["drop_seconds"] = time.monotonic() - begin if dropped >= clients else None
        time.sleep(0.5)
        sampler.phase = "after"
        for sock in stalled:
            sock.close()
        stalled = []
        time.sleep(5)
        if reader:
            result["reader_tpvs_during"] = reader.tpvs - tpvs_before
            result["reader_alive"] = reader.is_alive()
        sampler.phase = "end"
    finally:
        for sock in stalled:
            sock.close()
        if reader:
            reader.close()
        if sampler:
            sampler.stopped.set()
        if serve:
            stop(serve, 20)
        stop(replay)
        log.close()

    def median(phase, column, last=None):
        values = [s[column] for s in sampler.of(phase, last)]
        return statistics.median(values) if values else float("nan")

    result["baseline_rss"] = median("baseline", 2)
    result["baseline_anon"] = median("baseline", 3)
    stalled_samples = sampler.of("stalled") + sampler.of("after", 0.5)
    result["peak_rss"] = max(s[2] for s in stalled_samples)
    result["peak_anon"] = max(s[3] for s in stalled_samples)
    result["after_rss"] = median("after", 2, last=2)
    result["after_anon"] = median("after", 3, last=2)
    if args.trace:
        origin = sampler.samples[0][0]
        for stamp, phase, rss, anon in sampler.samples[::10]:
            print("  %6.2f s  %-8s VmRSS %7d KiB  RssAnon %7d KiB"
                  % (stamp - origin, phase, rss, anon))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(REPO, ".build/debug/serialgps"))
    parser.add_argument("--fixture", default=os.path.join(REPO, "fixtures/ublox-m8-drive.nmea"))
    parser.add_argument("--clients", default="1,20,60",
                        help="comma-separated numbers of non-reading watchers, one run each")
    parser.add_argument("--repeat", type=int, default=1, help="runs per number of clients")
    parser.add_argument("--timeout", type=float, default=60,
                        help="seconds to wait for the server to drop the non-readers")
    parser.add_argument("--settle", type=float, default=3,
                        help="seconds the reading watcher runs before the baseline")
    parser.add_argument("--client-receive-buffer", type=int, default=0,
                        help="SO_RCVBUF of the non-reading clients (default: the kernel's)")
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="extra argument for serve (repeat), e.g. --serve-arg=--max-clients=100")
    parser.add_argument("--reader", action="store_true",
                        help="one more watcher that reads throughout")
    parser.add_argument("--trace", action="store_true", help="print every 10th sample")
    args = parser.parse_args()
    args.serve_arg = split_serve_args(args.serve_arg)
    print(machine_line(args.binary))
    print("%8s %8s %9s %9s %9s %9s %9s %9s %7s %8s" % (
        "clients", "base MB", "peak MB", "after MB", "anon bs", "anon pk", "anon aft",
        "bound MB", "dropped", "drop s"))
    failures = 0
    for clients in [int(n) for n in args.clients.split(",")]:
        for _ in range(args.repeat):
            r = run_once(args, clients)
            bound = r["baseline_rss"] + SLACK_KIB + clients * 256
            print("%8d %8.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7d %8s" % (
                clients, r["baseline_rss"] / 1024, r["peak_rss"] / 1024,
                r["after_rss"] / 1024, r["baseline_anon"] / 1024, r["peak_anon"] / 1024, r["after_anon"] / 1024,
                bound / 1024, r["dropped"],
                "%.1f" % r["drop_seconds"] if r["drop_seconds"] is not None
                else "> %d" % args.timeout))
            if args.reader and (not r["reader_alive"] or r["reader_tpvs_during"] == 0):
                print("         the reading watcher got no TPV meanwhile (or was dropped)")
                failures += 1
            if r["peak_rss"] > bound or r["after_rss"] > r["baseline_rss"] + SLACK_KIB:
                failures += 1
            sys.stdout.flush()
    print("bound: peak <= baseline + 4 MB + N x 256 KiB; after <= baseline + 4 MB; %s"
          % ("held" if failures == 0 else "NOT held in %d run(s)" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
