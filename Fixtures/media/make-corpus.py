#!/usr/bin/env python3
"""Writes corpus/: small odd and broken images for MediaCorpusTests, each named for what it is.

The sound ones are made with libvips's command line (`vips`, Debian's libvips-tools) from one 64 x 48 picture;
the rest are written byte by byte here (APNG, GIF, BMP, ICO, TGA, PSD) or damaged on purpose (truncated, bits
flipped, a recomputed CRC over a broken data stream). Run from this directory; the output does not depend on the
run, except for what libvips 8.14 encodes. MediaCorpusTests lists the outcome expected of every file."""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

OUT = "corpus"
WIDTH, HEIGHT = 64, 48


def vips(*arguments):
    subprocess.run(["vips"] + [str(a) for a in arguments], check=True, stdout=subprocess.DEVNULL)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_chunks(data):
    """The (type, data) chunks of a PNG."""
    offset, chunks = 8, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset:offset + 4])
        chunks.append((data[offset + 4:offset + 8], data[offset + 8:offset + 8 + length]))
        offset += 12 + length
    return chunks


def png(chunks):
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunk(kind, data) for kind, data in chunks)


def exif(orientation, gps=True):
    """A big-endian EXIF block: the orientation and, with gps, a GPS position (48.8584 N, 2.2945 E)."""
    entries = [(0x0112, 3, 1, struct.pack(">HH", orientation, 0))]
    gps_offset = 8 + 2 + 12 * 2 + 4
    if gps:
        entries.append((0x8825, 4, 1, struct.pack(">I", gps_offset)))
    ifd0 = struct.pack(">H", len(entries)) + b"".join(struct.pack(">HHI", t, k, c) + v for t, k, c, v in entries)
    ifd0 += struct.pack(">I", 0)
    block = b"MM\0*" + struct.pack(">I", 8) + ifd0
    if gps:
        values = struct.pack(">IIIIII", 48, 1, 51, 1, 3024, 100)
        gps_ifd = struct.pack(">H", 2) + struct.pack(">HHI", 1, 2, 2) + b"N\0\0\0"
        gps_ifd += struct.pack(">HHII", 2, 5, 3, gps_offset + 2 + 24 + 4) + struct.pack(">I", 0)
        block += gps_ifd + values
    return block


def with_jpeg_exif(jpeg, block):
    app1 = b"Exif\0\0" + block
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:]


def flip(data, *offsets):
    data = bytearray(data)
    for offset in offsets:
        data[offset] ^= 0x5A
    return bytes(data)


def lzw(indices, depth):
    """GIF LZW data for `indices`: a clear code before every second literal keeps the codes depth + 1 bits wide."""
    clear, end, width = 1 << depth, (1 << depth) + 1, depth + 1
    codes = []
    for at, index in enumerate(indices):
        if at % 2 == 0:
            codes.append(clear)
        codes.append(index)
    codes.append(end)
    bits, count, out = 0, 0, bytearray()
    for code in codes:
        bits |= code << count
        count += width
        while count >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            count -= 8
    if count:
        out.append(bits & 0xFF)
    blocks = b"".join(bytes([len(out[i:i + 255])]) + bytes(out[i:i + 255]) for i in range(0, len(out), 255))
    return bytes([depth]) + blocks + b"\0"


def gif(width, height, frames, palette, comment=None):
    """An animated GIF: frames are (left, top, width, height, indices); palette has 4 colours."""
    out = b"GIF89a" + struct.pack("<HHBBB", width, height, 0xF1, 0, 0) + b"".join(bytes(c) for c in palette)
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    if comment:
        out += b"\x21\xfe" + bytes([len(comment)]) + comment + b"\0"
    for left, top, w, h, indices in frames:
        out += b"\x21\xf9\x04\x04\x05\x00\x00\x00"  # graphic control: 50 ms, no transparency
        out += b"\x2c" + struct.pack("<HHHHB", left, top, w, h, 0) + lzw(indices, 2)
    return out + b"\x3b"


