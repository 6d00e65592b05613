"""bench-power's spread case (issue 36): the periodic request of case (a), one fix of <= 10 m
every 30 s through `serialgps watch`, on receivers the driver was not tuned for. Each run
gets a u-blox M8 simulator whose hot start and error convergence are drawn at random
(`serialgps replay --hot-start S --first-error 25 --converged-error 3 --convergence S`): hot
start uniform in 0.5-3 s, time constant uniform in 1-5 s, from a seed that is printed, so a
run can be repeated (`--seed`).

Each run's limit per fix is what its own receiver needs at least: the hot start, the
convergence from 25 m to 10 m (tau * ln(22 / 7)) and one epoch (1 s at 1 Hz: the fix that
first reaches 10 m comes on the next epoch). The powered time per wake is the simulator's own
(`on_s` of its energy file, sampled every 200 ms: a wake is a run of samples whose `on_s`
grows, so the sampling decides nothing about its length). The first wake answers the first fix,
due at the ask (no wake can begin before it), and is the first the driver measures this
receiver by: it is shown beside, and the ratio is taken over the wakes after it. A delivery is on time when it comes
within 1 s of its due time; the first (due at the ask, when no wake can have begun) within the
run's time to first fix (the simulator's, on the first epoch after the hot start) +
convergence + 1 s after the receiver was powered, as a one-shot; and the driver's own part,
from the ask to the receiver powered (`watch` starting, opening the port, the wake command
crossing it), within WAKE_BOUND. The instant of power is the simulator's own (its start
record), carried to this clock by the least stale of the energy file's samples.

Runs at time scale 1 (the driver's margins are in real seconds), all runs at once, each on
its own receiver: a window of N minutes takes about N minutes and a half.
"""

import json
import math
import os
import random
import subprocess
import threading
import time

FIRST_ERROR = 25.0
CONVERGED = 3.0
ACCURACY = 10.0
INTERVAL = 30
EPOCH = 1.0
HOT_RANGE = (0.5, 3.0)
TAU_RANGE = (1.0, 5.0)
AIM = 1.2
# From the ask to the receiver powered: the command starting, the port opened, the wake sent.
WAKE_BOUND = 0.5


def limit_s(hot, tau):
    """Start, convergence to the accuracy, one epoch."""
    return hot + tau * math.log((FIRST_ERROR - CONVERGED) / (ACCURACY - CONVERGED)) + EPOCH


def wakes_of(samples):
    """The wakes in the energy samples [(monotonic, summary)]: (began, ended, powered s), a
    wake being a run of samples whose on_s grows."""
    wakes = []
    current = None
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        grew = b["on_s"] - a["on_s"]
        if grew > 1e-6:
            if current is None:
                current = [t0, t1, 0.0]
            current[1] = t1
            current[2] += grew
        elif current is not None:
            wakes.append(tuple(current))
            current = None
    if current is not None:
        wakes.append(tuple(current))
    return wakes


