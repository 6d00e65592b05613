#!/usr/bin/env python3
"""Writes contrib/serialgps.order, the order in which the package's static build lays out
its functions (lld's --symbol-ordering-file, scripts/build-static.sh): the functions
`serialgps serve` runs while it streams first, then those it runs only to start.

Why: code that runs is scattered over the Swift runtime, the standard library and our
modules, and the kernel maps the 64 KB around every code page a process touches
(fault-around), so a scattered few hundred kB of hot code keeps most of the 6 MB of `.text`
resident. Laid out together, it fits in a few dozen such windows (BENCHMARKS.md, Footprint).

How: the static build (stripped, as the package has it) runs `serve` under valgrind's
callgrind on a simulated u-blox receiver (`serialgps replay --loop`), with every instruction
address recorded (--dump-instr=yes); the profile is cut in two when the server listens
(start-up) and again at the end (streaming: one client watching JSON and NMEA, another
polling). Every executed address is mapped to the function that holds it through the
unstripped binary's symbol table. Needs valgrind (apt-get install valgrind) and root (the pty
goes to group dialout as for the footprint run).

    scripts/symbol-order.py [--binary PATH] [--seconds S] [--output contrib/serialgps.order]
    scripts/symbol-order.py --check [--binary PATH]   # CI: is the committed list still right?

Run it again when the hot path changes: names that no longer exist are ignored by the
linker and new functions land after the listed ones, scattered, so a stale list costs resident
memory without failing anything. `--check` (run by `make deb-check`, so by CI) profiles the
build the same way and fails when more than --tolerance of the functions run while streaming
are not listed.
"""

import argparse
import bisect
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
_spec = importlib.util.spec_from_file_location(
    "footprint", os.path.join(REPO, "scripts", "footprint.py"))
footprint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(footprint)


def function_symbols(binary):
    """(address, size, name) of every function in `binary`, by address."""
    listing = subprocess.run(["nm", "-n", "-S", "--defined-only", binary],
                             capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in listing.splitlines():
        fields = line.split(" ", 3)
        if len(fields) == 4 and fields[2] in "tTwW":
            symbols.append((int(fields[0], 16), int(fields[1], 16), fields[3]))
    return symbols


def executed_addresses(profile, object_name):
    """The instruction addresses of `object_name` that a callgrind profile made with
    --dump-instr=yes counts (positions absolute, or relative to the line before)."""
    names, current, last = {}, None, 0
    after_calls = False
    for line in open(profile):
        line = line.rstrip("\n")
        match = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if match:
            kind, identifier, name = match.groups()
            if name:
                names[identifier] = name
            if kind == "ob":
                current = names.get(identifier)
            continue
        if line.startswith("calls="):
            after_calls = True
            continue
        if not line or line[0] not in "+-*0":
            continue
        position = line.split()[0]
        if position.startswith("0x"):
            last = int(position, 16)
        elif position[0] == "+":
            last += int(position[1:])
        elif position[0] == "-":
            last -= int(position[1:])
        # A call's cost line names the calling instruction, which also has a line of its own.
        if after_calls:
            after_calls = False
            continue
        if current and os.path.basename(current) == object_name:
            yield last


def profile_serve(stripped, replayer, seconds, directory):
    """Runs `serve` under callgrind; returns the start-up and the streaming profile."""
    receiver = footprint.Receiver(replayer, os.path.join(REPO, "fixtures/ublox-m8-drive.nmea"))
    port = footprint.free_port()
    output = os.path.join(directory, "callgrind.out")
    command = ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--fair-sched=yes",
               "--callgrind-out-file=" + output, stripped, "serve", "--listen",
               "127.0.0.1:%d" % port, receiver.path]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, SWIFT_BACKTRACE="enable=no"))
    try:
        footprint.connect(port, time.monotonic() + 120).close()
        time.sleep(5)
        # Start-up and idle end here: this dump is the first part.
        subprocess.run(["callgrind_control", "--dump", str(server.pid)], check=True,
                       capture_output=True)
        watcher = socket.create_connection(("127.0.0.1", port))
        watcher.sendall(b'?WATCH={"enable":true,"json":true,"nmea":true}\n')
        watcher.settimeout(1)
        poller = socket.create_connection(("127.0.0.1", port))
        poller.sendall(b'?WATCH={"enable":true}\n?POLL;\n?DEVICES;\n?VERSION;\n')
        # Streaming is counted from the first position the watcher reads, so that the
        # profile covers fixes flowing however long the receiver takes to wake under valgrind
        # on a loaded machine.
        deadline = time.monotonic() + 180
        tail, fixed = b"", False
        while time.monotonic() < deadline:
            try:
                data = watcher.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            if not fixed and b'"lat":' in tail + data:
                fixed = True
                deadline = time.monotonic() + seconds
            tail = data[-16:]
        poller.close()
        watcher.close()
        if not fixed:
            sys.exit("symbol-order: the watching client read no position in 180 s")
        # The last client gone, the receiver goes to standby after the linger.
        time.sleep(8)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
        receiver.stop()
    parts = sorted(name for name in os.listdir(directory) if name.startswith("callgrind.out"))
    start_up = [os.path.join(directory, name) for name in parts if name != "callgrind.out"]
    return start_up, [output]


