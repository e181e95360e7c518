# memkit - thin wrapper over CMake. The two commands a user needs:
#   make demo    build into ./build, trace the bundled example before and after its fixes
#   make test    build and run every test through ctest
# Each first installs the Debian packages it needs and lacks (tools/packages.txt,
# tools/deps.sh): as root directly, else with sudo -n, else it names the
# apt-get line to run. NO_INSTALL=1 (or MEMKIT_NO_INSTALL=1) only checks.
# Also: make test-sanitize (ASan+UBSan, then TSan on the threaded tests),
#       make test-debug (a Debug build with the invariants asserted),
#       make test-mutants (tests/mutants/mutants.txt's small bugs, one at a time
#                          in a copy of the tree, each caught by its part's tests;
#                          MUTANTS=NAME,... runs some),
#       make bench (the allocator benchmarks at full size), make install PREFIX=...,
#       make fuzz (the trace reader, its EVENTS decoder, the curl-log reader and JSON
#                  escaping under libFuzzer, FUZZ_SECONDS each; needs clang),
#       make bench-trace (the tracer's overhead next to heaptrack's),
#       make bench-report (memkit report next to heaptrack_print on one workload; memory
#         against threads; the HTML page's size and load time),
#       make bench-real (memkit on real programs next to heaptrack: bench/real/run.sh)
#       make bench-real-outside (the same for perl, sqlite3 and jq: bench/real/outside.sh)
#       make bench-sample (trace --sample: overhead and accuracy: bench/sample/run.sh;
#         its standard errors' calibration: bench/sample/calibrate.py)
#       make bench-cost (the allocator's share of a run, memkit's beside perf's:
#                        bench/cost/run.sh)
#       make bench-patterns (libmemkit's defaults against malloc on the shapes of
#                            real programs: bench/patterns/run.sh)
#       make bench-replay (memkit replay against the traced run and memkit tune:
#                          bench/replay/run.sh)

BUILD     ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE     ?= cmake
CTEST     ?= ctest
PREFIX    ?= /usr/local
FUZZ_SECONDS ?= 60
CLANG     ?= $(shell command -v clang-14 || command -v clang)
CLANGXX   ?= $(shell command -v clang++-14 || command -v clang++)
MAKEFLAGS += --no-print-directory
DEPS      = MEMKIT_NO_INSTALL=$(if $(NO_INSTALL),$(NO_INSTALL),$${MEMKIT_NO_INSTALL:-0}) sh tools/deps.sh ensure

# Configure and build into $(BUILD).
define build_steps
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build $(BUILD) -j $(JOBS)
endef

.PHONY: all deps build demo test test-sanitize test-asan test-tsan test-debug test-mutants bench bench-trace bench-report bench-real bench-real-outside bench-cost bench-replay bench-patterns bench-sample fuzz install format clean

all: build

# Every package of every purpose (what CI has).
deps:
	@$(DEPS) build demo test

build:
	@$(DEPS) build
	$(build_steps)

demo:
	@$(DEPS) build demo
	$(build_steps)
	@sh examples/demo.sh $(BUILD)

# Skipped tests are counted with their reasons; MEMKIT_NO_SKIP=1 (CI) fails on any.
test:
	@$(DEPS) build test
	$(build_steps)
	@sh tools/run-tests.sh $(BUILD) $(JOBS)

test-asan:
	@$(DEPS) build test
	@$(CMAKE) -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DMEMKIT_SANITIZE=address,undefined >/dev/null
	@$(CMAKE) --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(CTEST) --output-on-failure -j $(JOBS) -LE install

test-tsan:
	@$(DEPS) build test
	@$(CMAKE) -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DMEMKIT_SANITIZE=thread >/dev/null
	@$(CMAKE) --build $(BUILD)-tsan -j $(JOBS)
	@cd $(BUILD)-tsan && $(CTEST) --output-on-failure -j $(JOBS) -L threads

test-sanitize: test-asan test-tsan

# A Debug build, MK_ASSERTs on (src/mk_assert.h), every test but the valgrind
# runs (the release build's suite has them) and the benchmarks' (timing -O0
# code says nothing).
test-debug:
	@$(DEPS) build test
	@$(CMAKE) -S . -B $(BUILD)-debug -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@$(CMAKE) --build $(BUILD)-debug -j $(JOBS)
	@cd $(BUILD)-debug && $(CTEST) --output-on-failure -j $(JOBS) -LE 'valgrind|bench'

