# memtrace: one plain GNU Makefile.
#   make                 both libraries (tracer and profiler) in build/
#   make PROFILER=1      the profiler library only
#   make DEBUG=1         with MT_ASSERT checks on (-DMT_DEBUG); CFLAGS as usual
#   make deps            install missing Debian packages (root) or say which
#   make demo            deps + build + a trace shown in gdb
#   make check           deps + build + every test
#   make install PREFIX=/usr/local DESTDIR=

# The one version of memtrace: the launcher's --version, the libraries
# (memtrace_state), memtrace.pc and the Debian package all take it from here.
VERSION := 0.1.0

PREFIX  ?= /usr/local
DESTDIR ?=
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
CFLAGS  ?= -O2 -g
# make DEBUG=1: the invariants the comments state become MT_ASSERT checks
# (src/common.h) in the libraries and memtrace-symbolize.
DEBUG_FLAGS := $(if $(filter 1,$(DEBUG)),-DMT_DEBUG)
# Frame pointers in the library itself, so that MEMTRACE_UNWIND=fp can walk
# from its frames into the program's. -fexceptions: a real operator new may
# throw std::bad_alloc through memtrace's frames, whose cleanups
# (MT_PASSTHROUGH_SCOPE, src/real.h) must then run.
LIB_CFLAGS := -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
              -fno-omit-frame-pointer -fexceptions $(DEBUG_FLAGS) \
              -pthread -D_GNU_SOURCE $(shell pkg-config --cflags libdw libunwind 2>/dev/null)
# libiberty (binutils' demangler) is a static archive: --exclude-libs keeps
# its symbols out of the preloaded library's exports, where they would
# interpose a program's own copy.
DEMANGLE_LIBS := -liberty
# The pprof writer's encoder and compressor (src/pprof.c), static archives
# kept out of the exports in the same way; first, so that libdw's own -lz
# (shared) does not take zlib's symbols.
PPROF_LIBS := -l:libprotobuf-c.a -l:libz.a
LIB_LIBS   := $(PPROF_LIBS) $(shell pkg-config --libs libdw libunwind 2>/dev/null || echo -ldw -lelf -lunwind) \
              $(DEMANGLE_LIBS) -Wl,--exclude-libs,libiberty.a:libprotobuf-c.a:libz.a -ldl -pthread

# The two builds differ in which files they take, not in #ifdefs: the
# profiler's reporting and site totals, or the tracer's stand-in. site.h's
# inline counters are the one place compiled differently (MEMTRACE_PROFILER).
PROFILER_ONLY := src/profiler.c src/site.c
TRACER_ONLY   := src/profiler_off.c
COMMON_SRCS   := $(filter-out $(PROFILER_ONLY) $(TRACER_ONLY),$(wildcard src/*.c))
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

$(BUILD)/tracer/%.o: src/%.c $(wildcard src/*.h) include/memtrace.h $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/profiler/%.o: src/%.c $(wildcard src/*.h) include/memtrace.h $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) -DMEMTRACE_PROFILER -c $< -o $@

# Generated code: protoc-c's, compiled without memtrace's warning set.
$(BUILD)/tracer/pprof.o $(BUILD)/profiler/pprof.o: $(PB_DIR)/profile.pb-c.h
$(BUILD)/tracer/pprof.o $(BUILD)/profiler/pprof.o: LIB_CFLAGS += -I$(PB_DIR)
$(BUILD)/tracer/profile.pb-c.o $(BUILD)/profiler/profile.pb-c.o: $(PB_DIR)/profile.pb-c.c $(BUILD)/flavour
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(DEBUG_FLAGS) -fPIC -fvisibility=hidden -I$(PB_DIR) -c $< -o $@

$(TRACER_LIB): $(TRACER_OBJS)
	$(CC) $(LDFLAGS) -shared -Wl,--no-undefined -Wl,-z,now -o $@ $^ $(LIB_LIBS)

$(PROFILER_LIB): $(PROFILER_OBJS)
	$(CC) $(LDFLAGS) -shared -Wl,--no-undefined -Wl,-z,now -o $@ $^ $(LIB_LIBS)

# ---------------------------------------------------------------- packages
# The last six are programs the reliability tests run under memtrace; the
# allocators are the ones the e2e tests put below it (tests/e2e/allocators.sh);
# liblsan0 is the leak check's oracle (tests/e2e/leaks.sh). The last line:
# the pprof writer's libraries and proto, and go tool pprof, its tests' oracle.
DEPS_PKGS := gcc g++ make pkg-config libdw-dev libunwind-dev libcriterion-dev gdb libiberty-dev \
             libjemalloc-dev libtcmalloc-minimal4 liblsan0 \
             python3 sqlite3 jq libxml2-utils rustc nodejs \
             libprotobuf-c-dev protobuf-c-compiler zlib1g-dev golang-github-google-pprof-dev golang-go

# $(call install_missing,PACKAGES): install the Debian packages not yet
# installed when root; otherwise print the apt-get line and fail.
define install_missing
@missing=$$(for p in $(1); do \
    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
  done | tr '\n' ' '); \
if [ -z "$$missing" ]; then exit 0; fi; \
if [ "$$(id -u)" = 0 ]; then \
  echo "memtrace: installing $$missing"; \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
else \
  echo "memtrace: missing packages: $$missing"; \
  echo "run:  sudo apt-get install -y $$missing"; \
  exit 1; \
fi
endef

deps:
	$(call install_missing,$(DEPS_PKGS))

# ---------------------------------------------------------------- tests
include tests/tests.mk
include gdb/gdb.mk

# ---------------------------------------------------------------- bench
-include bench/bench.mk

# ---------------------------------------------------------------- demo
demo: deps
	@$(MAKE) --no-print-directory all $(BUILD)/tests/demo
	@sh tests/e2e/demo.sh

# ---------------------------------------------------------------- install
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include
	install -m 755 $(MT_LIBS) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/memtrace.h $(DESTDIR)$(PREFIX)/include/

clean:
	rm -rf $(BUILD)

.PHONY: all deps demo check install clean FORCE
