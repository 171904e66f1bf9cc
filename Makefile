# `make` builds build/traced; `make test` installs what is missing, builds
# and runs the whole suite: release with ISA-L (the sanitizer and fuzzer
# builds made beside its tests), ASan+UBSan with zlib, the indexer's threads
# under ThreadSanitizer, the fuzzers (scripts/suite.sh; docs/TESTS.md).
# `make check` is the quick tier: the release build and its tests under
# 10 s. See README.md.
BUILD ?= build
# cmake's own make would say "Entering/Leaving directory" around its
# build: noise in `make run`'s output (GNU make prints them for sub-makes).
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all test check test-release test-asan test-tsan test-fuzz deps run install bench clean

all: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

deps:
	./scripts/deps.sh

SUITE = BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" \
  ./scripts/suite.sh

test: deps
	$(SUITE) all

check: deps
	$(SUITE) check

test-release:
	$(SUITE) release

test-asan:
	$(SUITE) asan

test-tsan:
	./scripts/tsan.sh

test-fuzz:
	./scripts/fuzz.sh

run: deps all
	./scripts/run.sh

install: all
	cmake --install $(BUILD)

bench: all
	./bench/bench_index.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
