#!/usr/bin/env python3
"""`make bench`: RichPush against curl and URLSession on a real nginx on loopback, in one run.

Scenarios (one file each in bench/scenarios/, behind the interface of bench/scenario.py):
SCENARIOS

Each runner is timed with /usr/bin/time (wall, peak RSS); every measurement is repeated (--repeat, default 5)
and the median kept. A scenario runs in rounds: each round runs each of its runners once, and a runner of this
build stands next to the same runner of the --compare build (a binary, or a commit built once in a scratch copy
under out/bench/builds), so that a slow moment of the machine weighs on both. (a) and (b) run on two kinds of
storage (issue 13): a tmpfs the script mounts, and the disk under the attachments directory's default location
($TMPDIR/richpush-<uid>/bench); a third, `--storage journaled`, is an ext4 with a journal made for the run on a loop
device (this machine's own ext4 has none). There richpush and curl run in alternated pairs (richpush, curl,
richpush, curl, ...), each ratio is taken within its pair, and the previous run's files are moved out of the way by
a rename and deleted before the next run's clock starts. After the pairs, each prints a bound measured on the same
storage: for (a), the CPU of hashing curl's files with SHA-256 (which the guarantees require and curl does not do);
for (b), the time to make one attachment directory per payload in a fresh root, alone. (h) runs in alternated pairs
too, over HTTPS. Only 127.0.0.1 is contacted: nginx is started here, on a free port, and stopped at the end; (h)
starts a second nginx over TLS on two more (bench/tls.py), with a CA made for the run and its names pinned to
127.0.0.1 by `--resolve`; (p) starts a SeaweedFS (.deps/seaweedfs, from scripts/install-deps) on free ports the same
way and kills it after its report. The table goes to stdout and to out/bench/report.md.
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout

import argparse  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import textwrap  # noqa: E402

import report  # noqa: E402
import storage  # noqa: E402
from builds import check_products, compare_binary  # noqa: E402
from origin import Origin  # noqa: E402
from places import BIN, OUT  # noqa: E402
from scenario import PERF, SEAWEEDFS, TOOLS, Bench, Build, measure  # noqa: E402
from scenarios import ALL  # noqa: E402
from seaweedfs import check_installed  # noqa: E402


def options():
    scenarios = "\n".join(textwrap.fill(scenario.summary(), 116, initial_indent=f"  ({scenario.key}) ",
                                         subsequent_indent="      ") for scenario in ALL)
    parser = argparse.ArgumentParser(description=__doc__.replace("SCENARIOS", scenarios),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs per measurement (alternated pairs in (a) and (b)); the median is kept")
    parser.add_argument("--only", default="".join(scenario.key for scenario in ALL),
                        help="scenarios to run, e.g. 'ac'")
    parser.add_argument("--compare", metavar="BINARY|COMMIT",
                        help="another richpush build (the one before a change) run in the same rounds: a binary, or "
                             "a commit of this repository, built once in release under out/bench/builds/<commit>")
    parser.add_argument("--storage", default="tmpfs,disk",
                        help="where (a) and (b) write, comma-separated: tmpfs, disk (under the default attachments "
                             "root), journaled (an ext4 with a journal on a loop device, made for the run)")
    parser.add_argument("--profile", action="store_true",
                        help="(a), (b): after the pairs, one more curl run and then richpush under perf record; "
                             "where richpush's CPU went, by category")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="a fraction (0-1] of every scenario's payload counts and wrk's seconds, for a quick check "
                             "of the benchmark itself; the README's figures are at 1")
    args = parser.parse_args()
    keys = "".join(scenario.key for scenario in ALL)
    if not args.only or set(args.only) - set(keys):
        parser.error(f"--only {args.only!r}: the scenarios are {keys}")
    if unknown := [kind for kind in args.storage.split(",") if kind not in storage.KINDS]:
        parser.error(f"--storage: unknown kind {unknown[0]!r} ({', '.join(storage.KINDS)})")
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    if not 0 < args.scale <= 1:
        parser.error("--scale: a fraction above 0, at most 1 (the generated media are sized for 1)")
    return args


def ensure_tools(needs):
    """The tools `needs` names, from Debian, when missing."""
    missing = [package for need, (tool, package) in TOOLS.items() if need in needs and shutil.which(tool) is None]
    if missing:
        print("installing " + " ".join(missing), flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq"] + missing, check=True, env=env,
                       stdout=subprocess.DEVNULL)


def main():
    args = options()
    selected = [scenario for scenario in ALL if scenario.key in args.only]
    needs = set().union(*(scenario.needs for scenario in selected)) | ({PERF} if args.profile else set())
    os.makedirs(OUT, exist_ok=True)
    builds = [Build(os.path.join(BIN, "richpush"))]
    if args.compare:
        builds.append(Build(compare_binary(args.compare), args.compare))
    check_products(needs)
    if SEAWEEDFS in needs:
        check_installed()
    ensure_tools(needs)
    origin = Origin()
    rows, notes = [], []
    try:
        tmpfs, storages = storage.set_up(args.storage.split(","))
        origin.start()
        bench = Bench(args.repeat, args.scale, builds, origin, storage.Runs(storage.RUNS), args.profile)
        for scenario in (instance for cls in selected for instance in cls.instances(storages)):
            scenario_rows, scenario_notes = measure(bench, scenario)
            rows += scenario_rows
            notes += scenario_notes
    finally:
        origin.stop()
        storage.tear_down()

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    header = (f"machine: {os.cpu_count()} cores, {memory:.0f} GiB, {os.uname().sysname} {os.uname().release}; "
              f"nginx-light on 127.0.0.1; outputs on {' and '.join(kind for kind, _ in storages) or tmpfs} for (a) "
              f"and (b), {tmpfs} for the rest; medians of {args.repeat} runs ((a), (b), (h): alternated pairs with "
              f"curl)")
    if args.scale != 1:
        header += f"; payload counts scaled by {args.scale:g} (not the README's sizes)"
    report.write(header, rows, notes)


if __name__ == "__main__":
    main()
