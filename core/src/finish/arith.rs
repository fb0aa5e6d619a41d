//! The float32 finish computed instead of looked up, for the vector kernels.
//!
//! The tables hold `(v / divisor - mean) / std` in float32 for every byte
//! value: two divisions, each rounded once. A vector kernel cannot look up a
//! 256-entry table per element cheaply (gathers are slow, AMD's especially),
//! and a division per element is slower than the look-up. So each division is
//! a multiplication by the reciprocal carried to twice float32's precision
//! (`r = hi + lo`), rounded once: `x / d = fma(x, hi, x * lo)`. Its error is
//! far below half a unit in the last place, so it is the correctly rounded
//! quotient for nearly every input. "Nearly" is
//! settled here, per finisher: each channel's formula is run on all 256 byte
//! values and kept only if it reproduces the table bit for bit (the byte is
//! the only input, so that check is exhaustive). The vector kernels compute
//! the same fused operations lane by lane, so they equal the tables too.

use super::Normalize;

/// A reciprocal `1 / d` as two float32s, `hi` (rounded) and `lo` (the rest).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Recip {
    pub(super) hi: f32,
    pub(super) lo: f32,
}

impl Recip {
    fn of(d: f32) -> Recip {
        let exact = 1.0 / f64::from(d);
        let hi = exact as f32;
        Recip {
            hi,
            lo: (exact - f64::from(hi)) as f32,
        }
    }

    /// `x / d`: one rounding of `x * hi + round(x * lo)`.
    fn div(self, x: f32) -> f32 {
        libm::fmaf(x, self.hi, x * self.lo)
    }
}

/// One colour's constants, checked against its table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Channel {
    /// `1 / divisor`.
    pub(super) divisor: Recip,
    /// The mean subtracted.
    pub(super) mean: f32,
    /// `1 / std`.
    pub(super) std: Recip,
}

impl Channel {
    fn new(n: &Normalize, c: usize) -> Channel {
        // A multiplication by the float32 `1 / std` is that product rounded
        // once: the reciprocal as `hi` alone.
        let std = if n.std_reciprocal {
            Recip {
                hi: 1.0 / n.std[c],
                lo: 0.0,
            }
        } else {
            Recip::of(n.std[c])
        };
        Channel {
            divisor: Recip::of(n.divisor),
            mean: n.mean[c],
            std,
        }
    }

    /// The value for byte `v`, as the vector kernels compute it.
    pub(super) fn apply(&self, v: u8) -> f32 {
        let q = self.divisor.div(f32::from(v));
        self.std.div(q - self.mean)
    }
}

/// The three colours' constants (R, G, B), if every one reproduces its
/// table for all 256 byte values; `None` otherwise (the tables are used).
pub(super) fn checked(n: &Normalize) -> Option<[Channel; 3]> {
    let channels = [0, 1, 2].map(|c| Channel::new(n, c));
    let exact = channels
        .iter()
        .enumerate()
        .all(|(c, ch)| (0..=255u8).all(|v| ch.apply(v).to_bits() == n.apply(c, v).to_bits()));
    exact.then_some(channels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_statistics_are_computed_exactly() {
        let clip = Normalize {
            mean: [0.481_454_66, 0.457_827_5, 0.408_210_73],
            std: [0.268_629_54, 0.261_302_6, 0.275_777_1],
            divisor: 255.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        };
        let half = Normalize {
            mean: [0.5; 3],
            std: [0.5; 3],
            divisor: 255.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        };
        // TFLite / MindSpore: mean and std in 0-255 units.
        let bytes = Normalize {
            mean: [123.675, 116.28, 103.53],
            std: [58.395, 57.12, 57.375],
            divisor: 1.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        };
        for n in [
            Normalize::IMAGENET,
            Normalize::UNIT,
            Normalize::TO_DTYPE_SCALE,
            Normalize::RAW,
            clip,
            half,
            bytes,
        ] {
            assert!(checked(&n).is_some(), "{n:?}");
        }
    }

    #[test]
    fn a_formula_that_misses_one_value_is_not_used() {
        // Random statistics: whenever the check passes, every value matches
        // (the check is the definition); count how often it passes.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut passed = 0;
        for _ in 0..2000 {
            let n = Normalize {
                mean: [next(), next(), next()],
                std: [0.05 + next(), 0.05 + next(), 0.05 + next()],
                divisor: if next() < 0.5 {
                    255.0
                } else {
                    1.0 + 300.0 * next()
                },
                std_reciprocal: false,
                second_std: [1.0; 3],
            };
            if let Some(ch) = checked(&n) {
                passed += 1;
                for (c, ch) in ch.iter().enumerate() {
                    for v in 0..=255u8 {
                        assert_eq!(ch.apply(v).to_bits(), n.apply(c, v).to_bits());
                    }
                }
            }
        }
        // The two-part reciprocal is almost always exact.
        assert!(passed > 1900, "{passed} of 2000");
    }
}
