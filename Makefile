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
	timeout 1200 swift test

clean:
	rm -rf .build out