# A copy of the tree in $(BUILD)-mutants/src, built in $(BUILD)-mutants/build.
test-mutants:
	@$(DEPS) build test
	@python3 tests/mutants/run.py . $(BUILD)-mutants $(if $(MUTANTS),--only $(MUTANTS)) --jobs $(JOBS)

bench: build
	@$(BUILD)/memkit bench

bench-trace: build
	@sh bench/trace/run.sh $(BUILD)

bench-report: build
	@sh bench/report/run.sh $(BUILD)
	@sh bench/report/threads.sh $(BUILD)
	@sh bench/report/page.sh $(BUILD)

bench-real:
	@$(DEPS) build test
	$(build_steps)
	@sh bench/real/run.sh $(BUILD)

bench-real-outside:
	@$(DEPS) build test
	$(build_steps)
	@sh bench/real/outside.sh $(BUILD)

bench-cost:
	@$(DEPS) build test
	$(build_steps)
	@sh bench/cost/run.sh $(BUILD)

bench-replay:
	@$(DEPS) build test
	$(build_steps)
	@sh bench/replay/run.sh $(BUILD)

bench-patterns:
	@$(DEPS) build test
	$(build_steps)
	@sh bench/patterns/run.sh $(BUILD)

bench-sample:
	@$(DEPS) build test
	$(build_steps)
	@sh bench/sample/run.sh $(BUILD)
	@python3 bench/sample/calibrate.py $(BUILD)

# The fuzz build instruments everything but the tracer with ASan, UBSan and
# libFuzzer coverage; seeds are traces of the end-to-end test programs (and
# traces of formats 1 and 2, from tests/trace/data: not the bulk ones, whose
# 300,000 events take 2 s a run under the sanitizers).
fuzz:
	@test -n "$(CLANG)" || { echo "make fuzz needs clang (apt-get install clang)"; exit 2; }
	@$(CMAKE) -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$(CLANG) \
	    -DCMAKE_CXX_COMPILER=$(CLANGXX) \
	    -DMEMKIT_WERROR=OFF -DMEMKIT_FUZZ=ON -DMEMKIT_SANITIZE=address,undefined,fuzzer-no-link >/dev/null
	@$(CMAKE) --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_trace fuzz_events fuzz_memdebug \
	    fuzz_json events_seeds memkit_cli memkit_preload trace_basic trace_threads \
	    trace_forkexec >/dev/null
	@rm -rf $(BUILD)-fuzz/seeds $(BUILD)-fuzz/seeds-events && \
	    mkdir -p $(BUILD)-fuzz/seeds $(BUILD)-fuzz/seeds-log $(BUILD)-fuzz/seeds-events \
	    $(BUILD)-fuzz/corpus $(BUILD)-fuzz/corpus-log $(BUILD)-fuzz/corpus-json \
	    $(BUILD)-fuzz/corpus-events
	@for p in basic threads forkexec; do \
	    $(BUILD)-fuzz/memkit trace -q -o $(BUILD)-fuzz/seeds/$$p -- $(BUILD)-fuzz/tests/trace/$$p >/dev/null 2>&1; done
	@cp tests/trace/data/v1-threads.mkt tests/trace/data/v2-basic.mkt \
	    $(BUILD)-fuzz/seeds/ # the older formats' decoding too
	@$(BUILD)-fuzz/tests/events_seeds $(BUILD)-fuzz/seeds/*.mkt $(BUILD)-fuzz/seeds-events >/dev/null
	@cp tests/report/data/curl-memdebug/*.log $(BUILD)-fuzz/seeds-log/
	@set -e; b=$(BUILD)-fuzz; \
	for t in "trace 65536 corpus seeds" "events 65536 corpus-events seeds-events" \
	    "memdebug 16384 corpus-log seeds-log" "json 4096 corpus-json"; do \
	    set -- $$t; echo "fuzz_$$1:"; \
	    if ASAN_OPTIONS=detect_leaks=1 $$b/tests/fuzz_$$1 -max_total_time=$(FUZZ_SECONDS) -max_len=$$2 \
	        -timeout=10 -artifact_prefix=$$b/ $$b/$$3 $${4:+$$b/$$4} >$$b/fuzz_$$1.log 2>&1; then \
	        grep -E "^Done" $$b/fuzz_$$1.log; \
	    else \
	        grep -E "ERROR|SUMMARY|DEADLY|Test unit written" $$b/fuzz_$$1.log; exit 1; \
	    fi; \
	done

install: build
	@$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

format:
	@clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cc' '*.hpp')

clean:
	@rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz
