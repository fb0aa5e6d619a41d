//! Helpers shared by the unit tests.

use alloc::vec::Vec;

/// A deterministic pseudo-random byte stream (xorshift), so tests need no dependency.
pub(crate) fn noise(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}
