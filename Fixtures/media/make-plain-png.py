#!/usr/bin/env python3
"""Writes plain-100mp.png: a 10,000 x 10,000 grey PNG (100 megapixels) that compresses to a few hundred KB.

Decoding it takes libvips a second or more, so the transformation tests can stop a conversion in the middle,
and its header declares more than the default 50-megapixel limit. Run from this directory."""
import struct
import zlib

WIDTH = HEIGHT = 10_000


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


row = b"\x00" + b"\x80" * WIDTH  # filter 0, one grey byte a pixel
compressor = zlib.compressobj(9)
data = b"".join(compressor.compress(row) for _ in range(HEIGHT)) + compressor.flush()
header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 0, 0, 0, 0)
with open("plain-100mp.png", "wb") as out:
    out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))
