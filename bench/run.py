#!/usr/bin/env python3
"""`make bench`: RichPush against curl and URLSession on a real nginx on loopback, in one run.

Scenarios (issue 4):
  (a) unique:   2,000 payloads, each a distinct 100 KB JPEG
  (b) campaign: 10,000 payloads over 20 distinct images
  (c) memory:   one payload with a 45 MB MP4, and 50 payloads of it at once
  (d) deadline: 1,000 payloads in flight against a slow location; how late each expired result arrives
  (e) payload memory: 32 payloads of 1 MiB in flight at once (their media on the slow location keeps them there),
      in four shapes: many small strings, deep nesting, large arrays of numbers, one huge string
  (s) service: `richpush serve` under wrk (16 and 64 connections, one payload a request, a campaign over 20
      images), beside `richpush stream` on 100,000 payloads of the same campaign in the same rounds; raw
      payloads/s and, since wrk shares the cores, CPU-normalized throughput (stream's CPU a payload over serve's);
      the bound that ratio cannot pass (GET /healthz's CPU a request); an extra, labelled row with NDJSON bodies
      of 100 payloads (not the goal's measure)
  (w) workers: 100,000 campaign entries on a Redis stream through 1 and then 2 `richpush worker`s, entries per
      second beside `stream` on the same payloads, and the count check (every input has exactly one output);
      --repeat rounds of stream then the workers (and the --compare build's), each ratio taken within its round
  (t) transformation (issue 11): 200 distinct 1,000 x 750 WebP and then HEIC images to JPEG (images per second),
      peak RSS while downscaling one 40-megapixel JPEG to 2,048 pixels, and the time to refuse a 30,000 x 30,000
      pixel bomb beside the time to attach a small JPEG (the fetch alone)

Each runner is timed with /usr/bin/time (wall, peak RSS); every measurement is repeated (--repeat, default 5)
and the median kept. (a) and (b) run on two kinds of storage (issue 13): a tmpfs the script mounts, and the disk
under the attachments directory's default location ($TMPDIR/richpush/bench); a third, `--storage journaled`, is
an ext4 with a journal made for the run on a loop device (this machine's own ext4 has none). There richpush and curl run in
alternated pairs (richpush, curl, richpush, curl, ...), each ratio is taken within its pair, and the previous run's
files are moved out of the way by a rename and deleted before the next run's clock starts. After the pairs, each
prints a bound measured on the same storage: for (a), the CPU of hashing curl's files with SHA-256 (which the
guarantees require and curl does not do); for (b), the time to make one attachment directory per payload in a
fresh root, alone. Only 127.0.0.1 is contacted: nginx is started here, on a free port, and stopped at the end.
The table goes to stdout and to out/bench/report.md.
"""

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "out", "bench")
WWW = os.path.join(OUT, "www")
BIN = os.path.join(ROOT, ".build", "release")
FIXTURES = os.path.join(ROOT, "Fixtures", "media")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_tools(profile=False):
    """nginx (the origin) and wrk (the service's load generator), from Debian, when missing; perf for --profile."""
    tools = (("nginx", "nginx-light"), ("wrk", "wrk"), ("redis-server", "redis-server"), ("vips", "libvips-tools"))
    tools += (("perf", "linux-perf"),) if profile else ()
    missing = [package for tool, package in tools if shutil.which(tool) is None]
    if missing:
        print("installing " + " ".join(missing), flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq"] + missing, check=True, env=env,
                       stdout=subprocess.DEVNULL)


def sized(prefix_file, size, seed):
    """A file of `size` bytes that starts with a real fixture (so libmagic sees its type) and is unique."""
    with open(os.path.join(FIXTURES, prefix_file), "rb") as f:
        head = f.read()
    rng = seed.to_bytes(8, "little") * 1024
    body = head + rng
    return (body * (size // len(body) + 1))[:size]


def generate_media():
    marker = os.path.join(WWW, ".complete")
    if os.path.exists(marker):
        return
    shutil.rmtree(WWW, ignore_errors=True)
    for d in ("u", "c", "v"):
        os.makedirs(os.path.join(WWW, d))
    for i in range(2000):
        with open(os.path.join(WWW, "u", f"{i:04d}.jpg"), "wb") as f:
            f.write(sized("photo.jpg", 100 * 1024, i))
    for i in range(20):
        with open(os.path.join(WWW, "c", f"{i:02d}.jpg"), "wb") as f:
            f.write(sized("photo.jpg", 100 * 1024, 100000 + i))
    with open(os.path.join(WWW, "v", "big.mp4"), "wb") as f:
        f.write(sized("clip.mp4", 45 * 1000 * 1000, 7))
    open(marker, "w").close()


def start_nginx(port):
    prefix = os.path.join(OUT, "nginx")
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    types {{ image/jpeg jpg; video/mp4 mp4; image/webp webp; image/heic heic; image/png png; }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {WWW};
        location /slow/ {{ alias {WWW}/u/; limit_rate 2k; }}
    }}
}}
""")
    process = subprocess.Popen(["nginx", "-p", prefix, "-c", conf, "-g", "daemon off;"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit("nginx did not start")


def timed(command, stdin_path=None, stdout_path=None):
    """Runs command under /usr/bin/time; returns (wall seconds, peak RSS in MiB)."""
    time_file = os.path.join(OUT, "time.txt")
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    # Every runner writes its files to disk: flush what earlier runs left dirty, so that no run pays for
    # another's writeback.
    os.sync()
    start = time.monotonic()
    result = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", time_file] + command,
                            stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    wall = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    with open(time_file) as f:
        rss_kb, user, system = f.read().strip().splitlines()[-1].split()
    last_cpu[0] = float(user) + float(system)
    return wall, int(rss_kb) / 1024


last_cpu = [0.0]  # CPU seconds (user + system) of the last timed run


def write_ndjson(path, urls):
    with open(path, "w") as f:
        for url in urls:
            f.write(json.dumps({"aps": {"alert": "bench", "mutable-content": 1}, "adb_media": url}) + "\n")


RUNS = os.path.join(OUT, "runs")
run_counter = [0]
previous_run = [None]
# Where runners write now: RUNS (the tmpfs) or the disk's directory (`on_storage`).
current_runs = [RUNS]


def default_attachments_root():
    """RichPush's default attachments root, as `AttachmentStore.defaultRoot` computes it."""
    base = os.environ.get("TMPDIR") or "/tmp"
    return base.rstrip("/") + "/richpush"


