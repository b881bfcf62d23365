# SPDX-License-Identifier: Apache-2.0
# tickwheel: the two commands are `make run` and `make test`.
#   make run [ARGS="..."]   install what is missing, build (Release), run
#                           `tickwheel serve` on 127.0.0.1:8080 with ./data
#   make demo [ARGS="..."]  the library demo (1M connections with heartbeats)
#   make test               install, build, run every test (the web console's in
#                           headless Chromium too), then the
#                           sanitizer builds (ASan+UBSan, TSan) and a short
#                           run of every fuzz target
#   make bench [QUICK=1]    benchmarks against peers (the library, and cron's
#                           NextAfter against croniter); regenerates docs
#   make bench-server [QUICK=1] [CLUSTER_ONLY=1 | ONLY=creates|schedules|flows]  tickwheel
#                           serve (embedded, and a cluster of 1 and 3 nodes)
#                           against PostgreSQL + SKIP LOCKED, creates beside a
#                           bare RocksDB write, schedules every minute beside
#                           one-shot timers (SCHEDULES=N of them); regenerates
#                           docs/performance.md's regions
#   make bench-transfer [TIMERS=N] [STORES=embedded,cluster]
#                           tickwheel import/export rates and a backup's time
#                           and size (N pending timers, default 1M), embedded
#                           (hot backup) and a 1-node cluster (pg_dump)
#   make package            the Debian package (CPack): build/package/tickwheel_*.deb
#   make asan | make tsan   one sanitizer build of the library and its tests
#   make server-asan        the server and its tests under GCC's ASan + UBSan
#   make server-tsan        the server and its tests under GCC's TSan (not in
#                           make test; make server-tsan-test: all but the
#                           serial integration tests)
#   make tsa                the server compiled by clang: lock annotations
#                           checked (-Wthread-safety)
#   make fuzz [FUZZ_TIME=300] [FUZZ_JOBS=2]  every fuzz target for FUZZ_TIME
#                           seconds (docs/testing.md, Fuzzing)
#   make fuzz-test          every fuzz target for FUZZ_SMOKE (10) seconds
#   make soak [DURATION=10m] [MODE=embedded|cluster] [RATE=timers/s]
#                           the server under load and chaos (SIGKILLs; in
#                           cluster mode pauses too); not in make test;
#                           rewrites docs/reliability.md's region
BUILD ?= build
JOBS ?= $(shell nproc)
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
CMAKE_ARGS ?=

# Every build is a unity build (CMake's UNITY_BUILD): each target's sources
# are compiled eight to a translation unit, so the headers they share
# (Boost.Asio/Beast/JSON, GoogleTest, the server's own) are parsed, and
# their templates instantiated, once per eight files rather than once per
# file (docs/testing.md, How long it takes). What it asks of the code: no
# two sources of one target define the same name in an unnamed namespace.
# CMAKE_ARGS=-DCMAKE_UNITY_BUILD=OFF rebuilds one changed file alone.
UNITY = -DCMAKE_UNITY_BUILD=ON

