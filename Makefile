# memkit - thin wrapper over CMake. The two commands a user needs:
#   make demo    build into ./build and run the main job on the bundled example
#   make test    build and run every test through ctest
# Also: make test-sanitize (ASan+UBSan, then TSan on the threaded tests),
#       make bench (the allocator benchmarks at full size), make install PREFIX=...

BUILD     ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE     ?= cmake
CTEST     ?= ctest
PREFIX    ?= /usr/local
MAKEFLAGS += --no-print-directory

.PHONY: all build demo test test-sanitize test-asan test-tsan bench install format clean

all: build

build:
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/memkit-demo

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

install: build
	@$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cc' '*.hpp')

clean:
	@rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan
