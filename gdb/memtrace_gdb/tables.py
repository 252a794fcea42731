# memtrace's tables in the inferior's memory, read through the
# memtrace_state descriptor (src/runtime/descriptor.h): the descriptor's
# words, the bounds and layout checks that keep a damaged core from
# making gdb read far or loop long, and the decoding of the live table,
# the freed history, the stack store and the thread registry.

import array
import bisect
import itertools
import struct

import gdb

from .common import _M64, _Language, _corrupt, _fail
from .target import _core_problem


_STATE_VERSION = 1
# The 64-bit words of struct memtrace_state (version 1) after its 16-byte
# header, in order.
_STATE_FIELDS = """
    live_shards live_shard_count live_shard_bits live_shard_size
    live_lock_offset live_count_offset live_slots_offset
    live_log2cap_offset live_entries_offset live_hash_shift live_hash_multiplier
    entry_size entry_ptr entry_size_field entry_seq entry_stack entry_thread
    stack_chunks stack_max_chunks stack_chunk_bits stack_frames_offset
    stack_depth_mask stack_present_bit stack_count
    freed_ring freed_capacity freed_record_size freed_stamp freed_ptr freed_size
    freed_alloc_seq freed_free_seq freed_alloc_stack freed_free_stack
    freed_alloc_thread freed_free_thread
    threads threads_max threads_entry_size threads_tid threads_name
    threads_name_size threads_highest seq_counter
""".split()
# Words added at the end of version 1 later; a smaller descriptor (an older
# library) lacks them, and they read as 0.
_STATE_FIELDS_ADDED = ["freed_pushed", "unwind_fallbacks", "entry_thread_bits",
                       "version_string", "recording"]


# Bounds on what memtrace_state and the tables may say (doc/design.adoc, trap 15:
# a damaged core is the normal case). Far above what the library publishes
# (src/runtime/descriptor.c), and low enough that no damaged value makes gdb read or hold
# more than a few MiB at once, or loop for long.
_MAX_STATE_SIZE = 4096     # bytes of memtrace_state
_MAX_SHARD_BITS = 12
_MAX_SHARD_SIZE = 1024     # bytes of a shard header
_MAX_HEADER = 4096         # offset of a field in a shard or slots header
_MAX_RECORD = 256          # bytes of a live entry or a freed-history record
_MAX_LOG2CAP = 40          # a shard's capacity
_MAX_CHUNK_BITS = 30
_MAX_FRAMES_OFFSET = 64    # words
_MAX_DEPTH_BITS = 16
_MAX_DEPTH = 256           # MT_MAX_DEPTH: print_trace shows no deeper stack
_MAX_FREED = 1 << 26       # MEMTRACE_FREED's maximum (src/base/config.c)
_MAX_THREADS = 1 << 20
_MAX_THREAD_ENTRY = 4096
_MAX_NAME = 256
_READ_CHUNK = 1 << 21      # bytes read at once from a large table


