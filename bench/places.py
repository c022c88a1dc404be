"""Where the benchmark reads and writes: the checkout it runs from, its output under out/bench, the release build,
SeaweedFS's weed."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "out", "bench")
WWW = os.path.join(OUT, "www")
BIN = os.path.join(ROOT, ".build", "release")
WEED = os.path.join(ROOT, ".deps", "seaweedfs", "bin", "weed")  # scripts/install-deps
FIXTURES = os.path.join(ROOT, "Fixtures", "media")
