# Thin wrapper over CMake. `make run` and `make test` do all the set-up on a
# fresh Debian machine (missing packages are installed with apt-get).
# `make install` installs into $(DESTDIR)$(PREFIX) (default /usr/local).
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps test-deps bench-deps build build-tests run test test-plain \
	test-asan test-tsan bench install uninstall clean format

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

# The tests are built when cmocka is found (NNMEM_BUILD_TESTS=AUTO), so
# `make run` needs only the build packages.
build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_INSTALL_PREFIX=$(PREFIX)" $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# The same build with the tests required: configuring fails when cmocka is
# missing, and ctest fails when it finds no tests.
build-tests: test-deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_INSTALL_PREFIX=$(PREFIX)" -DNNMEM_BUILD_TESTS=ON $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# Plans the built-in ResNet-50 and prints the report.
run: build
	$(BUILD)/nnmem plan

test: test-plain test-asan test-tsan

test-plain: build-tests
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS)

test-asan: test-deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DNNMEM_DEBUG=ON \
	  "-DNNMEM_SANITIZE=address;undefined" -DNNMEM_BUILD_BENCH=OFF \
	  -DNNMEM_BUILD_TESTS=ON $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure --no-tests=error -j $(JOBS)

# The threaded stress tests (label stress) and the unit tests that start
# threads (label threads) under ThreadSanitizer.
test-tsan: test-deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DNNMEM_SANITIZE=thread -DNNMEM_BUILD_BENCH=OFF -DNNMEM_BUILD_TESTS=ON \
	  $(CMAKE_ARGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1 \
	  ctest --output-on-failure --no-tests=error -L 'stress|threads'

# Planner and allocator benchmarks over ../shared/data (not part of
# `make test`). jemalloc and mimalloc are optional: installed when possible,
# skipped by bench/alloc when absent.
bench-deps:
	-@scripts/install-deps.sh bench

bench: bench-deps build
	$(BUILD)/bench/plan
	cd $(BUILD) && bench/alloc

# Headers, libraries, the nnmem tool, pkg-config and CMake package files
# (the same as `cmake --install $(BUILD) --prefix $(PREFIX)`). DESTDIR stages
# the files under another root, for packagers.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# Removes what the last `make install` installed, listed in CMake's manifest
# (paths without DESTDIR: pass the same DESTDIR again).
uninstall:
	@test -f $(BUILD)/install_manifest.txt || \
	  { echo "nothing to uninstall: no $(BUILD)/install_manifest.txt"; exit 1; }
	sed 's|^|$(DESTDIR)|' $(BUILD)/install_manifest.txt | xargs -d '\n' rm -f --

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
