//! The learned and random policies: `AutoAugment`, `RandAugment` and
//! `TrivialAugmentWide` (AugMix, which mixes chains, has its own module).
//! Their ops and magnitudes are [`PolicyOp`](super::PolicyOp) and [`Space`].

use core::fmt;

use super::Drawing;
use super::policy::{AutoAugmentPolicy, SPACE_OPS, Space, push_policy_op};
use super::unit::{At, SizeKeeping, Targets};
use super::{Augment, invalid};
use crate::Result;
use crate::warp::Interpolation;

/// The most ops `RandAugment` draws per sample.
const MAX_RAND_OPS: u32 = 64;

/// `AutoAugment(policy, interpolation, fill)`: one of the policy's 25
/// sub-policies, each of its two ops with its probability.
///
/// ```
/// use tensorprep::train::{Augment, AutoAugment, AutoAugmentPolicy};
///
/// let a = AutoAugment::new(AutoAugmentPolicy::ImageNet);
/// assert_eq!(Augment::AutoAugment(a), Augment::auto_augment(AutoAugmentPolicy::ImageNet));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct AutoAugment {
    /// ImageNet, CIFAR-10 or SVHN.
    pub policy: AutoAugmentPolicy,
    /// For the geometric ops (torchvision's default: nearest).
    pub interpolation: Interpolation,
    /// Fill for the geometric ops (R, G, B).
    pub fill: [u8; 3],
}

impl AutoAugment {
    /// torchvision's `AutoAugment(policy)`: nearest, black fill.
    pub const fn new(policy: AutoAugmentPolicy) -> AutoAugment {
        AutoAugment {
            policy,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }
}

/// `RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation,
/// fill)`: `num_ops` ops drawn from the space, each at bin `magnitude`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandAugment {
    /// Ops per sample (torchvision: 2).
    pub num_ops: u32,
    /// The bin used (torchvision: 9).
    pub magnitude: u32,
    /// Bins in each op's range (torchvision: 31).
    pub num_magnitude_bins: u32,
    /// For the geometric ops.
    pub interpolation: Interpolation,
    /// Fill for the geometric ops (R, G, B).
    pub fill: [u8; 3],
}

impl RandAugment {
    /// torchvision's `RandAugment(num_ops, magnitude)`: 31 bins, nearest,
    /// black fill.
    pub const fn new(num_ops: u32, magnitude: u32) -> RandAugment {
        RandAugment {
            num_ops,
            magnitude,
            num_magnitude_bins: 31,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }
}

/// `TrivialAugmentWide(num_magnitude_bins, interpolation, fill)`: one op,
/// at a bin drawn uniformly.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct TrivialAugmentWide {
    /// Bins in each op's range (torchvision: 31).
    pub num_magnitude_bins: u32,
    /// For the geometric ops.
    pub interpolation: Interpolation,
    /// Fill for the geometric ops (R, G, B).
    pub fill: [u8; 3],
}

impl TrivialAugmentWide {
    /// torchvision's `TrivialAugmentWide()`: 31 bins, nearest, black fill.
    pub const fn new() -> TrivialAugmentWide {
        TrivialAugmentWide {
            num_magnitude_bins: 31,
            interpolation: Interpolation::Nearest,
            fill: [0; 3],
        }
    }
}

impl Default for TrivialAugmentWide {
    fn default() -> Self {
        TrivialAugmentWide::new()
    }
}

impl Augment {
    /// torchvision's `AutoAugment(policy)`: nearest, black fill.
    pub const fn auto_augment(policy: AutoAugmentPolicy) -> Augment {
        Augment::AutoAugment(AutoAugment::new(policy))
    }

    /// torchvision's `RandAugment(num_ops, magnitude)`: 31 bins, nearest,
    /// black fill.
    pub const fn rand_augment(num_ops: u32, magnitude: u32) -> Augment {
        Augment::RandAugment(RandAugment::new(num_ops, magnitude))
    }

    /// torchvision's `TrivialAugmentWide()`: 31 bins, nearest, black fill.
    pub const fn trivial_augment_wide() -> Augment {
        Augment::TrivialAugmentWide(TrivialAugmentWide::new())
    }
}

impl SizeKeeping for AutoAugment {
    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let mut d = at.draws();
        let sub = &self.policy.subpolicies()[d.below(25) as usize];
        let probs = [d.unit_f32(), d.unit_f32()];
        let signs = [d.below(2), d.below(2)];
        for (i, &(op, p, bin)) in sub.iter().enumerate() {
            if f64::from(probs[i]) <= p {
                let m = bin.map_or(0.0, |b| Space::Standard.magnitude(op, b, 10, size));
                let negate = signs[i] == 0;
                push_policy_op(op, m, negate, size, self.interpolation, self.fill, ops)?;
            }
        }
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl SizeKeeping for RandAugment {
    fn check(&self) -> Result<()> {
        if self.num_magnitude_bins < 2
            || self.magnitude >= self.num_magnitude_bins
            || self.num_ops > MAX_RAND_OPS
        {
            return Err(invalid(
                "RandAugment",
                "magnitude must be below num_magnitude_bins (at least 2), num_ops at most 64",
            ));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let mut d = at.draws();
        for _ in 0..self.num_ops {
            let op = SPACE_OPS[d.below(SPACE_OPS.len() as u32) as usize];
            let m = Space::Standard.magnitude(op, self.magnitude, self.num_magnitude_bins, size);
            let negate = op.signed() && d.below(2) == 1;
            push_policy_op(op, m, negate, size, self.interpolation, self.fill, ops)?;
        }
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl SizeKeeping for TrivialAugmentWide {
    fn check(&self) -> Result<()> {
        if self.num_magnitude_bins < 2 {
            return Err(invalid(
                "TrivialAugmentWide",
                "num_magnitude_bins must be at least 2",
            ));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let mut d = at.draws();
        let op = SPACE_OPS[d.below(SPACE_OPS.len() as u32) as usize];
        let bin = d.below(self.num_magnitude_bins);
        let m = Space::Wide.magnitude(op, bin, self.num_magnitude_bins, size);
        let negate = op.signed() && d.below(2) == 1;
        push_policy_op(op, m, negate, size, self.interpolation, self.fill, ops)?;
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for AutoAugment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AutoAugment {:?} {:?} fill {:?}",
            self.policy, self.interpolation, self.fill
        )
    }
}

impl fmt::Display for RandAugment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandAugment ops {} magnitude {}/{} {:?} fill {:?}",
            self.num_ops, self.magnitude, self.num_magnitude_bins, self.interpolation, self.fill
        )
    }
}

impl fmt::Display for TrivialAugmentWide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TrivialAugmentWide bins {} {:?} fill {:?}",
            self.num_magnitude_bins, self.interpolation, self.fill
        )
    }
}
