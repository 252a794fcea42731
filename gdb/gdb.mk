# SPDX-License-Identifier: LGPL-2.1-or-later
# The gdb helper (the stub gdb/memtrace.py and its package gdb/memtrace_gdb)
# and its symbolizer program (the launcher is cli/cli.mk's). Included by
# the top Makefile after tests/tests.mk.
#   build/memtrace-symbolize   src/symbolize/ as a program, for the helper
#   build/memtrace.py          the helper's stub, next to it (it finds it there)
#   build/memtrace_gdb/        the helper's package, next to the stub (it loads it there)
#   build/view/                memtrace view's program and its page's script and style

GDB_PACKAGE := $(patsubst gdb/%,$(BUILD)/%,$(wildcard gdb/memtrace_gdb/*.py))
GDB_TOOLS := $(BUILD)/memtrace-symbolize $(BUILD)/memtrace.py

VIEW_FILES := $(patsubst tools/view/%,$(BUILD)/view/%,$(wildcard tools/view/*.py tools/view/*.js tools/view/*.css))

all: $(GDB_TOOLS) $(VIEW_FILES)

# memtrace-symbolize is tools/ and, from src/, what the library answers
# with, so that an answer on a core or from gdb is the library's own: the
# symbolizer and the leak scan whole (src/symbolize, src/scan), the
# formatter and the pprof writer (with protobuf-c's generated code, compiled
# apart, not under memtrace's warning set), the leak report and
# suppressions, and from base the output, the lock, the maps parser and
# the settings. Nothing of the hot path, the stores or the runtime: the
# tables are read out of process by tools/tables.c.
HELPER_SRCS := $(wildcard tools/*.c src/symbolize/*.c src/scan/*.c) \
               $(addprefix src/report/,format.c pprof.c pprof_gzip.c pprof_index.c) \
               $(addprefix src/leak/,leak_report.c suppressions.c) \
               $(addprefix src/base/,output.c lock.c os.c config.c) src/store/sample_weight.c src/store/internal_heap.c \
               src/tags/tags_format.c
$(BUILD)/memtrace-symbolize: $(HELPER_SRCS) $(BUILD)/symbolize-pb/profile.pb-c.o \
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

# memtrace view (tools/view/): copied beside the launcher, which finds it there.
$(BUILD)/view/%: tools/view/%
	@mkdir -p $(@D)
	cp $< $@
# memtrace-export (`memtrace export`): a recording (MEMTRACE_RECORD) as
# heaptrack's file or the timeline JSON; tools/export/ and the recording's
# format (src/timeline/record_format.h), with zstd and zlib; and the
# symbolizer (src/symbolize, with what it needs of base) for the frames of a
# recording cut short, which holds no symbols.
EXPORT_SRCS := $(wildcard tools/export/*.c src/symbolize/*.c) \
               $(addprefix src/base/,output.c lock.c os.c config.c) src/store/internal_heap.c
all: $(BUILD)/memtrace-export
$(BUILD)/memtrace-export: $(EXPORT_SRCS) $(wildcard tools/export/*.h src/*/*.h) src/timeline/record_format.h $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -std=gnu11 $(WARN) -D_GNU_SOURCE $(DEBUG_FLAGS) -Isrc \
	  $(shell pkg-config --cflags libdw 2>/dev/null) $(LDFLAGS) \
	  -o $@ $(EXPORT_SRCS) -lzstd -lz $(shell pkg-config --libs libdw libelf 2>/dev/null || echo -ldw -lelf) \
	  $(DEMANGLE_LIBS) -ldl
