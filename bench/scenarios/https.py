"""(h) https: richpush and curl over TLS 1.3 from nginx with a CA made for the run (tls.py), four host names, HTTP/2
and HTTP/1.1, in alternated pairs; with each run's TLS handshakes and resumed sessions from nginx's log. One more
case, without a goal, trusts the system's CA bundle with the run's CA appended, as a deployment trusts the system's."""

import os
import statistics
from dataclasses import dataclass

from places import OUT, WWW
from programs import curl, stream, write_ndjson
from scenario import CURL, ORIGIN, RELEASE, Scenario
from scenarios.against_curl import pair_ratios
from scenarios.unique import hashing_cpu
from tls import HOSTS, TLSOrigin

# Issue 26's goals, each on the median of the pairs' ratios.
WALL_GOAL = 1.3  # richpush/curl wall, unique
CPU_GOAL = 1.6  # richpush/curl CPU, unique
RESUMED_GOAL = 0.9  # over HTTP/1.1, the share of connections after the first per host that resume a session
CAMPAIGN_GOAL = 5  # curl/richpush wall, campaign


@dataclass(frozen=True)
class Case:
    """One case of (h): `count` payloads (scaled), URL i on host i % 4, on the origin's port for `protocol`."""

    key: str  # also its NDJSON file's name
    protocol: str  # a key of TLSOrigin.ports
    campaign: bool  # the 20 campaign images in turn, else one distinct 100 KB JPEG a payload
    count: int
    system_bundle: bool = False  # trust the system's CA bundle with the run's CA appended, else the run's CA alone

    def urls(self, bench, port):
        count = bench.scaled(self.count)
        path = "c/{:02d}.jpg" if self.campaign else "u/{:04d}.jpg"
        return [f"https://{HOSTS[i % len(HOSTS)]}:{port}/" + path.format(i % 20 if self.campaign else i)
                for i in range(count)]

    def label(self, count):
        what = f"campaign, {count:,} over 20" if self.campaign else f"unique, {count:,} x 100 KB"
        trust = ", the system's CAs and the run's" if self.system_bundle else ""
        return f"(h) {what}, {'HTTP/2' if self.protocol == 'h2' else 'HTTP/1.1'}{trust}"


CASES = (Case("unique-h2", "h2", False, 2000), Case("unique-http1.1", "http/1.1", False, 2000),
         Case("campaign-h2", "h2", True, 10000),
         Case("unique-http1.1-system-cas", "http/1.1", False, 2000, system_bundle=True))

# The system's CA bundle (Debian's ca-certificates), which libcurl trusts when given none.
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def met(ok):
    return "met" if ok else "NOT met"


