#!/usr/bin/env python3
"""Writes Embedded/edge-cases.ubx: u-blox UBX frames with edge values, for
scripts/arm-check.sh, which decodes them on x86-64, aarch64 and armv7 and requires the same
output from each and no trap (a 32-bit board's Int is 32 bits wide).

    scripts/make-ubx-edge-cases.py [OUT]

For each navigation message the decoder reads (its class, ID and payload lengths), three
payloads fill every field with an extreme: all bytes 0xFF (-1 signed, the maximum unsigned,
every flag set), every 32-bit word 0x80000000 (the most negative int32; int16 and int8
fields read 0 or -128), and every word 0x7FFFFFFF (the largest int32). Then a frame one byte
short of each first length (refused as a structure, never read past its end), and a NAV-SAT
and a NAV-SIG whose satellite count says 255 over a payload holding one. Framing per the u-blox
8 / M8 receiver description (UBX-13003221), "UBX Frame Structure": sync B5 62, class, ID,
little-endian length, payload, 8-bit Fletcher checksum over class through payload.
Standard library only.
"""

import os
import sys

# (class, ID, payload lengths): NAV-POSECEF, POSLLH, STATUS, DOP, SOL, PVT (84 and 92 bytes),
# VELECEF, VELNED, HPPOSLLH, TIMEGPS, TIMEUTC, CLOCK, EOE, TIM-TP and HNR-PVT.
MESSAGES = [
    (0x01, 0x01, [20]),
    (0x01, 0x02, [28]),
    (0x01, 0x03, [16]),
    (0x01, 0x04, [18]),
    (0x01, 0x06, [52]),
    (0x01, 0x07, [92, 84]),
    (0x01, 0x11, [20]),
    (0x01, 0x12, [36]),
    (0x01, 0x14, [36]),
    (0x01, 0x20, [16]),
    (0x01, 0x21, [20]),
    (0x01, 0x22, [20]),
    (0x01, 0x61, [4]),
    (0x0D, 0x01, [16]),
    (0x28, 0x00, [72]),
]

FILLS = [b"\xff\xff\xff\xff", b"\x00\x00\x00\x80", b"\xff\xff\xff\x7f"]


def frame(message_class, message_id, payload):
    body = bytes([message_class, message_id, len(payload) & 0xFF, len(payload) >> 8]) + payload
    a = b = 0
    for byte in body:
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return b"\xb5\x62" + body + bytes([a, b])


def filled(length, word):
    return (word * (length // 4 + 1))[:length]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "Embedded", "edge-cases.ubx")
    stream = b""
    for message_class, message_id, lengths in MESSAGES:
        for length in lengths:
            for word in FILLS:
                stream += frame(message_class, message_id, filled(length, word))
        stream += frame(message_class, message_id, filled(lengths[0] - 1, FILLS[0]))
    # NAV-SAT (01 35): 8 bytes of header, numSvs at 5, 12 bytes per satellite.
    stream += frame(0x01, 0x35, bytes([0xFF] * 4 + [1, 255, 0, 0]) + b"\xff" * 12)
    # NAV-SIG (01 43): 8 bytes of header, numSigs at 5, 16 bytes per signal.
    stream += frame(0x01, 0x43, bytes([0xFF] * 4 + [0, 255, 0, 0]) + b"\x80" * 16)
    with open(out, "wb") as file:
        file.write(stream)


main()
