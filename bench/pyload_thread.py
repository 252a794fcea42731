# SPDX-License-Identifier: LGPL-2.1-or-later
# pyload_thread: bench/pyload.py's work on a thread of its own, for
# bench/instr.sh: under valgrind memtrace's cached-CFI unwinder knows the
# stacks of the threads the program starts, not the main thread's (whose
# captures libunwind would make, many times slower).
#
#   python3 pyload_thread.py PYLOAD.PY [ARGS...]
import runpy
import sys
import threading

sys.argv = sys.argv[1:]
t = threading.Thread(target=runpy.run_path, args=(sys.argv[0],), kwargs={"run_name": "__main__"})
t.start()
t.join()
