"""(s) service: `richpush serve` under wrk beside `richpush stream` on the same campaign, in the same rounds."""

import os
import resource
import signal
import subprocess

from places import BIN, OUT
from programs import free_port, stream, wait_for_port, write_ndjson
from report import median_of
from scenario import ORIGIN, RELEASE, WRK, Scenario

WRK_SCRIPT = """
local bodies = {}
for i = 0, 19 do
  bodies[i] = string.format('{"aps":{"alert":"bench","mutable-content":1},"adb_media":"%s/c/%02d.jpg"}', base, i)
end
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/enrich", headers, bodies[n % 20])
end
"""

# The extra row: the same campaign as NDJSON, `batch` payloads a request (one body, results streamed back).
WRK_NDJSON_SCRIPT = """
local lines = {}
for i = 0, batch - 1 do
  lines[#lines + 1] = string.format('{"aps":{"alert":"bench","mutable-content":1},"adb_media":"%s/c/%02d.jpg"}',
                                    base, i % 20)
end
local body = table.concat(lines, "\\n") .. "\\n"
request = function()
  return wrk.format("POST", "/v1/enrich", {["Content-Type"] = "application/x-ndjson"}, body)
end
"""


def children_cpu():
    """CPU seconds (user + system) of the finished child processes so far (wrk's, once it has exited)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def service(bench, connections, seconds=10, batch=1, binary=None, healthz=False, arguments=(), token=None):
    """`richpush serve` under wrk: payloads per second, latency percentiles (wrk's, of requests), the server's
    peak RSS and its RSS once listening, before any request ("idle_rss"), and the CPU seconds the server and wrk each
    used per payload. `batch` > 1 sends NDJSON bodies of that many payloads; `healthz` sends `GET /healthz` instead
    (the HTTP round trip alone: no body, no task, no suspended connection), each request counted as a payload.
    `arguments` are added to serve's; `token` is sent as a bearer token (JSON bodies)."""
    attachments = bench.runs.fresh_directory("serve")
    listen_port = free_port()
    command = [binary or os.path.join(BIN, "richpush"), "serve", "--listen", f"127.0.0.1:{listen_port}", "--allow-http",
               "--allow-network", "127.0.0.1/32", "--allow-port", str(bench.port), "--attachments-dir", attachments,
               "--max-in-flight", "1024"] + list(arguments)
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(listen_port, server, "richpush serve")
    idle_rss = resident_mib(server.pid, "VmRSS")
    script = os.path.join(OUT, "wrk.lua")
    with open(script, "w") as f:
        if batch > 1:
            f.write(f'local base = "{bench.base}"\nlocal batch = {batch}\n' + WRK_NDJSON_SCRIPT)
        else:
            authorization = f', ["Authorization"] = "Bearer {token}"' if token else ""
            f.write(f'local base = "{bench.base}"\n'
                    f'local headers = {{["Content-Type"] = "application/json"{authorization}}}\n' + WRK_SCRIPT)
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu_seconds():
        with open(f"/proc/{server.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    cpu_before, wrk_before, load = cpu_seconds(), children_cpu(), os.getloadavg()[0]
    target = ([f"http://127.0.0.1:{listen_port}/healthz"] if healthz
              else ["-s", script, f"http://127.0.0.1:{listen_port}"])
    result = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s", "--latency"] + target,
                            capture_output=True, text=True, check=True)
    cpu, wrk_cpu = cpu_seconds() - cpu_before, children_cpu() - wrk_before
    rss = resident_mib(server.pid, "VmHWM")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)

    def milliseconds(text):
        value = float(text.rstrip("usm"))
        if text.endswith("us"):
            return value / 1000
        return value * 1000 if text.endswith("s") and not text.endswith("ms") else value

    rate, p50, p99, errors, requests = 0.0, float("nan"), float("nan"), 0, 0
    for line in result.stdout.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            rate = float(parts[1])
        elif parts[:1] == ["50%"]:
            p50 = milliseconds(parts[1])
        elif parts[:1] == ["99%"]:
            p99 = milliseconds(parts[1])
        elif "Non-2xx" in line:
            errors = int(parts[-1])
        elif "requests in" in line:
            requests = int(parts[0])
    payloads = max(requests * batch, 1)
    return {"rate": rate * batch, "p50": p50, "p99": p99, "rss": rss, "idle_rss": idle_rss, "errors": errors,
            "load": load,
            "cpu_ms": 1000 * cpu / payloads, "wrk_cpu_ms": 1000 * wrk_cpu / payloads}


