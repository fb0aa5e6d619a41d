//! torchvision's augmentation policies: the ops of their search spaces as
//! `_apply_op` applies them, the magnitude bins of AutoAugment,
//! RandAugment and TrivialAugmentWide, and AutoAugment's learned policies
//! (ImageNet, CIFAR-10, SVHN).

use core::f64::consts::PI;

use super::Drawing;
use super::Drawn;
use crate::Result;
use crate::adjust::Point;
use crate::functional::ImageOp;
use crate::targets::{Affine, Geometry};
use crate::warp::Interpolation;

/// One op of the policies' search spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PolicyOp {
    /// Leaves the image.
    Identity,
    /// Horizontal shear by `atan(magnitude)` about the top-left corner.
    ShearX,
    /// Vertical shear by `atan(magnitude)` about the top-left corner.
    ShearY,
    /// Horizontal shift by `int(magnitude)` pixels.
    TranslateX,
    /// Vertical shift by `int(magnitude)` pixels.
    TranslateY,
    /// Rotation by `magnitude` degrees about the centre.
    Rotate,
    /// `adjust_brightness(1 + magnitude)`.
    Brightness,
    /// `adjust_saturation(1 + magnitude)`.
    Color,
    /// `adjust_contrast(1 + magnitude)`.
    Contrast,
    /// `adjust_sharpness(1 + magnitude)`.
    Sharpness,
    /// `posterize(int(magnitude))`.
    Posterize,
    /// `solarize(magnitude)`: values at or above it inverted.
    Solarize,
    /// `autocontrast`.
    AutoContrast,
    /// `equalize`.
    Equalize,
    /// `invert`.
    Invert,
}

use PolicyOp as P;

/// The ops RandAugment and TrivialAugmentWide draw from, in torchvision's
/// order.
pub const SPACE_OPS: [PolicyOp; 14] = [
    P::Identity,
    P::ShearX,
    P::ShearY,
    P::TranslateX,
    P::TranslateY,
    P::Rotate,
    P::Brightness,
    P::Color,
    P::Contrast,
    P::Sharpness,
    P::Posterize,
    P::Solarize,
    P::AutoContrast,
    P::Equalize,
];

/// Python's `math.degrees`.
fn degrees(radians: f64) -> f64 {
    radians * (180.0 / PI)
}

/// Python's `math.atan` (the platform's libm, as std's).
fn atan(x: f64) -> f64 {
    x.atan()
}

impl PolicyOp {
    /// Whether the op takes a magnitude, and whether a drawn sign flips it.
    pub const fn signed(self) -> bool {
        matches!(
            self,
            P::ShearX
                | P::ShearY
                | P::TranslateX
                | P::TranslateY
                | P::Rotate
                | P::Brightness
                | P::Color
                | P::Contrast
                | P::Sharpness
        )
    }

    /// The op at `magnitude` on an image of `size`, as torchvision's
    /// `_apply_op` applies it on a PIL image; `None` for the identity.
    pub fn image_op(
        self,
        magnitude: f64,
        size: (u32, u32),
        interpolation: Interpolation,
        fill: [u8; 3],
    ) -> Result<Option<ImageOp>> {
        let warp = |geometry| ImageOp::warp(geometry, size, interpolation, fill);
        let factor = (1.0 + magnitude) as f32;
        let op = match self {
            P::Identity => return Ok(None),
            P::ShearX | P::ShearY => {
                let s = degrees(atan(magnitude));
                let shear = if self == P::ShearX {
                    (s, 0.0)
                } else {
                    (0.0, s)
                };
                warp(Geometry::Affine(Affine::new(
                    0.0,
                    (0.0, 0.0),
                    1.0,
                    shear,
                    Some((0.0, 0.0)),
                )))?
            }
            P::TranslateX | P::TranslateY => {
                // int(magnitude): truncated toward zero.
                let t = libm::trunc(magnitude);
                let t = if self == P::TranslateX {
                    (t, 0.0)
                } else {
                    (0.0, t)
                };
                warp(Geometry::Affine(Affine::new(0.0, t, 1.0, (0.0, 0.0), None)))?
            }
            P::Rotate => warp(Geometry::Rotate {
                angle: magnitude,
                expand: false,
                center: None,
            })?,
            P::Brightness => ImageOp::Point(Point::Brightness { factor }),
            P::Color => ImageOp::Saturation(factor),
            P::Contrast => ImageOp::Contrast(factor),
            P::Sharpness => ImageOp::Sharpness(factor),
            P::Posterize => ImageOp::Point(Point::Posterize {
                bits: magnitude.clamp(0.0, 8.0) as u8,
            }),
            P::Solarize => ImageOp::Point(Point::solarize_from(magnitude)),
            P::AutoContrast => ImageOp::Autocontrast,
            P::Equalize => ImageOp::Equalize,
            P::Invert => ImageOp::Point(Point::Invert),
        };
        Ok(Some(op))
    }
}

