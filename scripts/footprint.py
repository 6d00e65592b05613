#!/usr/bin/env python3
"""Footprint of `serialgps serve` (dynamic and static builds) and gpsd on one simulated
receiver, in one run. scripts/footprint.sh builds the binaries and calls this; figures and
method are in BENCHMARKS.md (Footprint). It is a program that prints figures, not a test.

For each server, in every round (the servers in turn, so that each round's servers see the
same machine):
  - time to first TPV: a fresh simulated receiver (`serialgps replay --loop` of the u-blox
    recording, a pty), the server started on it, one client connecting as soon as the port
    accepts and sending ?WATCH={"enable":true,"json":true}: from the server's exec to the
    client reading the first TPV that has a position (and the first TPV of any kind);
  - memory: another fresh receiver and server; idle (no client yet, IDLE seconds after the
    port accepts; both servers leave the device closed then) and streaming (one watching
    client, STREAM seconds after it read the first position): VmRSS, RssAnon, RssFile and
    VmHWM from /proc/PID/status.
Medians over the rounds are printed. Sizes: the binaries as files (stripped), and what has
to be on the board to run each (see `installed_sizes`).
"""

import argparse
import grp
import importlib.util
import json
import os
import platform
import select
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")
# Counted besides (activity()): minor page faults up to the idle sample (StartFaults), the
# threads' context switches over IDLE_WINDOW seconds idle (IdleSwitches: wake-ups), and minor
# faults from the end of that window to the streaming sample (StreamFaults).
COUNTS = ("StartFaults", "IdleSwitches", "StreamFaults")
IDLE_WINDOW = 5


class Receiver:
    """`serialgps replay --loop` of the recording: a pty that streams at 1 Hz from the start
    and answers commands as the recorded chip does."""

    def __init__(self, replayer, recording):
        self.process = subprocess.Popen(
            [replayer, "replay", recording, "--loop"], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=dict(os.environ, SWIFT_BACKTRACE="enable=no"))
        link = self.process.stdout.readline().decode().strip()
        if not link:
            sys.exit("footprint: serialgps replay printed no device")
        self.path = os.path.realpath(link)
        # Like a serial port: group dialout, read-write for the group (gpsd without -n drops
        # root before it opens the device).
        os.chown(self.path, -1, grp.getgrnam("dialout").gr_gid)
        os.chmod(self.path, 0o660)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


