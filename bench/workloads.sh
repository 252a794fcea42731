# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/workloads.sh: the workloads of `make bench`, sourced by run.sh and
# record.sh (which set BIN, the built bench programs, and SRC, this folder).
# heaptrack only traces the process it starts (it takes itself out of
# LD_PRELOAD), so every workload starts the process that does the work:
# the real python binary, not a pyenv shim; cc1plus, not the g++ driver.
PYTHON=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || echo python3)
CC1PLUS=$(g++ -print-prog-name=cc1plus)
declare -A CMD ENV
WORKLOADS=(churn churn2 sqlite3 g++ python3)
CMD[churn]="$BIN/churn 1 3000000 100000"
CMD[churn2]="$BIN/churn 2 3000000 100000"
CMD[sqlite3]="sqlite3 :memory: .read\ $SRC/sqlite.sql .read\ $SRC/sqlite.sql"
CMD[g++]="$CC1PLUS -quiet -imultiarch x86_64-linux-gnu -D_GNU_SOURCE -O1 $SRC/templates.cpp -o /dev/null"
CMD[python3]="$PYTHON $SRC/pyload.py"
ENV[python3]="PYTHONMALLOC=malloc"
# clang++ compiles in-process (integrated cc1): one process, libLLVM's
# code. Not in WORKLOADS' table; scripts that want a libLLVM workload
# (the sampled profiler, the symbolizer on clang) run it by this name.
CMD[clang++]="clang++ -std=c++17 -O1 -c $SRC/templates.cpp -o /dev/null"
