"""(d) deadline: 1,000 payloads in flight against the slow location, and 1,000 with eight references each; how
late each expired result arrives after its 2 s deadline."""

import json
import os

from places import OUT
from programs import stream, write_ndjson
from report import percentile
from scenario import ORIGIN, RELEASE, Scenario

DEADLINE_MS = 2000


class Deadline(Scenario):
    """deadline: 1,000 payloads in flight against a slow location; how late each expired result arrives"""

    key = "d"
    needs = frozenset({ORIGIN, RELEASE})

    def rounds(self, bench):
        # One run: each run's lateness is its own distribution (p50, p99, max over every payload).
        return 1

    def set_up(self, bench):
        self.count = bench.scaled(1000)
        self.single = os.path.join(OUT, "slow.ndjson")
        write_ndjson(self.single, [f"{bench.base}/slow/{i:04d}.jpg" for i in range(self.count)])
        # Eight references a payload (OneSignal's att): eight times the transfers expiring together.
        self.eight = os.path.join(OUT, "slow8.ndjson")
        with open(self.eight, "w") as f:
            for i in range(self.count):
                att = {f"r{k}": f"{bench.base}/slow/{(i * 8 + k) % 1000:04d}.jpg?p={i}" for k in range(8)}
                f.write(json.dumps({"aps": {"alert": "bench", "mutable-content": 1}, "att": att}) + "\n")

    def runners(self, bench):
        def run(ndjson):
            return lambda build: stream(bench, ndjson, concurrency=self.count, deadline=DEADLINE_MS / 1000,
                                        binary=build.binary)

        return bench.per_build("single", run(self.single)) + bench.per_build("eight", run(self.eight))

    def report(self, bench, results):
        notes = []
        for name, label, goal, references in (
                ("single", f"(d) {self.count:,} payloads in flight", "every one within 100 ms", self.count),
                ("eight", f"(d8) {self.count:,} payloads x 8 references in flight", "p99 and max within 100 ms",
                 8 * self.count)):
            for build in bench.builds:
                for rp in results[(name, build)]:
                    late = [v - DEADLINE_MS for v in rp["latencies"]]
                    notes.append(build.note(
                        f"{label}, deadline 2 s, slow origin: {rp['outcomes'].get('expired', 0)} expired; lateness "
                        f"p50 {percentile(late, 50):.1f} ms, p99 {percentile(late, 99):.1f} ms, "
                        f"max {max(late):.1f} ms (goal: {goal}); peak RSS {rp['rss']:.1f} MiB, at most "
                        f"{1024 * rp['rss'] / references:.0f} KiB a reference waiting"))
        return [], notes
