"""(e) payload memory: 32 payloads of 1 MiB in flight at once (their media on the slow location keeps them there
until their 2 s deadline), in four shapes; peak RSS."""

import json
import os
import random

from places import OUT
from programs import stream
from scenario import ORIGIN, RELEASE, Scenario

MIB = 1 << 20
SHAPES = ("strings", "deep", "numbers", "huge")


def large_payload(shape, url, seed):
    """One line of JSON of just under 1 MiB (the payload limit) in the given shape, its media at `url`."""
    rng = random.Random(seed)
    payload = {"aps": {"alert": {"title": "bench", "body": shape}, "mutable-content": 1}, "adb_media": url}
    budget = MIB - 1024

    def fill(make):
        items, size = [], 0
        while True:
            item = make(len(items))
            size += len(json.dumps(item, separators=(",", ":"))) + 1
            if size > budget:
                return items
            items.append(item)

    def chain(i):
        # 60 levels under the root's "trees" array: the default depth limit is 64.
        value = [i]
        for _ in range(60):
            value = {"k": value}
        return value

    if shape == "strings":
        payload["items"] = fill(lambda i: {"id": f"i{i}", "title": f"title {rng.randrange(1000)}",
                                           "u": f"/p/{i}"})
    elif shape == "deep":
        payload["trees"] = fill(chain)
    elif shape == "numbers":
        payload["values"] = fill(lambda i: rng.choice([i, rng.random() * 1000, -7 * i]))
    else:
        payload["blob"] = "x" * budget
    return json.dumps(payload, separators=(",", ":"))


class PayloadMemory(Scenario):
    """payload memory: 32 payloads of 1 MiB in flight at once (their media on the slow location keeps them there),
    in four shapes: many small strings, deep nesting, large arrays of numbers, one huge string"""

    key = "e"
    needs = frozenset({ORIGIN, RELEASE})

    def set_up(self, bench):
        # 64 payloads a shape, 32 in flight at once; every one waits on the slow location until its 2 s deadline,
        # so 32 are parsed and held together.
        self.count = bench.scaled(64)
        self.in_flight = max(1, self.count // 2)
        self.inputs = {}
        for shape in SHAPES:
            self.inputs[shape] = os.path.join(OUT, f"large-{shape}.ndjson")
            with open(self.inputs[shape], "w") as f:
                for i in range(self.count):
                    f.write(large_payload(shape, f"{bench.base}/slow/{i:04d}.jpg", i) + "\n")

    def runners(self, bench):
        def run(shape):
            return lambda build: stream(bench, self.inputs[shape], concurrency=self.in_flight, deadline=2,
                                        binary=build.binary)

        return [runner for shape in SHAPES for runner in bench.per_build(shape, run(shape))]

    def report(self, bench, results):
        rows, notes = [], []
        for build in bench.builds:
            runs = {shape: results.median((shape, build)) for shape in SHAPES}
            worst = max(SHAPES, key=lambda shape: runs[shape]["rss"])
            rows.append((build.row(f"(e) {self.in_flight} x 1 MiB payloads in flight ({worst})"), runs[worst], None,
                         None, self.count))
            notes.append(build.note(
                f"(e) peak RSS with {self.in_flight} payloads of 1 MiB in flight: "
                + ", ".join(f"{shape} {runs[shape]['rss']:.1f} MiB" for shape in SHAPES)
                + " (goal < 160 MB, 152.6 MiB)"))
        return rows, notes
