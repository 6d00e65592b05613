#!/usr/bin/env python3
"""A burst of short-lived watchers against `serialgps serve` on a simulated MediaTek receiver:
how many power cycles it causes, how soon a real watcher gets a fix, how soon SIGTERM ends it.

`serialgps replay fixtures/mtk-cold-start.nmea --chipset mtk --loop` is the receiver (a pty; its
standard error logs every command it receives: `← wake from standby`, `← $PMTK161,0 standby`),
`serialgps serve --linger 0 --chipset mtk DEVICE` the server. Each client of a burst connects,
sends ?WATCH={"enable":true};, reads the VERSION line and closes (8 threads, as fast as they go).

  cycles     a burst of --clients (1000); a watcher (`gpspipe -w`-like: ?WATCH json, read) starts
             half-way through. Reported: the burst's duration, the watcher's time to its first
             TPV, and the wake and standby commands the receiver got, counted once they stop
             coming for 3 s (or at --timeout, marked "still coming").
  sigterm    a burst of --sigterm-clients (500); 2 s later SIGTERM to serve. Reported: the time
             until serve exited, its exit status, and the standby commands sent after SIGTERM.

Targets (issue 14, item 1): at most a handful of power cycles; the watcher's first TPV within
one epoch plus the wake-up time; SIGTERM answered within a second plus one standby exchange.

    scripts/stress-server-burst.py                       # both, debug build
    scripts/stress-server-burst.py --mode sigterm --binary .build/release/serialgps

Loopback only; every wait is bounded by --timeout (60 s), after which the figure is "> 60 s"
and the processes are killed.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from serve_harness import REPO, machine_line, split_serve_args, start_replay, start_serve, stop

SHORT_WATCH = b'?WATCH={"enable":true};\n'
JSON_WATCH = b'?WATCH={"enable":true,"json":true};\n'


class Rig:
    """The simulated receiver and the server, with the receiver's command log."""

    def __init__(self, args):
        self.directory = tempfile.mkdtemp(prefix="stress-burst-")
        self.replay_log_path = os.path.join(self.directory, "replay.log")
        self.serve_log_path = os.path.join(self.directory, "serve.log")
        self.replay_log = open(self.replay_log_path, "w")
        self.serve_log = open(self.serve_log_path, "w")
        self.replay, device = start_replay(
            args.binary, [args.fixture, "--chipset", "mtk", "--loop"], self.replay_log)
        try:
            self.serve, self.port = start_serve(
                args.binary, ["--linger", "0", "--chipset", "mtk"] + args.serve_arg + [device],
                self.serve_log)
        except RuntimeError:
            stop(self.replay)
            raise

    def commands(self):
        """(wakes, standbys) the receiver has received so far."""
        with open(self.replay_log_path, errors="replace") as handle:
            text = handle.read()
        return text.count("\u2190 wake"), text.count("\u2190 $PMTK161,0")

    def close(self):
        for process in (self.serve, self.replay):
            stop(process)
        self.replay_log.close()
        self.serve_log.close()


