"""Running the programs the scenarios measure: `richpush stream`, curl and the URLSession baseline, each timed by
/usr/bin/time (wall, peak RSS, CPU), writing into a fresh directory of `Runs`."""

import json
import os
import socket
import subprocess
import sys
import time

from places import BIN, OUT


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, name):
    """Waits (5 s at most) until something accepts on 127.0.0.1:`port`; kills `process` and exits if nothing does."""
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit(f"{name} did not start")


def timed(command, stdin_path=None, stdout_path=None, env=None):
    """Runs command under /usr/bin/time (in `env`, this process's environment by default); returns {"wall": seconds,
    "rss": peak RSS in MiB, "cpu": user + system seconds}."""
    time_file = os.path.join(OUT, "time.txt")
    with open(stdin_path or os.devnull, "rb") as stdin, open(stdout_path or os.devnull, "wb") as stdout:
        # Every runner writes its files to disk: flush what earlier runs left dirty, so that no run pays for
        # another's writeback.
        os.sync()
        start = time.monotonic()
        result = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", time_file] + command,
                                stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=env)
        wall = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    with open(time_file) as f:
        rss_kb, user, system = f.read().strip().splitlines()[-1].split()
    return {"wall": wall, "rss": int(rss_kb) / 1024, "cpu": float(user) + float(system)}


def write_ndjson(path, urls):
    with open(path, "w") as f:
        for url in urls:
            f.write(json.dumps({"aps": {"alert": "bench", "mutable-content": 1}, "adb_media": url}) + "\n")


def stream(bench, ndjson, concurrency=64, deadline=None, extra=(), binary=None, wrap=(), env=None, ports=None):
    """`richpush stream` of `binary` (this build's by default) over `ndjson` (in `env`, this process's environment
    by default), allowed to connect to 127.0.0.1 on `ports` (the plain origin's by default): the timing, plus the
    results' outcomes (counted by kind), each result's `elapsed_ms`, the attachments' bytes, and each attachment's
    `published_url` (None where it has none) and `mime`."""
    attachments = bench.runs.fresh_directory("richpush")
    results = os.path.join(OUT, "results.ndjson")
    command = [binary or os.path.join(BIN, "richpush"), "stream", "--allow-http", "--allow-network", "127.0.0.1/32"]
    for port in ports or (bench.port,):
        command += ["--allow-port", str(port)]
    command += ["--attachments-dir", attachments, "--concurrency", str(concurrency)]
    if deadline:
        command += ["--deadline", str(deadline)]
    command += list(extra)
    run = timed(list(wrap) + command, stdin_path=ndjson, stdout_path=results, env=env)
    outcomes, latencies, total_bytes, published = {}, [], 0, []
    with open(results) as f:
        for line in f:
            r = json.loads(line)
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
            latencies.append(float(r["elapsed_ms"]))
            total_bytes += sum(a["bytes"] for a in r["attachments"])
            published += [(a.get("published_url"), a["mime"]) for a in r["attachments"]]
    return dict(run, outcomes=outcomes, latencies=latencies, bytes=total_bytes, published=published)


def curl(bench, urls, extra=()):
    """curl --parallel --parallel-max 64 (with `extra` arguments), each URL to a file of its own."""
    target = bench.runs.fresh_directory("curl")
    os.makedirs(target)
    config = os.path.join(OUT, "curl.cfg")
    with open(config, "w") as f:
        for i, url in enumerate(urls):
            f.write(f'url = "{url}"\noutput = "{target}/{i}"\n')
    return timed(["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", "64",
                  "--config", config] + list(extra))


def urlsession(bench, urls):
    """richpush-bench-urlsession: a URLSession TaskGroup of 64, each URL to a file of its own."""
    target = bench.runs.fresh_directory("urlsession")
    listing = os.path.join(OUT, "urls.txt")
    with open(listing, "w") as f:
        f.write("\n".join(urls) + "\n")
    return timed([os.path.join(BIN, "richpush-bench-urlsession"), listing, target, "64"])