def bmp(bits, width=WIDTH, height=HEIGHT):
    """A bottom-up BI_RGB BMP of `bits` per pixel: a palette for 1, 4 and 8; for 32, the fourth byte is 0 (unused,
    as BI_RGB says: not alpha)."""
    colours = 1 << bits if bits <= 8 else 0
    palette = b"".join(bytes([(i * 37) % 256, (i * 91) % 256, (i * 53) % 256, 0]) for i in range(colours))
    stride = (width * bits + 31) // 32 * 4
    rows = b""
    for y in range(height):
        row = bytearray()
        if bits <= 8:
            acc, n = 0, 0
            for x in range(width):
                acc = acc << bits | ((x // 4 + y // 4) % colours)
                n += bits
                if n == 8:
                    row.append(acc)
                    acc, n = 0, 0
        else:
            for x in range(width):
                row += bytes([x * 4 % 256, y * 5 % 256, 128]) + (b"\0" if bits == 32 else b"")
        rows += bytes(row).ljust(stride, b"\0")
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, 0, len(rows), 2835, 2835, colours, 0)
    offset = 14 + len(header) + len(palette)
    return b"BM" + struct.pack("<IHHI", offset + len(rows), 0, 0, offset) + header + palette + rows


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    work = tempfile.mkdtemp()

    def path(name):
        return os.path.join(OUT, name)

    def read(name):
        with open(path(name), "rb") as f:
            return f.read()

    def write(name, data):
        with open(path(name), "wb") as f:
            f.write(data)

    # The picture: smooth colour, and an alpha band that fades left to right.
    sines = os.path.join(work, "sines.v")
    vips("sines", sines, WIDTH, HEIGHT, "--hfreq", 2, "--vfreq", 1)
    scaled = os.path.join(work, "scaled.v")
    vips("linear", sines, scaled, 100, 128, "--uchar")
    rgb = os.path.join(work, "rgb.v")
    vips("bandjoin_const", scaled, rgb, "60 200")
    ramp = os.path.join(work, "ramp.v")
    vips("xyz", os.path.join(work, "xyz.v"), WIDTH, HEIGHT)
    vips("extract_band", os.path.join(work, "xyz.v"), os.path.join(work, "x.v"), 0)
    vips("linear", os.path.join(work, "x.v"), ramp, 4, 0, "--uchar")
    rgba = os.path.join(work, "rgba.v")
    vips("bandjoin", f"{rgb} {ramp}", rgba)
    grey_alpha = os.path.join(work, "ga.v")
    vips("bandjoin", f"{scaled} {ramp}", grey_alpha)
    cmyk = os.path.join(work, "cmyk.v")
    vips("bandjoin_const", rgb, os.path.join(work, "four.v"), 30)
    vips("copy", os.path.join(work, "four.v"), cmyk, "--interpretation", "cmyk")
    sixteen = os.path.join(work, "sixteen.v")
    vips("cast", rgb, os.path.join(work, "wide.v"), "ushort")
    vips("linear", os.path.join(work, "wide.v"), os.path.join(work, "wide2.v"), 257, 0)
    vips("cast", os.path.join(work, "wide2.v"), os.path.join(work, "wide3.v"), "ushort")
    vips("copy", os.path.join(work, "wide3.v"), sixteen, "--interpretation", "rgb16")
    large = os.path.join(work, "large.v")
    vips("sines", os.path.join(work, "lsines.v"), 400, 300, "--hfreq", 5, "--vfreq", 3)
    vips("linear", os.path.join(work, "lsines.v"), os.path.join(work, "lscaled.v"), 100, 128, "--uchar")
    vips("bandjoin_const", os.path.join(work, "lscaled.v"), large, "60 200")

    # JPEG.
    vips("copy", rgb, path("jpeg-baseline.jpg") + "[Q=85,strip]")
    vips("copy", rgb, path("jpeg-progressive.jpg") + "[Q=85,interlace,strip]")
    vips("copy", cmyk, path("jpeg-cmyk.jpg") + "[Q=85,strip]")
    write("jpeg-orientation-8.jpg", with_jpeg_exif(read("jpeg-baseline.jpg"), exif(8)))
    vips("copy", large, path("jpeg-large.jpg") + "[Q=90,strip]")
    large_jpeg = read("jpeg-large.jpg")
    os.remove(path("jpeg-large.jpg"))
    write("jpeg-truncated.jpg", large_jpeg[:len(large_jpeg) * 6 // 10])
    scan = large_jpeg.index(b"\xff\xda")
    write("jpeg-bitflip.jpg", flip(large_jpeg, *range(scan + 400, len(large_jpeg) - 400, 97)))
    # Corrupt scan data under intact markers: no flip makes or unmakes a 0xFF, or touches the byte after one. Every
    # 13th byte: with every 97th, libjpeg's only warning comes at the end of the scan, after libvips has read it.
    data = range(scan + 400, len(large_jpeg) - 400, 13)
    write("jpeg-corrupt-data.jpg", flip(large_jpeg, *[o for o in data if 0xFF not in (large_jpeg[o - 1], large_jpeg[o],
                                                                                    large_jpeg[o] ^ 0x5A)]))
    # Every header, the scan's included, and no scan data.
    write("jpeg-headers-only.jpg", large_jpeg[:scan + 2 + struct.unpack(">H", large_jpeg[scan + 2:scan + 4])[0]])
    baseline = read("jpeg-baseline.jpg")
    frame = baseline.index(b"\xff\xc0")
    write("jpeg-zero-width.jpg", baseline[:frame + 7] + b"\0\0" + baseline[frame + 9:])
    write("jpeg-huge.jpg", baseline[:frame + 5] + b"\xff\xff\xff\xff" + baseline[frame + 9:])
    write("jpeg-empty.jpg", b"")

    # PNG.
    vips("copy", rgb, path("png-rgb.png"))
    vips("copy", grey_alpha, path("png-grey-alpha.png"))
    vips("copy", rgba, path("png-palette-trns.png") + "[palette]")
    vips("copy", sixteen, path("png-16-bit.png"))
    vips("copy", rgb, path("png-interlaced.png") + "[interlace]")
    vips("copy", large, path("png-large.png"))
    large_png = read("png-large.png")
    os.remove(path("png-large.png"))
    write("png-truncated.png", large_png[:len(large_png) * 6 // 10])
    write("png-bad-crc.png", flip(large_png, len(large_png) // 2))
    chunks = png_chunks(large_png)
    broken = [(k, flip(d, len(d) // 2, len(d) // 2 + 1) if k == b"IDAT" else d) for k, d in chunks]
    write("png-bad-zlib.png", png(broken))
    small = png_chunks(read("png-rgb.png"))
    bomb = b"Comment\0\0" + zlib.compress(b"\0" * 100_000_000, 9)
    write("png-ztxt-bomb.png", png(small[:1] + [(b"zTXt", bomb)] + small[1:]))
    write("png-huge.png", png([(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0))] + small[1:]))
    write("png-zero.png", png([(b"IHDR", struct.pack(">IIBBBBB", 0, 0, 8, 2, 0, 0, 0))] + small[1:]))
    write("png-trailing-html.png", read("png-rgb.png") + b"<html><script>alert(1)</script></html>\n")

    # APNG: three frames (the default image and two more), with text, a time stamp and EXIF (orientation 6, GPS).
    header = struct.pack(">IIBBBBB", 32, 24, 8, 2, 0, 0, 0)

    def frame_data(shade):
        row = b"\0" + b"".join(bytes([shade, (x * 8) % 256, 255 - shade]) for x in range(32))
        return zlib.compress(row * 24)

    def fctl(sequence):
        return struct.pack(">IIIIIHHBB", sequence, 32, 24, 0, 0, 1, 10, 0, 0)

    write("apng-three-frames.png", png([
        (b"IHDR", header),
        (b"acTL", struct.pack(">II", 3, 0)),
        (b"tEXt", b"Comment\0taken at 48.8584 N 2.2945 E (secret)"),
        (b"eXIf", exif(6)),
        (b"tIME", struct.pack(">HBBBBB", 2024, 5, 1, 12, 0, 0)),
        (b"fcTL", fctl(0)),
        (b"IDAT", frame_data(0)),
        (b"fcTL", fctl(1)),
        (b"fdAT", struct.pack(">I", 2) + frame_data(120)),
        (b"fcTL", fctl(3)),
        (b"fdAT", struct.pack(">I", 4) + frame_data(240)),
        (b"zTXt", b"Author\0\0" + zlib.compress(b"someone@example.com")),
        (b"IEND", b""),
    ]))

    # GIF.
    palette = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)]
    write("gif-many-frames.gif", gif(16, 16, [(0, 0, 16, 16, [(i + p) % 4 for p in range(256)]) for i in range(120)],
                                     palette))
    write("gif-tiny-frames.gif", gif(WIDTH, HEIGHT, [(i % WIDTH, i % HEIGHT, 1, 1, [i % 4]) for i in range(60)],
                                     palette))
    whole = gif(WIDTH, HEIGHT, [(0, 0, WIDTH, HEIGHT, [(x // 8 + y // 8) % 4 for y in range(HEIGHT)
                                                       for x in range(WIDTH)])], palette)
    write("gif-still.gif", whole)
    write("gif-truncated.gif", whole[:len(whole) // 2])
    write("gif-no-trailer.gif", whole[:-1])
    write("gif-huge-screen.gif", whole[:6] + struct.pack("<HH", 65535, 65535) + whole[10:])
    # A GIF that is also a script: the screen width and height are "/*", the comment closes it.
    polyglot = gif(WIDTH, HEIGHT, [(0, 0, 2, 2, [0, 1, 2, 3])], palette, comment=b"*/=1;alert(document.cookie);/*")
    write("gif-polyglot.gif", b"GIF89a/*" + polyglot[8:])

    # WebP.
    vips("copy", rgb, path("webp-lossy.webp") + "[Q=80]")
    vips("copy", rgba, path("webp-alpha.webp") + "[lossless]")
    shutil.copy("anim.webp", path("webp-animated.webp"))
    vips("copy", large, os.path.join(work, "large.webp") + "[Q=90]")
    with open(os.path.join(work, "large.webp"), "rb") as f:
        large_webp = f.read()
    write("webp-truncated.webp", large_webp[:len(large_webp) * 6 // 10])

    # BMP, and types iOS does not attach that RichPush does not convert.
    for bits in (1, 4, 8, 24, 32):
        write(f"bmp-{bits}-bit.bmp", bmp(bits))
    small_png = read("png-rgb.png")
    write("icon.ico", struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", WIDTH, HEIGHT, 0, 0, 1, 32,
                                                                      len(small_png), 22) + small_png)
    pixels = b"".join(bytes([x * 4 % 256, y * 5 % 256, 128]) for y in range(HEIGHT) for x in range(WIDTH))
    write("image.tga", struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, WIDTH, HEIGHT, 24, 0) + pixels
          + struct.pack("<II", 0, 0) + b"TRUEVISION-XFILE.\0")
    planes = b"".join(bytes([(x * 4 + band * 60) % 256 for x in range(WIDTH)]) * HEIGHT for band in range(3))
    write("image.psd", b"8BPS" + struct.pack(">H6xHIIHH", 1, 3, HEIGHT, WIDTH, 8, 3) + struct.pack(">I", 0) * 3
          + struct.pack(">H", 0) + planes)

    shutil.rmtree(work)


if __name__ == "__main__":
    main()
