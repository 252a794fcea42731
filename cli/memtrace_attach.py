# SPDX-License-Identifier: LGPL-2.1-or-later
# The gdb side of memtrace attach/detach (cli/memtrace.sh's attach_pid),
# sourced by gdb -batch: its last "@@ " line is "@@ ok TEXT" (TEXT is
# said) or "@@ MESSAGE" (the failure). The launcher passes what it is to
# do in the environment: MT_ATTACH_CMD (attach or detach), MT_ATTACH_PID,
# MT_ATTACH_LIB (the library's path) and MT_ATTACH_WAITING (this machine's
# numbers of the system calls a thread may be stopped in, from
# memtrace-symbolize --wait-syscalls).
import gdb
import os, re, time
cmd, pid, lib = os.environ["MT_ATTACH_CMD"], os.environ["MT_ATTACH_PID"], os.environ["MT_ATTACH_LIB"]
# The system calls a thread waits in holding no allocator or loader lock
# (read, poll, futex, ...: tools/launcher_requests.c names them), by this
# machine's numbers.
WAITING = {int(n) for n in os.environ["MT_ATTACH_WAITING"].split()}
def say(s):
    print("@@ " + s)
def run(c):
    return gdb.execute(c, to_string=True)
def cstr(s):
    out = ""
    for b in s.encode():
        c = chr(b)
        out += c if 32 <= b < 127 and c not in '"\\' else "\\%03o" % b
    return '"' + out + '"'
# A call into the process cut short by a signal gdb stopped for in the
# calling thread, and unwound (unwindonsignal): the process is as it was
# before the call, which can be made again.
UNWOUND = "GDB has restored the context to what it was before the call"
def call(expr):
    """EXPR's value, called in the chosen thread; a call unwound is made
    again, 10 times at most."""
    for _ in range(10):
        try:
            return int(gdb.parse_and_eval(expr))
        except gdb.error as e:
            if UNWOUND not in str(e):
                raise
    raise gdb.error("a call into the process was cut short by signals 10 times: " + expr)
def string_at(p):
    return gdb.parse_and_eval("(char *)%d" % p).string() if p else None
def maps():
    r = []
    for line in open("/proc/%s/maps" % pid):
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        r.append((lo, hi, f[5] if len(f) > 5 else ""))
    return r
def safe(t, regions):
    """T is stopped where it holds no allocator or loader lock: waiting in
    a system call, or running code outside libc and ld.so."""
    t.switch()
    pc = int(gdb.parse_and_eval("$pc")) & (2**64 - 1)
    try:
        insn = bytes(gdb.selected_inferior().read_memory(pc - 2, 2))
    except gdb.error:
        insn = b""
    if insn == b"\x0f\x05":
        return int(gdb.parse_and_eval("$orig_rax")) in WAITING
    for lo, hi, name in regions:
        if lo <= pc < hi:
            return not re.search(r"/(libc|ld-linux[^/]*|libpthread|libdl)[.-][^/]*$", name)
    return False
def attach():
    names = sorted(k for k in os.environ if k.startswith("MEMTRACE_") and k != "MEMTRACE_LIB")
    saved = {k: string_at(call("(long)getenv(%s)" % cstr(k))) for k in names + ["_MEMTRACE_ATTACH"]}
    for k in names:
        call("(int)setenv(%s, %s, 1)" % (cstr(k), cstr(os.environ[k])))
    call('(int)setenv("_MEMTRACE_ATTACH", "1", 1)')
    h = call("(long)dlopen(%s, 2)" % cstr(lib))
    err = None if h else (string_at(call("(long)dlerror()")) or "unknown error")
    # The settings were read by the library's constructor: the process's
    # environment goes back to what it was.
    for k, v in saved.items():
        if v is None:
            call("(int)unsetenv(%s)" % cstr(k))
        else:
            call("(int)setenv(%s, %s, 1)" % (cstr(k), cstr(v)))
    if err:
        return "attach: could not load %s into process %s (%s); the process was left as it was" % (lib, pid, err)
    run("sharedlibrary /libmemtrace")
    rc = call("(int)memtrace_attach()")
    if rc == 1:
        return "attach: process %s is traced by memtrace already" % pid
    if rc:
        return "attach: memtrace could not start in process %s (code %d); %s stays loaded, idle" % (pid, rc, os.path.basename(lib))
    return None
def main():
    run("set pagination off")
    run("set confirm off")
    run("set auto-solib-add off")
    # Every signal the program gets goes to it, gdb not stopping: its
    # handlers run as they would (also on the calling thread's stack,
    # during a call). A stop for a signal in another thread would abandon
    # the call on its thread's stack, a frame returning into nothing
    # once gdb has gone (and gdb 13 muddles the threads' registers
    # then); one in the calling thread is unwound (unwindonsignal), the
    # process left as before the call. That leaves gdb's own SIGTRAP and
    # SIGINT; a fault in a call goes to the program as any fault would.
    run("handle all nostop noprint pass")
    run("set unwindonsignal on")
    # The pause is the time gdb holds the process: no debug information.
    run("set debug-file-directory /nonexistent")
    try:
        t0 = time.monotonic()
        run("attach " + pid)
    except gdb.error as e:
        m = str(e).splitlines()[0]
        if "not permitted" in m:
            return "%s: not permitted to trace process %s (%s; see kernel.yama.ptrace_scope, run as its user or root)" % (cmd, pid, m)
        return "%s: gdb could not attach to process %s: %s" % (cmd, pid, m)
    try:
        run("sharedlibrary /libc[.]so")
        run("sharedlibrary /libmemtrace")
        regions = maps()
        threads = sorted(gdb.selected_inferior().threads(), key=lambda t: t.num)
        chosen = next((t for t in threads if safe(t, regions)), None)
        tries = 0
        while chosen is None and tries < 20:
            threads[0].switch()
            run("finish")
            tries += 1
            chosen = threads[0] if safe(threads[0], regions) else None
        if chosen is None:
            return "%s: no thread of process %s stopped outside libc; nothing was changed, try again" % (cmd, pid)
        chosen.switch()
        if cmd == "attach":
            err = attach()
        else:
            rc = call("(int)memtrace_detach()")
            err = None if rc == 0 else "detach: memtrace is not attached to process %s" % pid
    finally:
        run("detach")
        ms = (time.monotonic() - t0) * 1000
    if err:
        return err
    return "ok %s process %s (%s; it was stopped for %.0f ms)" % (
        "attached to" if cmd == "attach" else "detached from", pid, os.path.basename(lib), ms)
try:
    say(main())
except gdb.error as e:
    say("%s: gdb failed on process %s: %s" % (cmd, pid, str(e).splitlines()[0]))
