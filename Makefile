# RichPush: the two set-up commands are `make demo` and `make test`; both install what is missing first.

.PHONY: deps build demo test clean

deps:
	@scripts/install-deps

build: deps
	swift build -c release --product richpush
	swift build -c release --product richpush-fixture-origin

demo: build
	@scripts/demo

# At most 8 tests at once (TEST_WIDTH). Swift Testing otherwise starts every test of the 112 suites together: 1,400
# threads, a load of 15 to 24 on two cores for the first 30 s, and in one run in two a timing test past its deadline
# (sampled from /proc and gdb). With 8: 571 passed in 103 s, against 89 to 127 s for the failing runs.
TEST_WIDTH ?= 8

# `swift test -q`: the build prints only errors, and Swift Testing prints each failure with its issues and the run's
# summary ("Test run with N tests in M suites passed"), not a line per test and test case (plain `swift test` prints
# those). `--disable-xctest`: there are no XCTest tests, and XCTest's empty pass printed "Executed 0 tests", which
# read as if nothing had run.
# `scripts/run-tests`: the run's scratch files (TMPDIR) in a directory of its own, removed after a run that passed.
test: deps
	scripts/check-layers
	scripts/format-check
	scripts/check-readme-examples
	timeout 1200 scripts/run-tests -q --disable-xctest --experimental-maximum-parallelization-width $(TEST_WIDTH)

clean:
	rm -rf .build out

# --- Installing (issue 27): the release richpush, built with the Swift standard library linked in statically, so
# that it runs on a machine without the toolchain (it links only the system's C libraries), and the systemd units.
# `make install PREFIX=/usr DESTDIR=/tmp/stage`; see docs/deployment.md. The static build has a build directory of
# its own (.build/static): its flags differ from `make build`'s, and one directory would rebuild all at each switch.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DOCDIR ?= $(PREFIX)/share/doc/richpush
STATIC_BUILD = .build/static
UNITS = richpush.service richpush-gc.service richpush-gc.timer

.PHONY: static install install-check

static: deps
	swift build -c release --static-swift-stdlib --product richpush --build-path $(STATIC_BUILD)

# The units name /usr/local/bin/richpush and /usr/local/share/doc/richpush: rewritten for another PREFIX.
install: static
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(STATIC_BUILD)/release/richpush $(DESTDIR)$(BINDIR)/richpush
	for unit in $(UNITS); do \
		sed -e 's|/usr/local/bin/richpush|$(BINDIR)/richpush|g' -e 's|/usr/local/share/doc/richpush|$(DOCDIR)|g' \
			packaging/systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit || exit 1; \
	done
	install -m 0644 packaging/systemd/richpush.sysusers $(DESTDIR)$(SYSUSERSDIR)/richpush.conf
	install -m 0644 docs/deployment.md $(DESTDIR)$(DOCDIR)/deployment.md
	@echo "installed; as root: systemd-sysusers, then see $(DOCDIR)/deployment.md (the token, systemctl enable)"

# Installs into a scratch DESTDIR and checks the result: the binary needs nothing from the toolchain (no RUNPATH
# into it, no library ldd resolves there) and runs with the toolchain's directory hidden; the installed units pass
# systemd-analyze verify. Not part of `swift test` (a release build takes minutes on two cores): run it after a
# change to the build or the units.
install-check: static
	scripts/install-check

# --- Sanitizers and fuzzing (issue: hostile inputs). Each builds in its own .build/<name> directory. ---

FUZZ_SECONDS ?= 60

.PHONY: fuzz tsan asan

# libFuzzer over the payload parser and the conventions, seeded with every fixture payload.
fuzz: deps
	swift build --product richpush-fuzz --build-path .build/fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
	mkdir -p .build/fuzz-corpus
	cp Fixtures/payloads/*.json Fixtures/payloads/invalid/*.json .build/fuzz-corpus/
	.build/fuzz/debug/richpush-fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 .build/fuzz-corpus

# The concurrency tests (deadlines, exactly-once delivery, the CLI pipeline) under ThreadSanitizer.
tsan: deps
	timeout 1800 swift test --experimental-maximum-parallelization-width $(TEST_WIDTH) --build-path .build/tsan --sanitize=thread --filter 'Deadline|Enricher|StateMachine|HostileServer|MediaCache|DigestService|Stall|Redirect|Admission|Lifecycle|WorkGate|ExtensionTests|HTTPServerTests|ResponseStream|OrderedPipeline|ServiceRunner|WorkerThreads|TransformStep'

# The fetcher's tests under AddressSanitizer.
asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp timeout 1800 swift test --experimental-maximum-parallelization-width $(TEST_WIDTH) --build-path .build/asan --sanitize=address --filter 'Fetcher|DigestService|MediaBody|Served|Refusal|Hostile|Disk|TLS|Explain|Template|Convention|Stall|Redirect|Admission|HTTPServerTests|RequestHeadTests|ResponseStream|RequestLedger|StreamEntryReading|RedisURL'

# --- Benchmark (issue 4): richpush vs curl vs URLSession on a real nginx on loopback; see bench/run.py, one file a
# scenario in bench/scenarios/. BENCH_ARGS="--compare 89d6cd0" runs that commit's build in the same rounds. ---

.PHONY: bench bench-quick bench-build

bench-build: deps
	swift build -c release --product richpush
	swift build -c release --product richpush-bench-urlsession

bench: bench-build
	python3 bench/run.py $(BENCH_ARGS)

# Every scenario once at 5% of its size: checks the benchmark itself, not the figures.
bench-quick: bench-build
	python3 bench/run.py --scale 0.05 --repeat 1 $(BENCH_ARGS)

# --- Formatting (issue 21): .swift-format is the house style, checked by `make test`; see scripts/format-check.
# It changes no file: `swift format -i --configuration .swift-format FILE...` does. ---

.PHONY: format-check

format-check:
	@scripts/format-check
