//! Randomness that does not depend on threads: every draw is a pure function
//! of (seed, epoch, sample index, op position, draw number), computed by the
//! counter-based generator Philox4x32-10 (Salmon et al., SC'11; the
//! generator of cuRAND, JAX and TensorFlow's stateless ops). No generator
//! state travels between samples or threads, so one seed gives the same
//! tensors for any worker count, in any arrival order, after any resume.

#![forbid(unsafe_code)]

/// Which sample of which epoch the draws are for, under which seed.
///
/// ```
/// use tensorprep::train::{Draws, SampleKey};
///
/// let key = SampleKey { seed: 7, epoch: 0, index: 41 };
/// // The same key and op position give the same draws wherever they are made.
/// let (mut a, mut b) = (Draws::new(key, 2), Draws::new(key, 2));
/// assert_eq!(a.next_u32(), b.next_u32());
/// assert_ne!(Draws::new(key, 3).next_u32(), Draws::new(key, 2).next_u32());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SampleKey {
    /// The run's seed.
    pub seed: u64,
    /// The epoch (each epoch draws anew).
    pub epoch: u32,
    /// The sample's index in the dataset (not its position in the epoch's
    /// order: a sample draws the same whichever worker or batch takes it).
    pub index: u64,
}

impl SampleKey {
    /// The key of sample `index` in `epoch` under `seed`.
    pub const fn new(seed: u64, epoch: u32, index: u64) -> SampleKey {
        SampleKey { seed, epoch, index }
    }
}

/// The draws of one op for one sample: a stream of 32-bit words, Philox's
/// output for the counter (epoch, index, op position, block).
#[derive(Clone, Debug)]
pub struct Draws {
    key: [u32; 2],
    counter: [u32; 4],
    block: [u32; 4],
    used: usize,
}

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32 with 10 rounds: one 128-bit counter to four words.
pub(crate) fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let p0 = u64::from(M0) * u64::from(c0);
        let p1 = u64::from(M1) * u64::from(c2);
        (c0, c1, c2, c3) = (
            (p1 >> 32) as u32 ^ c1 ^ k0,
            p1 as u32,
            (p0 >> 32) as u32 ^ c3 ^ k1,
            p0 as u32,
        );
    }
    [c0, c1, c2, c3]
}

impl Draws {
    /// The draws of the op at `op` (its position in the pipeline, nested
    /// ops numbered in order) for the sample `key`.
    pub fn new(key: SampleKey, op: u16) -> Draws {
        Draws {
            key: [key.seed as u32, (key.seed >> 32) as u32],
            counter: [
                key.epoch,
                key.index as u32,
                (key.index >> 32) as u32,
                u32::from(op) << 16,
            ],
            block: [0; 4],
            used: 4,
        }
    }

    /// The next word.
    pub fn next_u32(&mut self) -> u32 {
        if self.used == 4 {
            self.block = philox4x32_10(self.counter, self.key);
            // The low 16 bits of the last word count blocks: 2^18 words per
            // op and sample, far more than any op draws.
            self.counter[3] =
                (self.counter[3] & 0xFFFF_0000) | (self.counter[3].wrapping_add(1) & 0xFFFF);
            self.used = 0;
        }
        self.used += 1;
        self.block[self.used - 1]
    }

    /// A float in `[0, 1)` with 24 random bits: what `torch.rand` draws in
    /// float32.
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
    }

    /// A float in `[0, 1)` with 53 random bits (two words).
    pub fn unit_f64(&mut self) -> f64 {
        let hi = u64::from(self.next_u32()) << 21;
        let lo = u64::from(self.next_u32() >> 11);
        (hi | lo) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `torch.empty(1).uniform_(lo, hi).item()`: a float32 uniform in
    /// `[lo, hi)`, widened to f64 as Python sees it.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let (lo, hi) = (lo as f32, hi as f32);
        f64::from(lo + (hi - lo) * self.unit_f32())
    }

    /// `torch.rand(1) < p`: true with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        f64::from(self.unit_f32()) < p
    }

    /// An integer uniform in `[0, n)` (`torch.randint(0, n)`), without bias
    /// (Lemire's multiply-and-reject). `n` must be positive.
    pub fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let n64 = u64::from(n);
        loop {
            let m = u64::from(self.next_u32()) * n64;
            let low = m as u32;
            // Reject the few low products that would favour some results.
            if low >= n.wrapping_neg() % n {
                return (m >> 32) as u32;
            }
        }
    }

    /// An index drawn with probability proportional to `weights`
    /// (`random.choices(range(n), weights)`); uniform when every weight is
    /// equal.
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = f64::from(self.unit_f32()) * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len().saturating_sub(1)
    }
}

/// Box-Muller: a standard normal value from `u1` in `(0, 1]` and `u2` in
/// `[0, 1)`.
pub(crate) fn box_muller(u1: f64, u2: f64) -> f64 {
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * core::f64::consts::PI * u2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_matches_random123_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn draws_are_uniform_and_keys_independent() {
        // 20 buckets over 100,000 draws: each within 5% of 5,000.
        let mut d = Draws::new(SampleKey::new(1, 2, 3), 4);
        let mut buckets = [0u32; 20];
        for _ in 0..100_000 {
            buckets[d.below(20) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&b| (4750..=5250).contains(&b)),
            "{buckets:?}"
        );
        // Neighbouring samples, epochs and ops draw different streams.
        let first = |k: SampleKey, op| Draws::new(k, op).next_u32();
        let base = first(SampleKey::new(1, 0, 0), 0);
        assert_ne!(base, first(SampleKey::new(1, 0, 1), 0));
        assert_ne!(base, first(SampleKey::new(1, 1, 0), 0));
        assert_ne!(base, first(SampleKey::new(2, 0, 0), 0));
        assert_ne!(base, first(SampleKey::new(1, 0, 0), 1));
        let p = (0..10_000).filter(|_| d.chance(0.25)).count();
        assert!((2300..=2700).contains(&p), "{p}");
        let u = d.uniform(0.08, 1.0);
        assert!((0.08..1.0).contains(&u));
    }
}
