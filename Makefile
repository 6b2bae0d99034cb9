# Interlock — the two Quick start commands and their parts.
#
#   make stress   run the stress harness with its defaults (every workload, 2 x cores threads)
#   make test     unit tests; unit tests again under ThreadSanitizer; a short stress run built
#                 with ThreadSanitizer. Any failure or TSan report fails the command.
#
# Both install liburcu-dev first when it is missing and they can (scripts/ensure-deps.sh).

SWIFT ?= swift
# A TSan report makes the process exit non-zero at once instead of carrying on.
export TSAN_OPTIONS ?= halt_on_error=1 second_deadlock_stack=1
TSAN_SCRATCH := .build-tsan
STRESS_ARGS ?=

.PHONY: stress test deps unit unit-tsan stress-tsan bench

deps:
	@scripts/ensure-deps.sh

stress: deps
	$(SWIFT) run -c release interlock-stress $(STRESS_ARGS)

test: deps unit unit-tsan stress-tsan

unit: deps
	$(SWIFT) test

unit-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path $(TSAN_SCRATCH)

stress-tsan: deps
	$(SWIFT) run -c release --sanitize=thread --scratch-path $(TSAN_SCRATCH) interlock-stress --seconds 1

bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark
