# Shoal top-level targets. Every target installs missing Debian packages first.
BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
JOBS           ?= $(shell nproc)
CMAKE_FLAGS    ?=
# The release run of `make test` simulates 60 K = 1 and 40 K = 3 seeds; the sanitizer run,
# slower, 3 per shard.
ASAN_SIM_SEEDS ?= 3
# The interleavings: the sanitizer run lets the move advance only while no operation can run.
ASAN_INTERLEAVE_BUDGET ?= 0
# ... and every interleaving of one config in 40 (the release run: one in 12).
ASAN_INTERLEAVE_SAMPLE ?= 40
# Tests the release run covers and the sanitizer run leaves out:
# - fixed seeds that found protocol bugs (not memory errors), and reads of any copy, whose code
#   the K = 3 seeds run too;
# - the shell tests of the CLI, hundreds of short `shoal` processes that each take 0.5 s to start
#   under the sanitizers (tools_local_smoke alone: 470 s);
# - the real-process fault tests (label `faults`), minutes each under the sanitizers
#   (cluster_faults_scans: 420 s) for protocol checks the release run makes, except those of
#   every entry point an attacker reaches (cluster_tls, cluster_limits, cluster_auth) and one
#   replicated failover (cluster_replication_primary_killed). The simulations run the same node
#   and coordinator code under the sanitizers.
ASAN_EXCLUDE ?= ^(sim_replication_regressions|sim_replication_any_replica_seeds|tools_local_smoke|tools_net_smoke.*|examples_run|cluster_faults_.*|cluster_failover_.*|cluster_zookeeper_.*|cluster_move_across_zookeeper_outage|cluster_admin_repeat|cluster_replication_(backup|two|floor|splits|wiped|directory|disk|stopped|coordinator|repair|history).*)$$

# Let ccache share results between checkouts in different directories (CI clones afresh).
export CCACHE_BASEDIR   := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: deps build build-asan demo test test-release test-asan test-long bench clean format tidy

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

# Only the `shoal` binary and what it links: a newcomer's first run builds no test or benchmark.
demo: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target shoal
	./$(BUILD_DIR)/tools/shoal/shoal demo

test-release: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  SHOAL_INTERLEAVE_BUDGET=$(ASAN_INTERLEAVE_BUDGET) SHOAL_INTERLEAVE_SAMPLE=$(ASAN_INTERLEAVE_SAMPLE) \
	  SHOAL_SIM_SEEDS=$(ASAN_SIM_SEEDS) ctest --output-on-failure -j $(JOBS) -E '$(ASAN_EXCLUDE)'

# The whole suite: release build, then the same tests under AddressSanitizer + UBSan.
test: test-release test-asan

# Deeper simulation than `make test` (about 30 more minutes on two cores): all 200 K = 1 seeds,
# 30 batch seeds, and more interleaving configs (one in six of a move, half of each single
# replication fault).
test-long: build
	cd $(BUILD_DIR) && SHOAL_SIM_SEEDS=50 ctest --output-on-failure -j $(JOBS) -R '^sim_cluster_seeds_'
	cd $(BUILD_DIR) && SHOAL_SIM_SEEDS=30 ctest --output-on-failure -j $(JOBS) -R '^sim_cluster_batch_seeds$$'
	cd $(BUILD_DIR) && SHOAL_INTERLEAVE_SAMPLE=6 ctest --output-on-failure -j $(JOBS) \
	  -R '^sim_interleave_(CopyThenSwitch|SwitchThenCopy)_'
	cd $(BUILD_DIR) && SHOAL_INTERLEAVE_SAMPLE=2 ctest --output-on-failure -j $(JOBS) \
	  -R '^sim_interleave_replication_(remove-backup|failover)_'

bench: build
	./scripts/run-benchmarks.sh $(BUILD_DIR)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

tidy: build
	git ls-files 'src/*.cc' 'tools/*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)

# --- real-process fault tests: every failpoint of both move protocols (docs/design/network.md) ---
.PHONY: test-faults

# The linearizability check under faults also runs once for HISTORY_SECONDS (beside its 60 s
# ctest run), from seed HISTORY_SEED.
HISTORY_SECONDS ?= 300
HISTORY_SEED    ?= 1

test-faults: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target shoal cluster_fault_test cluster_history_test
	cd $(BUILD_DIR) && SHOAL_FAULT_LONG=1 ctest --output-on-failure -j $(JOBS) -L faults
	SHOAL_SEED=$(HISTORY_SEED) SHOAL_HISTORY_SECONDS=$(HISTORY_SECONDS) \
	  $(BUILD_DIR)/tests/cluster/cluster_history_test

# --- storage: a long crash test and real fuzzing (docs/design/storage.md) ---
CRASH_SECONDS   ?= 600
FUZZ_SECONDS    ?= 60
FUZZ_BUILD_DIR  ?= build-fuzz

.PHONY: crash-test fuzz

# SIGKILL crash test of the storage engine under both sync policies; keeps the directory on failure.
crash-test: build
	@for sync in every periodic; do \
	  dir=$$(mktemp -d /tmp/shoal-crash-$$sync-XXXXXX); \
	  ./$(BUILD_DIR)/tests/crash/storage_stress --dir=$$dir --sync=$$sync \
	    --seconds=$(CRASH_SECONDS) || { echo "crash test failed; state kept in $$dir"; exit 1; }; \
	  rm -rf $$dir; \
	done

# libFuzzer with ASan/UBSan (clang) on the storage decoders, the JSON intake and the wire (every
# request type a server accepts, handed to a node's and the coordinator's handlers), seeded from
# the committed corpus; new inputs accumulate in $(FUZZ_BUILD_DIR)/corpus.
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSHOAL_BUILD_FUZZERS=ON -DSHOAL_BUILD_TESTS=OFF -DSHOAL_BUILD_BENCHMARKS=OFF \
	  -DSHOAL_WERROR=OFF -DSHOAL_SANITIZE=address,undefined
	cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS) --target fuzz_document_decode fuzz_json_intake fuzz_wire
	@for t in document_decode json_intake wire; do \
	  mkdir -p $(FUZZ_BUILD_DIR)/corpus/$$t; \
	  ./$(FUZZ_BUILD_DIR)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	    $(FUZZ_BUILD_DIR)/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done
