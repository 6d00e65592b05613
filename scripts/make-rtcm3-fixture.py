#!/usr/bin/env python3
"""Writes fixtures/rtcm3-stream.rtcm3: RTCM 3 frames as a base station sends them, for the
NTRIP tests (RTKLIB's str2str relays them as a caster; docs/ntrip.md).

    scripts/make-rtcm3-fixture.py [OUT]

Each frame is the transport layer of RTCM 10403: preamble 0xD3, six zero bits, a 10-bit
length, the message, and CRC-24Q over all of it (computed here bit by bit, sharing no code
with the Swift framer the tests check). The messages carry a 12-bit message number first
(1005 station position, 1077/1087/1097 MSM7 of GPS, GLONASS and Galileo, 1230 GLONASS biases)
and seeded random bytes after it, at the lengths those messages have in practice, so a
framer sees the sizes it meets; nothing decodes the content. The same seed gives the same
bytes. Standard library only.
"""

import os
import random
import sys

SEED = 39
EPOCHS = 30
# (message number, length in bytes) of one epoch: station position, MSM7 of three
# constellations, GLONASS code-phase biases; the longest near the 1023-byte limit.
EPOCH = [(1005, 19), (1077, 420), (1087, 330), (1097, 1015), (1230, 11)]


def crc24q(data):
    crc = 0
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def frame(message):
    assert len(message) <= 1023
    head = bytes([0xD3, len(message) >> 8, len(message) & 0xFF]) + message
    crc = crc24q(head)
    return head + bytes([crc >> 16, (crc >> 8) & 0xFF, crc & 0xFF])


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "fixtures", "rtcm3-stream.rtcm3")
    rng = random.Random(SEED)
    data = bytearray()
    for _ in range(EPOCHS):
        for number, length in EPOCH:
            body = bytearray(rng.getrandbits(8) for _ in range(length))
            body[0] = number >> 4
            body[1] = ((number & 0x0F) << 4) | (body[1] & 0x0F)
            data += frame(bytes(body))
    with open(out, "wb") as handle:
        handle.write(data)
    print(f"{out}: {EPOCHS * len(EPOCH)} frames, {len(data)} bytes")


if __name__ == "__main__":
    main()
