# The gdb helper (gdb/memtrace.py), its symbolizer program and the memtrace
# launcher. Included by the top Makefile after tests/tests.mk.
#   build/memtrace-symbolize   src/symbolize.c as a program, for the helper
#   build/memtrace.py          the helper, next to it (it finds it there)
#   build/memtrace             the launcher (memtrace gdb|core|run)

GDB_TOOLS := $(BUILD)/memtrace-symbolize $(BUILD)/memtrace.py $(BUILD)/memtrace
LIBEXECDIR := $(PREFIX)/libexec/memtrace
AUTOLOAD_DIR := $(PREFIX)/share/gdb/auto-load$(PREFIX)/lib

all: $(GDB_TOOLS)

# The pprof writer too (`memtrace pprof`), with protobuf-c's generated
# code, compiled apart (not under memtrace's warning set).
$(BUILD)/memtrace-symbolize: gdb/memtrace-symbolize.c src/symbolize.c src/format.c src/output.c src/lock.c \
                             src/pprof.c $(BUILD)/symbolize-pb/profile.pb-c.o \
                             $(wildcard src/*.h) $(PB_DIR)/profile.pb-c.h $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -std=gnu11 $(WARN) -D_GNU_SOURCE $(DEBUG_FLAGS) -I$(PB_DIR) \
	  $(shell pkg-config --cflags libdw 2>/dev/null) $(LDFLAGS) \
	  -o $@ $(filter %.c %.o,$^) $(shell pkg-config --libs libdw 2>/dev/null || echo -ldw -lelf) \
	  $(DEMANGLE_LIBS) $(PPROF_LIBS) -ldl

$(BUILD)/symbolize-pb/profile.pb-c.o: $(PB_DIR)/profile.pb-c.c $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -I$(PB_DIR) -c $< -o $@

$(BUILD)/memtrace.py: gdb/memtrace.py
	@mkdir -p $(@D)
	cp $< $@

$(BUILD)/memtrace: gdb/memtrace.sh
	@mkdir -p $(@D)
	cp $< $@
	chmod 755 $@

# gdb auto-loads LIB-gdb.py from LIB's own directory and from its auto-load
# directory ($datadir/auto-load + LIB's path; right for PREFIX=/usr); one
# copy for each library this build installs (MT_LIBS, the top Makefile).
install: install-gdb
install-gdb: $(GDB_TOOLS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PREFIX)/share/memtrace \
	  $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(AUTOLOAD_DIR)
	install -m 755 $(BUILD)/memtrace $(DESTDIR)$(PREFIX)/bin/memtrace
	install -m 755 $(BUILD)/memtrace-symbolize $(DESTDIR)$(LIBEXECDIR)/
	sed 's|@MEMTRACE_LIBEXECDIR@|$(LIBEXECDIR)|' gdb/memtrace.py > $(BUILD)/memtrace-installed.py
	for d in $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(AUTOLOAD_DIR); do \
	  for l in $(notdir $(MT_LIBS)); do \
	    install -m 644 $(BUILD)/memtrace-installed.py $$d/$$l-gdb.py; \
	  done; \
	done
	install -m 644 $(BUILD)/memtrace-installed.py $(DESTDIR)$(PREFIX)/share/memtrace/memtrace.py

.PHONY: install-gdb