/// Appends the policy op `op` at `magnitude` to `ops`, negated when the op
/// is signed and `negate` was drawn.
pub(super) fn push_policy_op(
    op: PolicyOp,
    magnitude: f64,
    negate: bool,
    size: (u32, u32),
    interpolation: Interpolation,
    fill: [u8; 3],
    ops: &mut Drawing<'_>,
) -> Result<()> {
    let magnitude = if op.signed() && negate {
        -magnitude
    } else {
        magnitude
    };
    if let Some(p) = op.image_op(magnitude, size, interpolation, fill)? {
        ops.push(Drawn::Image(p))?;
    }
    Ok(())
}

/// Which policy's magnitude bins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Space {
    /// AutoAugment's and RandAugment's (`_augmentation_space` of either).
    Standard,
    /// TrivialAugmentWide's wider ranges.
    Wide,
    /// AugMix's: translation to a third of the side, posterize 4 bits down.
    AugMix,
}

/// `torch.linspace(start, end, steps)` in float32, element `i`, as torch's
/// CPU kernel computes it: `start + step * i` up to half way, `end - step *
/// (steps - 1 - i)` after, each a fused multiply-add (its build contracts
/// them).
fn linspace(start: f32, end: f32, steps: u32, i: u32) -> f32 {
    if steps <= 1 {
        return start;
    }
    let step = (end - start) / (steps - 1) as f32;
    if i < steps / 2 {
        step.mul_add(i as f32, start)
    } else {
        (-step).mul_add((steps - i - 1) as f32, end)
    }
}

impl Space {
    /// The magnitude of `op` at `bin` of `bins` on an image of `size`
    /// (before the drawn sign); 0 for ops without one.
    pub fn magnitude(self, op: PolicyOp, bin: u32, bins: u32, size: (u32, u32)) -> f64 {
        let wide = self == Space::Wide;
        let line = |end: f64| f64::from(linspace(0.0, end as f32, bins, bin));
        match op {
            P::ShearX | P::ShearY => line(if wide { 0.99 } else { 0.3 }),
            P::TranslateX | P::TranslateY => {
                let side = f64::from(if op == P::TranslateX { size.0 } else { size.1 });
                line(match self {
                    Space::Wide => 32.0,
                    Space::AugMix => side / 3.0,
                    Space::Standard => 150.0 / 331.0 * side,
                })
            }
            P::Rotate => line(if wide { 135.0 } else { 30.0 }),
            P::Brightness | P::Color | P::Contrast | P::Sharpness => {
                line(if wide { 0.99 } else { 0.9 })
            }
            P::Posterize => {
                // top - round(i / ((bins - 1) / k)) in float32, half to even.
                let (top, k) = match self {
                    Space::Wide => (8.0, 6.0),
                    Space::AugMix => (4.0, 4.0),
                    Space::Standard => (8.0, 4.0),
                };
                let step = ((bins.max(2) - 1) as f64 / k) as f32;
                top - f64::from(libm::rintf(bin as f32 / step))
            }
            P::Solarize => f64::from(linspace(255.0, 0.0, bins, bin)),
            P::Identity | P::AutoContrast | P::Equalize | P::Invert => 0.0,
        }
    }
}

/// One of AutoAugment's learned policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AutoAugmentPolicy {
    /// Learned on ImageNet.
    ImageNet,
    /// Learned on CIFAR-10.
    Cifar10,
    /// Learned on SVHN.
    Svhn,
}

