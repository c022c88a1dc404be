"""(w) workers: a campaign's entries on a Redis stream through one and then two `richpush worker`s, beside `stream`
on the same payloads in the same rounds, with the count check (every input has exactly one output)."""

import os
import shutil
import signal
import socket
import subprocess
import time

from places import BIN, OUT
from programs import free_port, stream, write_ndjson
from report import median_of
from scenario import ORIGIN, REDIS, RELEASE, Scenario


class Redis:
    """The few Redis commands the benchmark needs, over RESP on a socket (no client library)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def send(self, *commands):
        out = bytearray()
        for args in commands:
            out += b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return [self.read() for _ in commands]

    def read(self):
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)[:-2]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")


def worker_run(bench, ndjson, count, workers, binary=None):
    """`count` entries through `workers` workers (of `binary`, this build's by default): entries per second from the
    first worker's start to the last output, and the count check."""
    data = os.path.join(OUT, "redis")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", data], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                client = Redis(redis_port)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("redis-server did not start")
        with open(ndjson, "rb") as f:
            lines = [line.rstrip(b"\n") for line in f]
        for start in range(0, count, 5000):
            client.send(*[("XADD", "in", "*", "payload", line) for line in lines[start:start + 5000]])
        client.send(("XGROUP", "CREATE", "in", "g", "0"))
        attachments = bench.runs.fresh_directory("worker")
        command = [binary or os.path.join(BIN, "richpush"), "worker", "--redis", f"redis://127.0.0.1:{redis_port}",
                   "--stream", "in", "--group", "g", "--output-stream", "out", "--allow-http", "--allow-network",
                   "127.0.0.1/32", "--allow-port", str(bench.port), "--attachments-dir", attachments,
                   "--concurrency", "64"]
        started = time.monotonic()
        processes = [subprocess.Popen(command + ["--consumer", f"w{i}"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL) for i in range(workers)]
        deadline = started + 600
        while client.send(("XLEN", "out"))[0] < count and time.monotonic() < deadline:
            time.sleep(0.02)
        wall = time.monotonic() - started
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
        sources, cursor = set(), "-"
        outputs = 0
        while True:
            batch = client.send(("XRANGE", "out", cursor, "+", "COUNT", "10000"))[0]
            if cursor != "-":
                batch = batch[1:]
            if not batch:
                break
            for entry_id, fields in batch:
                outputs += 1
                sources.add(fields[fields.index(b"source") + 1])
            cursor = batch[-1][0].decode()
        pending = client.send(("XPENDING", "in", "g"))[0][0]
        return {"rate": count / wall, "outputs": outputs, "distinct": len(sources), "pending": pending}
    finally:
        redis.terminate()
        redis.wait(timeout=30)


class Workers(Scenario):
    """workers: 100,000 campaign entries on a Redis stream through 1 and then 2 `richpush worker`s, entries per
    second beside `stream` on the same payloads, and the count check (every input has exactly one output); --repeat
    rounds of stream then the workers (and the --compare build's), each ratio taken within its round

    Each round runs stream, then each worker count (and the --compare build's); each ratio is taken within its
    round, so that a busy moment of the shared machine weighs on both sides of it, and the median of the ratios is
    reported."""

    key = "w"
    needs = frozenset({ORIGIN, REDIS, RELEASE})
    workers = (1, 2)

    def set_up(self, bench):
        self.count = bench.scaled(100000)
        self.ndjson = os.path.join(OUT, "campaign100k.ndjson")
        write_ndjson(self.ndjson, bench.origin.campaign(self.count))

    def runners(self, bench):
        return [("stream", lambda: stream(bench, self.ndjson))] + [
            runner for workers in self.workers
            for runner in bench.per_build(("worker", workers), lambda build, workers=workers:
                                          worker_run(bench, self.ndjson, self.count, workers, build.binary))]

    def report(self, bench, results):
        count, streams = self.count, results["stream"]
        rows = [(f"(w) campaign, {count:,} over 20 (stream)", median_of(streams), None, None, count)]
        stream_rates = sorted(count / rp["wall"] for rp in streams)
        notes = []
        for workers in self.workers:
            for build in bench.builds:
                wks = results[(("worker", workers), build)]
                rates = sorted(wk["rate"] for wk in wks)
                ratios = sorted(wk["rate"] * rp["wall"] / count for wk, rp in zip(wks, streams))
                checks = "; ".join(f"{wk['outputs']} outputs for {count} inputs, {wk['distinct']} distinct sources, "
                                   f"{wk['pending']} pending" for wk in wks)
                label = "" if build is bench.this else " (--compare build)"
                notes.append(
                    f"(w) {workers} worker{'s' if workers > 1 else ''}{label}: {rates[len(rates) // 2]:.0f} entries/s "
                    f"({rates[0]:.0f}-{rates[-1]:.0f}), {ratios[len(ratios) // 2]:.0%} of stream's in the same round "
                    f"({ratios[0]:.0%}-{ratios[-1]:.0%}; stream {stream_rates[0]:.0f}-{stream_rates[-1]:.0f}/s; "
                    f"goal for one >= 80%); count check: {checks}")
        return rows, notes
