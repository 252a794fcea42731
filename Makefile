# SPDX-License-Identifier: LGPL-2.1-or-later
# memtrace: one plain GNU Makefile.
#   make                 both libraries (tracer and profiler), the launcher and
#                        memtrace-symbolize in build/ (the default goal: all)
#   make PROFILER=1      the profiler library only
#   make DEBUG=1         with MT_ASSERT checks on (-DMT_DEBUG); CFLAGS as usual
#   make deps            install missing Debian packages (root) or say which
#   make demo            deps + build + a trace shown in gdb
#   make check           deps + build + every test
#   make man             the man pages, build/man/memtrace.1 and memtrace.3
#   make install         PREFIX=/usr/local DESTDIR= (and BINDIR, LIBDIR, ... below)
#   make uninstall       the same variables: removes what install installed
#   make deb             build/memtrace_VERSION_ARCH.deb, with debhelper (debian/)
#   make format          lay the C sources out as .clang-format says

# Plain `make` builds `all`, whatever rule comes first below (the generated
# protobuf source did, and plain make then ran only protoc-c).
.DEFAULT_GOAL := all

# The one version of memtrace: the launcher's --version, the libraries
# (memtrace_state), memtrace.pc and the Debian package all take it from here.
VERSION := 0.1.0

# Where `make install` puts things; each can be given on its own, as
# packagers do (the GNU names, in capitals). DESTDIR is prepended to every
# one at install time only: the paths written into the installed files
# (memtrace.pc, the launcher, the gdb helper) are these, without it.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LIBEXECDIR ?= $(PREFIX)/libexec
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
PKGCONFIGDIR   ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR    ?= $(DATADIR)/bash-completion/completions
# gdb reads LIB-gdb.py from its auto-load directory plus LIB's full path;
# Debian's gdb has /usr/share/gdb/auto-load, which this is for PREFIX=/usr.
GDB_AUTOLOAD_DIR ?= $(DATADIR)/gdb/auto-load
# make's built-in CC (cc) would win over ?=: gcc and g++ unless the command
# line or the environment names a compiler. CPPFLAGS reaches every C and C++
# compile, LDFLAGS every link.
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif
BUILD   := build

WARN    := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow
# make WERROR=1 (as CI builds): a warning of memtrace's own code fails the build.
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CFLAGS  ?= -O2 -g
# make DEBUG=1: the invariants the comments state become MT_ASSERT checks
# (src/base/common.h) in the libraries and memtrace-symbolize.
DEBUG_FLAGS := $(if $(filter 1,$(DEBUG)),-DMT_DEBUG)
# Frame pointers in the library itself, so that MEMTRACE_UNWIND=fp can walk
# from its frames into the program's. -fexceptions: a real operator new may
# throw std::bad_alloc through memtrace's frames, whose cleanups
# (MT_PASSTHROUGH_SCOPE, src/capture/state.h) must then run.
LIB_CFLAGS := -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
              -fno-omit-frame-pointer -fexceptions $(DEBUG_FLAGS) -DMEMTRACE_VERSION='"$(VERSION)"' \
              -pthread -D_GNU_SOURCE -Isrc $(shell pkg-config --cflags libdw libunwind 2>/dev/null) \
              -ffunction-sections -fdata-sections
# libiberty (binutils' demangler) is a static archive: --exclude-libs keeps
# its symbols out of the preloaded library's exports, where they would
# interpose a program's own copy.
DEMANGLE_LIBS := -liberty
# The pprof writer's encoder and compressor (src/report/pprof.c): protobuf-c as a
# static archive kept out of the exports in the same way; zlib shared, as
# Debian's policy wants (lintian: embedded-library) and as libdw already
# loads it into every traced process.
PPROF_LIBS := -l:libprotobuf-c.a -lz
# The recording's compressor (src/timeline/emit.c): Debian's shared libzstd.
RECORD_LIBS := -lzstd
LIB_LIBS   := $(PPROF_LIBS) $(RECORD_LIBS) $(shell pkg-config --libs libdw libunwind 2>/dev/null || echo -ldw -lelf -lunwind) \
              $(DEMANGLE_LIBS) -Wl,--exclude-libs,libiberty.a:libprotobuf-c.a -ldl -pthread