/// Two ops, each with its probability and magnitude bin (of 10).
pub type Subpolicy = [(PolicyOp, f64, Option<u32>); 2];

impl AutoAugmentPolicy {
    /// The policy's 25 sub-policies (torchvision's table).
    ///
    /// ```
    /// use tensorprep::train::{AutoAugmentPolicy, PolicyOp};
    ///
    /// let first = AutoAugmentPolicy::ImageNet.subpolicies()[0];
    /// assert_eq!(first[0], (PolicyOp::Posterize, 0.4, Some(8)));
    /// ```
    pub fn subpolicies(self) -> &'static [Subpolicy; 25] {
        match self {
            AutoAugmentPolicy::ImageNet => &IMAGENET,
            AutoAugmentPolicy::Cifar10 => &CIFAR10,
            AutoAugmentPolicy::Svhn => &SVHN,
        }
    }
}

// The sub-policies of Cubuk et al., "AutoAugment" (2019), appendix, in
// torchvision's order.
const IMAGENET: [Subpolicy; 25] = [
    [(P::Posterize, 0.4, Some(8)), (P::Rotate, 0.6, Some(9))],
    [(P::Solarize, 0.6, Some(5)), (P::AutoContrast, 0.6, None)],
    [(P::Equalize, 0.8, None), (P::Equalize, 0.6, None)],
    [(P::Posterize, 0.6, Some(7)), (P::Posterize, 0.6, Some(6))],
    [(P::Equalize, 0.4, None), (P::Solarize, 0.2, Some(4))],
    [(P::Equalize, 0.4, None), (P::Rotate, 0.8, Some(8))],
    [(P::Solarize, 0.6, Some(3)), (P::Equalize, 0.6, None)],
    [(P::Posterize, 0.8, Some(5)), (P::Equalize, 1.0, None)],
    [(P::Rotate, 0.2, Some(3)), (P::Solarize, 0.6, Some(8))],
    [(P::Equalize, 0.6, None), (P::Posterize, 0.4, Some(6))],
    [(P::Rotate, 0.8, Some(8)), (P::Color, 0.4, Some(0))],
    [(P::Rotate, 0.4, Some(9)), (P::Equalize, 0.6, None)],
    [(P::Equalize, 0.0, None), (P::Equalize, 0.8, None)],
    [(P::Invert, 0.6, None), (P::Equalize, 1.0, None)],
    [(P::Color, 0.6, Some(4)), (P::Contrast, 1.0, Some(8))],
    [(P::Rotate, 0.8, Some(8)), (P::Color, 1.0, Some(2))],
    [(P::Color, 0.8, Some(8)), (P::Solarize, 0.8, Some(7))],
    [(P::Sharpness, 0.4, Some(7)), (P::Invert, 0.6, None)],
    [(P::ShearX, 0.6, Some(5)), (P::Equalize, 1.0, None)],
    [(P::Color, 0.4, Some(0)), (P::Equalize, 0.6, None)],
    [(P::Equalize, 0.4, None), (P::Solarize, 0.2, Some(4))],
    [(P::Solarize, 0.6, Some(5)), (P::AutoContrast, 0.6, None)],
    [(P::Invert, 0.6, None), (P::Equalize, 1.0, None)],
    [(P::Color, 0.6, Some(4)), (P::Contrast, 1.0, Some(8))],
    [(P::Equalize, 0.8, None), (P::Equalize, 0.6, None)],
];

