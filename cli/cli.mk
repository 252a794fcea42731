# SPDX-License-Identifier: LGPL-2.1-or-later
# The memtrace launcher (cli/): the product's command line. Included by the
# top Makefile after gdb/gdb.mk.
#   build/memtrace             the launcher (memtrace run|gdb|core|attach|...)

all: $(BUILD)/memtrace

# The launcher, with the one VERSION (the top Makefile) put in. Rebuilt
# when VERSION changes: $(BUILD)/flavour holds LIB_CFLAGS, which holds it.
$(BUILD)/memtrace: cli/memtrace.sh $(BUILD)/flavour
	@mkdir -p $(@D)
	sed 's|@VERSION@|$(VERSION)|' $< >$@
	chmod 755 $@
