"""(m) many tenants: one tenant's throughput under `serve --tenants` with 100 tenants configured, beside a server with
none, in the same rounds; the memory a tenant costs (issue 25)."""

import hashlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request

from places import BIN, OUT
from programs import free_port, wait_for_port
from scenario import ORIGIN, RELEASE, WRK, Scenario
from scenarios.service import middle, resident_mib, service, service_summary

TENANTS = 100
# The tenants of the start-up's measure: a large deployment's file.
MANY = 5000


def tenants_file(path, tokens):
    """A tenants file of one tenant per token, `t000`, `t001`, ..., each with the server's settings."""
    entries = [{"name": f"t{i:03d}", "token_sha256": hashlib.sha256(token.encode()).hexdigest()}
               for i, token in enumerate(tokens)]
    with open(path, "w") as f:
        json.dump({"tenants": entries}, f)


def used_memory(bench, arguments, tokens):
    """A server's RSS in MiB once listening, then once each of `tokens` (none: one unauthenticated request) has sent
    one payload of the campaign (each tenant's engine then has its cache entry, its attachments index, its
    transformation's threads when one ran)."""
    attachments = bench.runs.fresh_directory("serve-memory")
    port = free_port()
    command = [os.path.join(BIN, "richpush"), "serve", "--listen", f"127.0.0.1:{port}", "--allow-http",
               "--allow-network", "127.0.0.1/32", "--allow-port", str(bench.port), "--attachments-dir",
               attachments] + list(arguments)
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, server, "richpush serve")
        idle = resident_mib(server.pid, "VmRSS")
        body = json.dumps({"aps": {"alert": "bench", "mutable-content": 1},
                           "adb_media": f"{bench.base}/c/00.jpg"}).encode()
        for token in tokens or [None]:
            headers = {"Content-Type": "application/json"}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/enrich", data=body, headers=headers)
            with urllib.request.urlopen(request, timeout=30) as reply:
                if json.load(reply).get("outcome") != "complete":
                    raise RuntimeError("a payload of the memory measure did not complete")
        used = resident_mib(server.pid, "VmRSS")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    return idle, used


def start_seconds(bench, arguments):
    """Seconds from a server's start until it accepts a connection (polled every 10 ms, 120 s at most)."""
    attachments = bench.runs.fresh_directory("serve-start")
    port = free_port()
    command = [os.path.join(BIN, "richpush"), "serve", "--listen", f"127.0.0.1:{port}", "--allow-http",
               "--allow-network", "127.0.0.1/32", "--allow-port", str(bench.port), "--attachments-dir",
               attachments] + list(arguments)
    started = time.monotonic()
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(12000):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return time.monotonic() - started
            except OSError:
                if server.poll() is not None:
                    raise RuntimeError("richpush serve exited before it listened")
                time.sleep(0.01)
        raise RuntimeError("richpush serve did not listen within 120 s")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


class Tenants(Scenario):
    """many tenants: `richpush serve` under wrk (16 connections, one payload a request, the campaign over 20 images)
    as one tenant of 100 configured (`--tenants`), beside the same server with none, alternated in each round; the
    ratio of payloads/s is taken within its round (goal: within 5%). Then the memory a tenant costs: the RSS of a
    server with 100 tenants over one with none, once listening and once every tenant has enriched a payload; and how
    long a server with 5,000 tenants takes to listen, beside one with none (the file read at the start).

    Every tenant has the server's settings, so each request pays what tenants add (the token's SHA-256 and its
    comparison with every tenant's digest, the tenant's bounds, its own engine over the shared fetch loop) and
    nothing else differs."""

    key = "m"
    needs = frozenset({ORIGIN, WRK, RELEASE})
    connections = 16

    def set_up(self, bench):
        self.seconds = bench.scaled(10)
        self.tokens = [secrets.token_hex(32) for _ in range(TENANTS)]
        self.file = os.path.join(OUT, "tenants.json")
        tenants_file(self.file, self.tokens)
        self.many = os.path.join(OUT, f"tenants-{MANY}.json")
        tenants_file(self.many, [secrets.token_hex(32) for _ in range(MANY)])

    def runners(self, bench):
        return [("none", lambda: service(bench, self.connections, self.seconds)),
                ("hundred", lambda: service(bench, self.connections, self.seconds, arguments=["--tenants", self.file],
                                            token=self.tokens[TENANTS // 2]))]

    def report(self, bench, results):
        none, hundred = results["none"], results["hundred"]
        ratios = [h["rate"] / n["rate"] for n, h in zip(none, hundred)]
        ratio, low, high = middle(ratios)
        n, h = service_summary(none), service_summary(hundred)
        verdict = "met" if ratio >= 0.95 else "NOT met"
        notes = [f"(m) one tenant of {TENANTS} configured, {self.connections} connections, {len(ratios)} rounds: "
                 f"{h['rate']:.0f} payloads/s (range {h['rates'][0]:.0f}-{h['rates'][-1]:.0f}) beside "
                 f"{n['rate']:.0f} (range {n['rates'][0]:.0f}-{n['rates'][-1]:.0f}) with no tenants: {ratio:.1%} in "
                 f"the same round ({low:.1%}-{high:.1%}; goal >= 95%: {verdict}); CPU {h['cpu_ms']:.3f} ms a payload "
                 f"beside {n['cpu_ms']:.3f}; p50 {h['p50']:.1f} ms beside {n['p50']:.1f}; peak RSS {h['rss']:.1f} MiB "
                 f"beside {n['rss']:.1f}; {h['errors']} and {n['errors']} non-200 responses"]
        idle_none, used_none = used_memory(bench, [], [])
        idle_hundred, used_hundred = used_memory(bench, ["--tenants", self.file], self.tokens)
        notes.append(f"(m) memory: RSS once listening {idle_hundred:.1f} MiB with {TENANTS} tenants, "
                     f"{idle_none:.1f} with none: {1024 * (idle_hundred - idle_none) / TENANTS:.0f} KiB a tenant; "
                     f"after one payload from each tenant (one from the server with none) {used_hundred:.1f} MiB "
                     f"beside {used_none:.1f}: {1024 * (used_hundred - used_none) / TENANTS:.0f} KiB a tenant")
        starts = sorted(start_seconds(bench, ["--tenants", self.many]) for _ in range(3))
        bare = sorted(start_seconds(bench, []) for _ in range(3))
        notes.append(f"(m) start-up: listening {starts[1]:.2f} s after the start with {MANY} tenants (runs "
                     f"{starts[0]:.2f}-{starts[2]:.2f}), {bare[1]:.2f} s with none: "
                     f"{1000 * (starts[1] - bare[1]) / MANY:.2f} ms a tenant")
        return [], notes
