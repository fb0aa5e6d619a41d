//! torchvision's `AugMix(severity, mixture_width, chain_depth, alpha,
//! all_ops)`: `mixture_width` chains of 1 to 3 ops from AugMix's space,
//! each applied to the original, mixed with Dirichlet weights and blended
//! with the original by a Beta weight.
//!
//! The chains' ops are the PIL-path kernels of the other policies;
//! torchvision's AugMix runs its ops on tensors (`grid_sample` warps,
//! tensor colour kernels), whose pixels differ: the mixing arithmetic is
//! torchvision's (float32 `w * image` sums, truncated), the ops are not.

use alloc::vec::Vec;
use core::fmt;

use super::Drawing;
use super::policy::{PolicyOp, Space, push_policy_op};
use super::unit::{At, SizeKeeping, Targets};
use super::{Drawn, invalid};
use crate::Result;
use crate::train::mix::{beta_pair, gamma};
use crate::warp::Interpolation;

/// `AugMix(severity=3, mixture_width=3, chain_depth=-1, alpha=1.0,
/// all_ops=True, interpolation=BILINEAR)`.
///
/// ```
/// use tensorprep::train::AugMix;
///
/// let a = AugMix::new();
/// assert_eq!((a.severity, a.mixture_width, a.chain_depth), (3, 3, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct AugMix {
    /// Magnitude bins used, of 10 (1 to 10).
    pub severity: u32,
    /// Chains mixed (1 to 16).
    pub mixture_width: u32,
    /// Ops per chain; 0 draws 1 to 3 per chain.
    pub chain_depth: u32,
    /// The Dirichlet and Beta parameter.
    pub alpha: f64,
    /// Also the colour ops (brightness, colour, contrast, sharpness).
    pub all_ops: bool,
    /// For the geometric ops.
    pub interpolation: Interpolation,
    /// Fill for the geometric ops (R, G, B).
    pub fill: [u8; 3],
}

/// AugMix's space: the ops of `all_ops=False`, then the colour ones.
const OPS: [PolicyOp; 13] = [
    PolicyOp::ShearX,
    PolicyOp::ShearY,
    PolicyOp::TranslateX,
    PolicyOp::TranslateY,
    PolicyOp::Rotate,
    PolicyOp::Posterize,
    PolicyOp::Solarize,
    PolicyOp::AutoContrast,
    PolicyOp::Equalize,
    PolicyOp::Brightness,
    PolicyOp::Color,
    PolicyOp::Contrast,
    PolicyOp::Sharpness,
];

impl AugMix {
    /// torchvision's defaults.
    pub const fn new() -> AugMix {
        AugMix {
            severity: 3,
            mixture_width: 3,
            chain_depth: 0,
            alpha: 1.0,
            all_ops: true,
            interpolation: Interpolation::Bilinear,
            fill: [0; 3],
        }
    }
}

impl SizeKeeping for AugMix {
    fn check(&self) -> Result<()> {
        if !(1..=10).contains(&self.severity) {
            return Err(invalid("AugMix", "severity must be 1 to 10"));
        }
        if !(1..=16).contains(&self.mixture_width) || self.chain_depth > 16 {
            return Err(invalid(
                "AugMix",
                "mixture_width 1 to 16, chain_depth at most 16",
            ));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(invalid("AugMix", "alpha must be positive"));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        // m = Dirichlet([alpha, alpha]); weights = Dirichlet(alpha * width) * m[1].
        let (m0, m1) = beta_pair(d, self.alpha);
        let width = self.mixture_width as usize;
        let mut weights = [0f64; 16];
        for w in &mut weights[..width] {
            *w = gamma(d, self.alpha);
        }
        let sum: f64 = weights[..width].iter().sum();
        ops.push(Drawn::AugMix(AugMixStep::Start { weight: m0 as f32 }))?;
        let space = if self.all_ops { &OPS[..] } else { &OPS[..9] };
        for w in &weights[..width] {
            let weight = if sum > 0.0 {
                w / sum
            } else {
                1.0 / width as f64
            };
            ops.push(Drawn::AugMix(AugMixStep::Chain))?;
            let depth = if self.chain_depth > 0 {
                self.chain_depth
            } else {
                1 + d.below(3)
            };
            for _ in 0..depth {
                let op = space[d.below(space.len() as u32) as usize];
                let bin = d.below(self.severity);
                let m = Space::AugMix.magnitude(op, bin, 10, size);
                let negate = op.signed() && d.below(2) == 1;
                push_policy_op(op, m, negate, size, self.interpolation, self.fill, ops)?;
            }
            // torch: combined weights in float32.
            let combined = (weight as f32) * (m1 as f32);
            ops.push(Drawn::AugMix(AugMixStep::Add { weight: combined }))?;
        }
        ops.push(Drawn::AugMix(AugMixStep::End))?;
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Refused(
            "AugMix blends copies of the image warped differently: no one geometry moves its targets",
        )
    }
}

impl Default for AugMix {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for AugMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AugMix severity {} width {} depth {} alpha {} all_ops {} {:?} fill {:?}",
            self.severity,
            self.mixture_width,
            self.chain_depth,
            self.alpha,
            self.all_ops,
            self.interpolation,
            self.fill
        )
    }
}

