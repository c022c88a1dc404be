"""The interface every scenario of `make bench` implements, and the runner that measures one: the shape of
NIOPerformanceTester's `Benchmark` protocol and its `measureAndPrint`. A scenario declares the letter `--only` selects
it by and what it needs; it lists what one round runs, a runner a program run once; the runner runs the rounds, each
runner in turn, and the scenario turns the rounds' measurements into rows of the table and notes."""

from dataclasses import dataclass

from report import median_of
from storage import RUNS

# What a scenario can need. run.py provides them all before the first scenario runs: the tools from Debian when
# missing, the builds by checking that they are there.
ORIGIN = "origin"  # nginx on loopback over the generated media (origin.py)
CURL = "curl"
REDIS = "redis"  # redis-server, for the worker
WRK = "wrk"  # the HTTP load generator, for serve
VIPS = "vips"  # libvips' command line, to make (t)'s images
PERF = "perf"  # --profile's perf record
SEAWEEDFS = "seaweedfs"  # SeaweedFS's weed under .deps (seaweedfs.py), which scripts/install-deps installs
RELEASE = "release"  # this checkout's release build of richpush
URLSESSION = "urlsession"  # the URLSession baseline's release build

TOOLS = {ORIGIN: ("nginx", "nginx-light"), CURL: ("curl", "curl"), REDIS: ("redis-server", "redis-server"),
         WRK: ("wrk", "wrk"), VIPS: ("vips", "libvips-tools"), PERF: ("perf", "linux-perf")}
PRODUCTS = {RELEASE: "richpush", URLSESSION: "richpush-bench-urlsession"}


@dataclass(frozen=True)
class Build:
    """A richpush build the scenarios run: this checkout's release build, or the one `--compare` names."""

    binary: str
    compare: str | None = None  # what --compare was given (a binary or a commit); None for this checkout's build

    def row(self, label):
        """A row's label for this build's measurement: as it is for this checkout's, marked for a compared one."""
        return label if self.compare is None else f"{label}, --compare"

    def note(self, text):
        """A note about this build's measurement: as it is for this checkout's, marked for a compared one."""
        return text if self.compare is None else f"    --compare {self.compare}: {text}"


class Bench:
    """What every scenario is given: the options, the origin, the builds compared and where the runs write."""

    def __init__(self, repeat, scale, builds, origin, runs, profile):
        self.repeat = repeat
        self.scale = scale
        self.builds = builds
        self.origin = origin
        self.runs = runs
        self.profile = profile

    @property
    def port(self):
        return self.origin.port

    @property
    def base(self):
        return self.origin.base

    @property
    def this(self):
        """This checkout's build."""
        return self.builds[0]

    @property
    def compared(self):
        """The `--compare` builds, run in the same rounds as this checkout's."""
        return self.builds[1:]

    def scaled(self, count):
        """`count` times `--scale` (1 by default: the sizes the README's figures are measured at), at least 1."""
        return max(1, round(count * self.scale))

    def per_build(self, name, run):
        """One runner per build, named (`name`, build), next to each other in the round, so that a slow moment of
        the machine weighs on every build alike: `run(build)` runs the build once."""
        return [((name, build), lambda build=build: run(build)) for build in self.builds]


class Scenario:
    """One scenario of `make bench`.

    A subclass's docstring starts with its paragraph in `--help`; it sets `key` (the letter `--only` selects it by)
    and `needs` (what must be there before it runs: the constants above), and writes `runners` and `report`; `set_up`
    and `rounds` when it needs them, `tear_down` when `set_up` starts a server. `storage` is where its runs write
    (None: the tmpfs)."""

    key = None
    needs = frozenset()
    storage = None

    @classmethod
    def summary(cls):
        """The first paragraph of its docstring, on one line."""
        return " ".join(line.strip() for line in cls.__doc__.split("\n\n")[0].splitlines())

    @classmethod
    def instances(cls, storages):
        """The scenario as run: once, or once per storage of `--storage` ([(description, directory)])."""
        return [cls()]

    def rounds(self, bench):
        """How many rounds it runs: `--repeat` unless it says otherwise."""
        return bench.repeat

    def set_up(self, bench):
        """Makes its inputs (NDJSON, media), once, before its first round; nothing here is timed."""

    def tear_down(self, bench):
        """Stops what `set_up` started (a server of its own); called after its report, and also when set-up or a
        run fails or is interrupted."""

    def runners(self, bench):
        """What one round runs, in order: [(name, function)], each function running a program once and returning its
        measurement (a dict with at least "wall" and "rss")."""
        raise NotImplementedError

    def report(self, bench, results):
        """Its rows of the table ([(label, richpush run, curl run or None, URLSession run or None, payloads)]) and
        its notes ([str]) from `results`, and what it measures once after the rounds (a bound that needs the last
        round's files, a profile)."""
        raise NotImplementedError


class Results:
    """Each runner's measurements, round by round: index i of every list is round i."""

    def __init__(self):
        self.runs = {}

    def add(self, name, run):
        self.runs.setdefault(name, []).append(run)

    def __getitem__(self, name):
        return self.runs[name]

    def median(self, name):
        return median_of(self.runs[name])

    def ratios(self, name, over, measure="wall"):
        """The ratios of `name`'s `measure` (wall time by default; "cpu") to `over`'s, each taken within its round,
        sorted: a slow moment of the machine weighs on both sides of a ratio."""
        return sorted(run[measure] / other[measure] for run, other in zip(self.runs[name], self.runs[over]))


def measure(bench, scenario):
    """Runs `scenario`: its set-up, its rounds (each of its runners in turn), then its report; returns its (rows,
    notes)."""
    bench.runs.use(scenario.storage or RUNS)
    try:
        scenario.set_up(bench)
        runners = scenario.runners(bench)
        results = Results()
        for _ in range(scenario.rounds(bench)):
            for name, run in runners:
                results.add(name, run())
        return scenario.report(bench, results)
    finally:
        scenario.tear_down(bench)