def one_run(bench, binary, scratch, logs, index, hot, tau, window):
    name = "spread-%d" % index
    extra = ["--hot-start", "%.3f" % hot, "--first-error", "%g" % FIRST_ERROR,
             "--converged-error", "%g" % CONVERGED, "--convergence", "%.3f" % tau]
    receiver = bench.Receiver(binary, scratch, name, extra, logs)
    log = open(os.path.join(logs, name + ".log"), "w")
    watch = None
    try:
        receiver.put_to_backup()
        before = receiver.energy.now()
        start = time.monotonic()
        end = start + window
        watch = subprocess.Popen(
            [binary, "watch", receiver.device, "--chipset", "ublox", "--baud", "9600",
             "--interval", str(INTERVAL), "--accuracy", str(ACCURACY), "--json"],
            stdout=subprocess.PIPE, stderr=log)
        lines = bench.Lines(watch.stdout)
        bench.wait_until(end)
        bench.stop(watch)
        watch = None
        # The last wake's end: the receiver is put back to sleep once the door leaves.
        time.sleep(1.5)
        after = receiver.energy.now()
        deliveries = bench.deliveries_scheduled(lines.tpvs(), start, INTERVAL, end)
        # From the ask (the put to backup before it is no wake) to the door's end (its
        # leaving puts the receiver to sleep, which is no wake either).
        samples = [(t, s) for t, s in list(receiver.energy.samples) if t >= start]
        wakes = [w for w in wakes_of(samples) if w[0] < end]
        limit = limit_s(hot, tau)
        per_wake = []
        for began, ended, on in wakes:
            fixes = sum(1 for d in deliveries if began - 0.5 <= start + d["at"] <= ended + 0.5)
            per_wake.append({"began": round(began - start, 2), "on_s": round(on, 3),
                             "fixes": fixes, "ratio": round(on / limit, 3)})
        # A wake for the fix due at the window's end is cut by the door's leaving: no fix.
        if per_wake and per_wake[-1]["fixes"] == 0 and wakes[-1][1] >= end - 0.5:
            per_wake[-1]["cut"] = True
            per_wake = per_wake[:-1]
        later = per_wake[1:]
        later_fixes = sum(w["fixes"] for w in later)
        later_on = sum(w["on_s"] for w in later)
        per_fix = later_on / later_fixes if later_fixes else None
        starts = after["starts"][len(before["starts"]):]
        # The first fix is judged as a one-shot (docs/requests.md, "The first fix"): the time
        # to first fix, as the simulator's start record has it (on the first epoch after the
        # hot start), the convergence to the accuracy, and 1 s.
        ttff = starts[0].get("ttff_s", hot) if starts else hot
        # The simulator's clock on this one: the file is rewritten every 100 ms and read every
        # 200 ms, so each sample is read some ms after it was written; the least stale gives
        # the offset within a few ms.
        offset = min(t - summary["clock_s"] for t, summary in receiver.energy.samples)
        powered = starts[0]["began_s"] + offset - start if starts else None
        first_bound = ((powered or 0.0) + ttff
                       + tau * math.log((FIRST_ERROR - CONVERGED) / (ACCURACY - CONVERGED)) + 1)
        late = [d for d in deliveries[1:] if abs(d["late"]) > 1.0]
        first_late = bool(deliveries) and deliveries[0]["late"] > first_bound
        above = [d for d in deliveries if d["acc"] is None or d["acc"] > ACCURACY]
        return {
            "run": index, "hot_s": round(hot, 3), "tau_s": round(tau, 3),
            "limit_s": round(limit, 3), "fixes": len(deliveries),
            "on_s": round(after["on_s"] - before["on_s"], 3),
            "first_wake_s": per_wake[0]["on_s"] if per_wake else None,
            "on_s_per_fix": round(per_fix, 3) if per_fix else None,
            "ratio": round(per_fix / limit, 3) if per_fix else None,
            "ratio_all": (round(sum(w["on_s"] for w in per_wake) / len(deliveries) / limit, 3)
                          if deliveries else None),
            "worst_wake_ratio": max((w["ratio"] for w in later if w["fixes"] == 1),
                                    default=None),
            "first_s": deliveries[0]["late"] if deliveries else None,
            "first_bound_s": round(first_bound, 3),
            "powered_after_s": round(powered, 3) if powered is not None else None,
            "late": len(late), "first_late": first_late, "above_accuracy": len(above),
            "starts": [s["kind"] for s in starts], "wakes": per_wake,
            "deliveries": [{k: round(v, 3) if isinstance(v, float) else v
                            for k, v in d.items()} for d in deliveries],
        }
    finally:
        if watch:
            bench.stop(watch)
        log.close()
        receiver.close()


def verdict(r):
    notes = []
    if r["ratio"] is None:
        notes.append("no wake after the first")
    elif r["ratio"] > AIM:
        notes.append("%.2fx the limit per fix" % r["ratio"])
    if r["late"]:
        notes.append("%d fixes more than 1 s off" % r["late"])
    if r["first_late"]:
        notes.append("the first fix late")
    if r["powered_after_s"] is None:
        notes.append("the receiver was never powered")
    elif r["powered_after_s"] > WAKE_BOUND:
        notes.append("powered %.2f s after the ask" % r["powered_after_s"])
    if r["above_accuracy"]:
        notes.append("%d fixes above %g m" % (r["above_accuracy"], ACCURACY))
    return "met" if not notes else "missed: " + "; ".join(notes)


