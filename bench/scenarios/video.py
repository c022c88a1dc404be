"""(c) memory: one payload with a 45 MB MP4, and 50 payloads of it at once (with the media cache and without)."""

import os

from places import OUT
from programs import curl, stream, urlsession, write_ndjson
from scenario import CURL, ORIGIN, RELEASE, URLSESSION, Scenario


class Video(Scenario):
    """memory:   one payload with a 45 MB MP4, and 50 payloads of it at once"""

    key = "c"
    needs = frozenset({ORIGIN, CURL, RELEASE, URLSESSION})

    def set_up(self, bench):
        self.url = f"{bench.base}/v/big.mp4"
        self.at_once = bench.scaled(50)
        self.one = os.path.join(OUT, "video1.ndjson")
        write_ndjson(self.one, [self.url])
        self.many = os.path.join(OUT, "video50.ndjson")
        write_ndjson(self.many, [self.url] * self.at_once)

    def runners(self, bench):
        return (bench.per_build("one", lambda build: stream(bench, self.one, binary=build.binary))
                + bench.per_build("at once", lambda build: stream(bench, self.many, concurrency=self.at_once,
                                                                  binary=build.binary))
                # The same with the cache off: that many transfers of 45 MB really in flight at once.
                + bench.per_build("cache off", lambda build: stream(bench, self.many, concurrency=self.at_once,
                                                                    extra=["--cache-ttl", "0"], binary=build.binary))
                + [("curl", lambda: curl(bench, [self.url])), ("urlsession", lambda: urlsession(bench, [self.url]))])

    def report(self, bench, results):
        rows, notes, count = [], [], self.at_once
        for build in bench.builds:
            one, many, uncached = (results.median((name, build)) for name in ("one", "at once", "cache off"))
            others = (results.median("curl"), results.median("urlsession")) if build is bench.this else (None, None)
            rows.append((build.row("(c) one 45 MB MP4"), one, *others, 1))
            rows.append((build.row(f"(c) {count:,} x 45 MB MP4 at once"), many, None, None, count))
            rows.append((build.row(f"(c) {count:,} x 45 MB at once, cache off"), uncached, None, None, count))
            notes.append(build.note(
                f"(c) one video: {one['rss']:.1f} MiB peak RSS (goal < 24 MiB); {count:,} at once: "
                f"{many['rss']:.1f} MiB, {uncached['rss']:.1f} MiB with the cache off (goal < 64 MiB)"))
        return rows, notes
