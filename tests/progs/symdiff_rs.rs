// SPDX-License-Identifier: LGPL-2.1-or-later
// The symbolization differential test's Rust program
// (tests/e2e/symbolize_diff.sh), as symdiff_main.c is its C one: an
// inlined site (a Vec, SITE:rs_inlined), a plain one (a Box, SITE:rs_plain)
// and one in the C library libsymdiff.so (tests/progs/symdiff_lib.c), each
// block handed to print_trace (found with dlsym: it is there when
// libmemtrace is preloaded). Built by the script with debug information at
// opt-level 0 and 2. The blocks are large enough to be the profiler's
// sites at the peak, above the runtime's own allocations at start-up.
use std::ffi::c_void;
use std::os::raw::c_char;

extern "C" {
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn symdiff_lib_alloc(n: usize) -> *mut u8;
    fn free(p: *mut c_void);
}

#[inline(always)]
fn inlined_alloc(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n); // SITE:rs_inlined
    v.push(1);
    v
}

#[inline(never)]
fn plain_alloc() -> Box<[u8; 4022]> {
    Box::new([2u8; 4022]) // SITE:rs_plain
}

#[inline(never)]
fn run() {
    let a = inlined_alloc(4011);
    let b = plain_alloc();
    let c = unsafe { symdiff_lib_alloc(4033) };
    let pt = unsafe { dlsym(std::ptr::null_mut(), b"print_trace\0".as_ptr() as *const c_char) };
    if !pt.is_null() {
        let print_trace: extern "C" fn(*const c_void) = unsafe { std::mem::transmute(pt) };
        print_trace(a.as_ptr() as *const c_void);
        print_trace(&*b as *const [u8; 4022] as *const c_void);
        print_trace(c as *const c_void);
    }
    unsafe { free(c as *mut c_void) };
    // (a and b are used above: print_trace read their addresses)
    drop(a);
    drop(b);
}

fn main() {
    run();
}