def main(bench, binary, runs, minutes, seed, as_json, logs=None):
    import tempfile
    if seed is None:
        seed = random.SystemRandom().randrange(1, 1 << 31)
    rng = random.Random(seed)
    drawn = [(rng.uniform(*HOT_RANGE), rng.uniform(*TAU_RANGE)) for _ in range(runs)]
    scratch = tempfile.mkdtemp(prefix="serialgps-bench-spread-")
    logs = logs or scratch
    os.makedirs(logs, exist_ok=True)
    window = minutes * 60.0
    results = [None] * runs
    errors = []
    load_before = os.getloadavg()
    began = time.monotonic()

    def lane(index):
        hot, tau = drawn[index]
        try:
            results[index] = one_run(bench, binary, scratch, logs, index, hot, tau, window)
        except Exception as error:  # one run's failure is reported, the others go on
            errors.append("spread run %d (hot %.2f s, tau %.2f s): %r" % (index, hot, tau, error))

    threads = [threading.Thread(target=lane, args=(i,)) for i in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    load_after = os.getloadavg()
    done = [r for r in results if r]
    for r in done:
        r["verdict"] = verdict(r)
    report = {
        "seed": seed, "runs": done, "errors": errors, "window_s": window,
        "interval_s": INTERVAL, "accuracy_m": ACCURACY, "aim": AIM,
        "machine": "%s, %d cores" % (os.uname().machine, os.cpu_count()),
        "load_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "binary": os.path.relpath(binary, bench.REPO), "time_scale": 1,
        "wall_s": round(time.monotonic() - began, 1),
    }
    if as_json:
        print(json.dumps(report, indent=1))
    else:
        print_report(report, runs, minutes)
    return 1 if errors or any(r["verdict"] != "met" for r in done) or len(done) < runs else 0


def print_report(report, runs, minutes):
    """The report as text (`python3 -c 'import bench_spread, json; …'` renders a saved one)."""
    done, seed = report["runs"], report["seed"]
    print("bench-power (spread): one fix of <= %g m every %d s for %.0f min, %d runs, seed %d"
          % (ACCURACY, INTERVAL, minutes, runs, seed))
    print("  %s; %s, load %s -> %s; time scale 1, %.0f s wall" % (
        report["binary"], report["machine"], report["load_1min"][0],
        report["load_1min"][1], report["wall_s"]))
    print("  run  hot s  tau s  limit s  fixes  1st wake s  s/fix after  ratio  worst wake"
          "  all wakes  verdict")
    for r in done:
        print("  %3d  %5.2f  %5.2f  %7.2f  %5d  %10s  %11s  %5s  %10s  %s  %s" % (
            r["run"], r["hot_s"], r["tau_s"], r["limit_s"], r["fixes"],
            "%.2f" % r["first_wake_s"] if r["first_wake_s"] is not None else "-",
            "%.2f" % r["on_s_per_fix"] if r["on_s_per_fix"] else "-",
            "%.2f" % r["ratio"] if r["ratio"] else "-",
            "%.2f" % r["worst_wake_ratio"] if r["worst_wake_ratio"] else "-",
            "%9s" % ("%.2f" % r["ratio_all"] if r["ratio_all"] else "-"), r["verdict"]))
        print("       powered %s s after the ask; first fix %.2f s after it (bound %.2f s);"
              " wakes (s): %s" % (
                  "%.3f" % r["powered_after_s"] if r["powered_after_s"] is not None else "-",
                  r["first_s"] if r["first_s"] is not None else float("nan"),
                  r["first_bound_s"], " ".join("%.2f" % w["on_s"] for w in r["wakes"])))
    for error in report["errors"]:
        print(error)
