"""(p) object store (issue 23): publishing to a real SeaweedFS on loopback. The unique set of (a) enriched and
published by `richpush stream --publish-s3`, beside the same files uploaded by curl with the same headers, in
alternated pairs; and the campaign of (b) published, with the uploads counted at the store."""

import base64
import hashlib
import os
import statistics

from places import OUT, WWW
from programs import stream, timed, write_ndjson
from scenario import CURL, ORIGIN, RELEASE, SEAWEEDFS, Scenario
from scenarios.against_curl import pair_ratios
from seaweedfs import ACCESS_KEY, REGION, SECRET_KEY, SeaweedFS

UNIQUE, CAMPAIGN = "unique", "campaign"  # the buckets, made before the first round
CACHE_CONTROL = "public, max-age=31536000, immutable"  # richpush's default, which curl is given too
JPEG = "image/jpeg"  # every image of (a) and (b) is one: what each object must be stored as
GOAL = 1.3  # richpush (enrich + publish) over curl (uploads alone), wall, median of the pairs
WIDE = 64  # curl's --parallel-max, and richpush's default --s3-uploads
NARROW = 16  # richpush's --s3-uploads before this round, beside
CONDITIONAL = ["--s3-existence-check", "if-none-match"]  # the conditional PUT in place of the HEAD


def spread(values, digits=2):
    """`median (lowest-highest)` of `values`."""
    values = sorted(values)
    return f"{statistics.median(values):.{digits}f} ({values[0]:.{digits}f}-{values[-1]:.{digits}f})"


