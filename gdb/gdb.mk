# The gdb helper (the stub gdb/memtrace.py and its package gdb/memtrace_gdb),
# its symbolizer program and the memtrace launcher. Included by the top
# Makefile after tests/tests.mk.
#   build/memtrace-symbolize   src/symbolize/ as a program, for the helper
#   build/memtrace.py          the helper's stub, next to it (it finds it there)
#   build/memtrace_gdb/        the helper's package, next to the stub (it loads it there)
#   build/memtrace             the launcher (memtrace gdb|core|run)

GDB_PACKAGE := $(patsubst gdb/%,$(BUILD)/%,$(wildcard gdb/memtrace_gdb/*.py))
GDB_TOOLS := $(BUILD)/memtrace-symbolize $(BUILD)/memtrace.py $(BUILD)/memtrace

all: $(GDB_TOOLS)

# The leak scan, the roots' gatherer, the report and suppressions are
# linked in for `memtrace leaks` and `memtrace refs` (tools/target_leaks.c):
# the same code as the check at exit; os.c for its maps parser.
# The pprof writer too (`memtrace pprof`), with protobuf-c's generated
# code, compiled apart (not under memtrace's warning set).
$(BUILD)/memtrace-symbolize: tools/memtrace-symbolize.c tools/target_leaks.c tools/tables.c tools/tables_layout.c \
                             tools/table_answers.c tools/target_mem.c tools/target_refs.c $(wildcard src/symbolize/*.c) \
                             src/report/format.c src/base/output.c src/base/lock.c src/scan/leak_scan.c \
                             src/scan/leak_roots.c src/scan/leak_gather.c src/leak/leak_report.c \
                             src/leak/suppressions.c src/base/os.c src/base/config.c \
                             src/report/pprof.c src/report/pprof_gzip.c src/report/pprof_index.c \
                             $(BUILD)/symbolize-pb/profile.pb-c.o \
                             $(wildcard src/*/*.h tools/*.h) $(PB_DIR)/profile.pb-c.h $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -std=gnu11 $(WARN) -D_GNU_SOURCE $(DEBUG_FLAGS) -Isrc -I$(PB_DIR) \
	  $(shell pkg-config --cflags libdw 2>/dev/null) $(LDFLAGS) \
	  -o $@ $(filter %.c %.o,$^) $(shell pkg-config --libs libdw libelf 2>/dev/null || echo -ldw -lelf) \
	  $(DEMANGLE_LIBS) $(PPROF_LIBS) -ldl

$(BUILD)/symbolize-pb/profile.pb-c.o: $(PB_DIR)/profile.pb-c.c $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -I$(PB_DIR) -c $< -o $@

# The stub comes with its package: whatever needs the helper names the stub.
$(BUILD)/memtrace.py: gdb/memtrace.py $(GDB_PACKAGE)
	@mkdir -p $(@D)
	cp $< $@

$(BUILD)/memtrace_gdb/%.py: gdb/memtrace_gdb/%.py
	@mkdir -p $(@D)
	cp $< $@

# The launcher, with the one VERSION (the top Makefile) put in. Rebuilt
# when VERSION changes: $(BUILD)/flavour holds LIB_CFLAGS, which holds it.
$(BUILD)/memtrace: gdb/memtrace.sh $(BUILD)/flavour
	@mkdir -p $(@D)
	sed 's|@VERSION@|$(VERSION)|' $< >$@
	chmod 755 $@