def _check_layout(d):
    """Fails with one line unless descriptor D (a dict of its words) is
    plausible: every size and count within the bounds above and consistent
    with the others, every field inside its record and aligned."""
    def at_most(name, top, low=0):
        if d[name] > top:
            _corrupt("%s %d, more than %d" % (name, d[name], top))
        if d[name] < low:
            _corrupt("%s %d, less than %d" % (name, d[name], low))

    def record_size(name):
        at_most(name, _MAX_RECORD, 8)
        if d[name] % 8:
            _corrupt("%s %d, not a multiple of 8" % (name, d[name]))

    def field(name, width, size_name):
        if d[name] % width or d[name] + width > d[size_name]:
            _corrupt("%s %d, not %s %d-byte field inside %s %d"
                     % (name, d[name], "an" if width == 8 else "a", width, size_name,
                        d[size_name]))

    def address(name, what):
        if d[name] == 0:
            _corrupt("%s at 0x0" % what)

    at_most("live_shard_bits", _MAX_SHARD_BITS)
    if d["live_shard_count"] != 1 << d["live_shard_bits"]:
        _corrupt("live_shard_count %d, not 1 << live_shard_bits" % d["live_shard_count"])
    address("live_shards", "live shards")
    at_most("live_shard_size", _MAX_SHARD_SIZE, 8)
    field("live_lock_offset", 4, "live_shard_size")
    field("live_count_offset", 8, "live_shard_size")
    field("live_slots_offset", 8, "live_shard_size")
    at_most("live_log2cap_offset", _MAX_HEADER)
    at_most("live_entries_offset", _MAX_HEADER)
    at_most("live_hash_shift", 63)
    record_size("entry_size")
    for name in ("entry_ptr", "entry_size_field", "entry_seq"):
        field(name, 8, "entry_size")
    for name in ("entry_stack", "entry_thread"):
        field(name, 4, "entry_size")
    at_most("entry_thread_bits", 32)

    address("stack_chunks", "stack chunk table")
    at_most("stack_chunk_bits", _MAX_CHUNK_BITS, 1)
    # Stack ids are 32-bit: chunk << chunk_bits | word.
    at_most("stack_max_chunks", 1 << (32 - d["stack_chunk_bits"]), 1)
    at_most("stack_frames_offset", _MAX_FRAMES_OFFSET)
    mask = d["stack_depth_mask"]
    if mask == 0 or mask & (mask + 1) or mask >> _MAX_DEPTH_BITS:
        _corrupt("stack_depth_mask %#x, not a mask of 1 to %d bits" % (mask, _MAX_DEPTH_BITS))
    bit = d["stack_present_bit"]
    if bit == 0 or bit & (bit - 1) or bit & mask:
        _corrupt("stack_present_bit %#x, not one bit above stack_depth_mask" % bit)
    address("stack_count", "stack count")

    at_most("freed_capacity", _MAX_FREED)
    if d["freed_capacity"]:
        address("freed_ring", "freed history")
    record_size("freed_record_size")
    for name in ("freed_stamp", "freed_ptr", "freed_size", "freed_alloc_seq", "freed_free_seq"):
        field(name, 8, "freed_record_size")
    for name in ("freed_alloc_stack", "freed_free_stack", "freed_alloc_thread",
                 "freed_free_thread"):
        field(name, 4, "freed_record_size")

    at_most("threads_max", _MAX_THREADS)
    at_most("threads_entry_size", _MAX_THREAD_ENTRY, 4)
    at_most("threads_name_size", _MAX_NAME, 1)
    field("threads_tid", 4, "threads_entry_size")
    if d["threads_name"] + d["threads_name_size"] > d["threads_entry_size"]:
        _corrupt("threads_name %d, not a %d-byte field inside threads_entry_size %d"
                 % (d["threads_name"], d["threads_name_size"], d["threads_entry_size"]))
    address("threads_highest", "thread count")
    address("seq_counter", "allocation counter")


def _state_address(core=None):
    """The address of memtrace_state, found whatever the current frame's
    language is (a C expression does not parse in a Rust frame). CORE: the
    core file looked at, if any (where libmemtrace is mapped: checked)."""
    for lookup in (gdb.lookup_global_symbol, gdb.lookup_static_symbol):
        try:
            sym = lookup("memtrace_state")
            if sym is not None:
                return int(sym.value().address) & _M64
        except (gdb.error, RuntimeError) as e:
            _corrupt("cannot locate it: %s" % str(e).splitlines()[0])
    # A library without debug information has only the ELF symbol, which
    # no Python lookup finds; C's parser does.
    try:
        with _Language("c"):
            return int(gdb.parse_and_eval("&memtrace_state")) & _M64
    except gdb.error as e:
        if 'No symbol "memtrace_state"' in str(e) and core:
            _fail("libmemtrace is among the libraries of the core file %s, but gdb has not "
                  "loaded its symbols (see `info sharedlibrary`; `set sysroot` or `set "
                  "solib-search-path` to where it is)" % core)
        if 'No symbol "memtrace_state"' in str(e):
            _fail("this program does not run under memtrace (no memtrace_state symbol); "
                  "start it with `memtrace gdb PROG` or LD_PRELOAD=libmemtrace.so")
        _corrupt("cannot locate it: %s" % str(e).splitlines()[0])