class ObjectStore(Scenario):
    """object store: the 2,000 unique 100 KB JPEGs of (a) enriched and published by `richpush stream --publish-s3`
    to a SeaweedFS 4.48 on loopback, beside the same files uploaded by `curl --aws-sigv4 --parallel-max 64` with
    the same headers, in alternated pairs (goal: within 1.3x of curl), with richpush's defaults, with --s3-uploads 16
    and with --s3-existence-check if-none-match (the conditional PUT alone); then the 10,000-payload campaign over
    20 images published, with HEADs and with the conditional PUT (goal: exactly 20 uploads counted at the store, 20
    objects under its prefix)

    Every run writes under a fresh key prefix, so that nothing is found there already. Each run is checked before
    the next: every result complete with a `published_url` for each attachment, the keys listed under the run's
    prefix exactly those published (or uploaded by curl), each stored with its Content-Type, Cache-Control and
    length. The store counts the requests (its Prometheus metrics), independently of richpush. Its data is on the
    tmpfs with the runs', so that the store's disk is not what is measured; its CPU is reported beside each run, and
    so is the unique set enriched alone (no publishing) in the same rounds."""

    key = "p"
    needs = frozenset({ORIGIN, CURL, RELEASE, SEAWEEDFS})

    def set_up(self, bench):
        self.store = SeaweedFS(os.path.join(bench.runs.directory, "seaweedfs"))
        count = bench.scaled(2000)
        self.files = [os.path.join(WWW, "u", f"{i:04d}.jpg") for i in range(count)]
        self.unique = os.path.join(OUT, "publish-unique.ndjson")
        write_ndjson(self.unique, [f"{bench.base}/u/{i:04d}.jpg" for i in range(count)])
        self.campaign_count = bench.scaled(10000)
        self.campaign = os.path.join(OUT, "publish-campaign.ndjson")
        write_ndjson(self.campaign, bench.origin.campaign(self.campaign_count))
        # curl is given what richpush computes itself: each file's SHA-256 (hex for x-amz-content-sha256, base64 of
        # the digest for x-amz-checksum-sha256), made here, untimed.
        self.digests = {}
        for path in self.files:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).digest()
            self.digests[path] = (digest.hex(), base64.b64encode(digest).decode())
        self.size = os.path.getsize(self.files[0])
        self.env = {name: value for name, value in os.environ.items()
                    if not name.startswith("AWS_")}  # no session token, profile or credentials file of the caller's
        self.env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
        self.prefixes = 0
        self.store.start()
        for bucket in (UNIQUE, CAMPAIGN):
            self.store.client.create_bucket(bucket)
            # The first object of a bucket makes the store grow its volumes: not in a timed run.
            with open(self.files[0], "rb") as f:
                self.store.client.put(bucket, "warm-up/0.jpg", f.read(), JPEG)

    def tear_down(self, bench):
        if getattr(self, "store", None):
            self.store.stop()

    def fresh_prefix(self, name):
        self.prefixes += 1
        return f"{self.prefixes:03d}-{name}"

    def runners(self, bench):
        return (bench.per_build("richpush", lambda build: self.publish(bench, build, UNIQUE, self.unique))
                + bench.per_build("richpush narrow", lambda build: self.publish(bench, build, UNIQUE, self.unique,
                                                                     ["--s3-uploads", str(NARROW)]))
                + bench.per_build("richpush if-none-match", lambda build: self.publish(
                    bench, build, UNIQUE, self.unique, CONDITIONAL))
                + [("curl", lambda: self.curl())]
                + bench.per_build("enrich", lambda build: self.enrich(bench, build))
                + bench.per_build(CAMPAIGN, lambda build: self.publish(bench, build, CAMPAIGN, self.campaign))
                + bench.per_build(CAMPAIGN + " if-none-match", lambda build: self.publish(
                    bench, build, CAMPAIGN, self.campaign, CONDITIONAL)))

    def enrich(self, bench, build):
        """The unique set through `richpush stream` without publishing: what enrichment alone costs, beside."""
        cpu = self.store.cpu_seconds()
        run = stream(bench, self.unique, binary=build.binary)
        if run["outcomes"].get("complete", 0) != len(self.files):
            raise SystemExit(f"(p) richpush without publishing: outcomes {run['outcomes']}")
        return dict(run, store_cpu=self.store.cpu_seconds() - cpu)

    def publish(self, bench, build, bucket, ndjson, options=()):
        """One `richpush stream --publish-s3` run (with `options`) into a fresh prefix of `bucket`, checked; with the
        store's counts."""
        prefix = self.fresh_prefix(bucket)
        base = f"{self.store.endpoint}/{bucket}"  # path-style: each published URL is its object's own
        extra = ["--publish-s3", f"s3://{bucket}/{prefix}", "--publish-url", base, "--s3-endpoint",
                 self.store.endpoint, "--s3-path-style", "--s3-region", REGION] + list(options)
        return self.counted(bucket, prefix, lambda: self.check_published(
            stream(bench, ndjson, binary=build.binary, extra=extra, env=self.env), base, prefix))

    def check_published(self, run, base, prefix):
        """The keys `run` published: every result complete, every attachment with a `published_url` under
        `base/prefix/`; exits otherwise, so that a failed run shows as a failure rather than as a fast time."""
        payloads = sum(run["outcomes"].values())
        if run["outcomes"].get("complete", 0) != payloads:
            raise SystemExit(f"(p) richpush publishing into {prefix}: outcomes {run['outcomes']}")
        keys = set()
        for url, mime in run["published"]:
            if url is None or not url.startswith(f"{base}/{prefix}/") or mime != JPEG:
                unpublished = sum(1 for url, _ in run["published"] if url is None)
                raise SystemExit(f"(p) richpush publishing into {prefix}: {unpublished} of "
                                 f"{len(run['published'])} attachments without published_url; first wrong: {url!r}, "
                                 f"{mime}")
            keys.add(url[len(base) + 1:])
        return run, keys

    def curl(self):
        """curl uploading the unique files into a fresh prefix, 64 at once, each PUT with the headers richpush
        sends, signed by libcurl (`--aws-sigv4`), checked."""
        prefix = self.fresh_prefix("curl")
        config = os.path.join(OUT, "publish-curl.cfg")
        keys, operations = set(), []
        for path in self.files:
            hex_digest, base64_digest = self.digests[path]
            key = f"{prefix}/{hex_digest}.jpg"
            keys.add(key)
            operations.append(
                f'url = "{self.store.endpoint}/{UNIQUE}/{key}"\nupload-file = "{path}"\noutput = "/dev/null"\n'
                f'fail\naws-sigv4 = "aws:amz:{REGION}:s3"\nuser = "{ACCESS_KEY}:{SECRET_KEY}"\n'
                f'header = "Content-Type: {JPEG}"\nheader = "Cache-Control: {CACHE_CONTROL}"\n'
                # libcurl 7.88 signs a streamed body as empty unless given its hash (seaweedfs-facts).
                f'header = "x-amz-content-sha256: {hex_digest}"\nheader = "x-amz-checksum-sha256: {base64_digest}"\n')
        with open(config, "w") as f:
            # One operation a file, each with its own headers, between `next`s (one after the last would be an
            # operation without a URL, which fails them all); --parallel runs them all, 64 at once.
            f.write("next\n".join(operations))
        return self.counted(UNIQUE, prefix, lambda: (timed(
            ["curl", "--silent", "--show-error", "--parallel", "--parallel-max", str(WIDE), "--config", config]), keys))

    def counted(self, bucket, prefix, run):
        """`run()` (its measurement and the keys it stored), with the store's CPU and requests during it; then the
        prefix listed and each key asked for (exits when any is missing, extra or stored wrong)."""
        before, cpu = self.store.requests(bucket), self.store.cpu_seconds()
        measurement, keys = run()
        store_cpu = self.store.cpu_seconds() - cpu
        self.check_stored(bucket, prefix, keys)
        after = self.store.requests(bucket)
        counts = {kind: after[kind] - before[kind] for kind in after}
        counts["HEAD"] -= len(keys)  # check_stored's own
        return dict(measurement, store_cpu=store_cpu, store=counts, objects=len(keys))

    def check_stored(self, bucket, prefix, keys):
        listed = set(self.store.client.keys(bucket, prefix))
        if listed != keys:
            raise SystemExit(f"(p) {bucket}/{prefix}/: {len(listed)} objects listed, {len(keys)} published; "
                             f"{len(listed - keys)} extra, {len(keys - listed)} missing")
        expected = (200, JPEG, CACHE_CONTROL, str(self.size))
        for key in sorted(keys):
            status, headers = self.store.client.head(bucket, key)
            found = (status, headers.get("content-type"), headers.get("cache-control"), headers.get("content-length"))
            if found != expected:
                raise SystemExit(f"(p) {bucket}/{key}: HEAD gives {found}, expected {expected}")

    def report(self, bench, results):
        count, curl_runs = len(self.files), results["curl"]
        rows = []
        notes = [f"(p) curl, {count:,} uploads: wall {spread(r['wall'] for r in curl_runs)} s, CPU "
                 f"{spread(r['cpu'] for r in curl_runs)} s, peak RSS {spread((r['rss'] for r in curl_runs), 1)} MiB; "
                 f"the store's CPU {spread(r['store_cpu'] for r in curl_runs)} s; at the store per run: "
                 f"{self.requests(curl_runs)}"]
        for build in bench.builds:
            alone = results[("enrich", build)]
            for name, label in (("richpush", f"defaults (--s3-uploads {WIDE}, --s3-existence-check auto)"),
                                ("richpush narrow", f"--s3-uploads {NARROW}"),
                                ("richpush if-none-match", "--s3-existence-check if-none-match")):
                runs, ratios = results[(name, build)], results.ratios((name, build), "curl")
                rows.append((build.row(f"(p) unique, {count:,} x 100 KB, enrich + publish to SeaweedFS, {label}"),
                             results.median((name, build)),
                             results.median("curl") if build is bench.this and name == "richpush" else None, None,
                             count))
                met = "met" if statistics.median(ratios) <= GOAL else "NOT met"
                notes.append(build.note(
                    f"(p) unique, {label}: richpush (enrich + publish)/curl (uploads alone) wall {pair_ratios(ratios)} "
                    f"(goal <= {GOAL}x: {met}); richpush wall {spread(r['wall'] for r in runs)} s, CPU "
                    f"{spread(r['cpu'] for r in runs)} s, peak RSS {spread((r['rss'] for r in runs), 1)} MiB; the "
                    f"store's CPU {spread(r['store_cpu'] for r in runs)} s; at the store per run: "
                    f"{self.requests(runs)}"))
            rows.append((build.row(f"(p) unique, {count:,} x 100 KB, enrich alone (no publishing)"),
                         results.median(("enrich", build)), None, None, count))
            notes.append(build.note(
                f"(p) unique, enrich alone in the same rounds: wall {spread(r['wall'] for r in alone)} s, CPU "
                f"{spread(r['cpu'] for r in alone)} s, peak RSS {spread((r['rss'] for r in alone), 1)} MiB"))
            for name, label in ((CAMPAIGN, ""), (CAMPAIGN + " if-none-match", ", --s3-existence-check if-none-match")):
                campaigns = results[(name, build)]
                rows.append((build.row(f"(p) campaign, {self.campaign_count:,} over 20, published to SeaweedFS{label}"),
                             results.median((name, build)), None, None, self.campaign_count))
                distinct = min(20, self.campaign_count)
                exact = all(r["store"]["PUT"] == distinct and r["store"]["uploaded"] == distinct
                            and r["objects"] == distinct for r in campaigns)
                notes.append(build.note(
                    f"(p) campaign{label}: wall {spread(r['wall'] for r in campaigns)} s, CPU "
                    f"{spread(r['cpu'] for r in campaigns)} s, peak RSS "
                    f"{spread((r['rss'] for r in campaigns), 1)} MiB; at the store per run: "
                    f"{self.requests(campaigns)}; objects under each run's prefix {[r['objects'] for r in campaigns]} "
                    f"(goal: exactly {distinct} uploads and {distinct} objects: {'met' if exact else 'NOT met'})"))
        return rows, notes

    @staticmethod
    def requests(runs):
        """The store's counts of `runs`, run by run: PUT requests, successful object uploads, HEADs."""
        return (f"PUT {[r['store']['PUT'] for r in runs]}, uploads {[r['store']['uploaded'] for r in runs]}, "
                f"HEAD {[r['store']['HEAD'] for r in runs]}")