const CIFAR10: [Subpolicy; 25] = [
    [(P::Invert, 0.1, None), (P::Contrast, 0.2, Some(6))],
    [(P::Rotate, 0.7, Some(2)), (P::TranslateX, 0.3, Some(9))],
    [(P::Sharpness, 0.8, Some(1)), (P::Sharpness, 0.9, Some(3))],
    [(P::ShearY, 0.5, Some(8)), (P::TranslateY, 0.7, Some(9))],
    [(P::AutoContrast, 0.5, None), (P::Equalize, 0.9, None)],
    [(P::ShearY, 0.2, Some(7)), (P::Posterize, 0.3, Some(7))],
    [(P::Color, 0.4, Some(3)), (P::Brightness, 0.6, Some(7))],
    [(P::Sharpness, 0.3, Some(9)), (P::Brightness, 0.7, Some(9))],
    [(P::Equalize, 0.6, None), (P::Equalize, 0.5, None)],
    [(P::Contrast, 0.6, Some(7)), (P::Sharpness, 0.6, Some(5))],
    [(P::Color, 0.7, Some(7)), (P::TranslateX, 0.5, Some(8))],
    [(P::Equalize, 0.3, None), (P::AutoContrast, 0.4, None)],
    [(P::TranslateY, 0.4, Some(3)), (P::Sharpness, 0.2, Some(6))],
    [(P::Brightness, 0.9, Some(6)), (P::Color, 0.2, Some(8))],
    [(P::Solarize, 0.5, Some(2)), (P::Invert, 0.0, None)],
    [(P::Equalize, 0.2, None), (P::AutoContrast, 0.6, None)],
    [(P::Equalize, 0.2, None), (P::Equalize, 0.6, None)],
    [(P::Color, 0.9, Some(9)), (P::Equalize, 0.6, None)],
    [(P::AutoContrast, 0.8, None), (P::Solarize, 0.2, Some(8))],
    [(P::Brightness, 0.1, Some(3)), (P::Color, 0.7, Some(0))],
    [(P::Solarize, 0.4, Some(5)), (P::AutoContrast, 0.9, None)],
    [(P::TranslateY, 0.9, Some(9)), (P::TranslateY, 0.7, Some(9))],
    [(P::AutoContrast, 0.9, None), (P::Solarize, 0.8, Some(3))],
    [(P::Equalize, 0.8, None), (P::Invert, 0.1, None)],
    [(P::TranslateY, 0.7, Some(9)), (P::AutoContrast, 0.9, None)],
];

const SVHN: [Subpolicy; 25] = [
    [(P::ShearX, 0.9, Some(4)), (P::Invert, 0.2, None)],
    [(P::ShearY, 0.9, Some(8)), (P::Invert, 0.7, None)],
    [(P::Equalize, 0.6, None), (P::Solarize, 0.6, Some(6))],
    [(P::Invert, 0.9, None), (P::Equalize, 0.6, None)],
    [(P::Equalize, 0.6, None), (P::Rotate, 0.9, Some(3))],
    [(P::ShearX, 0.9, Some(4)), (P::AutoContrast, 0.8, None)],
    [(P::ShearY, 0.9, Some(8)), (P::Invert, 0.4, None)],
    [(P::ShearY, 0.9, Some(5)), (P::Solarize, 0.2, Some(6))],
    [(P::Invert, 0.9, None), (P::AutoContrast, 0.8, None)],
    [(P::Equalize, 0.6, None), (P::Rotate, 0.9, Some(3))],
    [(P::ShearX, 0.9, Some(4)), (P::Solarize, 0.3, Some(3))],
    [(P::ShearY, 0.8, Some(8)), (P::Invert, 0.7, None)],
    [(P::Equalize, 0.9, None), (P::TranslateY, 0.6, Some(6))],
    [(P::Invert, 0.9, None), (P::Equalize, 0.6, None)],
    [(P::Contrast, 0.3, Some(3)), (P::Rotate, 0.8, Some(4))],
    [(P::Invert, 0.8, None), (P::TranslateY, 0.0, Some(2))],
    [(P::ShearY, 0.7, Some(6)), (P::Solarize, 0.4, Some(8))],
    [(P::Invert, 0.6, None), (P::Rotate, 0.8, Some(4))],
    [(P::ShearY, 0.3, Some(7)), (P::TranslateX, 0.9, Some(3))],
    [(P::ShearX, 0.1, Some(6)), (P::Invert, 0.6, None)],
    [(P::Solarize, 0.7, Some(2)), (P::TranslateY, 0.6, Some(7))],
    [(P::ShearY, 0.8, Some(4)), (P::Invert, 0.8, None)],
    [(P::ShearX, 0.7, Some(9)), (P::TranslateY, 0.8, Some(3))],
    [(P::ShearY, 0.8, Some(5)), (P::AutoContrast, 0.7, None)],
    [(P::ShearX, 0.7, Some(2)), (P::Invert, 0.1, None)],
];
