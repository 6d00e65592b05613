"""What the server stress scripts share: a free loopback port, starting `serialgps replay` and
`serialgps serve` and waiting for them, stopping processes within a bound, the machine line.
Imported by scripts/stress-server-memory.py and scripts/stress-server-burst.py (the directory of
the script run is on sys.path)."""

import os
import platform
import socket
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def start_replay(binary, arguments, log):
    """`serialgps replay ARGUMENTS`, its standard error to `log`; returns (process, device)."""
    process = subprocess.Popen([binary, "replay"] + arguments, stdout=subprocess.PIPE,
                               stderr=log)
    device = process.stdout.readline().decode().strip()
    if not device:
        stop(process)
        raise RuntimeError("replay printed no device")
    return process, device


def start_serve(binary, arguments, log, timeout=10):
    """`serialgps serve --listen 127.0.0.1:PORT ARGUMENTS` on a free port, its standard error
    to `log`, once it accepts connections; returns (process, port)."""
    port = free_port()
    process = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:%d" % port] + arguments,
                               stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                stop(process)
                raise RuntimeError("serve did not start listening")
            time.sleep(0.05)


def stop(process, timeout=5):
    """SIGTERM, then SIGKILL after `timeout` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def machine_line(binary):
    load = os.getloadavg()
    return "machine: %s, %d cores, load %.2f %.2f %.2f; binary %s" % (
        platform.platform(), os.cpu_count(), load[0], load[1], load[2],
        os.path.relpath(binary, REPO))


def split_serve_args(values):
    """--serve-arg=--max-clients=100 gives ["--max-clients", "100"]."""
    return [part for value in values for part in value.split("=", 1)]
