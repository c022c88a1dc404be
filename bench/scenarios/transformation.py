"""(t) transformation (issue 11): transcoding throughput, memory while downscaling, the time to refuse a pixel bomb,
and the cost of the verifying decode (issue 20)."""

import os
import shutil
import statistics
import struct
import subprocess
import zlib

from places import OUT, WWW
from programs import stream, write_ndjson
from report import median_of
from scenario import ORIGIN, RELEASE, VIPS, Scenario

VERIFIED = (("photo-100k.jpg", 400), ("photo-2m.jpg", 40))
KINDS = ("webp", "heic")


def transform_media():
    """(t)'s images, made with the vips command line: a smooth 1,000 x 750 picture as WebP and HEIC, a
    40-megapixel JPEG, a PNG whose header declares 30,000 x 30,000 pixels, and grainy photos as JPEGs of about
    100 KB (640 x 480) and 2 MB (3,000 x 2,250)."""
    directory = os.path.join(WWW, "t")
    marker = os.path.join(directory, ".complete-verify")
    if os.path.exists(marker):
        return
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    work = os.path.join(OUT, "t-work")
    os.makedirs(work, exist_ok=True)

    def vips(*arguments):
        subprocess.run(["vips"] + list(arguments), check=True, stdout=subprocess.DEVNULL)

    def picture(width, height, name):
        sines = os.path.join(work, f"sines-{width}.v")
        vips("sines", sines, str(width), str(height), "--hfreq", "3", "--vfreq", "2")
        scaled = os.path.join(work, f"scaled-{width}.v")
        vips("linear", sines, scaled, "100", "128", "--uchar")
        colour = os.path.join(work, f"colour-{width}.v")
        vips("bandjoin_const", scaled, colour, "60 200")
        vips("copy", colour, os.path.join(directory, name))

    def noisy(width, height, name):
        # A photo's entropy: a smooth picture with grain, so that a JPEG of it weighs what a photo's does.
        def at(step):
            return os.path.join(work, f"{step}-{width}.v")
        vips("gaussnoise", at("noise"), str(width), str(height), "--sigma", "12", "--mean", "0")
        vips("sines", at("sines"), str(width), str(height), "--hfreq", "3", "--vfreq", "2")
        vips("linear", at("sines"), at("scaled"), "100", "128")
        vips("add", at("scaled"), at("noise"), at("sum"))
        vips("cast", at("sum"), at("grey"), "uchar")
        vips("bandjoin", f"{at('grey')} {at('grey')} {at('grey')}", at("three"))
        vips("linear", at("three"), os.path.join(directory, name), "1 0.8 0.6", "0 30 60", "--uchar")

    noisy(640, 480, "photo-100k.jpg[Q=85]")
    noisy(3000, 2250, "photo-2m.jpg[Q=85]")
    picture(1000, 750, "photo.webp[Q=80]")
    picture(1000, 750, "photo.heic[Q=50]")
    picture(7300, 5480, "big.jpg[Q=90]")

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(os.path.join(directory, "bomb.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(b"\x00" * 1024)) + chunk(b"IEND", b""))
    shutil.rmtree(work, ignore_errors=True)
    open(marker, "w").close()


class Transformation(Scenario):
    """transformation (issue 11): 200 distinct 1,000 x 750 WebP and then HEIC images to JPEG (images per second),
    peak RSS while downscaling one 40-megapixel JPEG to 2,048 pixels, and the time to refuse a 30,000 x 30,000 pixel
    bomb beside the time to attach a small JPEG (the fetch alone)"""

    key = "t"
    needs = frozenset({ORIGIN, VIPS, RELEASE})

    def set_up(self, bench):
        transform_media()
        base = bench.base
        # The verifying decode: distinct JPEGs of 100 KB and 2 MB attached as fetched, with it (--verify-images)
        # and without (the default).
        self.verified = []
        for name, count in VERIFIED:
            count = bench.scaled(count)
            ndjson = os.path.join(OUT, f"t-verify-{name}.ndjson")
            write_ndjson(ndjson, [f"{base}/t/{name}?i={i}" for i in range(count)])
            self.verified.append((name, count, ndjson))
        self.images = bench.scaled(200)
        self.transcoded = {}
        for kind in KINDS:
            self.transcoded[kind] = os.path.join(OUT, f"t-{kind}.ndjson")
            write_ndjson(self.transcoded[kind], [f"{base}/t/photo.{kind}?i={i}" for i in range(self.images)])
        self.big = os.path.join(OUT, "t-big.ndjson")
        write_ndjson(self.big, [f"{base}/t/big.jpg"])
        self.pair = os.path.join(OUT, "t-bomb.ndjson")
        write_ndjson(self.pair, [f"{base}/t/bomb.png", f"{base}/c/00.jpg"])

    def runners(self, bench):
        def run(ndjson, **options):
            return lambda build: stream(bench, ndjson, binary=build.binary, **options)

        runners = []
        for name, _, ndjson in self.verified:
            runners += bench.per_build(("verify", name, "on"), run(ndjson, extra=["--verify-images"]))
            runners += bench.per_build(("verify", name, "off"), run(ndjson))
        for kind in KINDS:
            runners += bench.per_build(kind, run(self.transcoded[kind]))
        runners += bench.per_build("downscale", run(self.big, extra=["--max-dimension", "2048"]))
        runners += bench.per_build("bomb", run(self.pair, concurrency=1, extra=["--cache-ttl", "0"]))
        return runners

    def report(self, bench, results):
        rows, notes = [], []
        for build in bench.builds:
            self.verification(build, results, rows, notes)
            rates = {}
            for kind in KINDS:
                run = results.median((kind, build))
                rows.append((build.row(f"(t) {self.images:,} x 1,000 x 750 {kind.upper()} to JPEG"), run, None, None,
                             self.images))
                rates[kind] = self.images / run["wall"]
            downscale = results.median(("downscale", build))
            rows.append((build.row("(t) one 40-megapixel JPEG to 2,048 px"), downscale, None, None, 1))
            bombs = results[("bomb", build)]
            notes += [build.note(f"(t) the bomb was not refused: {run['outcomes']}") for run in bombs
                      if run["outcomes"].get("failed") != 1]
            notes.append(build.note(
                f"(t) transcoding: WebP {rates['webp']:.0f} images/s, HEIC {rates['heic']:.0f} images/s (1,000 x 750 "
                f"to JPEG, 64 payloads in flight, 2 transformation threads); 40-megapixel JPEG downscaled: peak RSS "
                f"{downscale['rss']:.1f} MiB (goal < 120 MiB); 30,000 x 30,000 bomb refused in "
                f"{statistics.median(run['latencies'][0] for run in bombs):.1f} ms, median of {len(bombs)} (goal < 50 "
                f"ms; a small JPEG attached in {statistics.median(run['latencies'][1] for run in bombs):.1f} ms in the "
                f"same runs)"))
        return rows, notes

    def verification(self, build, results, rows, notes):
        """The cost of the verifying decode, alternated runs with it and without: CPU (user + system) and wall per
        image."""
        for name, count, _ in self.verified:
            size = os.path.getsize(os.path.join(WWW, "t", name))
            runs = {mode: results[(("verify", name, mode), build)] for mode in ("on", "off")}
            notes += [build.note(f"(t) verify {name} {mode}: not all attached: {run['outcomes']}")
                      for mode in ("on", "off") for run in runs[mode] if run["outcomes"].get("complete") != count]
            on, off = median_of(runs["on"]), median_of(runs["off"])
            cpu_on = statistics.median(r["cpu"] for r in runs["on"])
            cpu_off = statistics.median(r["cpu"] for r in runs["off"])
            label = f"{count} x {size / 1e6:.2f} MB JPEG"
            rows.append((build.row(f"(t) {label}, --verify-images"), on, None, None, count))
            rows.append((build.row(f"(t) {label}, not verified"), off, None, None, count))
            notes.append(build.note(
                f"(t) verifying decode, {label} (64 in flight, 2 transformation threads, medians of {len(runs['on'])} "
                f"alternated runs): CPU {cpu_on / count * 1000:.2f} ms an image verified, {cpu_off / count * 1000:.2f} "
                f"ms not (+{(cpu_on - cpu_off) / count * 1000:.2f} ms); wall {on['wall'] / count * 1000:.2f} against "
                f"{off['wall'] / count * 1000:.2f} ms an image; peak RSS {on['rss']:.1f} against {off['rss']:.1f} MiB"))
