#!/usr/bin/env python3
"""Writes photo-exif.jpg: photo.jpg with an EXIF block holding orientation 6 (rotate 90 degrees clockwise to
display) and a GPS position (48.8584 N, 2.2945 E), for the transformation tests: a re-encoded image must be
turned upright and lose the position."""
import struct

def ifd(entries, next_offset, base):
    # entries: (tag, type, count, value_bytes_or_int); values over 4 bytes go after the IFD.
    out = struct.pack(">H", len(entries))
    data = b""
    data_offset = base + 2 + 12 * len(entries) + 4
    for tag, kind, count, value in entries:
        if isinstance(value, bytes) and len(value) > 4:
            out += struct.pack(">HHII", tag, kind, count, data_offset + len(data))
            data += value
        elif isinstance(value, bytes):
            out += struct.pack(">HHI", tag, kind, count) + value.ljust(4, b"\0")
        else:
            out += struct.pack(">HHI", tag, kind, count) + (struct.pack(">HH", value, 0) if kind == 3 else struct.pack(">I", value))
    return out + struct.pack(">I", next_offset) + data

def rationals(*pairs):
    return b"".join(struct.pack(">II", a, b) for a, b in pairs)

# TIFF header, then IFD0 at 8: Orientation and the GPS IFD pointer; the GPS IFD follows.
ifd0_size = 2 + 12 * 2 + 4
gps_offset = 8 + ifd0_size
ifd0 = ifd([(0x0112, 3, 1, 6), (0x8825, 4, 1, gps_offset)], 0, 8)
gps = ifd([
    (0x0001, 2, 2, b"N\0"), (0x0002, 5, 3, rationals((48, 1), (51, 1), (3024, 100))),
    (0x0003, 2, 2, b"E\0"), (0x0004, 5, 3, rationals((2, 1), (17, 1), (4020, 100))),
], 0, gps_offset)
tiff = b"MM\0*" + struct.pack(">I", 8) + ifd0 + gps
app1 = b"Exif\0\0" + tiff
with open("photo.jpg", "rb") as f:
    jpeg = f.read()
assert jpeg[:2] == b"\xff\xd8"
with open("photo-exif.jpg", "wb") as f:
    f.write(jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:])
