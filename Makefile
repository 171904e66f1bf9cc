# `make` builds build/traced; `make test` installs what is missing, builds
# and runs the whole suite (release with ISA-L, then ASan+UBSan with zlib,
# then the indexer's threads under ThreadSanitizer, then the fuzzer
# briefly). See README.md.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all test test-release test-asan test-tsan test-fuzz deps run install bench clean

all: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

deps:
	./scripts/deps.sh

test: deps
	$(MAKE) test-release
	$(MAKE) test-asan
	$(MAKE) test-tsan
	$(MAKE) test-fuzz

test-release: all
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTRACED_SANITIZE=ON \
	  -DTRACED_INFLATE=zlib
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j 2

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
