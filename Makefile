# memkit - thin wrapper over CMake. The two commands a user needs:
#   make demo    build into ./build, trace the bundled example before and after its fixes
#   make test    build and run every test through ctest
# Also: make test-sanitize (ASan+UBSan, then TSan on the threaded tests),
#       make bench (the allocator benchmarks at full size), make install PREFIX=...,
#       make fuzz (the trace reader, its EVENTS decoder, the curl-log reader and JSON
#                  escaping under libFuzzer, FUZZ_SECONDS each; needs clang),
#       make bench-trace (the tracer's overhead next to heaptrack's),
#       make bench-report (memkit report next to heaptrack_print on one workload)

BUILD     ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE     ?= cmake
CTEST     ?= ctest
PREFIX    ?= /usr/local
FUZZ_SECONDS ?= 60
CLANG     ?= $(shell command -v clang-14 || command -v clang)
CLANGXX   ?= $(shell command -v clang++-14 || command -v clang++)
MAKEFLAGS += --no-print-directory

.PHONY: all build demo test test-sanitize test-asan test-tsan bench bench-trace bench-report fuzz install format clean

all: build

build:
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build $(BUILD) -j $(JOBS)

demo: build
	@sh examples/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS)

test-asan:
	@$(CMAKE) -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DMEMKIT_SANITIZE=address,undefined >/dev/null
	@$(CMAKE) --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(CTEST) --output-on-failure -j $(JOBS) -LE install

test-tsan:
	@$(CMAKE) -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DMEMKIT_SANITIZE=thread >/dev/null
	@$(CMAKE) --build $(BUILD)-tsan -j $(JOBS)
	@cd $(BUILD)-tsan && $(CTEST) --output-on-failure -j $(JOBS) -L threads

test-sanitize: test-asan test-tsan

bench: build
	@$(BUILD)/memkit bench

bench-trace: build
	@sh bench/trace/run.sh $(BUILD)

bench-report: build
	@sh bench/report/run.sh $(BUILD)

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
