# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace-top (`memtrace top`, tools/top/): a live view of a traced
# process, with the one reader of the tables out of process (tools/tables*.c)
# and the symbolizer, as memtrace-symbolize has them, and ncurses. Included
# by the top Makefile after gdb/gdb.mk.
TOP_SRCS := $(wildcard tools/top/*.c) $(filter-out tools/memtrace-symbolize.c,$(HELPER_SRCS))
all: $(BUILD)/memtrace-top
$(BUILD)/memtrace-top: $(TOP_SRCS) $(BUILD)/symbolize-pb/profile.pb-c.o \
                       $(wildcard src/*/*.h tools/*.h tools/top/*.h) $(PB_DIR)/profile.pb-c.h $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -std=gnu11 $(WARN) -D_GNU_SOURCE $(DEBUG_FLAGS) -Isrc -Itools -I$(PB_DIR) \
	  $(shell pkg-config --cflags libdw ncursesw 2>/dev/null) $(LDFLAGS) \
	  -o $@ $(filter %.c %.o,$^) $(shell pkg-config --libs libdw libelf 2>/dev/null || echo -ldw -lelf) \
	  $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw) \
	  $(DEMANGLE_LIBS) $(PPROF_LIBS) -ldl -lm
