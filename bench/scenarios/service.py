"""(s) service: `richpush serve` under wrk beside `richpush stream` on the same campaign, in the same rounds."""

import os
import resource
import signal
import subprocess

from nginx import Nginx
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


def process_cpu_parts(pid):
    """CPU seconds process `pid` (all its threads) has used so far in user mode and in the kernel, from
    /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


# The name libmicrohttpd 0.9.75 gives its one internal thread (serve's transport: parsing, bodies, responses).
TRANSPORT_THREAD = "MHD-single"


def transport_cpu(pid):
    """CPU seconds so far of process `pid`'s libmicrohttpd thread (`TRANSPORT_THREAD`), from its
    /proc/PID/task/TID/stat; 0 if it has none. The rest of the process's CPU is the engine's threads' (the
    cooperative pool, the fetch loop, the sniffers), the access log's and the connection gate's."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                if f.read().strip() != TRANSPORT_THREAD:
                    continue
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            pass
    return total


def run_wrk(connections, seconds, target):
    """wrk with 2 threads at `connections` for `seconds` on `target` (a URL, or ["-s", script, URL]): requests a
    second, latency p50 and p99 (ms, of requests), non-2xx responses and requests made."""
    result = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s", "--latency"] + target,
                            capture_output=True, text=True, check=True)

    def milliseconds(text):
        value = float(text.rstrip("usm"))
        if text.endswith("us"):
            return value / 1000
        return value * 1000 if text.endswith("s") and not text.endswith("ms") else value

    found = {"rate": 0.0, "p50": float("nan"), "p99": float("nan"), "errors": 0, "requests": 0}
    for line in result.stdout.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            found["rate"] = float(parts[1])
        elif parts[:1] == ["50%"]:
            found["p50"] = milliseconds(parts[1])
        elif parts[:1] == ["99%"]:
            found["p99"] = milliseconds(parts[1])
        elif "Non-2xx" in line:
            found["errors"] = int(parts[-1])
        elif "requests in" in line:
            found["requests"] = int(parts[0])
    return found


def service(bench, connections, seconds=10, batch=1, binary=None, healthz=False, arguments=(), token=None):
    """`richpush serve` under wrk: payloads per second, latency percentiles (wrk's, of requests), the server's
    peak RSS and its RSS once listening, before any request ("idle_rss"), and the CPU seconds the server and wrk each
    used per payload, serve's divided between libmicrohttpd's thread ("transport_ms") and its other threads
    ("engine_ms"). `batch` > 1 sends NDJSON bodies of that many payloads; `healthz` sends `GET /healthz` instead
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
    parts_before, wrk_before, load = process_cpu_parts(server.pid), children_cpu(), os.getloadavg()[0]
    transport_before = transport_cpu(server.pid)
    target = ([f"http://127.0.0.1:{listen_port}/healthz"] if healthz
              else ["-s", script, f"http://127.0.0.1:{listen_port}"])
    found = run_wrk(connections, seconds, target)
    user, system = (after - before for after, before in zip(process_cpu_parts(server.pid), parts_before))
    cpu, wrk_cpu = user + system, children_cpu() - wrk_before
    transport = transport_cpu(server.pid) - transport_before
    rss = resident_mib(server.pid, "VmHWM")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)
    payloads = max(found["requests"] * batch, 1)
    return {"rate": found["rate"] * batch, "p50": found["p50"], "p99": found["p99"], "rss": rss, "idle_rss": idle_rss,
            "errors": found["errors"], "load": load,
            "cpu_ms": 1000 * cpu / payloads, "user_ms": 1000 * user / payloads, "system_ms": 1000 * system / payloads,
            "wrk_cpu_ms": 1000 * wrk_cpu / payloads,
            # Of cpu_ms: libmicrohttpd's thread's share, and the rest (the engine's threads, the log's, the gate's).
            "transport_ms": 1000 * transport / payloads, "engine_ms": 1000 * (cpu - transport) / payloads}


def against_stream(runs, streams, count):
    """Sets on each of serve's `runs` its payloads/s over stream's ("ratio") and stream's CPU a payload over its own
    ("normalized"), each against the stream run of the same round (`streams`, of `count` payloads)."""
    for run, stream_run in zip(runs, streams):
        run["ratio"] = run["rate"] * stream_run["wall"] / count
        run["normalized"] = (1000 * stream_run["cpu"] / count) / run["cpu_ms"]


class EmptyRoute:
    """The anchor of serve's `GET /healthz`: an nginx of its own (1 worker, no access log, keep-alive without a
    request limit, as the origin) on a free loopback port, answering `location = /healthz { return 200; }`; started
    by `start()`, stopped by `stop()`. Its CPU is its master's and its worker's, from /proc, over wrk's run."""

    def __init__(self):
        self.port = None
        self.nginx = Nginx("nginx-healthz")

    def start(self):
        self.port = free_port()
        self.nginx.start(f"""
    access_log off;
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        location = /healthz {{ return 200; }}
    }}""", [self.port], "nginx (the empty route)")

    def stop(self):
        self.nginx.stop()

    def tree_cpu(self):
        """CPU seconds of the master and its workers so far (a worker is a child of the master), in user mode and
        in the kernel."""
        master = self.nginx.process.pid
        pids = [master]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                            pids.append(int(entry))
                except (OSError, ValueError, IndexError):
                    pass
        parts = [process_cpu_parts(pid) for pid in pids]
        return sum(user for user, _ in parts), sum(system for _, system in parts)

    def run(self, connections, seconds):
        """wrk on `GET /healthz`: as `service` measures serve's (rate, latency, CPU a request in "cpu_ms", its user
        and kernel parts in "user_ms" and "system_ms")."""
        before, load = self.tree_cpu(), os.getloadavg()[0]
        found = run_wrk(connections, seconds, [f"http://127.0.0.1:{self.port}/healthz"])
        user, system = (after - start for after, start in zip(self.tree_cpu(), before))
        requests = max(found["requests"], 1)
        return dict(found, load=load, rss=0.0, cpu_ms=1000 * (user + system) / requests,
                    user_ms=1000 * user / requests, system_ms=1000 * system / requests)


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


