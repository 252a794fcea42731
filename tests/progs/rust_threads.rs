// SPDX-License-Identifier: LGPL-2.1-or-later
// Four threads building and dropping maps and strings; prints a checksum.
use std::collections::HashMap;
use std::thread;

fn main() {
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            thread::Builder::new()
                .name(format!("worker-{}", t))
                .spawn(move || {
                    let mut sum = 0u64;
                    for round in 0..50u64 {
                        let mut m: HashMap<u64, String> = HashMap::new();
                        for i in 0..2000u64 {
                            m.insert(i, format!("{}-{}-{}", t, round, i));
                        }
                        sum += m.values().map(|s| s.len() as u64).sum::<u64>();
                    }
                    sum
                })
                .unwrap()
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    println!("rust threads: {}", total);
}