def resident_mib(pid, field):
    """A process's `field` of /proc/PID/status (VmRSS now, VmHWM its peak), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024


def service_summary(runs):
    """The run of median rate, with the highest peak RSS and the ranges of rates, CPU and load."""
    runs = sorted(runs, key=lambda r: r["rate"])
    best = dict(runs[len(runs) // 2])
    best["rss"] = max(r["rss"] for r in runs)
    best["rates"] = [r["rate"] for r in runs]
    best["cpus"] = sorted(r["cpu_ms"] for r in runs)
    best["loads"] = sorted(r["load"] for r in runs)
    return best


def middle(values):
    """The median of `values`, its lowest and its highest."""
    values = sorted(values)
    return values[len(values) // 2], values[0], values[-1]


def met(ratio):
    return "met" if ratio >= 0.8 else "NOT met"


class Service(Scenario):
    """service: `richpush serve` under wrk (16 and 64 connections, one payload a request, a campaign over 20
    images), beside `richpush stream` on 100,000 payloads of the same campaign in the same rounds; raw payloads/s
    and, since wrk shares the cores, CPU-normalized throughput (stream's CPU a payload over serve's); the bound that
    ratio cannot pass (GET /healthz's CPU a request); an extra, labelled row with NDJSON bodies of 100 payloads (not
    the goal's measure)

    Stream's side is the 100,000-payload campaign (about 2 s on this machine; the 10,000 of earlier rounds took
    0.2-0.3 s, so its start-up and first fetches weighed on it and its CPU a payload moved by half between runs).
    Each round runs stream, the bound (GET /healthz), then serve at each connection count (and the --compare
    build's), then serve with NDJSON bodies of 100: every ratio is taken within its round, so a busy moment of the
    shared machine weighs on both sides of it, and the median of the ratios is reported, as (w) does."""

    key = "s"
    needs = frozenset({ORIGIN, WRK, RELEASE})
    connections = (16, 64)

    def set_up(self, bench):
        self.count, self.seconds = bench.scaled(100000), bench.scaled(10)
        self.ndjson = os.path.join(OUT, "campaign100k.ndjson")
        write_ndjson(self.ndjson, bench.origin.campaign(self.count))

    def runners(self, bench):
        return ([("stream", lambda: stream(bench, self.ndjson)),
                 # The HTTP round trip alone, as a bound: serve's CPU a payload is at least stream's plus this.
                 ("healthz", lambda: service(bench, 64, seconds=bench.scaled(5), healthz=True))]
                + [runner for connections in self.connections
                   for runner in bench.per_build(("serve", connections), lambda build, connections=connections:
                                                 service(bench, connections, self.seconds, binary=build.binary))]
                # Extra information, not the goal's measure: NDJSON bodies of 100 payloads, so HTTP costs are paid
                # once per 100 (latency is per request of 100).
                + [("batch", lambda: service(bench, 16, self.seconds, batch=100))])

    def report(self, bench, results):
        count, streams = self.count, results["stream"]
        rp = median_of(streams)
        rows = [(f"(s) campaign, {count:,} over 20 (stream)", rp, None, None, count)]
        stream_rates = sorted(count / r["wall"] for r in streams)
        stream_cpus = sorted(1000 * r["cpu"] / count for r in streams)
        # wrk runs on the same two cores as serve (stream has no load generator to feed): raw payloads/s measures
        # serve and wrk together. CPU a payload (serve's own user + system time over the payloads served) does not
        # depend on what wrk takes; stream's is /usr/bin/time's over its payloads.
        notes = [f"(s) stream: {count / rp['wall']:.0f} payloads/s (runs {stream_rates[0]:.0f}-"
                 f"{stream_rates[-1]:.0f}), CPU {1000 * rp['cpu'] / count:.3f} ms a payload (runs "
                 f"{stream_cpus[0]:.3f}-{stream_cpus[-1]:.3f})"]
        floors = []
        for run, floor in zip(streams, results["healthz"]):
            stream_cpu_ms = 1000 * run["cpu"] / count
            floors.append((floor["cpu_ms"], stream_cpu_ms / (stream_cpu_ms + floor["cpu_ms"])))
        floor_cpu, _, _ = middle(cpu for cpu, _ in floors)
        ceiling, ceiling_low, ceiling_high = middle(bound for _, bound in floors)
        notes.append(f"(s) bound: GET /healthz at 64 connections costs serve {floor_cpu:.4f} ms of CPU a request "
                     f"(the HTTP round trip alone); a payload over HTTP costs at least stream's CPU plus that, so "
                     f"CPU-normalized throughput cannot pass {ceiling:.0%} in the same round "
                     f"({ceiling_low:.0%}-{ceiling_high:.0%})")
        for connections in self.connections:
            for build in bench.builds:
                svs = results[(("serve", connections), build)]
                for sv, run in zip(svs, streams):
                    sv["ratio"] = sv["rate"] * run["wall"] / count
                    sv["normalized"] = (1000 * run["cpu"] / count) / sv["cpu_ms"]
                sv = service_summary(svs)
                raw, raw_low, raw_high = middle(s["ratio"] for s in svs)
                normalized, low, high = middle(s["normalized"] for s in svs)
                label = "serve" if build is bench.this else f"--compare {build.compare}"
                notes.append(
                    f"(s) {label}, {connections} connections, {len(svs)} rounds: {sv['rate']:.0f} payloads/s "
                    f"(range {sv['rates'][0]:.0f}-{sv['rates'][-1]:.0f}), {raw:.0%} of stream's in the same round "
                    f"({raw_low:.0%}-{raw_high:.0%}; goal >= 80%: {met(raw)}); CPU {sv['cpu_ms']:.3f} ms a payload "
                    f"(range {sv['cpus'][0]:.3f}-{sv['cpus'][-1]:.3f}): CPU-normalized throughput {normalized:.0%} "
                    f"of stream's in the same round ({low:.0%}-{high:.0%}; goal >= 80%: {met(normalized)}); "
                    f"latency p50 {sv['p50']:.1f} ms, p99 {sv['p99']:.1f} ms (goal < 50 ms), "
                    f"peak RSS {sv['rss']:.1f} MiB (goal < 64 MiB), {sv['errors']} non-200 responses; "
                    f"wrk {sv['wrk_cpu_ms']:.3f} ms CPU a payload; load average "
                    f"{sv['loads'][0]:.1f}-{sv['loads'][-1]:.1f} before the runs")
        sv = service_summary(results["batch"])
        notes.append(
            f"(s, extra: not the goal's measure) serve, NDJSON bodies of 100 payloads, 16 connections: "
            f"{sv['rate']:.0f} payloads/s ({sv['rate'] * rp['wall'] / count:.0%} of stream's median), CPU "
            f"{sv['cpu_ms']:.3f} ms a payload ({1000 * rp['cpu'] / count / sv['cpu_ms']:.0%} CPU-normalized), "
            f"p50 {sv['p50']:.1f} ms, p99 {sv['p99']:.1f} ms a request of 100, peak RSS {sv['rss']:.1f} MiB, "
            f"{sv['errors']} non-200")
        return rows, notes
