# RichPush: the two set-up commands are `make demo` and `make test`; both install what is missing first.

.PHONY: deps build demo test clean

deps:
	@scripts/install-deps

build: deps
	swift build -c release --product richpush
	swift build -c release --product richpush-fixture-origin

demo: build
	@scripts/demo

test: deps
	scripts/check-layers
	scripts/format-check
	scripts/check-readme-examples
	timeout 1200 swift test

clean:
	rm -rf .build out

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
	timeout 1800 swift test --build-path .build/tsan --sanitize=thread --filter 'Deadline|Enricher|StateMachine|HostileServer|MediaCache|DigestService|Stall|Redirect|Admission|Lifecycle|WorkGate|ExtensionTests|HTTPServerTests|ResponseStream|OrderedPipeline|ServiceRunner|WorkerThreads|TransformStep'

# The fetcher's tests under AddressSanitizer.
asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp timeout 1800 swift test --build-path .build/asan --sanitize=address --filter 'Fetcher|DigestService|MediaBody|Served|Refusal|Hostile|Disk|TLS|Explain|Template|Convention|Stall|Redirect|Admission|HTTPServerTests|RequestHeadTests|ResponseStream|RequestLedger|StreamEntryReading|RedisURL'

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