DISK_RUNS = os.path.join(default_attachments_root(), "bench")


def mount_runs_tmpfs():
    """Every runner writes into RUNS, a tmpfs when we may mount one (root): the benchmark then measures the
    programs, not ext4's inode allocator. On ext4, RichPush's per-attachment directory (the issue requires one)
    costs a second inode per file, and ext4 makes inode allocation slow right after many deletions (it scans
    past recently deleted inodes), which turned every comparison into a measurement of the disk."""
    os.makedirs(RUNS, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12g", "tmpfs", RUNS],
                      stderr=subprocess.DEVNULL).returncode == 0:
        return "tmpfs"
    return "disk (could not mount a tmpfs)"


def prepare_disk_runs():
    """The disk's run directory, under RichPush's default attachments root (made mode 0700 as RichPush makes it);
    emptied of an earlier benchmark's leftovers."""
    os.makedirs(default_attachments_root(), mode=0o700, exist_ok=True)
    shutil.rmtree(DISK_RUNS, ignore_errors=True)
    os.makedirs(DISK_RUNS, mode=0o700)
    return DISK_RUNS


JOURNALED = os.path.join(OUT, "journaled")
JOURNALED_IMAGE = os.path.join(OUT, "journaled.img")


def mount_journaled():
    """`--storage journaled`: an ext4 with a journal (mkfs.ext4's defaults, as on most servers' disks) made for the
    run on a loop device over a sparse 40 GB file under out/bench, mounted at out/bench/journaled; its run directory
    (made mode 0700), or None when it cannot be made (not root, no loop device). This machine's own ext4 has no
    journal, and without one ext4 scans past recently freed inodes when it allocates (README, issue 13), so the
    disk's figures here are not those of most servers."""
    unmount_journaled()
    with open(JOURNALED_IMAGE, "wb") as f:
        f.truncate(40 * 2**30)
    os.makedirs(JOURNALED, exist_ok=True)
    if (subprocess.run(["mkfs.ext4", "-q", "-F", JOURNALED_IMAGE], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL).returncode != 0
            or subprocess.run(["mount", "-o", "loop", JOURNALED_IMAGE, JOURNALED],
                              stderr=subprocess.DEVNULL).returncode != 0):
        unmount_journaled()
        return None
    runs = os.path.join(JOURNALED, "bench")
    os.makedirs(runs, mode=0o700)
    return runs


def unmount_journaled():
    subprocess.run(["umount", JOURNALED], stderr=subprocess.DEVNULL)
    if os.path.exists(JOURNALED_IMAGE):
        os.remove(JOURNALED_IMAGE)
    if os.path.isdir(JOURNALED) and not os.listdir(JOURNALED):
        os.rmdir(JOURNALED)


def fresh_directory(name):
    """A new output directory per run. The previous run's output is moved out of the way by a rename, then
    deleted, both before the caller starts its clock (timed() also syncs first)."""
    if previous_run[0] and os.path.exists(previous_run[0]):
        trash = previous_run[0] + ".deleted"
        os.rename(previous_run[0], trash)
        shutil.rmtree(trash, ignore_errors=True)
    run_counter[0] += 1
    previous_run[0] = os.path.join(current_runs[0], f"{run_counter[0]:03d}-{name}")
    return previous_run[0]


def on_storage(directory):
    """Makes runners write under `directory` from now on."""
    if previous_run[0] and os.path.exists(previous_run[0]):
        shutil.rmtree(previous_run[0], ignore_errors=True)
    previous_run[0] = None
    current_runs[0] = directory


def hashing_cpu(directory):
    """CPU seconds of the SHA-256 of every file in `directory` (OpenSSL's, through hashlib, read in 64 KiB chunks
    as RichPush reads them back): the work RichPush's digest step does and curl does not."""
    start = time.process_time()
    for name in os.listdir(directory):
        digest = hashlib.sha256()
        with open(os.path.join(directory, name), "rb") as f:
            while chunk := f.read(65536):
                digest.update(chunk)
    return time.process_time() - start


