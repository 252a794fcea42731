# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/bench.mk: `make bench`, included by the top Makefile.
#   make bench                  5 rounds, table on stdout and in bench/RESULTS.md
#   make bench BENCH_ROUNDS=1   a quick look (the numbers are noisier)
# Workloads are built into $(BUILD)/bench; bench/run.sh does the measuring.

BENCH_BUILD  := $(BUILD)/bench
BENCH_ROUNDS ?= 5
BENCH_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra
# lookup is linked against a dozen ordinary shared libraries (all there with
# the -dev packages of a Debian 12 build machine), kept even though unused,
# because print_trace's first call has to read every loaded module.
BENCH_LOOKUP_LIBS := $(foreach l,z crypt ssl crypto sqlite3 xml2 pcre2-8 gmp bz2 lzma ffi expat uuid,\
    $(if $(wildcard /usr/lib/x86_64-linux-gnu/lib$(l).so /usr/lib/lib$(l).so /usr/lib64/lib$(l).so),-l$(l)))
BENCH_PROGS  := $(BENCH_BUILD)/measure $(BENCH_BUILD)/churn $(BENCH_BUILD)/lookup \
                $(BENCH_BUILD)/floor.so $(BENCH_BUILD)/top_target \
                $(BENCH_BUILD)/symsites_gcc $(BENCH_BUILD)/symsites_clang \
                $(BENCH_BUILD)/depth $(BENCH_BUILD)/exitstamp.so
BENCH_PKGS   := sqlite3 python3 zstd heaptrack valgrind

# memtrace-symbolize and memtrace.py: `memtrace leaks` on a core file (gdb).
# bench/attach.sh: memtrace attach's pause and per-call cost, appended;
# bench/record.sh: the recording's cost, size and culling, appended;
# bench/instr.sh: the few-percent targets counted by valgrind, appended;
# bench/top.sh: memtrace top's CPU a refresh and the watched throughput, appended.
# bench/clang.sh: the symbolizer on a gcc and a clang build, appended.
# bench/table_share.sh: the live table's share of python3's profile, appended.
# bench/profexit.sh: the sampled profiler's exit against native's, appended.
# bench/pyrss.sh: python3's peak RSS under the tracer, item by item, appended.
# bench/pair.sh: instructions a sampled run's malloc/free pair adds, appended.
# bench/defaults_pair.sh: instructions and misses a pair adds at the defaults, appended.
# bench/samp_cost.sh: the always-on profiler's instructions, decomposed, appended.
# $(VIEW_FILES): memtrace view's time.
bench: bench-deps $(TRACER_LIB) $(PROFILER_LIB) $(BENCH_PROGS) $(BUILD)/memtrace-symbolize \
       $(BUILD)/memtrace.py $(BUILD)/memtrace $(BUILD)/memtrace_attach.py $(BUILD)/memtrace-export $(VIEW_FILES) $(BUILD)/memtrace-top
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/run.sh $(TRACER_LIB) $(PROFILER_LIB) \
	    $(BENCH_BUILD) bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/attach.sh $(BUILD)/memtrace $(BENCH_BUILD)/churn | \
	    tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/record.sh $(TRACER_LIB) $(BUILD)/memtrace-export \
	    $(BENCH_BUILD) | tee -a bench/RESULTS.md
	bash bench/instr.sh $(TRACER_LIB) $(BENCH_BUILD) | tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/top.sh $(BUILD)/memtrace $(BENCH_BUILD)/top_target | \
	    tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/clang.sh $(PROFILER_LIB) $(TRACER_LIB) $(BUILD)/memtrace.py \
	    $(BENCH_BUILD) | tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/depth.sh $(TRACER_LIB) $(BENCH_BUILD) | tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/table_share.sh $(TRACER_LIB) | tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/sampled.sh $(TRACER_LIB) $(PROFILER_LIB) $(BENCH_BUILD) | \
	    tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/profexit.sh $(PROFILER_LIB) $(BENCH_BUILD) | \
	    tee -a bench/RESULTS.md
	BENCH_ROUNDS=$(BENCH_ROUNDS) bash bench/pyrss.sh $(TRACER_LIB) $(BENCH_BUILD) | tee -a bench/RESULTS.md
	bash bench/pair.sh $(TRACER_LIB) $(BENCH_BUILD) | tee -a bench/RESULTS.md
	bash bench/defaults_pair.sh $(TRACER_LIB) | tee -a bench/RESULTS.md
	bash bench/samp_cost.sh $(PROFILER_LIB) $(BENCH_BUILD) | tee -a bench/RESULTS.md

# One source, two compilers: the symbolizer's cost on each (bench/clang.sh).
$(BENCH_BUILD)/symsites_gcc: bench/symsites.c
	@mkdir -p $(@D)
	gcc $(CPPFLAGS) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $<
$(BENCH_BUILD)/symsites_clang: bench/symsites.c
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $<

$(BENCH_BUILD)/depth: bench/depth.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -pthread $(LDFLAGS) -o $@ $<
# bench/profexit.sh: the profiler's exit, timed from main's return.
$(BENCH_BUILD)/exitstamp.so: bench/exitstamp.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -shared -fPIC $(LDFLAGS) -o $@ $< -ldl

$(BENCH_BUILD)/measure: bench/measure.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $<

$(BENCH_BUILD)/churn: bench/churn.c src/runtime/descriptor.h include/memtrace.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -pthread $(LDFLAGS) -o $@ $<

$(BENCH_BUILD)/top_target: bench/top_target.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $<

$(BENCH_BUILD)/floor.so: bench/floor.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -fPIC -shared $(LDFLAGS) -o $@ $< -ldl

$(BENCH_BUILD)/lookup: bench/lookup.c include/memtrace.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $< \
	  -Wl,--no-as-needed $(BENCH_LOOKUP_LIBS) -lstdc++ -lm -pthread -ldl

# Installs what is missing when root, else says what to install (the top
# Makefile's install_missing). run.sh still leaves the heaptrack column out,
# with a note, on a machine where heaptrack cannot be had.
bench-deps:
	$(call install_missing,$(BENCH_PKGS))

.PHONY: bench bench-deps