.PHONY: all deps configure build package run demo test unit-test release-build release-test asan asan-build tsan tsan-build server-asan server-asan-build server-asan-test server-tsan server-tsan-test tsa fuzz-build fuzz fuzz-test bench bench-server bench-transfer soak clean format

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release $(UNITY) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The .deb of the executable, its unit, the library, headers and CMake
# config (cmake/TickwheelPackage.cmake); tests/package/check_deb.sh checks it.
package: configure
	@cmake --build $(BUILD) -j $(JOBS) --target tickwheel tickwheel_app tickwheel_package_files
	cd $(BUILD) && cpack -G DEB
	@ls $(BUILD)/package/*.deb

run: build
	./$(BUILD)/tickwheel serve --listen 127.0.0.1:8080 --data-dir ./data $(ARGS)

demo: build
	./$(BUILD)/tickwheel demo $(ARGS)

unit-test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j $(JOBS) --timeout 600

# make test runs the server's tests in its sanitizer builds, not in
# Release: the Release build runs everything but the server's tests
# (labels server-unit, server-integration, server-integration-serial),
# which server-asan runs under ASan + UBSan (the same tests, the same real
# servers; running the integration tests in both took 9 of make test's
# minutes, one test at a time since they measure lateness). Save the integration
# tests whose claims are checked in Release only (lateness percentiles,
# RSS: #if !defined(__SANITIZE_ADDRESS__)), which the Release build runs
# too.
RELEASE_ONLY_CHECKS = ServerDeliveryTest.DeliversEveryTimerOnceOnTimeAndNeverEarly \
  ServerClusterTest.ThreeNodesDeliverEveryTimerOnceOnTimeAndNeverEarly \
  ServerFaultsTest.MisbehavingReceiversEndInDeadLettersWithBoundedFilesAndMemory
# It builds everything `make build` does but the server's tests it does not
# run and the benchmarks (release_test_targets, CMakeLists.txt).
release-build: configure
	@cmake --build $(BUILD) -j $(JOBS) --target release_test_targets

release-test: release-build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j $(JOBS) --timeout 600 \
	  -LE '^server-(unit|integration|integration-serial)$$' -E "$$(cat $(BUILD)/release_test_not_built.txt)"
	@for t in $(RELEASE_ONLY_CHECKS); do \
	  ctest --test-dir $(BUILD) --output-on-failure --no-tests=error --timeout 600 -R "^$$t$$" \
	    || exit 1; \
	done

# make test's order. The server's serial integration tests (label
# server-integration-serial: one at a time, bound by real time) leave the
# machine about 70% idle (30% busy on 2 cores, measured over 26 of them
# under ASan). So make test builds the server under ASan first, and while
# its tests run it compiles at the lowest priority (nice 19: a woken test's
# process takes the core back at once) everything else it needs: the
# Release build (release-build), the library's sanitizer builds, tsa and
# the fuzz targets. Their output goes to $(SIDE_LOG), printed after the
# server's tests; then the Release tests, the library's tests under both
# sanitizers and the fuzz smoke run on an otherwise idle machine. Each
# target still runs alone (make release-test, make asan, make fuzz-test...).
SIDE_BUILDS = release-build asan-build tsan-build tsa fuzz-build
SIDE_LOG = $(BUILD)-server-asan/side-builds.log
test: server-asan-build
	@rm -f $(SIDE_LOG).rc
	@( nice -n 19 $(MAKE) --no-print-directory $(SIDE_BUILDS) > $(SIDE_LOG) 2>&1; \
	   echo $$? > $(SIDE_LOG).rc ) & \
	$(MAKE) --no-print-directory server-asan-test; status=$$?; wait; \
	echo "--- built beside the server's tests (nice 19): $(SIDE_BUILDS)"; \
	cat $(SIDE_LOG); \
	[ $$status -eq 0 ] && [ "$$(cat $(SIDE_LOG).rc)" = 0 ]
	@$(MAKE) --no-print-directory release-test asan tsan fuzz-test

# Sanitizer and fuzz builds compile at -O1 with line tables only (-g1): the
# optimisation ASan recommends, and file:line in every report. Against
# RelWithDebInfo's -O2 -g this cuts their compile time by about 2.5x (GCC
# with ASan + UBSan on server/api/api.cc: 65 s against 162 s), which is
# most of make test's time on 2 cores.
SAN_BUILD = -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" $(UNITY)

# Sanitizer builds compile the library and its tests (not the benchmarks or
# the executable) with clang, and run the tests that are labelled for them.
SAN_ARGS = $(SAN_BUILD) -DCMAKE_CXX_COMPILER=clang++-14 \
           -DTICKWHEEL_BUILD_BENCH=OFF -DTICKWHEEL_BUILD_APP=OFF \
           -DTICKWHEEL_BUILD_EXAMPLES=OFF

asan-build: deps
	@cmake -S . -B $(BUILD)-asan $(GENERATOR) $(SAN_ARGS) -DTICKWHEEL_SANITIZE=address >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS)

asan: asan-build
	ctest --test-dir $(BUILD)-asan --output-on-failure --no-tests=error -j $(JOBS) -L 'unit|model|concurrency' --timeout 900

tsan-build: deps
	@cmake -S . -B $(BUILD)-tsan $(GENERATOR) $(SAN_ARGS) -DTICKWHEEL_SANITIZE=thread >/dev/null
	@cmake --build $(BUILD)-tsan -j $(JOBS)

tsan: tsan-build
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --test-dir $(BUILD)-tsan --output-on-failure --no-tests=error -j $(JOBS) -L 'unit|concurrency' --timeout 900

# The server in a GCC build with ASan + UBSan (clang 14 cannot compile its
# coroutines with ASan), running every test labelled "server". With
# precompiled headers, as server-tsan (TICKWHEEL_PCH, below): 8% less
# compile CPU here (docs/testing.md, How long it takes). UBSan without the
# checks that cost most to compile in Beast's templates and that ASan
# covers or that x86-64 does not need: null (a null dereference is a
# SEGV that ASan reports), object-size (ASan's bounds are exact),
# alignment, vptr and pointer-overflow. With them, GCC took 99 s on
# src/client/http_connection.cc; without, 58 s (ASan alone: 54 s). The
# others (signed overflow, shifts, bounds, enum and bool loads, float
# casts, unreachable, missing return, ...) stay, and abort the test.
SERVER_UBSAN_SKIP = null,object-size,alignment,vptr,pointer-overflow
server-asan-build: deps
	@cmake -S . -B $(BUILD)-server-asan $(GENERATOR) $(SAN_BUILD) \
	  -DCMAKE_CXX_COMPILER=g++ -DTICKWHEEL_SANITIZE=address -DTICKWHEEL_BUILD_BENCH=OFF \
	  -DTICKWHEEL_UBSAN_SKIP=$(SERVER_UBSAN_SKIP) \
	  -DTICKWHEEL_BUILD_EXAMPLES=OFF -DTICKWHEEL_PCH=ON >/dev/null
	@cmake --build $(BUILD)-server-asan -j $(JOBS) --target server_tests

server-asan: server-asan-test

server-asan-test: server-asan-build
	ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" \
	  ctest --test-dir $(BUILD)-server-asan --output-on-failure --no-tests=error -j $(JOBS) -L server --timeout 900

# The server in a GCC build with ThreadSanitizer (clang 14 cannot compile its
# coroutines with sanitizers), running every test labelled "server": the
# HTTP threads, group writer, dispatcher, lease manager and listener of the
# real executable, which the tests start (TSAN_OPTIONS reaches it: a race
# there exits it with 66 and fails the test). Suppressions, each with its
# reason: tests/server/tsan.supp. TSan's lock-order (deadlock) detector is
# on: it was off while the group writer held one stripe lock per id of its
# group at once, more than the 64 a thread may hold under the detector;
# its IdLocks take one mutex at a time, and every server test has run with
# the detector on since (2026-11-28). Data races are reported.
# TICKWHEEL_PCH: Boost.Asio/Beast/JSON, spdlog and GoogleTest precompiled
# once per build, not parsed again by each source (cmake/TickwheelPch.cmake).
SERVER_TSAN_CONFIGURE = cmake -S . -B $(BUILD)-server-tsan $(GENERATOR) $(SAN_BUILD) \
  -DCMAKE_CXX_COMPILER=g++ -DTICKWHEEL_SANITIZE=thread -DTICKWHEEL_BUILD_BENCH=OFF \
  -DTICKWHEEL_BUILD_EXAMPLES=OFF -DTICKWHEEL_PCH=ON >/dev/null
SERVER_TSAN_CTEST = TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/server/tsan.supp" \
  ctest --test-dir $(BUILD)-server-tsan --output-on-failure --no-tests=error -j $(JOBS) --timeout 900

server-tsan: deps
	@$(SERVER_TSAN_CONFIGURE)
	@cmake --build $(BUILD)-server-tsan -j $(JOBS) --target server_tests
	$(SERVER_TSAN_CTEST) -L server

# The part of server-tsan meant for make test, not in it (with it, make
# test would take about 51 min on CI's 2 cores: docs/testing.md, How long
# it takes): every test labelled "server" but the
# serial integration tests (label server-integration-serial: delivery,
# recovery, cluster, faults, attack, flow, delivery security, schedule,
# transfer), and api_contract_test, which needs the records of three of
# them and checks no thread. Those nine are the runs that are bound by real
# time and run one at a time: under TSan they took most of server-tsan's
# time. What runs: the server-unit tests
# (group writer, scheduler, dispatcher, flow limiter, blocking pool, stores
# in-process) and the real executable's HTTP threads, group writer,
# dispatcher, and on a cluster node (server_access_test) its lease manager
# and listener, under the API, CLI, access, limits, metrics and NATS tests
# and the clients' tests, side by side. `make server-tsan` runs all.
server-tsan-test: deps
	@$(SERVER_TSAN_CONFIGURE)
	@cmake --build $(BUILD)-server-tsan -j $(JOBS) --target server_tests_side_by_side
	$(SERVER_TSAN_CTEST) -L server -LE '^server-integration-serial$$' -E '^api_contract_test$$'

# The server and the executable checked by clang's front end, which checks
# the lock annotations (-Wthread-safety -Werror=thread-safety; the library's
# are checked by the asan and tsan builds). The check needs no code:
# TICKWHEEL_CHECK_ONLY compiles with -fsyntax-only and links nothing
# (cmake/TickwheelCheckOnly.cmake; 40-50% less time than -O0 code).
tsa: deps
	@cmake -S . -B $(BUILD)-tsa $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
	  -DCMAKE_CXX_COMPILER=clang++-14 -DTICKWHEEL_CHECK_ONLY=ON -DTICKWHEEL_BUILD_TESTS=OFF $(UNITY) \
	  -DTICKWHEEL_BUILD_BENCH=OFF -DTICKWHEEL_BUILD_EXAMPLES=OFF >/dev/null
	@cmake --build $(BUILD)-tsa -j $(JOBS) --target tickwheel_app

# Fuzzing: clang-14's libFuzzer with ASan + UBSan, one executable per target
# (tests/fuzz/). Each run first replays the target's seeds and kept
# regression inputs, then fuzzes; inputs it finds are kept in
# $(FUZZ_BUILD)/fuzz-corpus/, failing ones in $(FUZZ_BUILD)/crashes/, logs in
# $(FUZZ_BUILD)/fuzz-logs/. Any failure fails the target.
FUZZ_BUILD ?= $(BUILD)-fuzz
FUZZ_TIME ?= 300
FUZZ_SMOKE ?= 10
FUZZ_JOBS ?= $(JOBS)
FUZZ_ARGS = $(SAN_BUILD) -DCMAKE_CXX_COMPILER=clang++-14 \
            -DTICKWHEEL_BUILD_FUZZ=ON -DTICKWHEEL_BUILD_TESTS=OFF \
            -DTICKWHEEL_BUILD_BENCH=OFF -DTICKWHEEL_BUILD_APP=OFF \
            -DTICKWHEEL_BUILD_EXAMPLES=OFF

fuzz-build: deps
	@cmake -S . -B $(FUZZ_BUILD) $(GENERATOR) $(FUZZ_ARGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)

fuzz: fuzz-build
	@rm -f $(FUZZ_BUILD)/fuzz-logs/summary.txt
	FUZZ_SECONDS=$(FUZZ_TIME) ctest --test-dir $(FUZZ_BUILD) -L fuzz --no-tests=error \
	  --output-on-failure -j $(FUZZ_JOBS) --timeout $$(( $(FUZZ_TIME) + 600 ))
	@cat $(FUZZ_BUILD)/fuzz-logs/summary.txt

fuzz-test: fuzz-build
	@rm -f $(FUZZ_BUILD)/fuzz-logs/summary.txt
	FUZZ_SECONDS=$(FUZZ_SMOKE) ctest --test-dir $(FUZZ_BUILD) -L fuzz --no-tests=error \
	  --output-on-failure -j $(JOBS) --timeout 600
	@cat $(FUZZ_BUILD)/fuzz-logs/summary.txt

# Core (Wheel against peers: bench/core/report.py), runtime (Cache,
# executors: bench/runtime/report.py) and schedules (NextAfter against
# croniter: bench/schedule/report.py); each rewrites its region of
# docs/performance.md. QUICK=1: sizes up to 1M, one repetition.
bench: build
	/usr/bin/python3 bench/core/report.py --build $(BUILD) $(if $(QUICK),--quick)
	/usr/bin/python3 bench/runtime/report.py --build $(BUILD) $(if $(QUICK),--quick)
	/usr/bin/python3 bench/schedule/report.py --build $(BUILD) $(if $(QUICK),--quick)

bench-transfer: configure
	@cmake --build $(BUILD) -j $(JOBS) --target tickwheel_app
	BUILD=$(BUILD) TIMERS=$(TIMERS) STORES=$(STORES) bench/server/transfer_bench.sh

bench-server: configure
	@cmake --build $(BUILD) -j $(JOBS) --target tickwheel_app server_bench
	BUILD=$(BUILD) QUICK=$(QUICK) CLUSTER_ONLY=$(CLUSTER_ONLY) ONLY=$(ONLY) SCHEDULES=$(SCHEDULES) \
	  CLUSTER_SCHEDULES=$(CLUSTER_SCHEDULES) bench/server/run.sh

# The soak (bench/soak/): DURATION of load (10m, 90s) while a node is
# SIGKILLed and restarted every 30-60 s (MODE=cluster: 3 nodes on a
# throw-away PostgreSQL 15, and pauses past the lease too); then it waits
# for everything due and judges it: lost, early and delivered after a
# cancel must be 0 (it exits non-zero otherwise). The JSON goes to
# bench/soak/results/soak-$(MODE).json; bench/soak/report.py draws
# docs/img/soak_$(MODE)_*.png and rewrites docs/reliability.md's region.
DURATION ?= 10m
MODE ?= embedded
soak: configure
	@cmake --build $(BUILD) -j $(JOBS) --target tickwheel_app soak
	@mkdir -p bench/soak/results
	status=0; $(BUILD)/bench/soak/soak --binary $(BUILD)/tickwheel --mode $(MODE) \
	  --duration $(DURATION) $(if $(RATE),--rate $(RATE)) \
	  --out bench/soak/results/soak-$(MODE).json || status=$$?; \
	/usr/bin/python3 bench/soak/report.py bench/soak/results docs/reliability.md $(MODE); exit $$status

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-server-asan $(BUILD)-tsa $(FUZZ_BUILD)