# The two builds differ in which files they take, not in #ifdefs: the
# profiler's reporting (src/profile/ but profiler_off.c, and its rows in the
# formatter) and site totals, or the tracer's stand-in. site.h's inline
# counters are the one place compiled differently (MEMTRACE_PROFILER).
PROFILER_ONLY := src/profile/profiler.c src/profile/prof_state.c src/profile/reporter_thread.c \
                 src/profile/sites.c src/profile/site_text.c src/profile/running_report.c \
                 src/profile/exit_report.c \
                 src/profile/site_files.c src/profile/output_file.c \
                 src/report/format_profile.c src/store/site.c
TRACER_ONLY   := src/profile/profiler_off.c
# Out of the traced process only: linked into the tools (gdb/gdb.mk), never
# into the libraries.
TOOLS_ONLY    := src/symbolize/sym_offline.c
COMMON_SRCS   := $(filter-out $(PROFILER_ONLY) $(TRACER_ONLY) $(TOOLS_ONLY),$(wildcard src/*/*.c))
TRACER_OBJS   := $(patsubst src/%.c,$(BUILD)/tracer/%.o,$(COMMON_SRCS) $(TRACER_ONLY)) \
                 $(BUILD)/tracer/profile.pb-c.o
PROFILER_OBJS := $(patsubst src/%.c,$(BUILD)/profiler/%.o,$(COMMON_SRCS) $(PROFILER_ONLY)) \
                 $(BUILD)/profiler/profile.pb-c.o

# pprof's profile.proto (Debian's golang-github-google-pprof-dev) as C, made
# by protoc-c at build time into build/proto, never kept in the tree.
PPROF_PROTO := /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
PB_DIR := $(BUILD)/proto
$(PB_DIR)/profile.pb-c.c: $(PPROF_PROTO)
	@mkdir -p $(@D)
	cp $< $(@D)/profile.proto
	cd $(@D) && protoc-c --c_out=. profile.proto
$(PB_DIR)/profile.pb-c.h: $(PB_DIR)/profile.pb-c.c

TRACER_LIB   := $(BUILD)/libmemtrace.so
PROFILER_LIB := $(BUILD)/libmemtrace-profiler.so

# The libraries this build makes, and so the ones `make install` installs.
ifeq ($(PROFILER),1)
MT_LIBS := $(PROFILER_LIB)
else
MT_LIBS := $(TRACER_LIB) $(PROFILER_LIB)
endif
all: $(MT_LIBS)

# build/ holds one flavour at a time. $(BUILD)/flavour records the compiler
# and flags that what is built from src/ was built with; when they change
# (make DEBUG=1 after make, another CFLAGS) it is rewritten, and everything
# older than it is rebuilt instead of being linked into the other flavour.
FLAVOUR := $(strip $(CC) $(CFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) $(LDFLAGS))
ifneq ($(file <$(BUILD)/flavour),$(FLAVOUR))
$(BUILD)/flavour: FORCE
endif
$(BUILD)/flavour:
	@mkdir -p $(@D)
	@printf '%s\n' '$(subst ','\'',$(FLAVOUR))' >$@
FORCE:

# Each object depends on the headers it includes, as the compiler lists
# them (-MMD, in OBJ.d beside it; -MP: a header that is gone is no error).
$(BUILD)/tracer/%.o: src/%.c $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/profiler/%.o: src/%.c $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) -MMD -MP -DMEMTRACE_PROFILER -c $< -o $@
-include $(TRACER_OBJS:.o=.d) $(PROFILER_OBJS:.o=.d)

# Generated code: protoc-c's, compiled without memtrace's warning set.
$(BUILD)/tracer/report/pprof.o $(BUILD)/profiler/report/pprof.o: $(PB_DIR)/profile.pb-c.h
$(BUILD)/tracer/report/pprof.o $(BUILD)/profiler/report/pprof.o: LIB_CFLAGS += -I$(PB_DIR)
$(BUILD)/tracer/profile.pb-c.o $(BUILD)/profiler/profile.pb-c.o: $(PB_DIR)/profile.pb-c.c $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(DEBUG_FLAGS) -fPIC -fvisibility=hidden -I$(PB_DIR) -c $< -o $@

# The SONAME is the file's name, without a version: a program linked with
# -lmemtrace (memtrace.pc) needs the library by the name it is preloaded by,
# and the API only grows (include/memtrace.h).
# libdw, libelf, zlib and libzstd are not linked in: the libraries load
# them on first need (src/base/lazy_libs.h), and a function of theirs
# missing from src/base/lazy_libs.def fails this link. libunwind is.
LIB_LINK_LIBS := -l:libprotobuf-c.a $(shell pkg-config --libs libunwind 2>/dev/null || echo -lunwind) \
                 $(DEMANGLE_LIBS) -Wl,--exclude-libs,libiberty.a:libprotobuf-c.a -ldl -pthread
# -ffunction-sections (LIB_CFLAGS) and STEADY_LD: the code a run executes
# after start-up sits together, on few pages (src/capture/steady_text.ld).
STEADY_LD := src/capture/steady_text.ld
$(TRACER_LIB): $(TRACER_OBJS) $(STEADY_LD)
	$(CC) $(LDFLAGS) -shared -Wl,--no-undefined -Wl,-z,now -Wl,-soname,$(notdir $@) -o $@ $(filter %.o,$^) -Wl,-T,$(STEADY_LD) $(LIB_LINK_LIBS)

$(PROFILER_LIB): $(PROFILER_OBJS) $(STEADY_LD)
	$(CC) $(LDFLAGS) -shared -Wl,--no-undefined -Wl,-z,now -Wl,-soname,$(notdir $@) -o $@ $(filter %.o,$^) -Wl,-T,$(STEADY_LD) $(LIB_LINK_LIBS)

# ---------------------------------------------------------------- packages
# The last six are programs the reliability tests run under memtrace; the
# allocators are the ones the e2e tests put below it (tests/e2e/allocators.sh);
# liblsan0 is the leak check's oracle (tests/e2e/leaks.sh), valgrind the
# other (tests/e2e/leak_oracle.sh), with the real programs it runs (bc,
# xz-utils, bzip2, git, ninja-build; perl, sed, mawk, tar, gzip and the
# rest are in every Debian system). The last line:
# the man pages (asciidoctor), `make deb` (debhelper and debian/control's
# Build-Depends) and its tests (man-db's man, lintian, bash-completion;
# tests/e2e/package.sh); the pprof writer's libraries and proto, and go
# tool pprof, its tests' oracle; graphviz's dot draws the layers (make
# test-static); clang, with llvm's llvm-symbolizer (the columns' oracle),
# builds the symbolization differential test's programs
# (tests/e2e/symbolize_diff.sh); ncurses, memtrace top's screen, and tmux,
# its tests' terminal (tests/e2e/live_top_screen.sh); cppcheck and
# clang-tidy are make lint's, clang-format its layout check (make
# format-check); debuginfod, the server the out-of-process tools fetch
# debug information from through libdebuginfod1 (tests/e2e/sym_debuginfod.sh);
# strace, the witness that MEMTRACE_SYMBOLIZE=later opens no file to
# symbolize (tests/e2e/perf_later.sh).
DEPS_PKGS := gcc g++ make pkg-config libdw-dev libunwind-dev libcriterion-dev gdb libiberty-dev \
             libjemalloc-dev libtcmalloc-minimal4 liblsan0 valgrind bc xz-utils bzip2 git ninja-build \
             python3 sqlite3 jq libxml2-utils rustc nodejs \
             asciidoctor debhelper man-db lintian bash-completion \
             libprotobuf-c-dev protobuf-c-compiler zlib1g-dev golang-github-google-pprof-dev golang-go \
             heaptrack graphviz chromium libzstd-dev clang llvm libncurses-dev tmux \
             cppcheck clang-tidy clang-format libc6-dbg dwz debuginfod libdebuginfod1 strace

# $(call install_missing,PACKAGES): install the Debian packages not yet
# installed when root (first finishing an install that dpkg left half done,
# as an interrupted run of the package test can); otherwise print the
# apt-get line and fail.
define install_missing
@missing=$$(for p in $(1); do \
    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
  done | tr '\n' ' '); \
if [ -z "$$missing" ]; then exit 0; fi; \
if [ "$$(id -u)" = 0 ]; then \
  echo "memtrace: installing $$missing"; \
  DEBIAN_FRONTEND=noninteractive dpkg --configure -a && \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
else \
  echo "memtrace: missing packages: $$missing"; \
  echo "run:  sudo apt-get install -y $$missing"; \
  exit 1; \
fi
endef

deps:
	$(call install_missing,$(DEPS_PKGS))

# The packages of DEPS_PKGS the libraries are built from, found as the
# build finds them (pkg-config, PATH, the files it reads): those missing,
# named before anything is built, instead of make's "No rule to make
# target '.../profile.proto'" or a compiler's missing header. Not asked
# for the goals that install them first (check and demo run deps, then
# make again) or need none (man: asciidoctor only).
BUILD_DEPS_MISSING = $(shell \
  if command -v pkg-config >/dev/null 2>&1; then \
    for m in libdw:libdw-dev libunwind:libunwind-dev libzstd:libzstd-dev \
             libprotobuf-c:libprotobuf-c-dev zlib:zlib1g-dev ncursesw:libncurses-dev; do \
      pkg-config --exists $${m%%:*} 2>/dev/null || echo "$$m" | cut -d: -f2; \
    done; \
  else echo pkg-config; fi; \
  [ -f /usr/include/libiberty/demangle.h ] || echo libiberty-dev; \
  command -v protoc-c >/dev/null 2>&1 || echo protobuf-c-compiler; \
  [ -f $(PPROF_PROTO) ] || echo golang-github-google-pprof-dev)
NO_BUILD_GOALS := deps check demo clean uninstall man
ifneq ($(filter-out $(NO_BUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
missing_build_deps := $(strip $(BUILD_DEPS_MISSING))
ifneq ($(missing_build_deps),)
$(error memtrace: missing packages: $(missing_build_deps); run `make deps` to install them (as root), or to see the apt-get line)
endif
endif

# ---------------------------------------------------------------- tests
include tests/tests.mk
include gdb/gdb.mk
include cli/cli.mk
include tools/top/top.mk

# ---------------------------------------------------------------- bench
-include bench/bench.mk

# ---------------------------------------------------------------- demo
demo: deps
	@$(MAKE) --no-print-directory all $(BUILD)/tests/demo
	@sh tests/e2e/demo.sh

# ---------------------------------------------------------------- man pages
# memtrace(1) (the launcher, the settings, the gdb commands) and memtrace(3)
# (the C API), from doc/*.adoc; built, not kept in git. A warning fails.
MAN_PAGES := $(BUILD)/man/memtrace.1 $(BUILD)/man/memtrace.3
man: $(MAN_PAGES)
$(BUILD)/man/%: doc/%.adoc Makefile
	@mkdir -p $(@D)
	asciidoctor -b manpage --failure-level=WARN -a 'mansource=memtrace $(VERSION)' \
	  -a manmanual='memtrace manual' -o $@ $< || { rm -f $@; exit 1; }
# memtrace(3) under the name of each function it documents (man print_trace).
MAN3_ALIASES := print_trace memtrace_print_trace memtrace_get_stats memtrace_get_stats_sized memtrace_report \
                memtrace_set_recording memtrace_recording memtrace_version memtrace_check \
                memtrace_on_error memtrace_tag_push memtrace_tag_pop
# What a program tells memtrace (memtrace(3)).
MAN3_ALIASES += memtrace_running memtrace_malloclike memtrace_freelike memtrace_leak_check \
                memtrace_ignore_object memtrace_register_root_region memtrace_unregister_root_region

# ---------------------------------------------------------------- install
# The gdb helper's copies, named after each library, that gdb loads with it.
# In gdb's own auto-load directory (GDB_DATADIR/auto-load, /usr/share/gdb on
# Debian) when GDB_AUTOLOAD_DIR is that one (PREFIX=/usr); otherwise also
# next to the library (trusted with add-auto-load-safe-path LIBDIR). Never
# both: gdb takes the copy next to the library first and, when LIBDIR is not
# trusted, declines it without looking in its own directory.
GDB_DATADIR ?= /usr/share/gdb
MT_AUTOLOAD := $(DESTDIR)$(GDB_AUTOLOAD_DIR)$(LIBDIR) \
               $(if $(filter $(GDB_DATADIR)/auto-load,$(GDB_AUTOLOAD_DIR)),,$(DESTDIR)$(LIBDIR))
MT_PC := $(DESTDIR)$(PKGCONFIGDIR)/memtrace.pc
# $(call pc_dir,DIR): DIR under PREFIX written from ${prefix}, as pkg-config
# --define-prefix (a tree moved elsewhere) needs. Libs names the tracer, or
# the profiler library when it is the only one (PROFILER=1).
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
# The directories the dynamic linker searches with no configuration: a
# program linked with -lmemtrace from any other LIBDIR (/usr/local/lib before
# an ldconfig, a home directory) would not start ("libmemtrace.so: cannot
# open shared object file"), so memtrace.pc's Libs then carry an rpath.
comma := ,
MT_MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
MT_LD_DIRS := /lib /usr/lib /lib64 /usr/lib64 $(if $(MT_MULTIARCH),/lib/$(MT_MULTIARCH) /usr/lib/$(MT_MULTIARCH))
MT_PC_RPATH := $(if $(filter $(patsubst %/,%,$(LIBDIR)),$(MT_LD_DIRS)),,-Wl$(comma)-rpath$(comma)$${libdir} )

# The launcher and the helper's stub learn the installed directories here;
# the copies in build/ find their files next to themselves. The stub's
# copies load the one package in DATADIR/memtrace.
install: all man
	install -d $(addprefix $(DESTDIR),$(BINDIR) $(LIBDIR) $(INCLUDEDIR) $(LIBEXECDIR)/memtrace \
	  $(DATADIR)/memtrace/memtrace_gdb $(DATADIR)/memtrace/view $(MANDIR)/man1 $(MANDIR)/man3 $(PKGCONFIGDIR) $(BASHCOMPDIR)) $(MT_AUTOLOAD)
	install -m 755 $(MT_LIBS) $(DESTDIR)$(LIBDIR)/
	install -m 644 include/memtrace.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(BUILD)/memtrace-symbolize $(BUILD)/memtrace-export $(BUILD)/memtrace-top $(DESTDIR)$(LIBEXECDIR)/memtrace/
	sed -e 's|@MEMTRACE_LIBDIR@|$(LIBDIR)|g' -e 's|@MEMTRACE_DATADIR@|$(DATADIR)|g' \
	  -e 's|@MEMTRACE_LIBEXECDIR@|$(LIBEXECDIR)/memtrace|g' \
	  $(BUILD)/memtrace >$(DESTDIR)$(BINDIR)/memtrace
	chmod 755 $(DESTDIR)$(BINDIR)/memtrace
	install -m 644 $(GDB_PACKAGE) $(DESTDIR)$(DATADIR)/memtrace/memtrace_gdb/
	install -m 644 $(VIEW_FILES) $(DESTDIR)$(DATADIR)/memtrace/view/
	install -m 644 $(BUILD)/memtrace_attach.py $(DESTDIR)$(DATADIR)/memtrace/
	sed -e 's|@MEMTRACE_LIBEXECDIR@|$(LIBEXECDIR)/memtrace|' -e 's|@MEMTRACE_PYDIR@|$(DATADIR)/memtrace|' \
	  $(BUILD)/memtrace.py >$(DESTDIR)$(DATADIR)/memtrace/memtrace.py
	chmod 644 $(DESTDIR)$(DATADIR)/memtrace/memtrace.py
	for d in $(MT_AUTOLOAD); do for l in $(notdir $(MT_LIBS)); do \
	  install -m 644 $(DESTDIR)$(DATADIR)/memtrace/memtrace.py $$d/$$l-gdb.py || exit 1; \
	done; done
	install -m 644 $(BUILD)/man/memtrace.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(BUILD)/man/memtrace.3 $(DESTDIR)$(MANDIR)/man3/
	for a in $(MAN3_ALIASES); do ln -sf memtrace.3 $(DESTDIR)$(MANDIR)/man3/$$a.3 || exit 1; done
	install -m 644 cli/memtrace.bash-completion $(DESTDIR)$(BASHCOMPDIR)/memtrace
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call pc_dir,$(LIBDIR))' \
	  'includedir=$(call pc_dir,$(INCLUDEDIR))' '' \
	  'Name: memtrace' 'Description: heap allocation tracer: where a heap block was allocated' \
	  'Version: $(VERSION)' 'Cflags: -I$${includedir}' \
	  'Libs: -L$${libdir} $(MT_PC_RPATH)-l$(patsubst lib%.so,%,$(notdir $(firstword $(MT_LIBS))))' >$(MT_PC)
	chmod 644 $(MT_PC)

# Every file install makes, and the directories that are memtrace's own;
# shared directories (bin, lib, man1, ...) stay.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/memtrace $(addprefix $(DESTDIR)$(LIBDIR)/,$(notdir $(MT_LIBS))) \
	  $(DESTDIR)$(INCLUDEDIR)/memtrace.h $(DESTDIR)$(LIBEXECDIR)/memtrace/memtrace-symbolize \
	  $(DESTDIR)$(LIBEXECDIR)/memtrace/memtrace-export $(DESTDIR)$(LIBEXECDIR)/memtrace/memtrace-top $(DESTDIR)$(DATADIR)/memtrace/memtrace.py $(DESTDIR)$(DATADIR)/memtrace/memtrace_attach.py $(GDB_PACKAGE:$(BUILD)/%=$(DESTDIR)$(DATADIR)/memtrace/%) \
	  $(VIEW_FILES:$(BUILD)/%=$(DESTDIR)$(DATADIR)/memtrace/%) \
	  $(foreach d,$(MT_AUTOLOAD),$(foreach l,$(notdir $(MT_LIBS)),$(d)/$(l)-gdb.py)) \
	  $(DESTDIR)$(MANDIR)/man1/memtrace.1 $(DESTDIR)$(MANDIR)/man3/memtrace.3 \
	  $(MAN3_ALIASES:%=$(DESTDIR)$(MANDIR)/man3/%.3) \
	  $(DESTDIR)$(BASHCOMPDIR)/memtrace $(MT_PC)
	rmdir $(DESTDIR)$(LIBEXECDIR)/memtrace $(DESTDIR)$(DATADIR)/memtrace/memtrace_gdb \
	  $(DESTDIR)$(DATADIR)/memtrace/view \
	  $(DESTDIR)$(DATADIR)/memtrace 2>/dev/null || :

# ---------------------------------------------------------------- deb
# debhelper (debian/) on a copy of the tree in $(BUILD)/deb/src, so that the
# tree stays as it is (dpkg-buildpackage writes into debian/ and the parent
# directory); the .deb is copied to $(BUILD)/. The copy is of what git would
# keep: .gitignore'd files and build outputs are left out.
DEB_DIR := $(BUILD)/deb
deb:
	@v=$$(dpkg-parsechangelog -S Version); if [ "$$v" != "$(VERSION)" ]; then \
	  echo "memtrace: debian/changelog is at $$v, the Makefile's VERSION is $(VERSION):" \
	    "add a debian/changelog entry (dch -v $(VERSION))" >&2; exit 1; fi
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	tar -c --exclude-vcs --exclude-vcs-ignores --exclude='./$(BUILD)' -f - . | tar -x -C $(DEB_DIR)/src -f -
	cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc
	cp $(DEB_DIR)/memtrace_$(VERSION)_*.deb $(BUILD)/

clean:
	rm -rf $(BUILD)

.PHONY: all deps demo check man install uninstall deb clean FORCE
