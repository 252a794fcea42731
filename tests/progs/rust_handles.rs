// SPDX-License-Identifier: LGPL-2.1-or-later
// Rust handles for the gdb helper's tests (tests/e2e/gdb_helper.sh): stopped
// in hold()'s frame, `memtrace v` on each Vec, String, Box, Rc and Arc must
// answer for the heap block inside it; a struct with two heap pointers lists
// them, one with a single heap pointer is asked about through it. Blocks are
// made at lines marked "SITE:<name>". Built at opt-level 0.
use std::rc::Rc;
use std::sync::Arc;

struct Pair {
    left: Box<u64>,
    right: Vec<u8>,
    count: u32,
}

struct Holder {
    only: Vec<u16>,
    count: u32,
}

#[inline(never)]
fn checkpoint(n: usize) -> usize {
    n + 1
}

#[inline(never)]
fn hold() -> usize {
    let v: Vec<u32> = vec![1, 2, 3, 4, 5, 6, 7, 8]; // SITE:rh_vec
    let s = String::from("a string long enough to be on the heap"); // SITE:rh_string
    // Box::default, not Box::new: rustc 1.63 inlines Box::new at opt-level 0
    // without saying so in the debug information, so its caller's line is lost.
    let b: Box<[u64; 12]> = Box::default(); // SITE:rh_box
    let slice: Box<[u8]> = Box::from(&b"bytes of a boxed slice"[..]); // SITE:rh_slice
    let rc = Rc::new(vec![1.5f64; 3]); // SITE:rh_rc
    let arc = Arc::new(99u64); // SITE:rh_arc
    let empty: Vec<u32> = Vec::new();
    let r = &v;
    let pair = Pair { left: Box::default(), right: vec![9; 40], count: 2 };
    let holder = Holder { only: vec![3; 10], count: 1 }; // SITE:rh_holder
    checkpoint(r.len() + s.len() + b.len() + slice.len() + rc.len() + *arc as usize + empty.len()
               + pair.right.len() + *pair.left as usize + pair.count as usize
               + holder.only.len() + holder.count as usize)
}

fn main() {
    println!("rust handles: {}", hold());
}