def directories_wall(parent, count):
    """Wall seconds to make `count` attachment directories, one after another, in a fresh root under `parent` made
    as RichPush makes its roots (mode 0700, ext4's top-directory attribute where the file system has it): what
    RichPush cannot avoid on that storage, since every mkdir takes the root's lock. The root is then moved out of
    the way and deleted."""
    root = os.path.join(parent, "directories-bound")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root, mode=0o700)
    subprocess.run(["chattr", "+T", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    names = [str(uuid.uuid4()) for _ in range(count)]
    start = time.monotonic()
    for name in names:
        os.mkdir(os.path.join(root, name), 0o700)
    wall = time.monotonic() - start
    os.rename(root, root + ".deleted")
    shutil.rmtree(root + ".deleted", ignore_errors=True)
    return wall


def alternated(repeat, *runners):
    """`repeat` rounds of the runners in turn (richpush, curl, richpush, curl, ...); returns each runner's
    median and, for each, its ratios to the last runner's wall taken within each round, so that a slow moment
    of the machine weighs on both sides of a ratio."""
    rounds = [[run() for run in runners] for _ in range(repeat)]
    medians = [median_of([r[i] for r in rounds]) for i in range(len(runners))]
    ratios = [sorted(r[i]["wall"] / r[-1]["wall"] for r in rounds) for i in range(len(runners))]
    return medians, ratios


def richpush(port, ndjson, concurrency=64, deadline=None, extra=(), binary=None, wrap=()):
    attachments = fresh_directory("richpush")
    results = os.path.join(OUT, "results.ndjson")
    command = [binary or os.path.join(BIN, "richpush"), "stream", "--allow-http", "--allow-network", "127.0.0.1/32",
               "--allow-port", str(port), "--attachments-dir", attachments, "--concurrency", str(concurrency)]
    if deadline:
        command += ["--deadline", str(deadline)]
    command += list(extra)
    wall, rss = timed(list(wrap) + command, stdin_path=ndjson, stdout_path=results)
    cpu = last_cpu[0]
    outcomes, latencies, total_bytes = {}, [], 0
    with open(results) as f:
        for line in f:
            r = json.loads(line)
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
            latencies.append(float(r["elapsed_ms"]))
            total_bytes += sum(a["bytes"] for a in r["attachments"])
    return {"wall": wall, "rss": rss, "outcomes": outcomes, "latencies": latencies, "bytes": total_bytes, "cpu": cpu}


def curl(urls):
    target = fresh_directory("curl")
    os.makedirs(target)
    config = os.path.join(OUT, "curl.cfg")
    with open(config, "w") as f:
        for i, url in enumerate(urls):
            f.write(f'url = "{url}"\noutput = "{target}/{i}"\n')
    wall, rss = timed(["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", "64",
                       "--config", config])
    return {"wall": wall, "rss": rss, "cpu": last_cpu[0]}


def urlsession(urls):
    target = fresh_directory("urlsession")
    listing = os.path.join(OUT, "urls.txt")
    with open(listing, "w") as f:
        f.write("\n".join(urls) + "\n")
    wall, rss = timed([os.path.join(BIN, "richpush-bench-urlsession"), listing, target, "64"])
    return {"wall": wall, "rss": rss}


MIB = 1 << 20
PAYLOAD_SHAPES = ("strings", "deep", "numbers", "huge")


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
        payload["items"] = fill(lambda i: {"id": f"i{i}", "title": f"title {rng.randrange(1000)}", "u": f"/p/{i}"})
    elif shape == "deep":
        payload["trees"] = fill(chain)
    elif shape == "numbers":
        payload["values"] = fill(lambda i: rng.choice([i, rng.random() * 1000, -7 * i]))
    else:
        payload["blob"] = "x" * budget
    return json.dumps(payload, separators=(",", ":"))


def payload_memory(port, base, repeat):
    """(e): 64 payloads of 1 MiB each per shape, 32 in flight at once; every one waits on the slow location until
    its 2 s deadline, so 32 are parsed and held together. Returns {shape: run}."""
    runs = {}
    for shape in PAYLOAD_SHAPES:
        ndjson = os.path.join(OUT, f"large-{shape}.ndjson")
        with open(ndjson, "w") as f:
            for i in range(64):
                f.write(large_payload(shape, f"{base}/slow/{i:04d}.jpg", i) + "\n")
        runs[shape] = median_run(repeat, lambda: richpush(port, ndjson, concurrency=32, deadline=2))
    return runs


WRK_SCRIPT = """
local bodies = {}
for i = 0, 19 do
  bodies[i] = string.format('{"aps":{"alert":"bench","mutable-content":1},"adb_media":"%s/c/%02d.jpg"}', base, i)
end
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/enrich", {["Content-Type"] = "application/json"}, bodies[n % 20])
end
"""

# The extra row: the same campaign as NDJSON, `batch` payloads a request (one body, results streamed back).
WRK_NDJSON_SCRIPT = """
local lines = {}
for i = 0, batch - 1 do
  lines[#lines + 1] = string.format('{"aps":{"alert":"bench","mutable-content":1},"adb_media":"%s/c/%02d.jpg"}', base, i % 20)
end
local body = table.concat(lines, "\\n") .. "\\n"
request = function()
  return wrk.format("POST", "/v1/enrich", {["Content-Type"] = "application/x-ndjson"}, body)
end
"""


# Where `stream`'s CPU goes (issue 13's profile): each sample of `perf record -g` is put in the first category
# with a marker in any frame of its call chain. A marker is matched against the frame's function, demangled and
# simplified (`swift demangle --simplified`: `Enricher.enrich(_:deadline:)`, no argument types), or, for
# `lib...` markers, against the frame's library; `leaf` categories look at the innermost frame only.
PROFILE_CATEGORIES = (
    ("SHA-256 (digest step)", ("DigestService.", "FileDigest.", "libcrypto"), False),
    ("type sniffing (libmagic's thread)", ("SniffService.", "libmagic"), False),
    ("spares made ahead (their thread)", ("SpareAttachments.run",), False),
    ("cache hits: mkdir + link", ("AttachmentRoot.link(",), False),
    ("receiving (recv)", ("__libc_recv",), False),
    ("writing the file (write)", ("__libc_write",), False),
    ("attachment begin/commit: mkdir, open, rename",
     ("MediaBody.begin", "MediaBody.commit", "SpareAttachments.take", "PartialAttachment."), False),
    ("curl (other)", ("libcurl",), False),
    ("media cache (other)", ("MediaCache.",), False),
    ("results: encode and write", ("EnrichmentResult.json", "JSONWriter."), False),
    ("payload: read and parse", ("JSONParser.", "Payload.init", "InputReader", "LineSplitter", "ThreadedSource."), False),
    ("payload: conventions' scan, mutation", ("ConventionRegistry.", "Convention.scan", "EnrichmentRun."), False),
    # Leaf only: every async job's stack starts in the concurrency runtime (`swift_job_run`).
    ("Swift concurrency runtime, Dispatch (leaf)", ("libswift_Concurrency", "libdispatch"), True),
    ("malloc, free, reference counting",
     ("malloc", "free", "swift_retain", "swift_release", "swift_allocObject", "swift_bridgeObjectRe"), True),
)


def profiled(run):
    """Runs `run(wrap)` under perf record; returns (its result, [(category, share)], samples) or (result, None, 0)
    when perf cannot record here."""
    data = os.path.join(OUT, "perf.data")
    wrap = ["perf", "record", "--quiet", "-e", "cpu-clock", "-F", "4000", "-g", "-o", data, "--"]
    if shutil.which("perf") is None:
        return run(()), None, 0
    result = run(wrap)
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"], capture_output=True, text=True)
    os.remove(data)
    chains, frames = [], None
    for line in script.stdout.splitlines() + [""]:
        if not line.strip():
            if frames is not None:
                chains.append(frames)
            frames = None
        elif frames is None:
            frames = []
        else:
            # "<ip> <symbol> (<library>)"
            parts = line.strip().split(None, 1)
            symbol, _, library = (parts[1] if len(parts) > 1 else "").rpartition(" (")
            frames.append((symbol, library.rstrip(")")))
    mangled = sorted({symbol for chain in chains for symbol, _ in chain if symbol.startswith("$s")})
    demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(mangled),
                               capture_output=True, text=True).stdout.splitlines()
    names = dict(zip(mangled, demangled)) if len(demangled) == len(mangled) else {}

    def settle(chain):
        for name, markers, leaf in PROFILE_CATEGORIES:
            for symbol, library in chain[:1] if leaf else chain:
                function = names.get(symbol, symbol)
                if any(library.rsplit("/", 1)[-1].startswith(marker) if marker.startswith("lib") else marker in function
                       for marker in markers):
                    return name
        leaf_library = chain[0][1] if chain else ""
        return "kernel (other)" if "kernel" in leaf_library else "other"

    counts = {}
    for chain in chains:
        name = settle(chain)
        counts[name] = counts.get(name, 0) + 1
    samples = max(len(chains), 1)
    shares = sorted(((name, count / samples) for name, count in counts.items()), key=lambda item: -item[1])
    return result, shares, len(chains)


def children_cpu():
    """CPU seconds (user + system) of the finished child processes so far (wrk's, once it has exited)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def service(port, base, connections, seconds=10, batch=1, binary=None, healthz=False):
    """`richpush serve` under wrk: payloads per second, latency percentiles (wrk's, of requests), the server's
    peak RSS, and the CPU seconds the server and wrk each used per payload. `batch` > 1 sends NDJSON bodies of
    that many payloads; `healthz` sends `GET /healthz` instead (the HTTP round trip alone: no body, no task, no
    suspended connection), each request counted as a payload."""
    attachments = fresh_directory("serve")
    listen_port = free_port()
    command = [binary or os.path.join(BIN, "richpush"), "serve", "--listen", f"127.0.0.1:{listen_port}", "--allow-http",
               "--allow-network", "127.0.0.1/32", "--allow-port", str(port), "--attachments-dir", attachments,
               "--max-in-flight", "1024"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", listen_port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    script = os.path.join(OUT, "wrk.lua")
    with open(script, "w") as f:
        if batch > 1:
            f.write(f'local base = "{base}"\nlocal batch = {batch}\n' + WRK_NDJSON_SCRIPT)
        else:
            f.write(f'local base = "{base}"\n' + WRK_SCRIPT)
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
    with open(f"/proc/{server.pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)

    def milliseconds(text):
        value = float(text.rstrip("usm"))
        return value / 1000 if text.endswith("us") else value * 1000 if text.endswith("s") and not text.endswith("ms") else value

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
    return {"rate": rate * batch, "p50": p50, "p99": p99, "rss": rss, "errors": errors, "load": load,
            "cpu_ms": 1000 * cpu / payloads, "wrk_cpu_ms": 1000 * wrk_cpu / payloads}


def median_service(repeat, *runners):
    """`repeat` rounds of the runners in turn (this build, then the --compare build when given); for each runner
    the run of median rate, with the highest peak RSS and the ranges of rates, CPU and load."""
    rounds = [[run() for run in runners] for _ in range(repeat)]
    return [service_summary([r[i] for r in rounds]) for i in range(len(runners))]


def service_summary(runs):
    runs = sorted(runs, key=lambda r: r["rate"])
    best = dict(runs[len(runs) // 2])
    best["rss"] = max(r["rss"] for r in runs)
    best["rates"] = [r["rate"] for r in runs]
    best["cpus"] = sorted(r["cpu_ms"] for r in runs)
    best["loads"] = sorted(r["load"] for r in runs)
    return best


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


def worker_run(port, ndjson, count, workers, binary=None):
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
        with open(ndjson, "rb") as f:
            lines = [line.rstrip(b"\n") for line in f]
        for start in range(0, count, 5000):
            client.send(*[("XADD", "in", "*", "payload", line) for line in lines[start:start + 5000]])
        client.send(("XGROUP", "CREATE", "in", "g", "0"))
        attachments = fresh_directory("worker")
        command = [binary or os.path.join(BIN, "richpush"), "worker", "--redis", f"redis://127.0.0.1:{redis_port}",
                   "--stream", "in", "--group", "g", "--output-stream", "out", "--allow-http", "--allow-network",
                   "127.0.0.1/32", "--allow-port", str(port), "--attachments-dir", attachments, "--concurrency", "64"]
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


def transform_media():
    """(t)'s images, made with the vips command line: a smooth 1,000 x 750 picture as WebP and HEIC, a
    40-megapixel JPEG, a PNG whose header declares 30,000 x 30,000 pixels, and grainy photos as JPEGs of about
    100 KB (640 x 480) and 2 MB (3,000 x 2,250)."""
    directory = os.path.join(WWW, "t")
    marker = os.path.join(directory, ".complete-verify")
    if os.path.exists(marker):
        return
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    work = os.path.join(OUT, "t-work")
    os.makedirs(work, exist_ok=True)

    def vips(*arguments):
        subprocess.run(["vips"] + list(arguments), check=True, stdout=subprocess.DEVNULL)

    def picture(width, height, name):
        sines = os.path.join(work, f"sines-{width}.v")
        vips("sines", sines, str(width), str(height), "--hfreq", "3", "--vfreq", "2")
        scaled = os.path.join(work, f"scaled-{width}.v")
        vips("linear", sines, scaled, "100", "128", "--uchar")
        colour = os.path.join(work, f"colour-{width}.v")
        vips("bandjoin_const", scaled, colour, "60 200")
        vips("copy", colour, os.path.join(directory, name))

    def noisy(width, height, name):
        # A photo's entropy: a smooth picture with grain, so that a JPEG of it weighs what a photo's does.
        def at(step):
            return os.path.join(work, f"{step}-{width}.v")
        vips("gaussnoise", at("noise"), str(width), str(height), "--sigma", "12", "--mean", "0")
        vips("sines", at("sines"), str(width), str(height), "--hfreq", "3", "--vfreq", "2")
        vips("linear", at("sines"), at("scaled"), "100", "128")
        vips("add", at("scaled"), at("noise"), at("sum"))
        vips("cast", at("sum"), at("grey"), "uchar")
        vips("bandjoin", f"{at('grey')} {at('grey')} {at('grey')}", at("three"))
        vips("linear", at("three"), os.path.join(directory, name), "1 0.8 0.6", "0 30 60", "--uchar")

    noisy(640, 480, "photo-100k.jpg[Q=85]")
    noisy(3000, 2250, "photo-2m.jpg[Q=85]")
    picture(1000, 750, "photo.webp[Q=80]")
    picture(1000, 750, "photo.heic[Q=50]")
    picture(7300, 5480, "big.jpg[Q=90]")
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(os.path.join(directory, "bomb.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(b"\x00" * 1024)) + chunk(b"IEND", b""))
    shutil.rmtree(work, ignore_errors=True)
    open(marker, "w").close()


def verification(port, base, repeat, rows, notes):
    """(t) the cost of the verifying decode: distinct JPEGs of 100 KB and 2 MB attached as fetched, with it (the
    --verify-images) and without (the default), alternated; CPU (user + system) and wall per image."""
    for name, count in (("photo-100k.jpg", 400), ("photo-2m.jpg", 40)):
        size = os.path.getsize(os.path.join(WWW, "t", name))
        ndjson = os.path.join(OUT, f"t-verify-{name}.ndjson")
        write_ndjson(ndjson, [f"{base}/t/{name}?i={i}" for i in range(count)])
        runs = {"on": [], "off": []}
        for _ in range(repeat):
            for mode, extra in (("on", ["--verify-images"]), ("off", [])):
                run = richpush(port, ndjson, extra=extra)
                if run["outcomes"].get("complete") != count:
                    notes.append(f"(t) verify {name} {mode}: not all attached: {run['outcomes']}")
                runs[mode].append(run)
        on, off = median_of(runs["on"]), median_of(runs["off"])
        cpu_on = statistics.median(r["cpu"] for r in runs["on"])
        cpu_off = statistics.median(r["cpu"] for r in runs["off"])
        label = f"{count} x {size / 1e6:.2f} MB JPEG"
        rows.append((f"(t) {label}, --verify-images", on, None, None, count))
        rows.append((f"(t) {label}, not verified", off, None, None, count))
        notes.append(
            f"(t) verifying decode, {label} (64 in flight, 2 transformation threads, medians of {repeat} alternated "
            f"runs): CPU {cpu_on / count * 1000:.2f} ms an image verified, {cpu_off / count * 1000:.2f} ms not "
            f"(+{(cpu_on - cpu_off) / count * 1000:.2f} ms); wall {on['wall'] / count * 1000:.2f} against "
            f"{off['wall'] / count * 1000:.2f} ms an image; peak RSS {on['rss']:.1f} against {off['rss']:.1f} MiB")


def transformation(port, base, repeat, rows, notes):
    """(t): transcoding throughput, memory while downscaling, the time to refuse a bomb, the verifying decode."""
    transform_media()
    verification(port, base, repeat, rows, notes)
    rates = {}
    for kind in ("webp", "heic"):
        ndjson = os.path.join(OUT, f"t-{kind}.ndjson")
        write_ndjson(ndjson, [f"{base}/t/photo.{kind}?i={i}" for i in range(200)])
        run = median_run(repeat, lambda: richpush(port, ndjson))
        rows.append((f"(t) 200 x 1,000 x 750 {kind.upper()} to JPEG", run, None, None, 200))
        rates[kind] = 200 / run["wall"]
    big = os.path.join(OUT, "t-big.ndjson")
    write_ndjson(big, [f"{base}/t/big.jpg"])
    downscale = median_run(repeat, lambda: richpush(port, big, extra=["--max-dimension", "2048"]))
    rows.append(("(t) one 40-megapixel JPEG to 2,048 px", downscale, None, None, 1))
    pair = os.path.join(OUT, "t-bomb.ndjson")
    write_ndjson(pair, [f"{base}/t/bomb.png", f"{base}/c/00.jpg"])
    refusals, fetches = [], []
    for _ in range(repeat):
        run = richpush(port, pair, concurrency=1, extra=["--cache-ttl", "0"])
        refusals.append(run["latencies"][0])
        fetches.append(run["latencies"][1])
        if run["outcomes"].get("failed") != 1:
            notes.append(f"(t) the bomb was not refused: {run['outcomes']}")
    notes.append(
        f"(t) transcoding: WebP {rates['webp']:.0f} images/s, HEIC {rates['heic']:.0f} images/s (1,000 x 750 to JPEG, "
        f"64 payloads in flight, 2 transformation threads); 40-megapixel JPEG downscaled: peak RSS "
        f"{downscale['rss']:.1f} MiB (goal < 120 MiB); 30,000 x 30,000 bomb refused in "
        f"{statistics.median(refusals):.1f} ms, median of {repeat} (goal < 50 ms; a small JPEG attached in "
        f"{statistics.median(fetches):.1f} ms in the same runs)")


def median_run(repeat, run):
    return median_of([run() for _ in range(repeat)])


def median_of(runs):
    runs = sorted(runs, key=lambda r: r["wall"])
    best = dict(runs[len(runs) // 2])
    best["rss"] = max(r["rss"] for r in runs)
    return best


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs per measurement (alternated pairs in (a) and (b)); the median is kept")
    parser.add_argument("--only", default="abcdeswt", help="scenarios to run, e.g. 'ac'")
    parser.add_argument("--compare", metavar="BINARY",
                        help="another richpush build (the one before a change) run in the same rounds in (a), (b), (s), (w)")
    parser.add_argument("--storage", default="tmpfs,disk",
                        help="where (a) and (b) write, comma-separated: tmpfs, disk (under the default attachments "
                             "root), journaled (an ext4 with a journal on a loop device, made for the run)")
    parser.add_argument("--profile", action="store_true",
                        help="(a), (b): after the pairs, one more curl run and then richpush under perf record; "
                             "where richpush's CPU went, by category")
    args = parser.parse_args()

    ensure_tools(args.profile)
    os.makedirs(OUT, exist_ok=True)
    subprocess.run(["umount", RUNS], stderr=subprocess.DEVNULL)
    shutil.rmtree(RUNS, ignore_errors=True)
    storage = mount_runs_tmpfs()
    storages = []
    for kind in args.storage.split(","):
        if kind == "tmpfs":
            storages.append((storage, RUNS))
        elif kind == "disk":
            storages.append((f"disk ({DISK_RUNS})", prepare_disk_runs()))
        elif kind == "journaled":
            runs = mount_journaled()
            if runs is None:
                sys.exit("--storage journaled: could not make an ext4 on a loop device (root is needed)")
            storages.append(("journaled (ext4 with a journal, loop device)", runs))
        else:
            sys.exit(f"--storage: unknown kind {kind!r} (tmpfs, disk, journaled)")
    generate_media()
    port = free_port()
    nginx = start_nginx(port)
    base = f"http://127.0.0.1:{port}"
    rows, notes = [], []
    try:
        def against_curl(label, urls, ndjson, goal_note, urlsession_repeat, bound_note):
            """(a) or (b) on every storage: alternated pairs of richpush and curl, then the scenario's bound on that
            storage (while curl's files of the last pair are there), then URLSession."""
            write_ndjson(ndjson, urls)
            for kind, directory in storages:
                on_storage(directory)
                runners = [lambda: richpush(port, ndjson)]
                if args.compare:
                    runners.append(lambda: richpush(port, ndjson, binary=args.compare))
                medians, ratios = alternated(args.repeat, *runners, lambda: curl(urls))
                rp, cu = medians[0], medians[-1]
                notes.append(bound_note(kind, directory, rp, cu))
                if args.profile:
                    # As in a pair: curl's files deleted just before (on the disk, that is what ext4 then scans).
                    curl(urls)
                    profiled_run, shares, samples = profiled(lambda wrap: richpush(port, ndjson, wrap=wrap))
                    if shares is None:
                        notes.append(f"{label} on {kind}: no profile (perf is missing)")
                    else:
                        notes.append(
                            f"{label} on {kind}, profile of one run ({samples} samples at 4 kHz, "
                            f"{1e6 * profiled_run['cpu'] / len(urls):.0f} us CPU a payload; curl "
                            f"{1e6 * cu['cpu'] / len(urls):.0f} us): "
                            + "; ".join(f"{name} {share:.0%}" for name, share in shares if share >= 0.005))
                us = median_run(urlsession_repeat, lambda: urlsession(urls))
                rows.append((f"{label}, {kind.split(' ')[0]}", rp, cu, us, len(urls)))
                notes.append(goal_note(kind, rp, cu, us, ratios[0]))
                if args.compare:
                    rows.append((f"{label}, {kind.split(' ')[0]}, --compare", medians[1], None, None, len(urls)))
                    # Each side as the scenario's goal reads it: richpush/curl for (a), curl/richpush for (b).
                    faster = label.startswith("(b)")
                    sides = "curl/its" if faster else "its/curl"
                    notes.append(f"    --compare {args.compare} on {kind}, in the same rounds: {sides} wall "
                                 f"{pair_ratios(ratios[1], faster)}; this build's "
                                 f"{pair_ratios(ratios[0], faster)}")
            on_storage(RUNS)

        def pair_ratios(ratios, inverted=False):
            """The median and range of richpush/curl ratios, or of curl/richpush when `inverted`."""
            if inverted:
                ratios = sorted(1 / r for r in ratios)
            return (f"median of {len(ratios)} pairs {statistics.median(ratios):.2f}x, "
                    f"range {ratios[0]:.2f}-{ratios[-1]:.2f}x")

        if "a" in args.only:
            goals = {"tmpfs": "1.15x", "disk": "1.3x"}
            against_curl(
                "(a) unique, 2,000 x 100 KB", [f"{base}/u/{i:04d}.jpg" for i in range(2000)],
                os.path.join(OUT, "unique.ndjson"),
                lambda kind, rp, cu, us, ratios: (
                    f"(a) on {kind}: richpush/curl wall {pair_ratios(ratios)} "
                    f"(goal <= {goals.get(kind.split(' ')[0], '1.3x')}); "
                    f"URLSession/richpush = {us['wall'] / rp['wall']:.2f}x (goal >= 3x)"),
                args.repeat,
                lambda kind, directory, rp, cu: (
                    f"(a) bound on {kind}: SHA-256 of curl's 2,000 files costs {hashing_cpu(previous_run[0]):.3f} s "
                    f"of CPU, beside curl's whole {cu['cpu']:.3f} s (wall {cu['wall']:.3f} s) and richpush's "
                    f"{rp['cpu']:.3f} s (medians)"))
        if "b" in args.only:
            against_curl(
                "(b) campaign, 10,000 over 20", [f"{base}/c/{i % 20:02d}.jpg" for i in range(10000)],
                os.path.join(OUT, "campaign.ndjson"),
                lambda kind, rp, cu, us, ratios: (
                    f"(b) on {kind}: curl/richpush wall: {pair_ratios(ratios, inverted=True)} "
                    f"(goal >= 5x in every run's median)"),
                1,
                lambda kind, directory, rp, cu: (
                    f"(b) bound on {kind}: 10,000 attachment directories made one after another in a fresh root take "
                    f"{directories_wall(directory, 10000):.3f} s; 5x faster than curl's median means "
                    f"{cu['wall'] / 5:.3f} s in all"))
        if "c" in args.only:
            url = f"{base}/v/big.mp4"
            one = os.path.join(OUT, "video1.ndjson")
            write_ndjson(one, [url])
            fifty = os.path.join(OUT, "video50.ndjson")
            write_ndjson(fifty, [url] * 50)
            rp1 = median_run(args.repeat, lambda: richpush(port, one))
            rp50 = median_run(args.repeat, lambda: richpush(port, fifty, concurrency=50))
            # The same 50 with the cache off: 50 transfers of 45 MB really in flight at once.
            rp50nc = median_run(args.repeat, lambda: richpush(port, fifty, concurrency=50, extra=["--cache-ttl", "0"]))
            cu1 = median_run(args.repeat, lambda: curl([url]))
            us1 = median_run(args.repeat, lambda: urlsession([url]))
            rows.append(("(c) one 45 MB MP4", rp1, cu1, us1, 1))
            rows.append(("(c) 50 x 45 MB MP4 at once", rp50, None, None, 50))
            rows.append(("(c) 50 x 45 MB at once, cache off", rp50nc, None, None, 50))
            notes.append(f"(c) one video: {rp1['rss']:.1f} MiB peak RSS (goal < 24 MiB); "
                         f"50 at once: {rp50['rss']:.1f} MiB, {rp50nc['rss']:.1f} MiB with the cache off "
                         f"(goal < 64 MiB)")
        if "d" in args.only:
            deadline_ms = 2000

            def lateness(label, ndjson, goal):
                rp = richpush(port, ndjson, concurrency=1000, deadline=deadline_ms / 1000)
                late = [v - deadline_ms for v in rp["latencies"]]
                expired = rp["outcomes"].get("expired", 0)
                notes.append(f"{label}, deadline 2 s, slow origin: {expired} expired; lateness "
                             f"p50 {percentile(late, 50):.1f} ms, p99 {percentile(late, 99):.1f} ms, "
                             f"max {max(late):.1f} ms (goal: {goal})")

            ndjson = os.path.join(OUT, "slow.ndjson")
            write_ndjson(ndjson, [f"{base}/slow/{i:04d}.jpg" for i in range(1000)])
            lateness("(d) 1,000 payloads in flight", ndjson, "every one within 100 ms")
            # The same with eight references a payload (OneSignal's att), 8,000 transfers expiring together.
            ndjson = os.path.join(OUT, "slow8.ndjson")
            with open(ndjson, "w") as f:
                for i in range(1000):
                    att = {f"r{k}": f"{base}/slow/{(i * 8 + k) % 1000:04d}.jpg?p={i}" for k in range(8)}
                    f.write(json.dumps({"aps": {"alert": "bench", "mutable-content": 1}, "att": att}) + "\n")
            lateness("(d8) 1,000 payloads x 8 references in flight", ndjson, "p99 and max within 100 ms")
        if "e" in args.only:
            runs = payload_memory(port, base, args.repeat)
            worst = max(PAYLOAD_SHAPES, key=lambda shape: runs[shape]["rss"])
            rows.append((f"(e) 32 x 1 MiB payloads in flight ({worst})", runs[worst], None, None, 64))
            notes.append("(e) peak RSS with 32 payloads of 1 MiB in flight: "
                         + ", ".join(f"{shape} {runs[shape]['rss']:.1f} MiB" for shape in PAYLOAD_SHAPES)
                         + " (goal < 160 MB, 152.6 MiB)")
        if "s" in args.only:
            # Stream's side is the 100,000-payload campaign (about 2 s on this machine; the 10,000 of earlier rounds
            # took 0.2-0.3 s, so its start-up and first fetches weighed on it and its CPU a payload moved by half
            # between runs). Each round runs stream, then serve at each connection count (and the --compare build):
            # every ratio is taken within its round, so a busy moment of the shared machine weighs on both sides of
            # it, and the median of the ratios is reported, as (w) does.
            count = 100000
            urls = [f"{base}/c/{i % 20:02d}.jpg" for i in range(count)]
            ndjson = os.path.join(OUT, "campaign100k.ndjson")
            write_ndjson(ndjson, urls)
            builds = [("serve", None)] + ([(f"--compare {args.compare}", args.compare)] if args.compare else [])
            settings = [(connections, label, binary) for connections in (16, 64) for label, binary in builds]
            streams, services, floors = [], {setting: [] for setting in settings}, []
            for _ in range(args.repeat):
                rp = richpush(port, ndjson)
                streams.append(rp)
                # The HTTP round trip alone, as a bound: serve's CPU a payload is at least stream's plus this.
                floor = service(port, base, 64, seconds=5, healthz=True)
                stream_cpu_ms = 1000 * rp["cpu"] / count
                floors.append((floor["cpu_ms"], stream_cpu_ms / (stream_cpu_ms + floor["cpu_ms"])))
                for setting in settings:
                    sv = service(port, base, setting[0], binary=setting[2])
                    sv["ratio"] = sv["rate"] * rp["wall"] / count
                    sv["normalized"] = (1000 * rp["cpu"] / count) / sv["cpu_ms"]
                    services[setting].append(sv)
            rp = median_of(streams)
            rows.append(("(s) campaign, 100,000 over 20 (stream)", rp, None, None, count))
            stream_rates = sorted(count / r["wall"] for r in streams)
            stream_cpus = sorted(1000 * r["cpu"] / count for r in streams)

            def met(ratio):
                return "met" if ratio >= 0.8 else "NOT met"

            def middle(values):
                values = sorted(values)
                return values[len(values) // 2], values[0], values[-1]

            # wrk runs on the same two cores as serve (stream has no load generator to feed): raw payloads/s
            # measures serve and wrk together. CPU a payload (serve's own user + system time over the payloads
            # served) does not depend on what wrk takes; stream's is /usr/bin/time's over its 100,000.
            notes.append(f"(s) stream: {count / rp['wall']:.0f} payloads/s (runs {stream_rates[0]:.0f}-"
                         f"{stream_rates[-1]:.0f}), CPU {1000 * rp['cpu'] / count:.3f} ms a payload (runs "
                         f"{stream_cpus[0]:.3f}-{stream_cpus[-1]:.3f})")
            floor_cpu, _, _ = middle(cpu for cpu, _ in floors)
            ceiling, ceiling_low, ceiling_high = middle(bound for _, bound in floors)
            notes.append(f"(s) bound: GET /healthz at 64 connections costs serve {floor_cpu:.4f} ms of CPU a request "
                         f"(the HTTP round trip alone); a payload over HTTP costs at least stream's CPU plus that, so "
                         f"CPU-normalized throughput cannot pass {ceiling:.0%} in the same round "
                         f"({ceiling_low:.0%}-{ceiling_high:.0%})")
            for (connections, label, _), svs in services.items():
                sv = service_summary(svs)
                raw, raw_low, raw_high = middle(s["ratio"] for s in svs)
                normalized, low, high = middle(s["normalized"] for s in svs)
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
            # Extra information, not the goal's measure: NDJSON bodies of 100 payloads, so HTTP costs are paid
            # once per 100 (latency is per request of 100).
            sv = median_service(args.repeat, lambda: service(port, base, 16, batch=100))[0]
            notes.append(
                f"(s, extra: not the goal's measure) serve, NDJSON bodies of 100 payloads, 16 connections: "
                f"{sv['rate']:.0f} payloads/s ({sv['rate'] * rp['wall'] / count:.0%} of stream's median), CPU "
                f"{sv['cpu_ms']:.3f} ms a payload ({1000 * rp['cpu'] / count / sv['cpu_ms']:.0%} CPU-normalized), "
                f"p50 {sv['p50']:.1f} ms, p99 {sv['p99']:.1f} ms a request of 100, peak RSS {sv['rss']:.1f} MiB, {sv['errors']} non-200")
        if "w" in args.only:
            count = 100000
            urls = [f"{base}/c/{i % 20:02d}.jpg" for i in range(count)]
            ndjson = os.path.join(OUT, "campaign100k.ndjson")
            write_ndjson(ndjson, urls)
            # --repeat rounds of stream, then each worker setting; each ratio is taken within its round, so that a
            # busy moment of the shared machine weighs on both sides of it, and the median of the ratios reported.
            builds = [("", None)] + ([(" (--compare build)", args.compare)] if args.compare else [])
            settings = [(workers, label, binary) for workers in (1, 2) for label, binary in builds]
            streams, runs = [], {setting: [] for setting in settings}
            for _ in range(args.repeat):
                rp = richpush(port, ndjson)
                streams.append(rp)
                for setting in settings:
                    wk = worker_run(port, ndjson, count, setting[0], setting[2])
                    wk["ratio"] = wk["rate"] * rp["wall"] / count
                    runs[setting].append(wk)
            rows.append(("(w) campaign, 100,000 over 20 (stream)", median_of(streams), None, None, count))
            stream_rates = sorted(count / rp["wall"] for rp in streams)
            for (workers, label, _), wks in runs.items():
                rates = sorted(wk["rate"] for wk in wks)
                ratios = sorted(wk["ratio"] for wk in wks)
                checks = "; ".join(f"{wk['outputs']} outputs for {count} inputs, {wk['distinct']} distinct sources, "
                                   f"{wk['pending']} pending" for wk in wks)
                notes.append(
                    f"(w) {workers} worker{'s' if workers > 1 else ''}{label}: {rates[len(rates) // 2]:.0f} entries/s "
                    f"({rates[0]:.0f}-{rates[-1]:.0f}), {ratios[len(ratios) // 2]:.0%} of stream's in the same round "
                    f"({ratios[0]:.0%}-{ratios[-1]:.0%}; stream {stream_rates[0]:.0f}-{stream_rates[-1]:.0f}/s; "
                    f"goal for one >= 80%); count check: {checks}")
        if "t" in args.only:
            transformation(port, base, args.repeat, rows, notes)
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)
        shutil.rmtree(RUNS, ignore_errors=True)
        subprocess.run(["umount", RUNS], stderr=subprocess.DEVNULL)
        shutil.rmtree(DISK_RUNS, ignore_errors=True)
        unmount_journaled()

    lines = [
        f"machine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
        f"{os.uname().sysname} {os.uname().release}; nginx-light on 127.0.0.1; outputs on "
        f"{' and '.join(kind for kind, _ in storages) or storage} for (a) and (b), {storage} for the rest; "
        f"medians of {args.repeat} runs ((a), (b): alternated pairs with curl)",
        "",
        "| scenario | runner | wall s | payloads/s | MB/s | p50 ms | p99 ms | peak RSS MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, rp, cu, us, count in rows:
        mb = rp["bytes"] / 1e6
        lines.append(f"| {name} | richpush stream | {rp['wall']:.2f} | {count / rp['wall']:.0f} | {mb / rp['wall']:.0f} | "
                     f"{percentile(rp['latencies'], 50):.1f} | {percentile(rp['latencies'], 99):.1f} | {rp['rss']:.1f} |")
        for label, other in (("curl --parallel-max 64", cu), ("URLSession, TaskGroup 64", us)):
            if other:
                lines.append(f"| | {label} | {other['wall']:.2f} | {count / other['wall']:.0f} | "
                             f"{mb / other['wall']:.0f} | | | {other['rss']:.1f} |")
        if rp["outcomes"].get("complete", 0) != count:
            lines.append(f"| | (richpush outcomes: {rp['outcomes']}) | | | | | | |")
    lines += [""] + [f"- {n}" for n in notes]
    report = "\n".join(lines)
    print(report)
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write(report + "\n")


if __name__ == "__main__":
    main()