def burst(port, clients, threads=8, halfway=None):
    """Runs `clients` connect/WATCH/VERSION/close clients over `threads` threads; calls
    `halfway` once half of them are done. Returns (seconds, clients that got VERSION)."""
    done = [0]
    served = [0]
    lock = threading.Lock()
    fired = threading.Event()

    def one():
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            sock.sendall(SHORT_WATCH)
            data = b""
            while b"\n" not in data:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
            return b'"class":"VERSION"' in data
        finally:
            sock.close()

    def worker(count):
        for _ in range(count):
            try:
                ok = one()
            except OSError:
                ok = False
            with lock:
                done[0] += 1
                served[0] += ok
                if halfway and not fired.is_set() and done[0] >= clients // 2:
                    fired.set()
                    threading.Thread(target=halfway, daemon=True).start()

    begin = time.monotonic()
    workers = [threading.Thread(target=worker, args=(clients // threads + (i < clients % threads),))
               for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return time.monotonic() - begin, served[0]


def first_tpv(port, result, timeout):
    """A gpspipe -w-like watcher: seconds from its connect to its first TPV (None: none)."""
    begin = time.monotonic()
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        sock.sendall(JSON_WATCH)
        sock.settimeout(0.5)
        data = b""
        while time.monotonic() - begin < timeout:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            data = data[-64:] + chunk
            if b'"class":"TPV"' in data:
                result["tpv"] = time.monotonic() - begin
                break
        result["socket"] = sock
    except OSError as error:
        result["error"] = str(error)
    result["done"] = True


def wait_settled(rig, timeout, quiet=3.0):
    """Waits until the receiver gets no command for `quiet` s; (wakes, standbys, settled)."""
    deadline = time.monotonic() + timeout
    last = rig.commands()
    last_change = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = rig.commands()
        if now != last:
            last, last_change = now, time.monotonic()
        elif time.monotonic() - last_change >= quiet:
            return now + (True,)
    return last + (False,)


def seconds(value, timeout):
    return "> %d s" % timeout if value is None else "%.2f s" % value


def run_cycles(args):
    rig = Rig(args)
    watcher = {}
    try:
        time.sleep(1)
        before = rig.commands()
        watcher_thread = []

        def start_watcher():
            thread = threading.Thread(target=first_tpv, args=(rig.port, watcher, args.timeout),
                                      daemon=True)
            thread.start()
            watcher_thread.append(thread)

        duration, served = burst(rig.port, args.clients, halfway=start_watcher)
        burst_end = time.monotonic()
        for thread in watcher_thread:
            thread.join(args.timeout + 1)
        wakes, standbys, settled = wait_settled(
            rig, max(1.0, args.timeout - (time.monotonic() - burst_end)))
        print("cycles: %d clients in %.2f s (%d got VERSION); watcher's first TPV after %s; "
              "receiver got %d wakes and %d standbys (%s)%s"
              % (args.clients, duration, served, seconds(watcher.get("tpv"), args.timeout),
                 wakes - before[0], standbys - before[1],
                 "then quiet" if settled else "still coming after %d s" % args.timeout,
                 "; watcher error: " + watcher["error"] if "error" in watcher else ""))
        sys.stdout.flush()
        if "socket" in watcher:
            watcher["socket"].close()
    finally:
        rig.close()


def run_sigterm(args):
    rig = Rig(args)
    try:
        time.sleep(1)
        duration, served = burst(rig.port, args.sigterm_clients)
        time.sleep(2)
        wakes_before, standbys_before = rig.commands()
        begin = time.monotonic()
        rig.serve.send_signal(signal.SIGTERM)
        try:
            status = rig.serve.wait(args.timeout)
            elapsed = time.monotonic() - begin
        except subprocess.TimeoutExpired:
            status, elapsed = None, None
        time.sleep(0.5)
        _, standbys_after = rig.commands()
        print("sigterm: %d clients in %.2f s (%d got VERSION), SIGTERM 2 s later; serve ended "
              "after %s (exit status %s); %d standbys sent after SIGTERM (before it: %d wakes, "
              "%d standbys)"
              % (args.sigterm_clients, duration, served, seconds(elapsed, args.timeout),
                 "-" if status is None else status, standbys_after - standbys_before,
                 wakes_before, standbys_before))
        sys.stdout.flush()
    finally:
        rig.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(REPO, ".build/debug/serialgps"))
    parser.add_argument("--fixture", default=os.path.join(REPO, "fixtures/mtk-cold-start.nmea"))
    parser.add_argument("--mode", choices=["cycles", "sigterm", "both"], default="both")
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--sigterm-clients", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="extra argument for serve (repeat), e.g. --serve-arg=--max-clients=100")
    args = parser.parse_args()
    args.serve_arg = split_serve_args(args.serve_arg)
    print(machine_line(args.binary))
    sys.stdout.flush()
    for _ in range(args.repeat):
        if args.mode in ("cycles", "both"):
            run_cycles(args)
        if args.mode in ("sigterm", "both"):
            run_sigterm(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
