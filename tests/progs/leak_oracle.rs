// SPDX-License-Identifier: LGPL-2.1-or-later
// A Rust program for the differential leak test against valgrind
// (tests/e2e/leak_oracle.sh): a map of strings kept in a static (still
// reachable), a boxed vector of strings forgotten (definitely lost, holding
// the vector's buffer and its strings indirectly), and work freed as usual.
use std::collections::BTreeMap;
use std::sync::Mutex;

static KEPT: Mutex<Option<BTreeMap<u32, String>>> = Mutex::new(None);

#[inline(never)]
fn lose() {
    let lost: Box<Vec<String>> = Box::new((0..10).map(|i| format!("lost {}", i)).collect());
    std::mem::forget(lost);
}

fn main() {
    let kept: BTreeMap<u32, String> = (0..20).map(|i| (i, format!("kept {}", i))).collect();
    *KEPT.lock().unwrap() = Some(kept);
    let freed: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    println!("{}", freed.len());
    lose();
}
