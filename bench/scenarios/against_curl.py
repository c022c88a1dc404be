"""What (a) and (b) share: on each storage, richpush and curl in alternated pairs, then the scenario's bound on
that storage, a profile with `--profile`, and URLSession."""

import os
import statistics

from places import OUT
from perf_profile import profiled
from programs import curl, stream, urlsession, write_ndjson
from report import median_run
from scenario import CURL, ORIGIN, RELEASE, URLSESSION, Scenario


def pair_ratios(ratios, inverted=False):
    """The median and range of richpush/curl ratios, or of curl/richpush when `inverted`."""
    if inverted:
        ratios = sorted(1 / r for r in ratios)
    return (f"median of {len(ratios)} pairs {statistics.median(ratios):.2f}x, "
            f"range {ratios[0]:.2f}-{ratios[-1]:.2f}x")


class AgainstCurl(Scenario):
    """One storage's run of (a) or (b): each round runs richpush (then each --compare build) and curl, so that each
    ratio is taken within its pair; the previous run's files are deleted before the next run's clock starts. After
    the rounds, the bound (while curl's files of the last pair are there), the profile, then URLSession.

    A subclass sets `inverted` (its goal reads curl/richpush) and `ndjson_name`, and writes `make_urls`, `label`,
    `bound`, `goal` and `urlsession_rounds`."""

    needs = frozenset({ORIGIN, CURL, RELEASE, URLSESSION})
    inverted = False
    ndjson_name = None

    def __init__(self, kind, directory):
        self.kind = kind
        self.storage = directory

    @classmethod
    def instances(cls, storages):
        return [cls(kind, directory) for kind, directory in storages]

    def set_up(self, bench):
        self.urls = self.make_urls(bench)
        self.ndjson = os.path.join(OUT, self.ndjson_name)
        write_ndjson(self.ndjson, self.urls)

    def runners(self, bench):
        return (bench.per_build("richpush", lambda build: stream(bench, self.ndjson, binary=build.binary))
                + [("curl", lambda: curl(bench, self.urls))])

    def report(self, bench, results):
        this = ("richpush", bench.this)
        rp, cu = results.median(this), results.median("curl")
        label, storage = self.label(bench), self.kind.split(" ")[0]
        notes = [self.bound(bench, rp, cu)]
        if bench.profile:
            notes.append(self.profile(bench, label, cu))
        us = median_run(self.urlsession_rounds(bench), lambda: urlsession(bench, self.urls))
        rows = [(f"{label}, {storage}", rp, cu, us, len(self.urls))]
        notes.append(self.goal(rp, cu, us, results.ratios(this, "curl")))
        # Each side as the scenario's goal reads it: richpush/curl for (a), curl/richpush for (b).
        sides = "curl/its" if self.inverted else "its/curl"
        for build in bench.compared:
            name = ("richpush", build)
            rows.append((f"{label}, {storage}, --compare", results.median(name), None, None, len(self.urls)))
            notes.append(f"    --compare {build.compare} on {self.kind}, in the same rounds: {sides} wall "
                         f"{pair_ratios(results.ratios(name, 'curl'), self.inverted)}; this build's "
                         f"{pair_ratios(results.ratios(this, 'curl'), self.inverted)}")
        return rows, notes

    def profile(self, bench, label, cu):
        """One more curl run (as in a pair: its files deleted just before the next run; on the disk, that is what
        ext4 then scans), then richpush under perf record."""
        curl(bench, self.urls)
        run, shares, samples = profiled(lambda wrap: stream(bench, self.ndjson, wrap=wrap))
        if shares is None:
            return f"{label} on {self.kind}: no profile (perf is missing)"
        return (f"{label} on {self.kind}, profile of one run ({samples} samples at 4 kHz, "
                f"{1e6 * run['cpu'] / len(self.urls):.0f} us CPU a payload; curl "
                f"{1e6 * cu['cpu'] / len(self.urls):.0f} us): "
                + "; ".join(f"{name} {share:.0%}" for name, share in shares if share >= 0.005))
