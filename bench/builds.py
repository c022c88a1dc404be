"""The builds a run measures: this checkout's release build, and `--compare`'s, given as a binary or as a commit
of this repository, which is then built once in a scratch copy under out/bench/builds/<commit>."""

import os
import shutil
import subprocess
import sys

from places import BIN, OUT, ROOT
from scenario import PRODUCTS


def check_products(needs):
    """Exits, saying how to make it, when a release build a selected scenario needs is missing."""
    for need, product in PRODUCTS.items():
        if need in needs and not os.access(os.path.join(BIN, product), os.X_OK):
            sys.exit(f"{os.path.join(BIN, product)} is missing: `swift build -c release --product {product}` "
                     f"(make bench builds it)")


def compare_binary(value):
    """`--compare`'s binary: `value` itself when it is an executable file; else, when it names a commit, that
    commit's richpush, built in release once (git archive into out/bench/builds/<commit>, then swift build there;
    later runs reuse it)."""
    if os.path.isfile(value):
        if not os.access(value, os.X_OK):
            sys.exit(f"--compare {value}: not executable")
        return os.path.abspath(value)
    found = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", f"{value}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        sys.exit(f"--compare {value}: neither a richpush binary nor a commit of {ROOT}")
    commit = found.stdout.strip()
    directory = os.path.join(OUT, "builds", commit)
    binary = os.path.join(directory, ".build", "release", "richpush")
    if os.access(binary, os.X_OK):
        return binary
    marker = os.path.join(directory, ".extracted")
    if not os.path.exists(marker):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        archive = subprocess.Popen(["git", "-C", ROOT, "archive", commit], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", directory], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            sys.exit(f"--compare {value}: git archive {commit} failed")
        open(marker, "w").close()
    # Progress goes to stderr: stdout is the report's.
    print(f"building {commit[:12]} (--compare {value}) in {directory}", file=sys.stderr, flush=True)
    if subprocess.run(["swift", "build", "-c", "release", "--product", "richpush"], cwd=directory,
                      stdout=sys.stderr).returncode != 0:
        sys.exit(f"--compare {value}: the release build of {commit} failed (in {directory})")
    return binary
