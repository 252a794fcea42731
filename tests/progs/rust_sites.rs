// SPDX-License-Identifier: LGPL-2.1-or-later
// Allocation sites for tests/e2e/rust.sh, each on a line marked "SITE:<name>":
// Vec::with_capacity, Box::new, format!, a BTreeMap insert, and a Vec in a
// thread named with std::thread::Builder::name. Each block stays live in a
// #[no_mangle] static (the map's is an interior pointer, to its value), and
// the program stops in rs_checkpoint(), a C-ABI function a debugger can
// break in, called from a closure in a trait method that holds one more block
// (RS_HELD, SITE:held) in a local: `memtrace refs` names that frame. Built
// at opt-level 0 and 1, with legacy and v0 mangling.
use std::collections::BTreeMap;
use std::thread;

#[no_mangle]
pub static mut RS_VEC: *const u8 = std::ptr::null();
#[no_mangle]
pub static mut RS_BOX: *const u64 = std::ptr::null();
#[no_mangle]
pub static mut RS_STRING: *const u8 = std::ptr::null();
#[no_mangle]
pub static mut RS_MAP: *const u64 = std::ptr::null();
#[no_mangle]
pub static mut RS_THREAD: *const u8 = std::ptr::null();
#[no_mangle]
pub static mut RS_HELD: *const u8 = std::ptr::null();

#[no_mangle]
#[inline(never)]
pub extern "C" fn rs_checkpoint() {
    unsafe { std::ptr::read_volatile(&RS_VEC) };
}

#[inline(never)]
fn make_buffer(n: usize) -> Vec<u8> {
    let v: Vec<u8> = Vec::with_capacity(n); // SITE:vec
    v
}

#[inline(never)]
fn make_box(x: u64) -> Box<[u64; 8]> {
    Box::new([x; 8]) // SITE:box
}

#[inline(never)]
fn make_string(n: usize) -> String {
    format!("rust_sites value {} twice {}", n, n * 2) // SITE:format
}

#[inline(never)]
fn fill_map(m: &mut BTreeMap<u32, u64>, k: u32) {
    m.insert(k, 1000 + k as u64); // SITE:btree
}

#[inline(never)]
fn worker_buffer() -> Vec<u8> {
    Vec::with_capacity(333) // SITE:thread
}

trait Holder {
    fn hold(&self, n: usize);
}

struct Keeper;

impl Holder for Keeper {
    #[inline(never)]
    fn hold(&self, n: usize) {
        let f = |k: usize| {
            let v: Vec<u8> = Vec::with_capacity(k); // SITE:held
            unsafe { RS_HELD = v.as_ptr() };
            rs_checkpoint();
            unsafe { std::ptr::read_volatile(&v.as_ptr()) };
        };
        f(n);
    }
}

fn main() {
    let v = std::mem::ManuallyDrop::new(make_buffer(1000));
    let b = Box::into_raw(make_box(7));
    let s = std::mem::ManuallyDrop::new(make_string(42));
    let m = Box::leak(Box::new(BTreeMap::new()));
    fill_map(m, 5);
    let worker = thread::Builder::new()
        .name("rs-worker".into())
        .spawn(|| std::mem::ManuallyDrop::new(worker_buffer()).as_ptr() as usize)
        .unwrap();
    let t = worker.join().unwrap();
    unsafe {
        RS_VEC = v.as_ptr();
        RS_BOX = b as *const u64;
        RS_STRING = s.as_ptr();
        RS_MAP = m.get(&5).unwrap();
        RS_THREAD = t as *const u8;
    }
    Keeper.hold(4321);
    println!("rust_sites: {} {} {} {}", v.capacity(), unsafe { (*b)[0] }, s.len(), m.len());
}
