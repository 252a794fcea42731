# SPDX-License-Identifier: LGPL-2.1-or-later
# Values that own a heap block through a pointer inside them (a Rust Vec,
# a C++ std::vector, any struct with one pointer into a live block): the
# pointer `memtrace EXPR` asks about, and the "using" line saying which.

import collections
import re

import gdb

from .common import _M64, _fail
from .session import _session


# Types that own a heap block through a pointer inside them. `memtrace v` on
# one asks about that block. Each kind: a pattern for the type's name without
# its generic or template arguments; what the pointer is, for the "using"
# line; field paths to try first (gdb finds inherited and anonymous members
# by name); what one without a block is called; where its control block is,
# for a shared pointer. Where no path fits (another version of the Rust or
# C++ library), the first pointer in the value, depth first, is used: for
# each kind below that is the one.
_Handle = collections.namedtuple("_Handle", "pattern what paths empty control")
_HANDLES = [
    _Handle(r"alloc::vec::Vec", "the Vec's buffer",
            ["buf.ptr.pointer.pointer", "buf.ptr.pointer", "buf.inner.ptr.pointer.pointer"],
            "an empty Vec", None),
    _Handle(r"alloc::string::String", "the String's buffer",
            ["vec.buf.ptr.pointer.pointer", "vec.buf.ptr.pointer",
             "vec.buf.inner.ptr.pointer.pointer"], "an empty String", None),
    _Handle(r"alloc::collections::vec_deque::VecDeque", "the VecDeque's buffer",
            ["buf.ptr.pointer.pointer", "buf.ptr.pointer"], "an empty VecDeque", None),
    # A Box of a sized value is a plain pointer to gdb; a Box of a slice or
    # a trait object is a pointer and a length or vtable.
    _Handle(r"alloc::boxed::Box", "the Box's allocation", ["data_ptr", "pointer"],
            "a Box of a zero-sized value", None),
    _Handle(r"alloc::rc::Rc", "the Rc's allocation: its counts and value", ["ptr.pointer"],
            None, None),
    _Handle(r"alloc::rc::Weak", "the Weak's allocation: its counts and value",
            ["ptr.pointer"], "a Weak made by Weak::new", None),
    _Handle(r"alloc::sync::Arc", "the Arc's allocation: its counts and value", ["ptr.pointer"],
            None, None),
    _Handle(r"alloc::sync::Weak", "the Weak's allocation: its counts and value",
            ["ptr.pointer"], "a Weak made by Weak::new", None),
    _Handle(r"std::(__\w+::)*vector", "the vector's buffer", ["_M_impl._M_start"],
            "an empty vector", None),
    _Handle(r"std::(__\w+::)*basic_string", "the string's characters", ["_M_dataplus._M_p"],
            None, None),
    # Its pointer sits in a tuple's base class: no path names it without
    # ambiguity, the search finds it.
    _Handle(r"std::(__\w+::)*unique_ptr", "the unique_ptr's object", [],
            "an empty unique_ptr", None),
    _Handle(r"std::(__\w+::)*(__)?shared_ptr", "the shared_ptr's object", ["_M_ptr"],
            "an empty shared_ptr", "_M_refcount._M_pi"),
    _Handle(r"std::(__\w+::)*(__)?weak_ptr", "the weak_ptr's object", ["_M_ptr"],
            "an empty weak_ptr", "_M_refcount._M_pi"),
]
# Bounds on the search for pointers inside a value: a unique_ptr's pointer
# is 6 levels down; a large struct is not walked whole.
_MAX_FIELD_DEPTH = 8
_MAX_FIELDS_SEEN = 256
_MAX_LISTED = 8
# Below this a pointer cannot hold a heap block: null, or the dangling,
# aligned pointer of an empty Rust Vec. All ones is Rust's Weak::new.
_FIRST_PAGE = 4096


def _type_name(t):
    t = t.strip_typedefs()
    name = t.tag or t.name or str(t)
    return name.split("<", 1)[0].strip()


def _handle_kind(t):
    name = _type_name(t)
    for kind in _HANDLES:
        if re.fullmatch(kind.pattern, name):
            return kind
    return None


def _is_rust_enum(t):
    """gdb gives a Rust enum a nameless field, its discriminant, that is not
    an anonymous struct or union as in C and C++. Its variants overlap and
    only gdb's printer knows which one is live: no pointer is read there."""
    return any(f.name is None and not f.is_base_class and f.type is not None
               and f.type.strip_typedefs().code not in (gdb.TYPE_CODE_STRUCT,
                                                        gdb.TYPE_CODE_UNION)
               for f in t.fields())


def _field_name(name):
    # Rust's tuple fields are __0, __1 in the debug information, .0 in code.
    return name[2:] if re.fullmatch(r"__\d+", name) else name


