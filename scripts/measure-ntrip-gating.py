#!/usr/bin/env python3
"""Measures what `serve --ntrip` costs the caster: RTKLIB's str2str as the caster, fed
fixtures/rtcm3-stream.rtcm3 in a loop; `serialgps replay` as the receiver; a gpsd watcher that
comes for ON seconds and goes for OFF seconds, CYCLES times. Every second it counts the
caster's established NTRIP connections (`ss`), and prints, per second, whether the watcher
was there and how many connections the caster had; then serve's own summary.

    scripts/measure-ntrip-gating.py BINARY [ON OFF CYCLES]

Loopback ports only; every process it starts is stopped at the end.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def established(port):
    out = subprocess.run(
        ["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
        capture_output=True, text=True).stdout
    return len([line for line in out.splitlines() if line.strip()])


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def main():
    binary = sys.argv[1]
    on, off, cycles = (int(x) for x in (sys.argv[2:5] if len(sys.argv) >= 5 else (30, 30, 3)))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = open(os.path.join(root, "fixtures", "rtcm3-stream.rtcm3"), "rb").read()
    work = tempfile.mkdtemp(prefix="ntrip-gating-")
    feed_port, caster_port, gpsd_port = free_port(), free_port(), free_port()
    processes = []
    stopping = threading.Event()
    try:
        caster = subprocess.Popen(
            ["str2str", "-in", f"tcpsvr://:{feed_port}",
             "-out", f"ntripc://user:pass@:{caster_port}/MOUNT"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "str2str.log"), "w"))
        processes.append(caster)
        assert wait_port(caster_port)

        def feed():
            with socket.create_connection(("127.0.0.1", feed_port)) as s:
                while not stopping.is_set():
                    for start in range(0, len(frames), 1024):
                        if stopping.is_set():
                            return
                        s.sendall(frames[start:start + 1024])
                        time.sleep(0.02)

        threading.Thread(target=feed, daemon=True).start()
        link = os.path.join(work, "gps0")
        replay = subprocess.Popen(
            [binary, "replay", os.path.join(root, "fixtures", "ublox-m8-drive.nmea"), "--loop",
             "--link", link],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "replay.log"), "w"))
        processes.append(replay)
        while not os.path.exists(link):
            time.sleep(0.05)
        env = dict(os.environ, SERIALGPS_NTRIP_CREDENTIALS="user:pass")
        serve_log = open(os.path.join(work, "serve.log"), "w")
        serve = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{gpsd_port}", "--linger", "1",
             "--state-dir", work, "--ntrip", f"ntrip://user@127.0.0.1:{caster_port}/MOUNT",
             link],
            env=env, stdout=subprocess.DEVNULL, stderr=serve_log)
        processes.append(serve)
        assert wait_port(gpsd_port)
        samples = []
        start = time.time()
        for _ in range(cycles):
            for watching, seconds in ((False, off), (True, on)):
                watcher = None
                if watching:
                    watcher = socket.create_connection(("127.0.0.1", gpsd_port))
                    watcher.sendall(b'?WATCH={"enable":true,"json":true};\n')
                    watcher.setblocking(False)
                for _ in range(seconds):
                    time.sleep(1)
                    if watcher:
                        try:
                            while watcher.recv(65536):
                                pass
                        except BlockingIOError:
                            pass
                    samples.append((round(time.time() - start), watching,
                                    established(caster_port)))
                if watcher:
                    watcher.close()
        time.sleep(3)
        samples.append((round(time.time() - start), False, established(caster_port)))
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=20)
        serve_log.close()
        print("second watcher connections")
        for second, watching, count in samples:
            print(f"{second:6d} {'yes' if watching else 'no ':>7} {count:11d}")
        unwatched = [c for _, w, c in samples if not w]
        watched = [c for _, w, c in samples if w]
        print(f"while nobody watched: at most {max(unwatched)} connection(s) "
              f"({sum(1 for c in unwatched if c)} of {len(unwatched)} seconds with one: "
              "the linger and the standby)")
        print(f"while watched: {sum(1 for c in watched if c)} of {len(watched)} seconds "
              "with a connection")
        print(open(os.path.join(work, "serve.log")).read())
    finally:
        stopping.set()
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()


if __name__ == "__main__":
    main()
