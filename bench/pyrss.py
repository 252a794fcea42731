# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/pyrss.py OUT [N]: runs bench/pyload.py (the python3 workload of
# `make bench`, unchanged but for one call) and, where its RSS peaks (the
# end of index() in the second round, the first round's objects still
# held; VmHWM does not grow after it), writes OUT, lines of NAME VALUE,
# from the hook's call of the largest VmRSS:
#   vmrss_kb, heap_kb (the brk heap's Rss), anon_kb (anonymous mappings'
#   Rss), arena (glibc's mallinfo2 arena: bytes of the main heap),
#   and, under memtrace (the exported memtrace_state, src/runtime/
#   descriptor.h, read through ctypes): live_blocks, stacks, metadata_bytes
#   (memtrace_get_stats), live_mapped (every live-table shard's slots
#   mapping: header plus capacity x slot size), freed_bytes (the freed
#   history's ring), stack_bytes (the rest of metadata_bytes: the stack
#   store's chunks and index, and the live table's side records, if any).
# Used by bench/pyrss.sh. Fails with a message if pyload.py no longer has
# the line the peak follows.
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHOR = "    return by_tag, by_name\n"
DESCRIPTOR_H = os.path.join(HERE, "..", "src", "runtime", "descriptor.h")


def descriptor_words():
    """Word names of struct memtrace_state, in order (word i at 16 + 8 i)."""
    text = open(DESCRIPTOR_H).read()
    body = text[text.index("struct memtrace_state {"):]
    body = body[:body.index("\n};")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = []
    for decl in re.findall(r"uint64_t\s+([^;]+);", body):
        names += [n.strip() for n in decl.split(",")]
    return names


def memtrace_figures(libc):
    try:
        state = ctypes.c_char.in_dll(libc, "memtrace_state")
        get = libc.memtrace_get_stats_sized
    except ValueError:
        return {}
    except AttributeError:
        return {}

    class Stats(ctypes.Structure):
        _fields_ = [("live_blocks", ctypes.c_ulong), ("live_bytes", ctypes.c_ulong),
                    ("stacks", ctypes.c_ulong), ("metadata_bytes", ctypes.c_ulong),
                    ("recording", ctypes.c_int), ("unwind_fallbacks", ctypes.c_ulong)]
    st = Stats()
    get(ctypes.byref(st), ctypes.sizeof(st))
    base = ctypes.addressof(state)
    names = descriptor_words()

    def word(name):
        return ctypes.c_uint64.from_address(base + 16 + 8 * names.index(name)).value

    def at(addr):
        return ctypes.c_uint64.from_address(addr).value

    # Version 2 packs slots in live_slot_size bytes; version 1 had entries
    # of entry_size.
    version = ctypes.c_uint32.from_address(base + 8).value
    slot = word("live_slot_size") if version >= 2 else word("entry_size")
    live = 0
    for n in range(word("live_shard_count")):
        shard = word("live_shards") + n * word("live_shard_size")
        slots = at(shard + word("live_slots_offset"))
        if slots:
            cap = at(slots + word("live_cap_offset"))
            live += word("live_entries_offset") + cap * slot
    freed = word("freed_capacity") * word("freed_record_size")
    return {"live_blocks": st.live_blocks, "stacks": st.stacks, "metadata_bytes": st.metadata_bytes,
            "live_mapped": live, "freed_bytes": freed,
            "stack_bytes": st.metadata_bytes - live - freed}


BEST = [0]


def dump(out):
    """Writes OUT if VmRSS is the largest seen at the hook yet."""
    status = open("/proc/self/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    if rss <= BEST[0]:
        return
    BEST[0] = rss
    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
                    "keepcost".split()]
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    fig = {"arena": libc.mallinfo2().arena}
    fig.update(memtrace_figures(libc))
    fig["vmrss_kb"] = rss
    heap = anon = 0
    name = None
    for line in open("/proc/self/smaps"):
        m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
        if m:
            name = m.group(1)
        elif line.startswith("Rss:"):
            kb = int(line.split()[1])
            if name == "[heap]":
                heap += kb
            elif name == "":
                anon += kb
    fig["heap_kb"] = heap
    fig["anon_kb"] = anon
    with open(out, "w") as f:
        for k, v in fig.items():
            f.write("%s %d\n" % (k, v))


def main():
    out = sys.argv[1]
    src = open(os.path.join(HERE, "pyload.py")).read()
    if src.count(ANCHOR) != 1:
        sys.exit("pyrss.py: bench/pyload.py has no line %r to put the peak after" % ANCHOR.strip())
    src = src.replace(ANCHOR, "    _pyrss_dump()\n" + ANCHOR)
    sys.argv = [os.path.join(HERE, "pyload.py")] + sys.argv[2:]
    exec(compile(src, sys.argv[0], "exec"), {"__name__": "__main__",
                                               "_pyrss_dump": lambda: dump(out)})


main()
