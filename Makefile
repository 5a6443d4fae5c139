# Thin front door; the build itself is CMake.
# No "Entering directory" lines from the make that cmake --build runs.
MAKEFLAGS += --no-print-directory
BUILD ?= build
JOBS  ?= $(shell nproc)
POOL_PAGES ?= 96

.PHONY: all setup build test demo bench stress fuzz test-asan clean install

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Reserves a small hugetlbfs pool when root (tests force pool:4k/thp themselves to cover the fallback).
# Ends with one line saying how many tests were skipped and why; the status is ctest's.
test: build
	@bash scripts/pool.sh reserve $(POOL_PAGES)
	@cd $(BUILD) && ctest -N -L open_bug | sed -n 's/^ *Test *#[0-9]*: /make test: not run (open bug, see docs\/testing.md, "Known open bugs"): /p'
	@cd $(BUILD) && rm -f ctest-status && { ctest --output-on-failure -j $(JOBS) -LE open_bug $(CTEST_ARGS); \
	  echo $$? > ctest-status; } | tee ctest-output.log; rc=$$(cat ctest-status 2>/dev/null || echo 1); \
	  bash $(CURDIR)/scripts/test_summary.sh ctest-output.log Testing/Temporary/LastTest.log; exit $$rc

# The transcript starts with the benchmark: the build's output goes to a log, shown on failure.
demo: setup $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS) >$(BUILD)/build.log 2>&1 || \
	  { cat $(BUILD)/build.log; echo "make demo: the build failed (log above, also in $(BUILD)/build.log)" >&2; exit 1; }
	@bash scripts/pool.sh reserve 512
	$(BUILD)/tlbbench --demo

bench: build
	@bash scripts/setup.sh --bench
	@bash scripts/pool.sh reserve 512
	$(BUILD)/tlbbench --full

# Longer reliability runs, the fuzzers, and a sanitizer build; each is one script.
stress: build
	@bash scripts/pool.sh reserve $(POOL_PAGES)
	bash scripts/stress.sh

fuzz:
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

test-asan: setup
	bash scripts/test-asan.sh

PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