def _follow(v, path):
    """The pointer at PATH ("a.b.c") in V, or None if V has no such field
    or it is not a pointer."""
    try:
        for name in path.split("."):
            v = v[name]
    except (gdb.error, KeyError, TypeError):
        return None
    return v if v.type.strip_typedefs().code == gdb.TYPE_CODE_PTR else None


def _pointer_fields(v):
    """[(path, pointer)] of the data pointers inside struct or union V, depth
    first in declaration order, base classes included (they add nothing to
    the path, as C++ names inherited members directly); vtable and function
    pointers left out. Bounded by _MAX_FIELD_DEPTH and _MAX_FIELDS_SEEN."""
    found = []
    seen = 0

    def walk(val, path, depth):
        nonlocal seen
        t = val.type.strip_typedefs()
        if depth > _MAX_FIELD_DEPTH or _is_rust_enum(t):
            return
        for f in t.fields():
            seen += 1
            if seen > _MAX_FIELDS_SEEN:
                return
            if not hasattr(f, "bitpos") or f.type is None:  # a static member
                continue
            ft = f.type.strip_typedefs()
            sub = path if f.is_base_class or not f.name else path + [_field_name(f.name)]
            if ft.code == gdb.TYPE_CODE_PTR:
                if (f.name or "").startswith("_vptr") or \
                        ft.target().strip_typedefs().code == gdb.TYPE_CODE_FUNC:
                    continue
                found.append((".".join(sub), val[f]))
            elif ft.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
                walk(val[f], sub, depth + 1)

    walk(v, [], 0)
    return found


def _shown(expr, path):
    """How a user writes field PATH of EXPR."""
    if not re.fullmatch(r"[A-Za-z_$][\w$]*((::|\.|->)[A-Za-z_$][\w$]*|\[\d+\])*", expr):
        expr = "(%s)" % expr
    return "%s.%s" % (expr, path) if path else expr


def _handle_address(v, expr, target):
    """(address, note) for a struct, union or class value V: the heap pointer
    inside a known handle (a Vec, a std::vector, ...); otherwise its only
    pointer field into a live heap block. Anything else fails with the list
    of its pointer fields to choose from."""
    kind = _handle_kind(v.type)
    if kind is None:
        return _pointer_field_address(v, expr, target)
    what, empty = kind.what, kind.empty
    path = ptr = None
    for p in kind.paths:
        ptr = _follow(v, p)
        if ptr is not None:
            path = p
            break
    else:
        fields = _pointer_fields(v)
        if not fields:
            _fail("'%s' is a %s, but memtrace finds no pointer in it" % (expr, v.type))
        path, ptr = fields[0]
    shown = _shown(expr, path)
    addr = int(ptr) & _M64
    if addr < _FIRST_PAGE or addr == _M64:
        if empty:
            _fail("%s is %s: %s is %#x, not a heap block" % (expr, empty, shown, addr))
        _fail("%s (%s) is %#x, not a heap block" % (shown, what, addr))
    # Only a string points into itself: at its characters, when they are
    # few enough to be kept in the object (short-string optimisation).
    start = v.address
    if start is not None and 0 <= addr - (int(start) & _M64) < v.type.sizeof:
        _fail("%s: %s are inside the object (short-string optimisation), not on the "
              "heap: %s is %#x" % (expr, what, shown, addr))
    note = "memtrace: using %s (%s)" % (shown, what)
    control = _follow(v, kind.control) if kind.control else None
    if control is not None and int(control):
        # make_shared puts the object and the control block in one block.
        block, cb = _session.get(target)[0].live_block(addr), int(control) & _M64
        if block is None or not 0 <= cb - block[0] < max(block[1], 1):
            note += "; its control block %s at %#x is another block" % (
                _shown(expr, kind.control), cb)
        else:
            note += ", in one block with its control block"
    return addr, note + "\n"


def _pointer_field_address(v, expr, target):
    fields = _pointer_fields(v)
    if not fields:
        _fail("'%s' is a %s with no pointer fields, not an address" % (expr, v.type))
    st = _session.get(target)[0]
    live = [(path, int(p) & _M64) for path, p in fields if st.live_block(int(p) & _M64)]
    if len(live) == 1:
        path, addr = live[0]
        return addr, ("memtrace: using %s (the only pointer field of '%s' into a live heap "
                      "block)\n" % (_shown(expr, path), expr))
    lines = ["memtrace: '%s' is a %s, not an address; its pointer fields (ask about one, "
             "e.g. `memtrace %s`):" % (expr, v.type, _shown(expr, (live or fields)[0][0]))]
    for path, p in fields[:_MAX_LISTED]:
        addr = int(p) & _M64
        lines.append("  %s = %#x%s" % (_shown(expr, path), addr,
                                       " (in a live heap block)" if st.live_block(addr) else ""))
    if len(fields) > _MAX_LISTED:
        lines.append("  ... and %d more" % (len(fields) - _MAX_LISTED))
    raise gdb.GdbError("\n".join(lines))
