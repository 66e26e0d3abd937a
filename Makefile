# Shoal top-level targets. Every target installs missing Debian packages first.
BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
JOBS           ?= $(shell nproc)
CMAKE_FLAGS    ?=

.PHONY: deps build build-asan demo test test-release test-asan bench clean format tidy

deps:
	@./scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

$(ASAN_BUILD_DIR)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DSHOAL_SANITIZE=address,undefined -DSHOAL_BUILD_BENCHMARKS=OFF $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps $(ASAN_BUILD_DIR)/build.ninja
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)

demo: build
	./$(BUILD_DIR)/tools/shoal/shoal demo

test-release: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

# The whole suite: release build, then the same tests under AddressSanitizer + UBSan.
test: test-release test-asan

bench: build
	./scripts/run-benchmarks.sh $(BUILD_DIR)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

tidy: build
	git ls-files 'src/*.cc' 'tools/*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)
