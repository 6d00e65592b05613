#!/usr/bin/env python3
"""What a running process has resident, and why: per mapped file (from /proc/PID/smaps) and,
for its executable, per ELF section (from /proc/PID/pagemap, which needs root). Used for the
footprint analysis in BENCHMARKS.md.

    scripts/resident.py PID
"""

import collections
import os
import re
import struct
import subprocess
import sys


def mappings(pid):
    """(file or [anon]/[heap]…, permissions) → [Rss kB, Anonymous kB]."""
    totals = collections.OrderedDict()
    current = None
    with open("/proc/%d/smaps" % pid) as handle:
        for line in handle:
            parts = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", parts[0]):
                name = parts[5] if len(parts) > 5 else "[anon]"
                current = (name, parts[1])
                totals.setdefault(current, [0, 0])
            elif parts[0] == "Rss:":
                totals[current][0] += int(parts[1])
            elif parts[0] == "Anonymous:":
                totals[current][1] += int(parts[1])
    return totals


def sections(pid):
    """For the executable: (section, size kB, resident kB, pages kB) in address order."""
    executable = os.readlink("/proc/%d/exe" % pid)
    headers = subprocess.run(["readelf", "-SW", executable], capture_output=True,
                             text=True).stdout
    found = []
    for line in headers.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)",
                         line)
        if match and int(match.group(2), 16):
            found.append((match.group(1), int(match.group(2), 16), int(match.group(3), 16)))
    ranges = []
    with open("/proc/%d/maps" % pid) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) > 5 and parts[5] == executable:
                start, end = (int(value, 16) for value in parts[0].split("-"))
                ranges.append((start, end, int(parts[2], 16)))
    base = min(start - offset for start, _, offset in ranges)
    resident = collections.Counter()
    pages = collections.Counter()
    with open("/proc/%d/pagemap" % pid, "rb") as pagemap:
        for start, end, _ in ranges:
            pagemap.seek(start // 4096 * 8)
            entries = pagemap.read((end - start) // 4096 * 8)
            for index in range((end - start) // 4096):
                present = struct.unpack_from("<Q", entries, index * 8)[0] >> 63
                address = start + index * 4096 - base
                for name, section_start, size in found:
                    if section_start < address + 4096 and section_start + size > address:
                        pages[name] += 4
                        resident[name] += 4 * present
    return [(name, size / 1024, resident[name], pages[name]) for name, _, size in found
            if pages[name]]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    pid = int(sys.argv[1])
    total = 0
    print("resident kB  anonymous kB  perms  mapping")
    for (name, permissions), (rss, anonymous) in sorted(mappings(pid).items(),
                                                        key=lambda item: -item[1][0]):
        if rss:
            total += rss
            print("%11d  %12d  %s  %s" % (rss, anonymous, permissions, name))
    print("%11d  in all" % total)
    if os.geteuid() == 0:
        print()
        print("executable's sections: size kB, resident kB of the pages they touch")
        for name, size, resident, pages in sections(pid):
            print("  %-30s %8.0f %8d of %d" % (name, size, resident, pages))


if __name__ == "__main__":
    main()
