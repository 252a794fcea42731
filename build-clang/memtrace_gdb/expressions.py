# SPDX-License-Identifier: LGPL-2.1-or-later
# EXPR to an address: evaluated in the frame's language without calling
# into the program; a value holding a heap pointer goes to handles.py.

import gdb

from .common import _M64, _fail
from .handles import _handle_address, _handle_kind


class _NoInferiorCalls:
    """While active, gdb refuses to call functions in the program. The
    command reads memory only: an expression must neither run the program
    (`memtrace malloc(5)`) nor make gdb copy a literal into it (gdb calls
    malloc there for `"abc" + 1`), which would change the tables being
    asked about and can hang with scheduler-locking on."""

    def __enter__(self):
        try:
            self.old = gdb.parameter("may-call-functions")
        except RuntimeError:  # a gdb older than 9 has no such setting
            self.old = None
        if self.old:
            gdb.execute("set may-call-functions off", to_string=True)
        return self

    def __exit__(self, *_):
        if self.old:
            gdb.execute("set may-call-functions on", to_string=True)


def _evaluate(expr):
    with _NoInferiorCalls():
        return gdb.parse_and_eval(expr)


def _eval_error(expr, e):
    _fail("cannot evaluate '%s': %s" % (expr, str(e).splitlines()[0] if str(e) else e))


def _address_in_memory(v, expr):
    """The address of V, which must be in the program's memory already."""
    try:
        # An array that is not in memory (a string literal, an array in a
        # convenience variable) has no address, and asking gdb for one makes
        # it copy the array into the program; its first element has an
        # address exactly when the array is in memory.
        while v.type.strip_typedefs().code == gdb.TYPE_CODE_ARRAY:
            v = v[0]
        a = v.address
    except gdb.error:
        a = None
    if a is None:
        _fail("%s is not a pointer or an address" % expr)
    return int(a) & _M64


def _address(expr, target):
    """(address, note) for EXPR: a pointer's or integer's value, an array's
    or function's or referenced object's address, or the heap pointer inside
    a handle (see _handle_address), computed without calling into the
    program. EXPR is parsed in the frame's language; NOTE is the "using"
    line for a handle, or ""."""
    with _NoInferiorCalls():
        try:
            v = gdb.parse_and_eval(expr)
            code = v.type.strip_typedefs().code
            # A C++ reference to a handle stands for the handle. gdb 13 shows
            # a Rust reference as a raw pointer, as it does a Box: `memtrace r`
            # asks about the address in it, `memtrace *r` about the handle.
            if code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
                r = v.referenced_value()
                if _handle_kind(r.type) is not None:
                    return _handle_address(r, expr, target)
                return _address_in_memory(r, expr), ""
            if code in (gdb.TYPE_CODE_ARRAY, gdb.TYPE_CODE_FUNC):
                return _address_in_memory(v, expr), ""
            if code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
                return _handle_address(v, expr, target)
            if code not in (gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM,
                            gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_CHAR):
                _fail("'%s' is a %s, not an address" % (expr, v.type))
            return int(v) & _M64, ""
        except gdb.GdbError:
            raise
        except (gdb.error, RuntimeError, ValueError, OverflowError) as e:
            _eval_error(expr, e)
