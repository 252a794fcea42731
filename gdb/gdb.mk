# The gdb helper (gdb/memtrace.py), its symbolizer program and the memtrace
# launcher. Included by the top Makefile after tests/tests.mk.
#   build/memtrace-symbolize   src/symbolize.c as a program, for the helper
#   build/memtrace.py          the helper, next to it (it finds it there)
#   build/memtrace             the launcher (memtrace gdb|core|run)

GDB_TOOLS := $(BUILD)/memtrace-symbolize $(BUILD)/memtrace.py $(BUILD)/memtrace

all: $(GDB_TOOLS)

$(BUILD)/memtrace-symbolize: gdb/memtrace-symbolize.c src/symbolize.c src/format.c src/output.c src/lock.c \
                             $(wildcard src/*.h) $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -std=gnu11 $(WARN) -D_GNU_SOURCE $(DEBUG_FLAGS) \
	  $(shell pkg-config --cflags libdw 2>/dev/null) $(LDFLAGS) \
	  -o $@ $(filter %.c,$^) $(shell pkg-config --libs libdw 2>/dev/null || echo -ldw -lelf) \
	  $(DEMANGLE_LIBS) -ldl

$(BUILD)/memtrace.py: gdb/memtrace.py
	@mkdir -p $(@D)
	cp $< $@

$(BUILD)/memtrace: gdb/memtrace.sh
	@mkdir -p $(@D)
	cp $< $@
	chmod 755 $@