def met(value, goal, at_most=False):
    """`met` or `NOT met`: `value` at least `goal` (at most, with `at_most`)."""
    return "met" if (value <= goal if at_most else value >= goal) else "NOT met"


class Service(Scenario):
    """service: `richpush serve` under wrk (16 and 64 connections, one payload a request, a campaign over 20
    images), beside `richpush stream` on 400,000 payloads of the same campaign in the same rounds; raw payloads/s
    and, since wrk shares the cores, CPU-normalized throughput (stream's CPU a payload over serve's) against the cap
    that ratio cannot pass (GET /healthz's CPU a request); GET /healthz's CPU a request against nginx's for an empty
    route (`return 200`) under the same wrk; NDJSON bodies of 100 payloads against stream's payloads/s

    Stream's side is a 400,000-payload campaign (about 4-5 s here), about as many payloads as serve handles in each
    10-second run (360,000-540,000), since a payload's cost grows with the attachment directories a run has made
    (each payload makes one): stream's CPU a payload was 1.07x over 400,000 what it was over the 100,000 (6
    alternated pairs; its system time 1.15-1.45x: new slabs for the inodes and dentries, the root's lock held
    longer), so stream on 100,000 set the cap on cheaper payloads than serve's. The 10,000 of earlier rounds took
    0.2-0.3 s, so start-up and first fetches weighed on them and their CPU a payload moved by half between runs.
    Each round runs stream, nginx's empty route, serve's GET /healthz (the bound), then serve at each connection
    count, then serve with NDJSON bodies of 100 (each of serve's runners next to the --compare build's): every ratio
    is taken within its round, so a busy moment of the shared machine weighs on both sides of it, and the median of
    the ratios is reported, as (w) does. The goals (issue 26): GET /healthz within 1.15x of nginx's CPU a request;
    payloads at 16 and 64 connections at least 95% of the cap, CPU-normalized; NDJSON at least 90% of stream's
    payloads/s."""

    key = "s"
    needs = frozenset({ORIGIN, WRK, RELEASE})
    connections = (16, 64)
    # The goals of issue 26, each printed beside its figure.
    healthz_goal = 1.15  # serve's CPU a GET /healthz over nginx's for `return 200`, at most
    cap_goal = 0.95  # CPU-normalized payloads over the cap, at least
    ndjson_goal = 0.90  # NDJSON payloads/s over stream's, at least

    def set_up(self, bench):
        self.count, self.seconds = bench.scaled(400000), bench.scaled(10)
        self.healthz_seconds = bench.scaled(5)
        self.ndjson = os.path.join(OUT, "campaign400k.ndjson")
        write_ndjson(self.ndjson, bench.origin.campaign(self.count))
        self.empty_route = EmptyRoute()
        self.empty_route.start()

    def tear_down(self, bench):
        self.empty_route.stop()

    def runners(self, bench):
        return ([("stream", lambda: stream(bench, self.ndjson)),
                 # The anchor: nginx's empty route under the same wrk, connections and seconds as serve's /healthz.
                 ("nginx", lambda: self.empty_route.run(64, self.healthz_seconds))]
                # The HTTP round trip alone, as a bound: serve's CPU a payload is at least stream's plus this.
                + bench.per_build("healthz", lambda build: service(bench, 64, seconds=self.healthz_seconds,
                                                                   healthz=True, binary=build.binary))
                + [runner for connections in self.connections
                   for runner in bench.per_build(("serve", connections), lambda build, connections=connections:
                                                 service(bench, connections, self.seconds, binary=build.binary))]
                # NDJSON bodies of 100 payloads, so HTTP costs are paid once per 100 (latency is per request of 100).
                + bench.per_build("batch", lambda build: service(bench, 16, self.seconds, batch=100,
                                                                 binary=build.binary)))

    @staticmethod
    def label(bench, build):
        return "serve" if build is bench.this else f"--compare {build.compare}"

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
        nginx = results["nginx"]
        nginx_us, nginx_low, nginx_high = middle(1000 * r["cpu_ms"] for r in nginx)
        nginx_rate, _, _ = middle(r["rate"] for r in nginx)
        notes.append(f"(s) anchor: nginx's empty route (`location = /healthz {{ return 200; }}`, 1 worker) at 64 "
                     f"connections: {nginx_us:.1f} us of CPU a request ({nginx_low:.1f}-{nginx_high:.1f}), "
                     f"{nginx_rate:.0f} requests/s")
        for build in bench.builds:
            healthz = results[("healthz", build)]
            serve_us, serve_low, serve_high = middle(1000 * r["cpu_ms"] for r in healthz)
            ratio, low, high = middle(r["cpu_ms"] / n["cpu_ms"] for r, n in zip(healthz, nginx))
            rate, _, _ = middle(r["rate"] for r in healthz)
            notes.append(f"(s) {self.label(bench, build)} GET /healthz at 64 connections: {serve_us:.1f} us of CPU a "
                         f"request ({serve_low:.1f}-{serve_high:.1f}), {rate:.0f} requests/s; {ratio:.2f}x nginx's "
                         f"in the same round ({low:.2f}-{high:.2f}x; goal <= {self.healthz_goal:.2f}x: "
                         f"{met(ratio, self.healthz_goal, at_most=True)})")
        # Where a request's CPU goes, in the kernel (the same TCP work for both servers) and in user mode (the
        # server's own work): what the goal leaves serve's own work, round by round, is 1.15x nginx's whole request
        # less serve's kernel time.
        healthz = results[("healthz", bench.this)]
        serve_system, _, _ = middle(1000 * r["system_ms"] for r in healthz)
        serve_user, _, _ = middle(1000 * r["user_ms"] for r in healthz)
        nginx_system, _, _ = middle(1000 * r["system_ms"] for r in nginx)
        nginx_user, _, _ = middle(1000 * r["user_ms"] for r in nginx)
        system_ratio, system_low, system_high = middle(r["system_ms"] / n["system_ms"] for r, n in zip(healthz, nginx))
        left, left_low, left_high = middle(1000 * (self.healthz_goal * n["cpu_ms"] - r["system_ms"])
                                           for r, n in zip(healthz, nginx))
        notes.append(f"(s) GET /healthz in parts: in the kernel {serve_system:.1f} us a request against nginx's "
                     f"{nginx_system:.1f} us ({system_ratio:.2f}x, {system_low:.2f}-{system_high:.2f}x in the same "
                     f"round); in user mode {serve_user:.1f} us against nginx's {nginx_user:.1f} us. The goal leaves "
                     f"serve's own work {left:.1f} us of user CPU a request ({left_low:.1f}-{left_high:.1f}: "
                     f"{self.healthz_goal:.2f}x nginx's whole request less serve's kernel time), against "
                     f"{serve_user:.1f} us with libmicrohttpd's parsing and pool included")
        # The cap, round by round, from this build's /healthz: what CPU-normalized throughput cannot pass.
        caps = []
        for run, floor in zip(streams, results[("healthz", bench.this)]):
            stream_cpu_ms = 1000 * run["cpu"] / count
            caps.append(stream_cpu_ms / (stream_cpu_ms + floor["cpu_ms"]))
        ceiling, ceiling_low, ceiling_high = middle(caps)
        floor_cpu, _, _ = middle(r["cpu_ms"] for r in results[("healthz", bench.this)])
        notes.append(f"(s) bound: GET /healthz at 64 connections costs serve {floor_cpu:.4f} ms of CPU a request "
                     f"(the HTTP round trip alone); a payload over HTTP costs at least stream's CPU plus that, so "
                     f"CPU-normalized throughput cannot pass {ceiling:.0%} in the same round "
                     f"({ceiling_low:.0%}-{ceiling_high:.0%}): the cap")
        for connections in self.connections:
            for build in bench.builds:
                svs = results[(("serve", connections), build)]
                against_stream(svs, streams, count)
                for sv, cap in zip(svs, caps):
                    sv["of_cap"] = sv["normalized"] / cap
                sv = service_summary(svs)
                raw, raw_low, raw_high = middle(s["ratio"] for s in svs)
                normalized, low, high = middle(s["normalized"] for s in svs)
                of_cap, cap_low, cap_high = middle(s["of_cap"] for s in svs)
                notes.append(
                    f"(s) {self.label(bench, build)}, {connections} connections, {len(svs)} rounds: "
                    f"{sv['rate']:.0f} payloads/s (range {sv['rates'][0]:.0f}-{sv['rates'][-1]:.0f}), {raw:.0%} of "
                    f"stream's in the same round ({raw_low:.0%}-{raw_high:.0%}); CPU {sv['cpu_ms']:.3f} ms a payload "
                    f"(range {sv['cpus'][0]:.3f}-{sv['cpus'][-1]:.3f}): CPU-normalized throughput {normalized:.0%} "
                    f"of stream's in the same round ({low:.0%}-{high:.0%}), {of_cap:.0%} of the cap "
                    f"({cap_low:.0%}-{cap_high:.0%}; goal >= {self.cap_goal:.0%}: {met(of_cap, self.cap_goal)}); "
                    f"latency p50 {sv['p50']:.1f} ms, p99 {sv['p99']:.1f} ms (goal < 50 ms), "
                    f"peak RSS {sv['rss']:.1f} MiB (goal < 64 MiB), {sv['errors']} non-200 responses; "
                    f"wrk {sv['wrk_cpu_ms']:.3f} ms CPU a payload; load average "
                    f"{sv['loads'][0]:.1f}-{sv['loads'][-1]:.1f} before the runs")
        notes += self.split(bench, results, streams, count)
        for build in bench.builds:
            batches = results[("batch", build)]
            against_stream(batches, streams, count)
            sv = service_summary(batches)
            raw, raw_low, raw_high = middle(s["ratio"] for s in batches)
            normalized, _, _ = middle(s["normalized"] for s in batches)
            notes.append(
                f"(s) {self.label(bench, build)}, NDJSON bodies of 100 payloads, 16 connections: {sv['rate']:.0f} "
                f"payloads/s, {raw:.0%} of stream's in the same round ({raw_low:.0%}-{raw_high:.0%}; goal >= "
                f"{self.ndjson_goal:.0%}: {met(raw, self.ndjson_goal)}); CPU {sv['cpu_ms']:.3f} ms a payload "
                f"({normalized:.0%} CPU-normalized), p50 {sv['p50']:.1f} ms, p99 {sv['p99']:.1f} ms a request of "
                f"100, peak RSS {sv['rss']:.1f} MiB, {sv['errors']} non-200")
        return rows, notes

    def split(self, bench, results, streams, count):
        """Where this build's CPU a payload goes, round by round: libmicrohttpd's thread (the transport) against
        GET /healthz's whole request (a request's round trip, which the cap allows), and serve's other threads (the
        engine's work, the log, the gate) against stream's whole payload (the same work without HTTP, which the
        cap also allows): what each side costs beyond the cap's two parts."""
        healthz = results[("healthz", bench.this)]
        notes = []
        for key, what in [(("serve", c), f"payloads at {c} connections") for c in self.connections] + [
                ("batch", "NDJSON bodies of 100")]:
            runs = results[(key, bench.this)]
            transport, t_low, t_high = middle(1000 * r["transport_ms"] for r in runs)
            engine, e_low, e_high = middle(1000 * r["engine_ms"] for r in runs)
            over_engine, _, _ = middle(1000 * r["engine_ms"] - 1e6 * st["cpu"] / count for r, st in zip(runs, streams))
            over = ""
            if key != "batch":
                over_transport, _, _ = middle(1000 * (r["transport_ms"] - h["cpu_ms"]) for r, h in zip(runs, healthz))
                over = f"; {over_transport:+.1f} us over GET /healthz's whole request in the same round"
            notes.append(f"(s) serve's CPU a payload, {what}: libmicrohttpd's thread {transport:.1f} us "
                         f"({t_low:.1f}-{t_high:.1f}{over}), the other threads "
                         f"{engine:.1f} us ({e_low:.1f}-{e_high:.1f}; {over_engine:+.1f} us over stream's whole payload "
                         f"in the same round)")
        return notes