class HTTPS(Scenario):
    """https:    2,000 distinct 100 KB JPEGs over 4 host names, over HTTP/2 and over HTTP/1.1, and 10,000 payloads
    over 20 images over HTTP/2, from nginx with TLS 1.3 and a CA made for the run; against curl in alternated pairs,
    with the TLS handshakes and resumed sessions of each run (nginx's log); and the HTTP/1.1 case again trusting the
    system's CA bundle with the run's CA appended (no goal)

    Every run is checked: each richpush result complete, curl's exit 0, and nginx's log of the run (read from where
    it ended before the run) with a 200 for every request, and for the unique cases one request a URL."""

    key = "h"
    needs = frozenset({ORIGIN, CURL, RELEASE})

    def __init__(self):
        self.origin = TLSOrigin()
        self.urls, self.ndjson, self.resolve = {}, {}, {}
        self.hashing_cpu = {}

    def set_up(self, bench):
        self.origin.start()
        # A bundle of a deployment's size: every new connection of a client that reads its bundle again for each
        # (curl's tool with Debian's libcurl; richpush before 6f4be67) pays for its 140 certificates.
        self.system_bundle = os.path.join(OUT, "https-system-cas.pem")
        if not os.path.exists(SYSTEM_BUNDLE):
            raise SystemExit(f"(h): no {SYSTEM_BUNDLE} (the ca-certificates package): run scripts/install-deps")
        with open(SYSTEM_BUNDLE) as system, open(self.origin.ca_bundle) as run, open(self.system_bundle, "w") as f:
            f.write(system.read().rstrip("\n") + "\n" + run.read())
        for case in CASES:
            port = self.origin.ports[case.protocol]
            self.urls[case] = case.urls(bench, port)
            self.ndjson[case] = os.path.join(OUT, f"https-{case.key}.ndjson")
            write_ndjson(self.ndjson[case], self.urls[case])
            # The same --resolve entries for both: richpush's option has curl's form.
            self.resolve[case] = [option for entry in self.origin.resolve(port) for option in ("--resolve", entry)]

    def tear_down(self, bench):
        self.origin.stop()

    def runners(self, bench):
        runners = []
        for case in CASES:
            runners += bench.per_build(("richpush", case), lambda build, case=case: self.richpush(bench, case, build))
            runners.append((("curl", case), lambda case=case: self.curl(bench, case)))
        return runners

    def richpush(self, bench, case, build):
        mark = self.origin.mark()
        run = stream(bench, self.ndjson[case], binary=build.binary, ports=(self.origin.ports[case.protocol],),
                     extra=self.resolve[case] + ["--ca-bundle", self.bundle(case)])
        count = len(self.urls[case])
        if run["outcomes"].get("complete", 0) != count:
            raise SystemExit(f"(h) {case.key}: richpush ({build.binary}) outcomes {run['outcomes']} of {count}")
        return dict(run, tls=self.checked(case, mark, "richpush"))

    def curl(self, bench, case):
        mark = self.origin.mark()
        # timed() exits when curl does not exit 0; --fail makes an HTTP error one.
        run = curl(bench, self.urls[case], extra=self.resolve[case] + ["--cacert", self.bundle(case)])
        return dict(run, tls=self.checked(case, mark, "curl"))

    def bundle(self, case):
        """The CA bundle both runners trust in `case`."""
        return self.system_bundle if case.system_bundle else self.origin.ca_bundle

    def checked(self, case, mark, runner):
        """nginx's log of the run that started at `mark`; exits unless every request had a 200 and, for the unique
        cases, there was one request a URL."""
        count = len(self.urls[case])
        seen = self.origin.since(mark, None if case.campaign else count)
        if seen.statuses.keys() != {"200"} or (not case.campaign and seen.requests != count):
            raise SystemExit(f"(h) {case.key}: nginx logged {seen.requests} requests of {runner} (statuses "
                             f"{seen.statuses}) for {count} URLs")
        return seen

    def report(self, bench, results):
        rows, notes = [], []
        for case in CASES:
            count = len(self.urls[case])
            label, cu = case.label(count), results.median(("curl", case))
            for build in bench.builds:
                name = (("richpush", case), build)
                rows.append((build.row(label), results.median(name), cu if build is bench.this else None, None,
                             count))
                notes.append(build.note(self.goals(case, results, name)))
                notes.append(build.note(self.connections(case, results, name, with_curl=build is bench.this)))
        return rows, notes

    def goals(self, case, results, name):
        """The case's goals from the pairs' ratios, each beside its figure."""
        label = case.label(len(self.urls[case]))
        curl_name = ("curl", case)
        rp, cu = results.median(name), results.median(curl_name)
        medians = (f"medians: richpush {rp['wall']:.2f} s wall / {rp['cpu']:.2f} s CPU, curl {cu['wall']:.2f} s / "
                   f"{cu['cpu']:.2f} s")
        if case.campaign:
            ratios = results.ratios(name, curl_name)
            faster = statistics.median(1 / r for r in ratios)
            return (f"{label}: curl/richpush wall {pair_ratios(ratios, inverted=True)} (goal >= {CAMPAIGN_GOAL}x: "
                    f"{met(faster >= CAMPAIGN_GOAL)}); {medians}")
        wall, cpu = results.ratios(name, curl_name), results.ratios(name, curl_name, "cpu")
        # Beside the goal, as (a) prints its bound: the CPU over curl's plus the SHA-256 of the same files, the work
        # RichPush does and curl does not (the files served are (a)'s, u/ of the origin, whatever the scheme).
        hashing = self.hashing(len(self.urls[case]))
        with_hash = sorted(run["cpu"] / (other["cpu"] + hashing)
                           for run, other in zip(results.runs[name], results.runs[curl_name]))
        if case.system_bundle:
            return (f"{label}: richpush/curl wall {pair_ratios(wall)}; CPU {pair_ratios(cpu)} (no goal: the goals are "
                    f"for the run's CA alone); {medians}")
        return (f"{label}: richpush/curl wall {pair_ratios(wall)} (goal <= {WALL_GOAL}x: "
                f"{met(statistics.median(wall) <= WALL_GOAL)}); CPU {pair_ratios(cpu)} (goal <= {CPU_GOAL}x: "
                f"{met(statistics.median(cpu) <= CPU_GOAL)}); CPU over curl's plus the SHA-256 of the same files "
                f"({hashing:.3f} s) {pair_ratios(with_hash)}; {medians}")

    def hashing(self, count):
        """CPU seconds of the SHA-256 of the `count` files the unique cases fetch (u/ of the origin's media), taken
        once: the same for both protocols."""
        if count not in self.hashing_cpu:
            source = os.path.join(WWW, "u")
            self.hashing_cpu[count] = hashing_cpu(source, sorted(os.listdir(source))[:count])
        return self.hashing_cpu[count]

    def connections(self, case, results, name, with_curl):
        """The TLS connections of richpush's median run (and curl's, `with_curl`), and the share of the connections
        after the first per host that resumed a session, over all the runs (the goal over HTTP/1.1)."""
        parts = []
        for runner, key in (("richpush", name), ("curl", ("curl", case)))[:2 if with_curl else 1]:
            seen = results.median(key)["tls"]
            shares = sorted(run["tls"].resumed_share for run in results[key] if run["tls"].resumed_share is not None)
            protocols = ", ".join(f"{requests:,} {protocol}" for protocol, requests in sorted(seen.protocols.items()))
            text = (f"{runner}: {seen.handshakes} handshakes, {seen.resumed} resumed (by host, connections/resumed: "
                    f"{seen.by_host()}; requests: {protocols})")
            goal = runner == "richpush" and case.protocol == "http/1.1" and not case.system_bundle
            if shares:
                share = statistics.median(shares)
                text += (f"; resumed of those after the first per host: median of {len(shares)} runs {share:.0%}, "
                         f"range {shares[0]:.0%}-{shares[-1]:.0%}")
                if goal:
                    text += f" (goal >= {RESUMED_GOAL:.0%}: {met(share >= RESUMED_GOAL)})"
            elif goal:
                text += f" (goal >= {RESUMED_GOAL:.0%} resumed: no run opened a second connection to a host)"
            parts.append(text)
        return f"{case.label(len(self.urls[case]))}, TLS connections of the median runs: " + ". ".join(parts)
