# SPDX-License-Identifier: LGPL-2.1-or-later
# The memtrace launcher (cli/): the product's command line. Included by the
# top Makefile after gdb/gdb.mk.
#   build/memtrace             the launcher (memtrace run|gdb|core|attach|...)
#   build/memtrace_attach.py   memtrace attach's program in gdb, beside the
#                              launcher (it finds it there; installed in
#                              DATADIR/memtrace)

CLI_FILES := $(BUILD)/memtrace $(BUILD)/memtrace_attach.py

all: $(CLI_FILES)

# The launcher, with the one VERSION (the top Makefile) put in. Rebuilt
# when VERSION changes: $(BUILD)/flavour holds LIB_CFLAGS, which holds it.
$(BUILD)/memtrace: cli/memtrace.sh $(BUILD)/flavour
	@mkdir -p $(@D)
	sed 's|@VERSION@|$(VERSION)|' $< >$@
	chmod 755 $@

$(BUILD)/memtrace_attach.py: cli/memtrace_attach.py
	@mkdir -p $(@D)
	cp $< $@
