"""(a) unique: 2,000 payloads, each a distinct 100 KB JPEG, against curl and URLSession."""

import hashlib
import os
import time

from scenarios.against_curl import AgainstCurl, pair_ratios

GOALS = {"tmpfs": "1.15x", "disk": "1.3x"}


def hashing_cpu(directory, names=None):
    """CPU seconds of the SHA-256 of every file in `directory` (of `names` in it, when given; OpenSSL's, through
    hashlib, read in 64 KiB chunks as RichPush reads them back): the work RichPush's digest step does and curl does
    not."""
    start = time.process_time()
    for name in os.listdir(directory) if names is None else names:
        digest = hashlib.sha256()
        with open(os.path.join(directory, name), "rb") as f:
            while chunk := f.read(65536):
                digest.update(chunk)
    return time.process_time() - start


class Unique(AgainstCurl):
    """unique:   2,000 payloads, each a distinct 100 KB JPEG"""

    key = "a"
    ndjson_name = "unique.ndjson"

    def make_urls(self, bench):
        return [f"{bench.base}/u/{i:04d}.jpg" for i in range(bench.scaled(2000))]

    def label(self, bench):
        return f"(a) unique, {len(self.urls):,} x 100 KB"

    def urlsession_rounds(self, bench):
        return bench.repeat

    def bound(self, bench, rp, cu):
        return (f"(a) bound on {self.kind}: SHA-256 of curl's {len(self.urls):,} files costs "
                f"{hashing_cpu(bench.runs.previous):.3f} s of CPU, beside curl's whole {cu['cpu']:.3f} s (wall "
                f"{cu['wall']:.3f} s) and richpush's {rp['cpu']:.3f} s (medians)")

    def goal(self, rp, cu, us, ratios):
        return (f"(a) on {self.kind}: richpush/curl wall {pair_ratios(ratios)} "
                f"(goal <= {GOALS.get(self.kind.split(' ')[0], '1.3x')}); "
                f"URLSession/richpush = {us['wall'] / rp['wall']:.2f}x (goal >= 3x)")