/// One step of a drawn AugMix, run in place on the current 8-bit image.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum AugMixStep {
    /// Keep the image as the original; the mixture starts as `weight *` it.
    Start {
        /// The original's weight.
        weight: f32,
    },
    /// A chain starts from the original.
    Chain,
    /// The chain's image joins the mixture with `weight`.
    Add {
        /// The chain's weight.
        weight: f32,
    },
    /// The mixture becomes the image (truncated to 8 bits).
    End,
}

/// AugMix's buffers: the original image and the float mixture.
#[derive(Debug, Default)]
pub(crate) struct Mixing {
    original: Vec<u8>,
    mixture: Vec<f32>,
}

impl AugMixStep {
    /// Runs the step on `image` (the current image's bytes).
    pub(crate) fn run(self, image: &mut [u8], m: &mut Mixing) -> Result<()> {
        match self {
            AugMixStep::Start { weight } => {
                m.original.clear();
                m.original.extend_from_slice(image);
                m.mixture.clear();
                m.mixture
                    .extend(image.iter().map(|&v| weight * f32::from(v)));
            }
            AugMixStep::Chain => {
                if m.original.len() != image.len() {
                    return Err(invalid("AugMix", "a chain changed the image's size"));
                }
                image.copy_from_slice(&m.original);
            }
            AugMixStep::Add { weight } => {
                if m.mixture.len() != image.len() {
                    return Err(invalid("AugMix", "a chain changed the image's size"));
                }
                for (s, &v) in m.mixture.iter_mut().zip(image.iter()) {
                    *s += weight * f32::from(v);
                }
            }
            AugMixStep::End => {
                if m.mixture.len() != image.len() {
                    return Err(invalid("AugMix", "a chain changed the image's size"));
                }
                for (o, &s) in image.iter_mut().zip(&m.mixture) {
                    *o = s.clamp(0.0, 255.0) as u8;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// torchvision's mixing: `w0 * original + sum(w_i * chain_i)` in
    /// float32, truncated to bytes; each chain starts from the original.
    #[test]
    fn mixing_is_torchvision_s_arithmetic() {
        let original = [10u8, 200, 255, 0];
        let mut image = original;
        let mut m = Mixing::default();
        AugMixStep::Start { weight: 0.3 }
            .run(&mut image, &mut m)
            .unwrap();
        AugMixStep::Chain.run(&mut image, &mut m).unwrap();
        image = [20, 100, 255, 7];
        AugMixStep::Add { weight: 0.45 }
            .run(&mut image, &mut m)
            .unwrap();
        AugMixStep::Chain.run(&mut image, &mut m).unwrap();
        assert_eq!(image, original, "a chain starts from the original");
        image = [0, 0, 255, 255];
        AugMixStep::Add { weight: 0.25 }
            .run(&mut image, &mut m)
            .unwrap();
        AugMixStep::End.run(&mut image, &mut m).unwrap();
        let want: [u8; 4] = core::array::from_fn(|k| {
            let mut s = 0.3f32 * f32::from(original[k]);
            s += 0.45f32 * f32::from([20u8, 100, 255, 7][k]);
            s += 0.25f32 * f32::from([0u8, 0, 255, 255][k]);
            s as u8
        });
        assert_eq!(image, want);
        // A chain that changed the size is refused.
        let mut short = [0u8; 2];
        assert!(
            AugMixStep::Add { weight: 0.1 }
                .run(&mut short, &mut m)
                .is_err()
        );
    }
}