def profiled_functions(binary, seconds):
    """Runs `serve` from `binary` (unstripped; profiled stripped, as the package has it) under
    callgrind: the functions it ran while streaming, then those it ran only to start, each in
    order of first execution; and every function's size by name."""
    with tempfile.TemporaryDirectory() as directory:
        stripped = os.path.join(directory, "serialgps")
        subprocess.run(["strip", "-o", stripped, binary], check=True)
        # The replayer is another copy, so that the profile sees only the server.
        replayer = os.path.join(directory, "replayer")
        subprocess.run(["cp", binary, replayer], check=True)
        start_up, streaming = profile_serve(stripped, replayer, seconds, directory)
        symbols = function_symbols(binary)
        starts = [address for address, _, _ in symbols]
        parts, seen = [], set()
        for profiles in (streaming, start_up):
            part = []
            for profile in profiles:
                for address in executed_addresses(profile, "serialgps"):
                    index = bisect.bisect_right(starts, address) - 1
                    if index < 0:
                        continue
                    start, size, name = symbols[index]
                    # Code past a function's end belongs to a function with no symbol
                    # (contrib/serialgps-text.ld places those).
                    if address >= start + max(size, 1) or name in seen:
                        continue
                    seen.add(name)
                    part.append(name)
            parts.append(part)
    sizes = {name: size for _, size, name in symbols}
    return parts[0], parts[1], sizes


def check(listed_path, streaming, sizes, tolerance):
    """Whether the committed list still names the code `serve` runs while streaming: the
    functions that ran and are not listed, against `tolerance` (a count: each one can keep a
    64 KB window resident whatever its size)."""
    listed = set(line.strip() for line in open(listed_path) if line.strip())
    missing = [name for name in streaming if name not in listed]
    missing_bytes = sum(sizes.get(name, 0) for name in missing)
    relative = os.path.relpath(listed_path, REPO)
    print("symbol-order: %d of the %d functions run while streaming are not in %s (%d bytes;"
          " tolerance %d functions)" % (len(missing), len(streaming), relative, missing_bytes,
                                        tolerance), file=sys.stderr)
    if len(missing) <= tolerance:
        return 0
    for name in sorted(missing, key=lambda name: -sizes.get(name, 0))[:20]:
        print("  %6d  %s" % (sizes.get(name, 0), name), file=sys.stderr)
    print("symbol-order: %s is stale: every unlisted function that runs keeps a 64 KB window of"
          " cold code resident. Make it again (as root, with valgrind): scripts/symbol-order.py,"
          " and commit it (BENCHMARKS.md, Footprint)" % relative, file=sys.stderr)
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", help="the unstripped static build (default: build it "
                        "with scripts/build-static.sh)")
    parser.add_argument("--seconds", type=float, default=25, help="seconds streaming")
    parser.add_argument("--output", default=os.path.join(REPO, "contrib", "serialgps.order"))
    parser.add_argument("--check", action="store_true", help="write nothing: fail when more "
                        "than --tolerance of the functions run while streaming are not in the "
                        "list (--output)")
    parser.add_argument("--tolerance", type=int, default=10, help="functions (default 10: "
                        "two profiles of one build differ by about 4)")
    options = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("symbol-order: run as root (the pty is handed to group dialout)")
    for tool in ("valgrind", "callgrind_control", "nm", "strip"):
        if subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).returncode:
            sys.exit("symbol-order: %s is needed: apt-get install valgrind binutils" % tool)
    binary = options.binary or subprocess.run(
        [os.path.join(REPO, "scripts", "build-static.sh")], capture_output=False,
        stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    streaming, start_up, sizes = profiled_functions(binary, options.seconds)
    if not streaming:
        sys.exit("symbol-order: the profile shows no function of serialgps; nothing written")
    if options.check:
        sys.exit(check(options.output, streaming, sizes, options.tolerance))
    with open(options.output, "w") as handle:
        handle.write("\n".join(streaming + start_up) + "\n")
    print("symbol-order: %d functions streaming, %d more at start-up -> %s"
          % (len(streaming), len(start_up), os.path.relpath(options.output, REPO)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