def _gap(addr, start, size):
    """How far ADDR lies outside the block of SIZE bytes at START, or None
    when the block holds it: mt_block_gap (src/base/common.h)."""
    if addr < start:
        return start - addr
    if addr - start < size or addr == start:
        return None
    return addr - start - size


class _Tables:
    """memtrace's tables in one target, read through memtrace_state. Table
    contents read once are kept until the target runs again."""

    def __init__(self, target):
        self.t = target
        if target.core:
            problem = _core_problem(target.core, target.exe)
            if problem:
                _fail(problem)
        addr = _state_address(target.core)
        head = target.read(addr, 16)
        if head is None:
            _corrupt("unreadable at %#x" % addr)
        magic, version, size = struct.unpack("<8sII", head)
        if magic == b"\0" * 8:
            _fail("memtrace has not started in this process yet (no allocation so far)")
        if magic != b"MEMTRACE":
            _corrupt('magic "%s", not "MEMTRACE"'
                     % "".join(chr(c) if 32 <= c < 127 and c not in b'"\\' else "\\x%02x" % c
                               for c in magic))
        if version != _STATE_VERSION:
            _fail("memtrace_state has version %d; this helper reads version %d"
                  % (version, _STATE_VERSION))
        need = 16 + 8 * len(_STATE_FIELDS)
        if size < need:
            _corrupt("size %d, less than %d" % (size, need))
        if size > _MAX_STATE_SIZE:
            _corrupt("size %d, more than %d" % (size, _MAX_STATE_SIZE))
        names = (_STATE_FIELDS + _STATE_FIELDS_ADDED)[:(size - 16) // 8]
        raw = target.read(addr + 16, 8 * len(names))
        if raw is None:
            _corrupt("unreadable at %#x" % addr)
        self.d = dict.fromkeys(_STATE_FIELDS_ADDED, 0)
        self.d.update(zip(names, struct.unpack("<%dQ" % len(names), raw)))
        _check_layout(self.d)
        # The thread word's low bits are the thread number, the rest how the
        # block was allocated (0: an older library, the word is the thread).
        bits = self.d["entry_thread_bits"] or 32
        self.thread_mask = (1 << bits) - 1
        self.shards = None     # [(locked, slots)]
        self.slots = {}        # shard -> (address of its first entry, log2cap) or None
        self.entries = {}      # shard -> columns (ptrs, sizes, seqs, stacks, threads)
        self.sorted_ptrs = None  # the start of every live record, ascending
        self.ring = None       # (stamps, ptrs, sizes) of the trusted records, newest first
        self.chunks = {}
        self.stacks = {}

    # -- live table
    def _shards(self):
        """[(locked, slots address)] of every shard."""
        if self.shards is None:
            d = self.d
            n, sz = d["live_shard_count"], d["live_shard_size"]
            raw = self.t.read(d["live_shards"], n * sz)
            if raw is None:
                _corrupt("live shards at %#x unreadable" % d["live_shards"])
            self.shards = []
            for i in range(n):
                b = i * sz
                lock = struct.unpack_from("<I", raw, b + d["live_lock_offset"])[0]
                slots = struct.unpack_from("<Q", raw, b + d["live_slots_offset"])[0]
                self.shards.append((lock != 0, slots))
        return self.shards

    def _hash(self, addr):
        d = self.d
        return ((addr >> d["live_hash_shift"]) * d["live_hash_multiplier"]) & _M64

    def _entry(self, raw, off):
        d = self.d
        ptr = struct.unpack_from("<Q", raw, off + d["entry_ptr"])[0]
        size = struct.unpack_from("<Q", raw, off + d["entry_size_field"])[0]
        seq = struct.unpack_from("<Q", raw, off + d["entry_seq"])[0]
        stack = struct.unpack_from("<I", raw, off + d["entry_stack"])[0]
        thread = struct.unpack_from("<I", raw, off + d["entry_thread"])[0]
        return (ptr, size, seq, stack, thread & self.thread_mask)

    def _slots(self, n):
        """(address of shard N's first entry, log2 capacity), or None for a
        shard with no slots mapping yet. The mapping is published whole
        (src/store/live_table.c), so even a locked shard's must be readable."""
        if n not in self.slots:
            _, slots = self._shards()[n]
            result = None
            if slots:
                d = self.d
                log2cap = self.t.u64(slots + d["live_log2cap_offset"])
                if log2cap is None:
                    _corrupt("live shard %d: slots at %#x unreadable" % (n, slots))
                if log2cap > _MAX_LOG2CAP:
                    _corrupt("live shard %d: log2 capacity %d, more than %d"
                             % (n, log2cap, _MAX_LOG2CAP))
                base = slots + d["live_entries_offset"]
                if self.t.read(base + (d["entry_size"] << log2cap) - 8, 8) is None:
                    _corrupt("live shard %d: %d slots at %#x not all readable"
                             % (n, 1 << log2cap, base))
                result = (base, log2cap)
            self.slots[n] = result
        return self.slots[n]

    def _read_slots(self, n, base, first, count):
        raw = self.t.read(base + first * self.d["entry_size"], count * self.d["entry_size"])
        if raw is None:
            _corrupt("live shard %d: slots at %#x unreadable" % (n, base))
        return raw

    def _columns(self, n):
        """Shard N as columns over all its slots (ptr 0: empty):
        (ptrs, sizes, seqs, stacks, threads)."""
        if n in self.entries:
            return self.entries[n]
        d = self.d
        result = ([], [], [], [], [])
        slots = self._slots(n)
        if slots:
            base, log2cap = slots
            es = d["entry_size"]
            per_read = max(1, _READ_CHUNK // es)
            for first in range(0, 1 << log2cap, per_read):
                raw = self._read_slots(n, base, first, min(per_read, (1 << log2cap) - first))
                # Strided views of the slot array decode a shard at C speed.
                q, i = memoryview(raw).cast("Q"), memoryview(raw).cast("I")
                wq, wi = es // 8, es // 4
                result[0].extend(q[d["entry_ptr"] // 8::wq].tolist())
                result[1].extend(q[d["entry_size_field"] // 8::wq].tolist())
                result[2].extend(q[d["entry_seq"] // 8::wq].tolist())
                result[3].extend(i[d["entry_stack"] // 4::wi].tolist())
                mask = self.thread_mask
                result[4].extend(t & mask for t in i[d["entry_thread"] // 4::wi].tolist())
        self.entries[n] = result
        return result

    def find_exact(self, addr):
        """(entry or None, unlocked) for a block starting at ADDR; an entry
        is (ptr, size, seq, stack, thread)."""
        d = self.d
        h = self._hash(addr)
        n = h >> (64 - d["live_shard_bits"])
        locked, _ = self._shards()[n]
        if n in self.entries:
            cols = self.entries[n]
            try:
                k = cols[0].index(addr)
            except ValueError:
                return None, locked
            return tuple(c[k] for c in cols), locked
        slots = self._slots(n)
        if not slots:
            return None, locked
        base, log2cap = slots
        cap = 1 << log2cap
        i = ((h << d["live_shard_bits"]) & _M64) >> (64 - log2cap)
        es = d["entry_size"]
        probed = 0
        while probed < cap:
            batch = min(64, cap - i, cap - probed)
            raw = self._read_slots(n, base, i, batch)
            for k in range(batch):
                p = struct.unpack_from("<Q", raw, k * es + d["entry_ptr"])[0]
                if p == addr:
                    return self._entry(raw, k * es), locked
                if p == 0:
                    return None, locked
            probed += batch
            i = (i + batch) & (cap - 1)
        return None, locked

    def around(self, addr):
        """(below, above, inside, unlocked): the live records with the
        greatest start <= ADDR and the least start > ADDR (entries as
        find_exact's, or None), INSIDE when BELOW holds ADDR: the rule of
        mt_live_find_around, so both name the same blocks. Every shard is
        read; unlocked if one was locked."""
        if self.sorted_ptrs is None:
            # Sorted once per stop (about 0.5 s for a million blocks); each
            # question is then two bisections and two hash probes.
            self.sorted_ptrs = sorted(filter(None, itertools.chain.from_iterable(
                self._columns(n)[0] for n in range(len(self._shards())))))
        ptrs = self.sorted_ptrs
        unlocked = any(locked for locked, _ in self._shards())
        k = bisect.bisect_right(ptrs, addr)
        below = self.find_exact(ptrs[k - 1])[0] if k > 0 else None
        above = self.find_exact(ptrs[k])[0] if k < len(ptrs) else None
        inside = below is not None and _gap(addr, below[0], below[1]) is None
        return below, above, inside, unlocked

    def live_block(self, addr):
        """(start, size) of the live block that starts at or contains ADDR,
        or None."""
        e = self.find_exact(addr)[0]
        if e is None:
            below, _, inside, _ = self.around(addr)
            e = below if inside else None
        return None if e is None else (e[0], e[1])

    def site_totals(self):
        """({stack: [bytes, blocks]}, live blocks, live bytes, unsure): unsure
        if some shard was locked."""
        sites, blocks, total, unsure = {}, 0, 0, False
        for n, (locked, _) in enumerate(self._shards()):
            cols = self._columns(n)
            unsure = unsure or locked
            for p, size, sid in zip(cols[0], cols[1], cols[3]):
                if p:
                    s = sites.get(sid)
                    if s is None:
                        sites[sid] = [size, 1]
                    else:
                        s[0] += size
                        s[1] += 1
                    blocks += 1
                    total += size
        return sites, blocks, total, unsure

    # -- freed history
    def _ring_pieces(self, begin, end):
        """Reads the slots of pushes BEGIN to END - 1, newest first, in
        pieces of one read each: yields (first push, stamps, ptrs, sizes)."""
        d = self.d
        cap, rs = d["freed_capacity"], d["freed_record_size"]
        per_read = max(1, _READ_CHUNK // rs)
        hi = end
        while hi > begin:
            # Pushes lo..hi-1 lie in consecutive slots: one lap of the ring.
            lo = max(begin, hi - per_read, (hi - 1) - (hi - 1) % cap)
            raw = self.t.read(d["freed_ring"] + (lo % cap) * rs, (hi - lo) * rs)
            if raw is None:
                _corrupt("freed history at %#x unreadable" % d["freed_ring"])
            q, w = memoryview(raw).cast("Q"), rs // 8
            yield (lo, q[d["freed_stamp"] // 8::w].tolist(), q[d["freed_ptr"] // 8::w].tolist(),
                   q[d["freed_size"] // 8::w].tolist())
            hi = lo

    def _ring(self):
        if self.ring is None:
            d = self.d
            cap = d["freed_capacity"]
            stamps, ptrs, sizes = array.array("Q"), array.array("Q"), array.array("Q")
            if d["freed_ring"] and cap:
                if d["freed_pushed"]:
                    pushed = self._counter("freed_pushed", 8, "freed-history push count")
                else:
                    # An older library does not say how many were pushed:
                    # the newest stamp in the whole ring does.
                    pushed = 0
                    for first, st, _, _ in self._ring_pieces(0, cap):
                        for j, s in enumerate(st):
                            if s > pushed and (s - 1) % cap == (first + j) % cap:
                                pushed = s
                for first, st, pt, sz in self._ring_pieces(max(0, pushed - cap), pushed):
                    for j in range(len(st) - 1, -1, -1):
                        # A slot is trusted only with the stamp of the push
                        # that finished there (see freed_history.c).
                        if st[j] == first + j + 1:
                            stamps.append(st[j])
                            ptrs.append(pt[j])
                            sizes.append(sz[j])
            self.ring = (stamps, ptrs, sizes)
        return self.ring

    def freed_around(self, addr, near_bytes, near_max):
        """(covering, near): the freed-history records covering ADDR, and
        the newest NEAR_MAX of those within NEAR_BYTES of it (_gap), each
        newest first, as dicts: mt_freed_find_around's rule."""
        d = self.d
        cap, rs = d["freed_capacity"], d["freed_record_size"]
        covering, near = [], []
        for stamp, ptr, size in zip(*self._ring()):
            gap = _gap(addr, ptr, size)
            if gap is None:
                out = covering
            elif len(near) < near_max and gap <= near_bytes:
                out = near
            else:
                continue
            raw = self.t.read(d["freed_ring"] + (stamp - 1) % cap * rs, rs)
            if raw is None:
                _corrupt("freed history at %#x unreadable" % d["freed_ring"])

            def u(field, fmt, raw=raw):
                return struct.unpack_from(fmt, raw, d[field])[0]
            out.append(dict(ptr=ptr, size=size,
                            alloc_seq=u("freed_alloc_seq", "<Q"),
                            free_seq=u("freed_free_seq", "<Q"),
                            alloc_stack=u("freed_alloc_stack", "<I"),
                            free_stack=u("freed_free_stack", "<I"),
                            alloc_thread=u("freed_alloc_thread", "<I"),
                            free_thread=u("freed_free_thread", "<I")))
        return covering, near

    def freed_count(self):
        return len(self._ring()[0])

    # -- stacks
    def stack(self, sid):
        """The return addresses of stack SID, or None where mt_stack_get
        finds none (so a torn freed-history record prints as print_trace
        prints it)."""
        if sid in self.stacks:
            return self.stacks[sid]
        d = self.d
        result = None
        bits = d["stack_chunk_bits"]
        c, w = sid >> bits, sid & ((1 << bits) - 1)
        if sid and c < d["stack_max_chunks"]:
            if c not in self.chunks:
                self.chunks[c] = self.t.u64(d["stack_chunks"] + 8 * c)
                if self.chunks[c] is None:
                    _corrupt("stack chunk table at %#x unreadable" % d["stack_chunks"])
            chunk = self.chunks[c]
            header = self.t.u64(chunk + 8 * w) if chunk else None
            if chunk and header is None:
                _corrupt("stack chunk %d at %#x unreadable" % (c, chunk))
            if header is not None and header & d["stack_present_bit"]:
                depth = header & d["stack_depth_mask"]
                if depth <= _MAX_DEPTH and w + d["stack_frames_offset"] + depth <= 1 << bits:
                    raw = self.t.read(chunk + 8 * (w + d["stack_frames_offset"]), 8 * depth)
                    if raw is None:
                        _corrupt("stack chunk %d at %#x unreadable" % (c, chunk))
                    result = list(struct.unpack("<%dQ" % depth, raw))
        self.stacks[sid] = result
        return result

    def _counter(self, name, size, what):
        b = self.t.read(self.d[name], size)
        if b is None:
            _corrupt("%s at %#x unreadable" % (what, self.d[name]))
        return struct.unpack("<I" if size == 4 else "<Q", b)[0]

    def stack_count(self):
        return self._counter("stack_count", 4, "stack count")

    # -- threads
    def thread_name(self, n):
        """Thread N's name as the request field memtrace-symbolize reads:
        its bytes in hex, or "-" when it has none."""
        d = self.d
        if d["threads"] and 0 < n <= d["threads_max"]:
            raw = self.t.read(d["threads"] + (n - 1) * d["threads_entry_size"]
                              + d["threads_name"], d["threads_name_size"])
            if raw is None:
                _corrupt("thread registry at %#x unreadable" % d["threads"])
            name = raw.split(b"\0", 1)[0]
            if name:
                return name.hex()
        return "-"

    def thread_count(self):
        return self._counter("threads_highest", 4, "thread count")

    def unwind_fallbacks(self):
        """Captures the cfi unwinder handed to libunwind; None from a
        memtrace that does not count them."""
        if not self.d["unwind_fallbacks"]:
            return None
        return self._counter("unwind_fallbacks", 8, "unwind fallback count")

    def allocations(self):
        v = self._counter("seq_counter", 8, "allocation counter")
        return v - 1 if v else 0

    def recording(self):
        """The recording words (src/runtime/recording.h): on, ever_off, seq, sec;
        None from a memtrace that cannot turn recording off."""
        if not self.d["recording"]:
            return None
        b = self.t.read(self.d["recording"], 32)
        if b is None:
            _corrupt("recording state at %#x unreadable" % self.d["recording"])
        return struct.unpack("<4Q", b)

    def version(self):
        """The library's version string; None from a memtrace older than
        the field."""
        if not self.d["version_string"]:
            return None
        b = self.t.read(self.d["version_string"], 64)
        if b is None or b"\0" not in b:
            _corrupt("version string at %#x unreadable" % self.d["version_string"])
        return b.split(b"\0", 1)[0].decode("ascii", "replace")
