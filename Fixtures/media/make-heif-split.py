#!/usr/bin/env python3
"""Writes heif-split-sps.heic: photo.heic (160 x 120) whose coded item is given as two extents, the second of which
lies in the file's first 4 KB and holds an HEVC sequence parameter set of 16,000 x 16,000, the first past them.

In the whole file the decoder's stream is the first extent, then the second: the first extent's last NAL unit (type
48, which no decoder reads) has a length that takes in all of the second, so the large SPS is no unit of its own and
the picture decodes at 160 x 120. A reader of the first 4 KB alone sees the second extent only: had it walked that
as a stream, it would have found the SPS and refused the file (`explain` did; `enrich` attached it). Run from this
directory; it reads photo.heic, whose boxes it copies by their offsets (libheif 1.15's layout of that file)."""
import struct


def be16(value):
    return struct.pack(">H", value)


def be32(value):
    return struct.pack(">I", value)


def box(kind, payload):
    return be32(len(payload) + 8) + kind + payload


class Bits:
    """An RBSP written bit by bit: fixed-width fields and unsigned Exp-Golomb codes."""

    def __init__(self):
        self.bits = []

    def fixed(self, width, value):
        self.bits += [(value >> (width - 1 - i)) & 1 for i in range(width)]

    def golomb(self, value):
        value += 1
        width = value.bit_length()
        self.fixed(width - 1, 0)
        self.fixed(width, value)

    def rbsp(self):
        bits = self.bits + [1] + [0] * ((8 - (len(self.bits) + 1) % 8) % 8)
        return bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8))


def sequence_parameter_set(width, height):
    """An SPS NAL unit (type 33, Main profile) as far as its picture size, emulation prevention added."""
    bits = Bits()
    bits.fixed(4, 0)  # sps_video_parameter_set_id
    bits.fixed(3, 0)  # sps_max_sub_layers_minus1
    bits.fixed(1, 1)  # sps_temporal_id_nesting_flag
    bits.fixed(8, 0x01)  # general profile space, tier, profile idc (Main)
    bits.fixed(32, 0x60000000)  # general_profile_compatibility_flags
    bits.fixed(48, 0x900000000000)  # the constraint flags
    bits.fixed(8, 0x5D)  # general_level_idc (3.1)
    bits.golomb(0)  # sps_seq_parameter_set_id
    bits.golomb(1)  # chroma_format_idc (4:2:0)
    bits.golomb(width)
    bits.golomb(height)
    escaped, zeros = b"", 0
    for byte in bits.rbsp():
        if zeros >= 2 and byte <= 3:
            escaped += b"\x03"
            zeros = 0
        escaped += bytes([byte])
        zeros = zeros + 1 if byte == 0 else 0
    return b"\x42\x01" + escaped


source = open("photo.heic", "rb").read()
ftyp, hdlr, pitm = source[0:28], source[40:73], source[73:87]
iinf, iprp, iref = source[139:195], source[195:389], source[389:415]
coded, exif = source[423:423 + 1738], source[0x871:0x871 + 0xBE]

sps = sequence_parameter_set(16000, 16000)
second = be32(len(sps)) + sps
swallowing = b"\x60\x01"  # a NAL unit header of type 48
first = coded + be32(len(swallowing) + len(second)) + swallowing


def meta(first_at, second_at, exif_at):
    # iloc version 0: offset and length 4 bytes, base offset 4 bytes; item 1 of two extents, item 2 (Exif) of one.
    iloc = box(b"iloc", b"\0\0\0\0" + b"\x44\x40" + be16(2)
               + be16(1) + be16(0) + be32(0) + be16(2)
               + be32(first_at) + be32(len(first)) + be32(second_at) + be32(len(second))
               + be16(2) + be16(0) + be32(0) + be16(1) + be32(exif_at) + be32(len(exif)))
    return box(b"meta", b"\0\0\0\0" + hdlr + pitm + iloc + iinf + iprp + iref)


data_start = len(ftyp) + len(meta(0, 0, 0)) + 8
second_at = data_start
exif_at = second_at + len(second)
first_at = 8192
data = bytearray(first_at - data_start)
data[0:len(second)] = second
data[len(second):len(second) + len(exif)] = exif
data += first
with open("heif-split-sps.heic", "wb") as out:
    out.write(ftyp + meta(first_at, second_at, exif_at) + box(b"mdat", bytes(data)))
