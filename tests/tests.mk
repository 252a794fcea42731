# SPDX-License-Identifier: LGPL-2.1-or-later
# Tests: Criterion unit tests that link the core files directly (also built
# with ASan+UBSan), and end-to-end tests that preload the library into test
# programs under gdb. Included by the top Makefile.

TEST_BUILD := $(BUILD)/tests
UNIT_CORE  := src/store/live_table.c src/store/stack_store.c src/base/os.c src/base/output.c \
              src/base/lock.c src/store/internal_heap.c $(wildcard src/symbolize/*.c) src/report/format.c \
              src/report/format_profile.c \
              src/base/config.c src/store/freed_history.c src/store/cfi.c src/scan/leak_scan.c \
              src/leak/suppressions.c src/leak/leak_report.c src/scan/leak_roots.c \
              src/scan/leak_gather.c src/store/sample_weight.c
# -DMT_DEBUG: the MT_ASSERT checks (src/base/common.h) run in the unit tests.
UNIT_CFLAGS := -std=gnu11 $(WARN) -g -O1 -pthread -D_GNU_SOURCE -Isrc -DMT_DEBUG -Wno-missing-prototypes \
               $(shell pkg-config --cflags libdw 2>/dev/null)
UNIT_LIBS   := -lcriterion $(LIB_LIBS) -lm
UNIT_TESTS  := $(patsubst tests/unit/test_%.c,%,$(wildcard tests/unit/test_*.c))
UNIT_BINS   := $(UNIT_TESTS:%=$(TEST_BUILD)/unit/%) $(UNIT_TESTS:%=$(TEST_BUILD)/unit-san/%)

$(TEST_BUILD)/unit/%: tests/unit/test_%.c tests/unit/sym_fixture.c $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) $(LDFLAGS) \
	  -o $@ $< tests/unit/sym_fixture.c $(UNIT_CORE) $(UNIT_LIBS)

# The profiler's site counters: the core built as the profiler library is.
$(TEST_BUILD)/unit/site: tests/unit/test_site.c tests/unit/sym_fixture.c src/store/site.c src/profile/sites.c $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -DMEMTRACE_PROFILER $(LDFLAGS) \
	  -o $@ $< tests/unit/sym_fixture.c src/store/site.c src/profile/sites.c src/base/pausable.c $(UNIT_CORE) $(UNIT_LIBS)

$(TEST_BUILD)/unit-san/site: tests/unit/test_site.c tests/unit/sym_fixture.c src/store/site.c src/profile/sites.c $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -DMEMTRACE_PROFILER -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  $(LDFLAGS) -o $@ $< tests/unit/sym_fixture.c src/store/site.c src/profile/sites.c src/base/pausable.c $(UNIT_CORE) $(UNIT_LIBS)

# The symbolizer's tests on the fixture compiled by clang (no aranges),
# whatever CC is: clang writes no .debug_aranges, the case the symbolizer's
# CU index is for (tests/e2e/build.sh knows this one clang compile).
CLANG_FIXTURE := $(TEST_BUILD)/fixture/sym_fixture_clang.o
$(CLANG_FIXTURE): tests/unit/sym_fixture.c
	@mkdir -p $(@D)
	clang $(CPPFLAGS) -g -O1 -c -o $@ $<

$(TEST_BUILD)/unit/symbolize_clang: tests/unit/test_symbolize_clang.c tests/unit/test_symbolize.c $(CLANG_FIXTURE) $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) $(LDFLAGS) \
	  -o $@ $< $(CLANG_FIXTURE) $(UNIT_CORE) $(UNIT_LIBS)

$(TEST_BUILD)/unit-san/symbolize_clang: tests/unit/test_symbolize_clang.c tests/unit/test_symbolize.c $(CLANG_FIXTURE) $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  $(LDFLAGS) -o $@ $< $(CLANG_FIXTURE) $(UNIT_CORE) $(UNIT_LIBS)

# Thread numbers: the registry linked in (it takes mt_busy from the test).
$(TEST_BUILD)/unit/threads: tests/unit/test_threads.c tests/unit/sym_fixture.c src/store/threads.c $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) $(LDFLAGS) \
	  -o $@ $< tests/unit/sym_fixture.c src/store/threads.c $(UNIT_CORE) $(UNIT_LIBS)

$(TEST_BUILD)/unit-san/threads: tests/unit/test_threads.c tests/unit/sym_fixture.c src/store/threads.c $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  $(LDFLAGS) -o $@ $< tests/unit/sym_fixture.c src/store/threads.c $(UNIT_CORE) $(UNIT_LIBS)

# Tag scopes: the nodes, the thread registry and the formatter linked in.
TAGS_UNIT := src/tags/tags.c src/tags/tags_format.c src/store/threads.c src/store/live_bytes.c
$(TEST_BUILD)/unit/tags: tests/unit/test_tags.c tests/unit/sym_fixture.c $(TAGS_UNIT) $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) $(LDFLAGS) \
	  -o $@ $< tests/unit/sym_fixture.c $(TAGS_UNIT) $(UNIT_CORE) $(UNIT_LIBS)

$(TEST_BUILD)/unit-san/tags: tests/unit/test_tags.c tests/unit/sym_fixture.c $(TAGS_UNIT) $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  $(LDFLAGS) -o $@ $< tests/unit/sym_fixture.c $(TAGS_UNIT) $(UNIT_CORE) $(UNIT_LIBS)

# The reader of the tables out of process (tools/tables.c) against the
# stores and the descriptor this process publishes.
TABLES_UNIT := tools/tables.c tools/tables_layout.c tools/tables_live.c src/runtime/descriptor.c src/store/threads.c \
               src/tags/tags.c src/tags/tags_format.c src/store/live_bytes.c \
               src/leak/leak_client.c
# memtrace-symbolize's answers too (table_answers.c, heap_check.c), through the same reader.
TABLES_UNIT += tools/table_answers.c tools/table_tags.c tools/request.c tools/heap_check.c \
               $(addprefix src/report/,pprof.c pprof_gzip.c pprof_index.c) \
               $(BUILD)/symbolize-pb/profile.pb-c.o
$(TEST_BUILD)/unit/tables $(TEST_BUILD)/unit-san/tables: $(PB_DIR)/profile.pb-c.h
$(TEST_BUILD)/unit/tables $(TEST_BUILD)/unit-san/tables: UNIT_CFLAGS += -I$(PB_DIR)
$(TEST_BUILD)/unit/tables: tests/unit/test_tables.c tests/unit/sym_fixture.c $(TABLES_UNIT) $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h tools/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -DMEMTRACE_VERSION='"$(VERSION)"' $(LDFLAGS) \
	  -o $@ $< tests/unit/sym_fixture.c $(TABLES_UNIT) $(UNIT_CORE) $(UNIT_LIBS)

$(TEST_BUILD)/unit-san/tables: tests/unit/test_tables.c tests/unit/sym_fixture.c $(TABLES_UNIT) $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h tools/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -DMEMTRACE_VERSION='"$(VERSION)"' -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  $(LDFLAGS) -o $@ $< tests/unit/sym_fixture.c $(TABLES_UNIT) $(UNIT_CORE) $(UNIT_LIBS)

$(TEST_BUILD)/unit-san/%: tests/unit/test_%.c tests/unit/sym_fixture.c $(UNIT_CORE) src/base/settings.def $(wildcard src/*/*.h tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(UNIT_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  $(LDFLAGS) -o $@ $< tests/unit/sym_fixture.c $(UNIT_CORE) $(UNIT_LIBS)

# Programs run under the library. Sites are marked "SITE:name" in the source;
# the e2e scripts read the line numbers from there.
PROG_C      := $(TEST_BUILD)/sites $(TEST_BUILD)/sites_o2 $(TEST_BUILD)/stress_fork $(TEST_BUILD)/demo
PROGS       := $(PROG_C) $(TEST_BUILD)/sites_cxx $(TEST_BUILD)/libdl_sites.so \
               $(TEST_BUILD)/profile_sites $(TEST_BUILD)/profile_corners $(TEST_BUILD)/profile_cxx \
               $(TEST_BUILD)/profile_corners_linked \
               $(TEST_BUILD)/profile_ranks $(TEST_BUILD)/profile_temporary \
               $(TEST_BUILD)/tail_calls $(TEST_BUILD)/tail_calls_cxx $(TEST_BUILD)/pprof_sites

$(TEST_BUILD)/sites: tests/progs/sites.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -pthread $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/sites_o2: tests/progs/sites_o2.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -g $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/stress_fork: tests/progs/stress_fork.c include/memtrace.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -g -pthread $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/demo: tests/progs/demo.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -g $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/sites_cxx: tests/progs/sites_cxx.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O0 -g $(LDFLAGS) -o $@ $<
# Allocators below memtrace and their APIs (tests/e2e/allocators.sh).
ALLOC_PROGS := $(TEST_BUILD)/cxx_forms $(TEST_BUILD)/cxx_forms_je $(TEST_BUILD)/je_api \
               $(TEST_BUILD)/alloc_probe $(TEST_BUILD)/next_args $(TEST_BUILD)/libnext_args.so
$(TEST_BUILD)/cxx_forms: tests/progs/cxx_forms.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -std=c++17 -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/cxx_forms_je: tests/progs/cxx_forms.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -std=c++17 -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ljemalloc
$(TEST_BUILD)/je_api: tests/progs/je_api.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ljemalloc
$(TEST_BUILD)/alloc_probe: tests/progs/alloc_probe.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/next_args: tests/progs/next_args.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/libnext_args.so: tests/progs/next_args_lib.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -shared -fPIC $(LDFLAGS) -o $@ $< -ldl
# Tail calls (tests/e2e/tail_calls.sh): -O2 is what makes them.
$(TEST_BUILD)/tail_calls: tests/progs/tail_calls.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -g $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/tail_calls_cxx: tests/progs/tail_calls_cxx.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O2 -g $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/libdl_sites.so: tests/progs/dl_sites.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -shared -fPIC $(LDFLAGS) -o $@ $<

test-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t --jobs 1; done

$(TEST_BUILD)/profile_sites: tests/progs/profile_sites.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -pthread $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/pprof_sites: tests/progs/pprof_sites.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -pthread $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/profile_cxx: tests/progs/profile_cxx.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O0 -g $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/profile_corners: tests/progs/profile_corners.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< -ldl
# The same linked with -lmemtrace (the man page's way), for two copies of
# memtrace in one process under the preloaded profiler.
$(TEST_BUILD)/profile_corners_linked: tests/progs/profile_corners.c $(TRACER_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< -ldl \
	  -L$(BUILD) -Wl,--no-as-needed -lmemtrace -Wl,-rpath,'$$ORIGIN/..'
$(TEST_BUILD)/profile_ranks: tests/progs/profile_ranks.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/profile_temporary: tests/progs/profile_temporary.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
# Reliability (tests/e2e/reliability.sh): whole-API stress, API corners,
# unloaded libraries and bad input, and the tables under ThreadSanitizer.
RELIABILITY_PROGS := $(TEST_BUILD)/stress_api $(TEST_BUILD)/api_corners $(TEST_BUILD)/unload \
                     $(TEST_BUILD)/tsan_tables $(TEST_BUILD)/regressions $(TEST_BUILD)/dl_reuse \
                     $(TEST_BUILD)/dl_cfi $(TEST_BUILD)/gconv_unload \
                     $(TEST_BUILD)/signal_fork $(TEST_BUILD)/rust_threads $(TEST_BUILD)/stats_abi
$(TEST_BUILD)/libatfork_lib.so: tests/progs/atfork_lib.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -shared -fPIC $(LDFLAGS) -o $@ $<
# Linked (not dlopened) so that its constructor runs before memtrace's init.
$(TEST_BUILD)/regressions: tests/progs/regressions.c include/memtrace.h $(TEST_BUILD)/libatfork_lib.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< -ldl -L$(TEST_BUILD) \
	  -Wl,--no-as-needed -latfork_lib -Wl,-rpath,'$$ORIGIN'
$(TEST_BUILD)/stress_api: tests/progs/stress_api.c include/memtrace.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/api_corners: tests/progs/api_corners.c include/memtrace.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/stats_abi: tests/progs/stats_abi.c include/memtrace.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/unload: tests/progs/unload.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/tsan_tables: tests/unit/tsan_tables.c src/store/live_table.c src/store/stack_store.c \
                           src/store/freed_history.c src/base/os.c src/base/output.c src/base/config.c \
                           src/base/lock.c tests/unit/freed_records.h src/base/settings.def $(wildcard src/*/*.h)
	@mkdir -p $(@D)
	@# -Wno-tsan: TSan does not model the fences of the freed ring's seqlock;
	@# its stamps and data words are atomics, which TSan does follow.
	@# MT_DEBUG: the tables' invariant checks run under the threads too.
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -Wno-tsan -O1 -g -fsanitize=thread -pthread -D_GNU_SOURCE -Isrc \
	  -DMT_DEBUG $(LDFLAGS) -o $@ $(filter %.c,$^)

test-reliability: all $(PROGS) $(RELIABILITY_PROGS)
	@bash tests/e2e/reliability.sh

# Suite families: tests/e2e/FAMILY_SUITE.sh, each script a suite of its own,
# found by wildcard and run two at a time; their programs are
# tests/progs/FAMILY_*.c / .cpp, built -O0 -g -pthread (a script that needs
# other flags builds its variants itself, in $work). `make test-FAMILY` runs a
# family, `make test-FAMILY-SUITE` one suite.
#   trust:   privilege, hangs, crashes, lost files, false reports off the road
#   sym:     symbolization of every kind of build and debug file
#   errs:    heap errors and bad frees against AddressSanitizer and glibc
#   answers: numbers and words that agree with the anchors and each other
#   live:    answers while the program runs, and from the program itself
#   house:   the tree's shape: the launcher, shared readers and checks
#   perf:    what the fast paths take as given: cached unwinds, slots beside
#            blocks, sampled blocks told apart, answers unchanged by them
FAMILIES := trust sym errs answers live house perf
define family
$(1)_SUITES := $$(patsubst tests/e2e/$(1)_%.sh,%,$$(wildcard tests/e2e/$(1)_*.sh))
$(1)_PROGS  := $$(patsubst tests/progs/$(1)_%.c,$$(TEST_BUILD)/$(1)_%,$$(wildcard tests/progs/$(1)_*.c)) \
               $$(patsubst tests/progs/$(1)_%.cpp,$$(TEST_BUILD)/$(1)_%,$$(wildcard tests/progs/$(1)_*.cpp))
$$(TEST_BUILD)/$(1)_%: tests/progs/$(1)_%.c include/memtrace.h
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) -O0 -g -Wall -Wextra -pthread -Iinclude $$(LDFLAGS) -o $$@ $$< -ldl
$$(TEST_BUILD)/$(1)_%: tests/progs/$(1)_%.cpp include/memtrace.h
	@mkdir -p $$(@D)
	$$(CXX) $$(CPPFLAGS) -O0 -g -Wall -Wextra -pthread -Iinclude $$(LDFLAGS) -o $$@ $$< -ldl
# Named by this explicit rule, the programs are not intermediate files.
test-$(1): $$($(1)_PROGS) $$($(1)_SUITES:%=test-$(1)-%)
test-$(1)-%: all $$(PROGS) $$($(1)_PROGS) $$(TEST_BUILD)/attach_target
	@bash tests/e2e/$(1)_$$*.sh
# (test-$(1)-% stays off .PHONY: make skips pattern rules for phony targets.)
.PHONY: test-$(1)
endef
$(foreach f,$(FAMILIES),$(eval $(call family,$(f))))
FAMILY_PROGS = $(foreach f,$(FAMILIES),$($(f)_PROGS))

# The gdb helper's tests (tests/e2e/gdb_helper.sh).
$(TEST_BUILD)/gdb_sites: tests/progs/gdb_sites.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -pthread $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/gdb_quiet: tests/progs/gdb_quiet.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g $(LDFLAGS) -o $@ $<

# Without debug information (tests/progs/nopie.c): non-PIE and PIE, each
# with and without its symbol table.
NOPIE_PROGS := $(TEST_BUILD)/nopie $(TEST_BUILD)/nopie_pie $(TEST_BUILD)/nopie.stripped \
               $(TEST_BUILD)/nopie_pie.stripped $(TEST_BUILD)/stripped_main
# A library stripped of its symbol table (tests/progs/stripped_lib.c), and
# the program asking about a block it allocated; libstripped_full.so is the
# same library unstripped, for addr2line.
$(TEST_BUILD)/libstripped_full.so: tests/progs/stripped_lib.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/libstripped.so: $(TEST_BUILD)/libstripped_full.so
	strip -s -o $@ $<
$(TEST_BUILD)/stripped_main: tests/progs/stripped_main.c $(TEST_BUILD)/libstripped.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -L$(TEST_BUILD) -lstripped \
	    -Wl,-rpath,'$$ORIGIN' -ldl
$(TEST_BUILD)/nopie: tests/progs/nopie.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -fno-pie -no-pie $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/nopie_pie: tests/progs/nopie.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -fpie -pie $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/%.stripped: $(TEST_BUILD)/%
	strip -s -o $@ $<

# Values that own heap blocks (a Vec, a std::vector, ...), at -O0 so that
# every local is in its frame.
$(TEST_BUILD)/rust_handles: tests/progs/rust_handles.rs
	@mkdir -p $(@D)
	$(RUSTC) -C opt-level=0 -g -o $@ $<
$(TEST_BUILD)/cxx_handles: tests/progs/cxx_handles.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O0 -g $(LDFLAGS) -o $@ $<
# Bad frees (tests/e2e/bad_frees.sh): the library's constructor runs first
# (-z initfirst), before memtrace's, so that its fork handler runs in
# memtrace's fork window. The warnings are what the program does on purpose.
$(TEST_BUILD)/libbad_frees_lib.so: tests/progs/bad_frees_lib.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -shared -fPIC -Wl,-z,initfirst $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/bad_frees: tests/progs/bad_frees.cpp $(TEST_BUILD)/libbad_frees_lib.so
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O0 -g -Wall -Wextra -Wno-free-nonheap-object -Wno-use-after-free \
	  -Wno-mismatched-new-delete $(LDFLAGS) -o $@ $< -L$(TEST_BUILD) -Wl,--no-as-needed \
	  -lbad_frees_lib -Wl,-rpath,'$$ORIGIN'
BAD_FREE_PROGS := $(TEST_BUILD)/bad_frees

# Heap errors (tests/e2e/heap_errors.sh): the same program under memtrace
# and built with AddressSanitizer, the oracle. The warning is what the
# program does on purpose.
$(TEST_BUILD)/heap_errors: tests/progs/heap_errors.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -Wno-use-after-free -pthread $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/heap_errors_asan: tests/progs/heap_errors.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -Wno-use-after-free -fsanitize=address -pthread \
	  $(LDFLAGS) -o $@ $< -ldl
HEAP_ERROR_PROGS := $(TEST_BUILD)/heap_errors $(TEST_BUILD)/heap_errors_asan

# Guard pages (tests/e2e/guard.sh): the same program as is and built with
# AddressSanitizer, the oracle for the errors and their sites. The warning
# is what the program does on purpose.
$(TEST_BUILD)/guard: tests/progs/guard.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -Wno-use-after-free $(LDFLAGS) -pthread -o $@ $<
$(TEST_BUILD)/guard_asan: tests/progs/guard.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -Wno-use-after-free -fsanitize=address $(LDFLAGS) -pthread -o $@ $<
# `memtrace check` in gdb, live and on cores (tests/e2e/heap_check.sh): the
# warnings are what the program does on purpose.
$(TEST_BUILD)/heap_core: tests/progs/heap_core.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -Wno-stringop-overflow -Wno-use-after-free \
	  $(LDFLAGS) -o $@ $<
GUARD_PROGS := $(TEST_BUILD)/guard $(TEST_BUILD)/guard_asan $(TEST_BUILD)/heap_core

test-guard: all $(GUARD_PROGS)
	@bash tests/e2e/guard.sh
	@bash tests/e2e/heap_check.sh

# Tag scopes (tests/e2e/tags.sh): built without -lmemtrace (the header's
# weak declarations), run as is and under the library.
$(TEST_BUILD)/tags: tests/progs/tags.cpp include/memtrace.h
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O0 -g -Wall -Wextra -Iinclude $(LDFLAGS) -pthread -o $@ $< -ldl
# The same linked with -lmemtrace, under the preloaded profiler: two
# copies, of which the linked one must stand aside although libstdc++'s
# initializer reaches it through the profiler before its constructor runs.
$(TEST_BUILD)/tags_linked: tests/progs/tags.cpp include/memtrace.h $(TRACER_LIB)
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -O0 -g -Wall -Wextra -Iinclude $(LDFLAGS) -pthread -o $@ $< -ldl \
	  -L$(BUILD) -Wl,--no-as-needed -lmemtrace -Wl,-rpath,'$$ORIGIN/..'
TAGS_PROGS := $(TEST_BUILD)/tags $(TEST_BUILD)/tags_linked

test-tags: all $(TAGS_PROGS)
	@bash tests/e2e/tags.sh

# The leak check at exit (tests/e2e/leaks.sh): -O0, so that every local the
# program keeps a block with is in its frame.
$(TEST_BUILD)/leaks: tests/progs/leaks.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/leak_robust: tests/progs/leak_robust.c src/runtime/descriptor.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< -ldl

# The leak check against a damaged table, a damaged core, exits from other
# threads and main's pthread_exit (tests/e2e/leak_robust.sh).
test-leak-robust: all $(TEST_BUILD)/leak_robust
	@bash tests/e2e/leak_robust.sh

# The verdicts valgrind gives (tests/e2e/leaks.sh, tests/e2e/leak_oracle.sh).
$(TEST_BUILD)/leak_verdicts: tests/progs/leak_verdicts.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $<
LEAK_PROGS := $(TEST_BUILD)/leaks $(TEST_BUILD)/leak_robust $(TEST_BUILD)/leak_verdicts

# The differential leak test against valgrind (tests/e2e/leak_oracle.sh):
# the verdict programs and real programs nobody here wrote, among them a
# Rust one built here with Debian's rustc.
$(TEST_BUILD)/leak_oracle_rs: tests/progs/leak_oracle.rs
	@mkdir -p $(@D)
	$(RUSTC) -C opt-level=1 -g -o $@ $<
test-leak-oracle: all $(TEST_BUILD)/leak_verdicts $(TEST_BUILD)/leak_oracle_rs
	@bash tests/e2e/leak_oracle.sh

# The launcher, MEMTRACE_CHILDREN and recording on demand
# (tests/e2e/launcher.sh).
$(TEST_BUILD)/recording: tests/progs/recording.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
$(TEST_BUILD)/recording_race: tests/progs/recording_race.c src/runtime/descriptor.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< -ldl
LAUNCHER_PROGS := $(TEST_BUILD)/recording $(TEST_BUILD)/recording_race $(TEST_BUILD)/leaks

test-launcher: all $(LAUNCHER_PROGS)
	@bash tests/e2e/launcher.sh

# memtrace attach / detach (tests/e2e/attach.sh): a program started
# without memtrace, and the same statically linked (not attachable).
$(TEST_BUILD)/attach_target: tests/progs/attach_target.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/attach_static: tests/progs/attach_target.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -pthread -static $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/attach_linked: tests/progs/attach_target.c $(TRACER_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $< \
	  -L$(BUILD) -Wl,--no-as-needed -lmemtrace -Wl,-rpath,'$$ORIGIN/..'
ATTACH_PROGS := $(TEST_BUILD)/attach_target $(TEST_BUILD)/attach_static $(TEST_BUILD)/attach_linked \
                $(TEST_BUILD)/trust_attach_signals

test-attach: all $(ATTACH_PROGS)
	@bash tests/e2e/attach.sh

GDB_PROGS := $(TEST_BUILD)/gdb_sites $(TEST_BUILD)/gdb_quiet $(TEST_BUILD)/rust_handles \
             $(TEST_BUILD)/cxx_handles

# In two halves of about equal time (2.5 minutes each here), which make
# check runs at once: the first holds the suites that time things (the
# profiler's intervals, the live gdb session, the launcher's signals), the
# second only deterministic ones.
E2E_PREREQS = all $(PROGS) $(GDB_PROGS) $(TEST_BUILD)/unload $(NOPIE_PROGS) $(ALLOC_PROGS) \
              $(BAD_FREE_PROGS) $(LEAK_PROGS) $(LAUNCHER_PROGS) $(HEAP_ERROR_PROGS)
test-e2e: test-e2e-timed test-e2e-exact
test-e2e-timed: $(E2E_PREREQS)
	@bash tests/e2e/run.sh
	@bash tests/e2e/profiler.sh
	@bash tests/e2e/profiler_ranks.sh
	@bash tests/e2e/gdb_helper.sh
	@bash tests/e2e/launcher.sh
test-e2e-exact: $(E2E_PREREQS)
	@bash tests/e2e/tail_calls.sh
	@bash tests/e2e/allocators.sh
	@bash tests/e2e/bad_frees.sh
	@bash tests/e2e/heap_errors.sh
	@bash tests/e2e/leaks.sh
	@bash tests/e2e/leak_robust.sh
	@bash tests/e2e/pprof.sh

# Sampled tracing (tests/e2e/sample.sh): a few seconds.
SAMPLE_PROGS := $(TEST_BUILD)/sample_prog
$(TEST_BUILD)/sample_prog: tests/progs/sample_prog.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
test-sample: all $(SAMPLE_PROGS) $(ALLOC_PROGS)
	@bash tests/e2e/sample.sh

# The recording and its exports (tests/e2e/timeline.sh): a program with
# known phases under both libraries, heaptrack_print as the oracle of the
# heaptrack export, a run killed mid-way, python3 with a million events.
TIMELINE_PROGS := $(TEST_BUILD)/timeline_phases
$(TEST_BUILD)/timeline_phases: tests/progs/timeline_phases.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g $(LDFLAGS) -o $@ $<
test-timeline: all $(TIMELINE_PROGS)
	@bash tests/e2e/timeline.sh

# memtrace view's page in headless Chromium (tests/e2e/view.sh): timelines
# made by tests/e2e/timeline_gen.py, pprof_sites' profiles and folded files,
# and a recording of timeline_phases.
test-view: all $(TEST_BUILD)/pprof_sites $(TIMELINE_PROGS)
	@bash tests/e2e/view.sh

# Static checks of the tree: the include graph and the calls between the
# libraries' objects (nm) point one way, and the descriptor's layout has one
# source, and the settings documents say what src/base/settings.def says
# (tests/static/*.py). The objects are built first. The folders' graph is
# drawn as $(BUILD)/layers.svg (graphviz's dot), for the reader.
test-static: $(TRACER_OBJS) $(PROFILER_OBJS) $(TRACER_LIB) $(PROFILER_LIB)
	@python3 tests/static/layers.py --dot $(BUILD)/layers.dot src $(BUILD)
	@dot -Tsvg -o $(BUILD)/layers.svg $(BUILD)/layers.dot
	@python3 tests/static/descriptor.py
	@python3 tests/static/settings.py
	@python3 tests/static/interposed.py $(BUILD)
	@python3 tests/static/text.py
	@python3 tests/static/functions.py

# The build itself (tests/e2e/build.sh): CC, CPPFLAGS, LDFLAGS, DEBUG and
# install, with make -n and real builds in a scratch directory.
test-build:
	@bash tests/e2e/build.sh

# The stress programs under a debug build of the libraries (tests/e2e/debug.sh).
DEBUG_BUILD := $(BUILD)/debug
test-debug: $(TEST_BUILD)/stress_api $(TEST_BUILD)/stress_fork $(TEST_BUILD)/signal_fork \
            $(TEST_BUILD)/dl_reuse
	@$(MAKE) --no-print-directory DEBUG=1 BUILD=$(DEBUG_BUILD) $(DEBUG_BUILD)/libmemtrace.so \
	  $(DEBUG_BUILD)/libmemtrace-profiler.so
	@bash tests/e2e/debug.sh $(DEBUG_BUILD)

# The symbolization differential test (tests/e2e/symbolize_diff.sh): every
# frame print_trace prints against addr2line, the profiler's and gdb's
# answers against print_trace's, for 26 builds of tests/progs/symdiff_*
# (gcc and clang, DWARF 4 and 5, -O0, -O2, -O3, -flto, PIE or not, C++,
# mixed) that the script makes itself.
test-symbolize: all
	@bash tests/e2e/symbolize_diff.sh

# Every test program and the reliability suite's real programs under
# MEMTRACE_UNWIND=check (tests/e2e/unwind_check.sh): any capture where the
# two unwinders disagree fails. The tracer library only; tsan_tables links
# memtrace's files instead of preloading them.
UNWIND_CHECK_PROGS := $(filter-out $(TEST_BUILD)/tsan_tables,$(PROGS) $(RELIABILITY_PROGS)) \
                      $(TEST_BUILD)/gdb_sites $(TEST_BUILD)/gdb_quiet $(TEST_BUILD)/unwind_memo
test-unwind-check: $(TRACER_LIB) $(UNWIND_CHECK_PROGS)
	@bash tests/e2e/unwind_check.sh
# -O0: frame pointers everywhere, so rbp-based CFA rules.
$(TEST_BUILD)/unwind_memo: tests/progs/unwind_memo.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -pthread $(LDFLAGS) -o $@ $<

# Everything the suites below run, built first with one job per core. The
# suites that time things (intervals, signals, attach, stress) run alone;
# the ones whose every check is deterministic run two at a time, paired so
# that make check stays under 15 minutes. Each step says how long it took.
# Recursive (=): the lists are complete once the whole makefile is read.
CHECK_PREREQS = all $(UNIT_BINS) $(PROGS) $(GDB_PROGS) $(TEST_BUILD)/unload $(NOPIE_PROGS) \
                $(ALLOC_PROGS) $(BAD_FREE_PROGS) $(HEAP_ERROR_PROGS) $(GUARD_PROGS) $(TAGS_PROGS) $(LEAK_PROGS) $(LAUNCHER_PROGS) $(ATTACH_PROGS) \
                $(TEST_BUILD)/leak_oracle_rs $(RUST_SITES) $(TEST_BUILD)/prctl_name \
                $(RELIABILITY_PROGS) $(UNWIND_CHECK_PROGS) $(TEST_BUILD)/stress_api \
                $(TEST_BUILD)/signal_fork $(TEST_BUILD)/dl_reuse $(TIMELINE_PROGS) $(SAMPLE_PROGS) \
                $(FAMILY_PROGS)
JOBS := $(shell nproc 2>/dev/null || echo 1)

# $(call timed,MAKE-ARGS): a sub-make of check, then "time: MAKE-ARGS: N s".
timed = @t=$$(date +%s); $(MAKE) --no-print-directory $(1) && \
  echo "time: $(strip $(1)): $$(( $$(date +%s) - t )) s"

# Runs in a sub-make so that deps are installed before anything is built.
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(CHECK_PREREQS)
	@$(MAKE) --no-print-directory -j$(JOBS) DEBUG=1 BUILD=$(DEBUG_BUILD) $(DEBUG_BUILD)/libmemtrace.so \
	  $(DEBUG_BUILD)/libmemtrace-profiler.so
	@$(MAKE) --no-print-directory test-static
	$(call timed,-j$(JOBS) lint)
	@$(MAKE) --no-print-directory all
	$(call timed,-j2 test-build test-unit)
	$(call timed,-j2 test-e2e-timed test-e2e-exact)
	$(call timed,-j2 test-view test-leak-oracle)
	$(call timed,test-timeline)
	$(call timed,test-attach)
	$(call timed,-j2 test-sample test-guard)
	$(call timed,-j2 test-tags test-rust test-temporaries)
	$(call timed,test-reliability)
	$(call timed,-j2 test-trust)
	$(call timed,-j2 test-sym test-errs)
	$(call timed,-j2 test-answers test-live)
	$(call timed,-j2 test-unwind-check test-house)
	$(call timed,-j2 test-perf)
	$(call timed,-j2 test-symbolize test-debug)

# make lint: cppcheck and clang-tidy (.clang-tidy: the analyzer and the
# bug-prone patterns) on src/ and tools/, with zero findings: a real one is
# fixed, a false one suppressed in line with its reason. Each file is
# analysed as its build compiles it (the profiler's files with
# MEMTRACE_PROFILER); a stamp per file, so only what changed is analysed
# again.
LINT_SRCS  := $(wildcard src/*/*.c tools/*.c tools/*/*.c)
LINT_FLAGS := -std=gnu11 -D_GNU_SOURCE -DMEMTRACE_VERSION='"$(VERSION)"' -Isrc -Iinclude -Itools -I$(PB_DIR) \
              $(shell pkg-config --cflags libdw libunwind 2>/dev/null)
$(BUILD)/lint/%.tidy: % .clang-tidy $(PB_DIR)/profile.pb-c.h $(wildcard src/*/*.h tools/*.h tools/*/*.h)
	@mkdir -p $(@D)
	@clang-tidy -quiet $< -- $(LINT_FLAGS) $(if $(filter $<,$(PROFILER_ONLY)),-DMEMTRACE_PROFILER) \
	  2>/dev/null && touch $@
lint: $(LINT_SRCS:%=$(BUILD)/lint/%.tidy)
	@cppcheck -q --std=c11 -D__GNUC__ -D_GNU_SOURCE -Isrc --inline-suppr \
	  --enable=warning,performance,portability --error-exitcode=1 src tools
	@echo "lint: $(words $(LINT_SRCS)) files, no findings"
.PHONY: lint

# make format: lay the C and C++ sources out as .clang-format says
# (clang-format 14); make format-check, part of make lint, fails on a file
# that differs. tests/static/format.py names the files left out, and why.
format:
	@python3 tests/static/format.py --write
format-check:
	@python3 tests/static/format.py
lint: format-check
.PHONY: format format-check

# The second compiler: clang builds the libraries, the tools and the unit
# tests in a build directory of its own, and the unit tests pass. Not in
# `make check` (it doubles the build); .ci/run runs it, with WERROR=1.
check-clang: deps
	@$(MAKE) --no-print-directory -j$(JOBS) CC=clang CXX=clang++ BUILD=$(BUILD)/clang all
	$(call timed,-j$(JOBS) CC=clang CXX=clang++ BUILD=$(BUILD)/clang test-unit)
.PHONY: check-clang

# Installation and the Debian package (tests/e2e/package.sh): make install
# and uninstall, the man pages, pkg-config, completion, make deb, lintian,
# and as root the package installed with apt-get and removed. Not in
# `make check` (it installs a package on the machine): .ci/run runs it.
test-package: all
	@bash tests/e2e/package.sh

.PHONY: test-temporaries test-e2e-timed test-e2e-exact test-sample test-view test-timeline test-guard test-tags test-leak-oracle test-attach test-launcher test-leak-robust test-static test-build test-debug test-package test-unit test-e2e test-rust test-reliability test-unwind-check test-symbolize check

# Unloaded and replaced libraries (tests/progs/dl_reuse.c): liba has no
# debug information, libb has.
$(TEST_BUILD)/libdl_a.so: tests/progs/dl_a.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/libdl_b.so: tests/progs/dl_b.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/dl_reuse: tests/progs/dl_reuse.c $(TEST_BUILD)/libdl_a.so $(TEST_BUILD)/libdl_b.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
# The cfi unwinder after dlclose (tests/progs/dl_cfi.c): two libraries
# whose call to malloc returns to the same offset under different rules.
$(TEST_BUILD)/libcfi_a.so: tests/progs/cfi_frame.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -DFRAME=32 -DZERO_AT=0x8 -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/libcfi_b.so: tests/progs/cfi_frame.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -DFRAME=96 -DZERO_AT=0x28 -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/dl_cfi: tests/progs/dl_cfi.c $(TEST_BUILD)/libcfi_a.so $(TEST_BUILD)/libcfi_b.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra $(LDFLAGS) -o $@ $< -ldl
# Libraries glibc unloads itself (tests/progs/gconv_unload.c): two gconv
# modules and their gconv-modules file, in a directory for GCONV_PATH.
$(TEST_BUILD)/gconv/MYA.so: tests/progs/gconv_mod.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -DBIG -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/gconv/MYB.so: tests/progs/gconv_mod.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -shared -fPIC $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/gconv/gconv-modules:
	@mkdir -p $(@D)
	printf 'module MYA// INTERNAL MYA 1\nmodule MYB// INTERNAL MYB 1\n' >$@
$(TEST_BUILD)/gconv_unload: tests/progs/gconv_unload.c $(TEST_BUILD)/gconv/MYA.so \
                            $(TEST_BUILD)/gconv/MYB.so $(TEST_BUILD)/gconv/gconv-modules
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
$(TEST_BUILD)/signal_fork: tests/progs/signal_fork.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -g -Wall -Wextra $(LDFLAGS) -o $@ $<
# Debian's rustc, not one from rustup that may come first on PATH.
RUSTC ?= /usr/bin/rustc
$(TEST_BUILD)/rust_threads: tests/progs/rust_threads.rs
	@mkdir -p $(@D)
	$(RUSTC) -O -g -o $@ $<

# Rust frames and thread names (tests/e2e/rust.sh): one program at
# opt-level 0 and 1, with legacy (rustc's default) and v0 mangling, and a C
# thread named with prctl.
RUST_SITES := $(foreach o,0 1,$(foreach m,legacy v0,$(TEST_BUILD)/rust_sites_o$(o)_$(m)))
$(TEST_BUILD)/rust_sites_o%_legacy: tests/progs/rust_sites.rs
	@mkdir -p $(@D)
	$(RUSTC) -C opt-level=$* -g -o $@ $<
$(TEST_BUILD)/rust_sites_o%_v0: tests/progs/rust_sites.rs
	@mkdir -p $(@D)
	$(RUSTC) -C opt-level=$* -C symbol-mangling-version=v0 -g -o $@ $<
$(TEST_BUILD)/prctl_name: tests/progs/prctl_name.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -g -Wall -Wextra -pthread $(LDFLAGS) -o $@ $<

test-rust: all $(RUST_SITES) $(TEST_BUILD)/prctl_name
	@bash tests/e2e/rust.sh

# Temporary allocations against heaptrack's own runs (the script builds
# its programs, tests/progs/temporaries_*.c).
test-temporaries: all
	@bash tests/e2e/temporaries.sh