def load_bench_server():
    """scripts/bench-server.py as a module: its free_port() is the one home of that."""
    spec = importlib.util.spec_from_file_location(
        "bench_server", os.path.join(REPO, "scripts", "bench-server.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


free_port = load_bench_server().free_port


def drop_cached_pages(path):
    """Drops `path`'s pages from the page cache (when no process maps them), so that the
    server starts as after a reboot: its code read in by page faults, not left in the cache
    by the build or the copy that made the file. It matters: a file just written is cached in
    large folios, and a fault maps a whole folio, so the same binary has about 1 MB more
    resident when measured right after it was copied (BENCHMARKS.md, Footprint)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)


def start_server(kind, binary, device, port):
    drop_cached_pages(binary)
    if kind == "gpsd":
        command = [binary, "-N", "-S", str(port), device]
    else:
        command = [binary, "serve", "--listen", "127.0.0.1:%d" % port, device]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=dict(os.environ, SWIFT_BACKTRACE="enable=no"))
    return process, started


def connect(port, deadline):
    while time.monotonic() < deadline:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            time.sleep(0.005)
    sys.exit("footprint: nothing listens on port %d" % port)


def stop_server(process):
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def status(pid):
    values = {}
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in FIELDS:
                values[key] = int(rest.split()[0])  # kB
    return values


def activity(pid):
    """(minor page faults of the whole process, context switches summed over its threads).
    A thread asleep in poll or read has no switch; each wake-up counts one or more."""
    with open("/proc/%d/stat" % pid) as handle:
        faults = int(handle.read().rsplit(")", 1)[1].split()[7])  # minflt, field 10
    switches = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, task)) as handle:
                for line in handle:
                    key, _, value = line.partition(":")
                    if key.endswith("ctxt_switches"):  # voluntary and nonvoluntary
                        switches += int(value)
        except FileNotFoundError:
            pass
    return faults, switches


def resident_by_mapping(pid):
    """kB resident per mapping of process `pid` (/proc/PID/smaps), file mappings by file and
    permissions (a binary's code, read-only data, relocated data apart), the rest by kind."""
    totals = {}
    name = None
    with open("/proc/%d/smaps" % pid) as handle:
        for line in handle:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
                path = fields[5] if len(fields) >= 6 else "anonymous"
                name = "%s %s" % (os.path.basename(path) if path.startswith("/") else path,
                                  fields[1])
            elif fields[0] == "Rss:" and name is not None:
                totals[name] = totals.get(name, 0) + int(fields[1])
    return {key: value for key, value in totals.items() if value}


class Client:
    """A watching client that reads everything in a thread of its own."""

    def __init__(self, sock):
        self.sock = sock
        self.tpvs = 0
        self.first_tpv = None
        self.first_fix = None
        self.closed = False
        sock.sendall(b'?WATCH={"enable":true,"json":true}\n')
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        pending = b""
        while not self.closed:
            ready, _, _ = select.select([self.sock], [], [], 0.2)
            if not ready:
                continue
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            now = time.monotonic()
            lines = (pending + data).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if b'"class":"TPV"' not in line:
                    continue
                self.tpvs += 1
                if self.first_tpv is None:
                    self.first_tpv = now
                if self.first_fix is None and b'"lat":' in line:
                    self.first_fix = now

    def close(self):
        self.closed = True
        self.thread.join()
        self.sock.close()


def time_to_first_tpv(kind, binary, replayer, recording, timeout):
    receiver = Receiver(replayer, recording)
    port = free_port()
    process, started = start_server(kind, binary, receiver.path, port)
    try:
        client = Client(connect(port, started + 10))
        deadline = time.monotonic() + timeout
        while client.first_fix is None and time.monotonic() < deadline:
            time.sleep(0.005)
        client.close()
        if client.first_fix is None:
            sys.exit("footprint: %s gave no TPV with a position within %d s" % (kind, timeout))
        return client.first_tpv - started, client.first_fix - started
    finally:
        stop_server(process)
        receiver.stop()


def memory(kind, binary, replayer, recording, idle, stream):
    receiver = Receiver(replayer, recording)
    port = free_port()
    process, started = start_server(kind, binary, receiver.path, port)
    try:
        # The port accepts: the server is up. This probe connection sends nothing and is
        # closed at once, as a port check would.
        connect(port, started + 10).close()
        time.sleep(idle)
        idle_status = status(process.pid)
        faults, switches = activity(process.pid)
        time.sleep(IDLE_WINDOW)
        window_faults, window_switches = activity(process.pid)
        idle_status["StartFaults"] = faults
        idle_status["IdleSwitches"] = window_switches - switches
        client = Client(connect(port, time.monotonic() + 10))
        # Streaming: STREAM seconds after the first position reached the client (gpsd spends
        # its first seconds probing the device).
        deadline = time.monotonic() + 30
        while client.first_fix is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if client.first_fix is None:
            client.close()
            sys.exit("footprint: %s gave no TPV with a position within 30 s" % kind)
        time.sleep(stream)
        streaming_status = status(process.pid)
        streaming_status["StreamFaults"] = activity(process.pid)[0] - window_faults
        streaming_status["Mappings"] = resident_by_mapping(process.pid)
        tpvs = client.tpvs
        client.close()
        return idle_status, streaming_status, tpvs
    finally:
        stop_server(process)
        receiver.stop()


def installed_sizes_of(path):
    """The size of `path` once stripped."""
    copy = "/tmp/footprint-strip-%d" % os.getpid()
    subprocess.run(["strip", "-o", copy, path], check=True)
    size = os.path.getsize(copy)
    os.remove(copy)
    return size


def installed_sizes(dynamic, static, deb, gpsd):
    """Bytes on disk: each binary stripped; and what a board needs to run it."""
    stripped_size = installed_sizes_of

    def shared_libraries(path):
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        libraries = []
        for line in out.splitlines():
            parts = line.split("=>")
            if len(parts) == 2 and parts[1].strip().startswith("/"):
                libraries.append(os.path.realpath(parts[1].split()[0]))
        return libraries

    def installed_kib(package):
        out = subprocess.run(["dpkg-query", "-W", "-f=${Installed-Size}", package],
                             capture_output=True, text=True).stdout.strip()
        return int(out) * 1024 if out.isdigit() else None

    swift_runtime = [lib for lib in shared_libraries(dynamic) if not lib.startswith(
        ("/lib/", "/usr/lib/", "/lib64/", "/usr/lib64/"))]
    sizes = {
        "dynamic": {
            "binary": stripped_size(dynamic),
            # Its Swift runtime libraries (from the toolchain) have to be installed too.
            "runtime": sum(os.path.getsize(lib) for lib in swift_runtime),
            "runtime_libraries": [os.path.basename(lib) for lib in swift_runtime],
        },
        "static": {"binary": stripped_size(static)},
        "gpsd": {"binary": os.path.getsize(gpsd), "package": installed_kib("gpsd"),
                 "libgps28": installed_kib("libgps28")},
    }
    sizes["dynamic"]["installed"] = sizes["dynamic"]["binary"] + sizes["dynamic"]["runtime"]
    if deb:
        size = subprocess.run(["dpkg-deb", "-f", deb, "Installed-Size"], capture_output=True,
                              text=True).stdout.strip()
        sizes["static"]["installed"] = int(size) * 1024
        sizes["static"]["deb"] = os.path.getsize(deb)
    return sizes


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return "%s, %d cores, Linux %s, %s" % (model, os.cpu_count(), platform.release(),
                                           platform.freedesktop_os_release().get(
                                               "PRETTY_NAME", "?"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dynamic", required=True, help="serialgps, dynamic build")
    parser.add_argument("--static", required=True, help="serialgps, static build")
    parser.add_argument("--deb", help="the .deb holding the static build (installed size)")
    parser.add_argument("--gpsd", default=shutil.which("gpsd") or "/usr/sbin/gpsd")
    parser.add_argument("--recording", default=os.path.join(REPO, "fixtures/ublox-m8-drive.nmea"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=3, help="seconds idle before sampling")
    parser.add_argument("--stream", type=float, default=10, help="seconds streaming")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=BINARY",
                        help="another serialgps build to measure the same way (memory and "
                        "size only), for the table of steps (scripts/footprint-steps.sh)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--mappings", action="store_true", help="also print what each "
                        "mapping holds resident while streaming (medians, kB)")
    options = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("footprint: run as root (the pty is handed to group dialout for gpsd)")

    servers = [("dynamic", options.dynamic), ("static", options.static), ("gpsd", options.gpsd)]
    variants = [tuple(text.split("=", 1)) for text in options.variant]
    if any(len(variant) != 2 for variant in variants):
        sys.exit("footprint: --variant wants NAME=BINARY")
    results = {kind: {"ttf": [], "idle": [], "streaming": [], "tpvs": []}
               for kind, _ in servers + variants}
    load = [os.getloadavg()[0]]

    def counted(sample):
        return {key: value for key, value in sample.items() if key != "Mappings"}

    for round_number in range(options.rounds):
        for kind, binary in servers:
            first_tpv, first_fix = time_to_first_tpv(kind, binary, options.dynamic,
                                                     options.recording, 30)
            idle, streaming, tpvs = memory(kind, binary, options.dynamic, options.recording,
                                           options.idle, options.stream)
            results[kind]["ttf"].append((first_tpv, first_fix))
            results[kind]["idle"].append(idle)
            results[kind]["streaming"].append(streaming)
            results[kind]["tpvs"].append(tpvs)
            print("round %d %-7s first TPV %.2f s (with a position %.2f s); idle %s; streaming %s"
                  % (round_number + 1, kind, first_tpv, first_fix, idle, counted(streaming)),
                  file=sys.stderr)
        for name, binary in variants:
            idle, streaming, tpvs = memory("serialgps", binary, options.dynamic,
                                           options.recording, options.idle, options.stream)
            results[name]["idle"].append(idle)
            results[name]["streaming"].append(streaming)
            results[name]["tpvs"].append(tpvs)
            print("round %d %s: idle %s; streaming %s" % (round_number + 1, name, idle,
                                                          counted(streaming)), file=sys.stderr)
    load.append(os.getloadavg()[0])

    def median(values):
        return statistics.median(values)

    def mappings_median(samples):
        names = sorted({name for sample in samples for name in sample["Mappings"]})
        return {name: median([sample["Mappings"].get(name, 0) for sample in samples])
                for name in names}

    summary = {"machine": machine(), "load_average": load, "rounds": options.rounds,
               "idle_seconds": options.idle, "stream_seconds": options.stream,
               "gpsd_version": subprocess.run([options.gpsd, "-V"], capture_output=True,
                                      text=True).stdout.strip(),
               "sizes": installed_sizes(options.dynamic, options.static, options.deb,
                                        options.gpsd)}
    for kind, _ in servers:
        entry = results[kind]
        summary[kind] = {
            "first_tpv_s": median([t for t, _ in entry["ttf"]]),
            "first_fix_tpv_s": median([f for _, f in entry["ttf"]]),
            "idle_kB": {key: median([s[key] for s in entry["idle"]]) for key in FIELDS},
            "streaming_kB": {key: median([s[key] for s in entry["streaming"]]) for key in FIELDS},
            "counts": {key: median([(s1 | s2)[key] for s1, s2 in zip(entry["idle"],
                                                                    entry["streaming"])])
                       for key in COUNTS},
            "mappings_kB": mappings_median(entry["streaming"]),
            "runs": entry,
        }
    for name, binary in variants:
        entry = results[name]
        summary.setdefault("variants", []).append({
            "name": name,
            "binary_bytes": installed_sizes_of(binary),
            "idle_kB": {key: median([s[key] for s in entry["idle"]]) for key in FIELDS},
            "streaming_kB": {key: median([s[key] for s in entry["streaming"]]) for key in FIELDS},
            "counts": {key: median([(s1 | s2)[key] for s1, s2 in zip(entry["idle"],
                                                                    entry["streaming"])])
                       for key in COUNTS},
            "mappings_kB": mappings_median(entry["streaming"]),
            "runs": entry,
        })
    if options.json:
        print(json.dumps(summary, indent=1))
        return

    def mb(kilobytes):
        return "%.2f" % (kilobytes / 1024)

    def size(value):
        return "—" if value is None else "%.2f MB" % (value / 1048576)

    sizes = summary["sizes"]
    installed = {
        "dynamic": size(sizes["dynamic"]["installed"]) + " (binary + Swift runtime)",
        "static": size(sizes["static"].get("installed")) + " (the .deb's Installed-Size)",
        "gpsd": "%s (gpsd package) + %s (libgps28)" % (size(sizes["gpsd"]["package"]),
                                                      size(sizes["gpsd"]["libgps28"])),
    }
    print("| | idle VmRSS / RssAnon / RssFile | streaming VmRSS / RssAnon / RssFile | "
          "VmHWM | binary | installed | first TPV (with a position) |")
    print("|---|---|---|---|---|---|---|")
    for kind, _ in servers:
        entry = summary[kind]
        idle, streaming = entry["idle_kB"], entry["streaming_kB"]
        print("| %s | %s / %s / %s MB | %s / %s / %s MB | %s MB | %s | %s | %.2f s (%.2f s) |" % (
            kind, mb(idle["VmRSS"]), mb(idle["RssAnon"]), mb(idle["RssFile"]),
            mb(streaming["VmRSS"]), mb(streaming["RssAnon"]), mb(streaming["RssFile"]),
            mb(streaming["VmHWM"]), size(sizes[kind]["binary"]), installed[kind],
            entry["first_tpv_s"], entry["first_fix_tpv_s"]))
    print()
    print("Medians of %d rounds; idle after %g s; streaming %g s after one client's first "
          "position." % (
        options.rounds, options.idle, options.stream))
    print("Machine: %s; load average %.2f at the start, %.2f at the end; %s." % (
        summary["machine"], load[0], load[1], summary["gpsd_version"]))
    print("Dynamic build's Swift runtime libraries: %s." % ", ".join(
        sizes["dynamic"]["runtime_libraries"]))
    print()
    print("| | minor faults to idle | context switches in %d s idle | minor faults, ?WATCH to "
          "streaming sample |" % IDLE_WINDOW)
    print("|---|---|---|---|")
    for kind, counts in [(kind, summary[kind]["counts"]) for kind, _ in servers] + [
            (entry["name"], entry["counts"]) for entry in summary.get("variants", [])]:
        print("| %s | %d | %d | %d |" % (kind, counts["StartFaults"], counts["IdleSwitches"],
                                         counts["StreamFaults"]))
    if options.mappings:
        rows = [(kind, summary[kind]["mappings_kB"]) for kind, _ in servers] + [
            (entry["name"], entry["mappings_kB"]) for entry in summary.get("variants", [])]
        for kind, mappings in rows:
            print()
            print("%s, resident while streaming (kB, medians): %s" % (kind, "; ".join(
                "%s %d" % (name, value) for name, value in sorted(
                    mappings.items(), key=lambda item: -item[1]))))
    if variants:
        print()
        print("| step | idle VmRSS / RssAnon / RssFile | streaming VmRSS / RssAnon / RssFile | "
              "binary (stripped) |")
        print("|---|---|---|---|")
        for entry in summary["variants"]:
            idle, streaming = entry["idle_kB"], entry["streaming_kB"]
            print("| %s | %s / %s / %s MB | %s / %s / %s MB | %s |" % (
                entry["name"], mb(idle["VmRSS"]), mb(idle["RssAnon"]), mb(idle["RssFile"]),
                mb(streaming["VmRSS"]), mb(streaming["RssAnon"]), mb(streaming["RssFile"]),
                size(entry["binary_bytes"])))


if __name__ == "__main__":
    main()
