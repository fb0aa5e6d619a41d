//! `RandomResizedCrop`: torchvision's box draw, then exactly Pillow's
//! `img.crop(box).resize(size, filter)` as a `Crop` and an exact `Resize`
//! (with libjpeg-turbo, only the box is decoded).

use core::fmt;

use super::Drawing;
use super::Drawn;
use super::unit::{At, Augmentation, Nested, Targets};
use crate::pipeline::{Op, Resize};
use crate::resize::{Filter, Resample};
use crate::size::SizeRule;
use crate::train::Draws;
use crate::{Error, Rect, Result};

/// torchvision's `RandomResizedCrop(size, scale, ratio, interpolation)`.
///
/// ```
/// use tensorprep::train::{Draws, RandomResizedCrop, SampleKey};
///
/// let rrc = RandomResizedCrop::new(224, 224);
/// let rect = rrc.draw_box(&mut Draws::new(SampleKey::new(1, 0, 5), 0), (451, 300));
/// assert!(rect.x + rect.width <= 451 && rect.y + rect.height <= 300);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomResizedCrop {
    /// Output width.
    pub width: u32,
    /// Output height.
    pub height: u32,
    /// The box's share of the image area, drawn uniformly (default 0.08 to 1).
    pub scale: (f64, f64),
    /// The box's aspect ratio w/h, drawn log-uniformly (default 3/4 to 4/3).
    pub ratio: (f64, f64),
    /// The resampler (default Pillow's bilinear, torchvision's default).
    pub resample: Resample,
}

impl RandomResizedCrop {
    /// torchvision's defaults: scale (0.08, 1), ratio (3/4, 4/3), bilinear.
    pub const fn new(width: u32, height: u32) -> RandomResizedCrop {
        RandomResizedCrop {
            width,
            height,
            scale: (0.08, 1.0),
            ratio: (3.0 / 4.0, 4.0 / 3.0),
            resample: Resample::Pillow(Filter::Bilinear),
        }
    }

    /// torchvision's `RandomResizedCrop.get_params` for a `width` x
    /// `height` image: up to 10 draws of an area share and a log-uniform
    /// ratio, the first box that fits placed uniformly; else the centred
    /// box of the whole image clamped to the ratio range.
    pub fn draw_box(&self, d: &mut Draws, (width, height): (u32, u32)) -> Rect {
        let area = f64::from(width) * f64::from(height);
        let (lr0, lr1) = (self.ratio.0.ln(), self.ratio.1.ln());
        for _ in 0..10 {
            let target_area = area * d.uniform(self.scale.0, self.scale.1);
            let aspect = libm::exp(d.uniform(lr0, lr1));
            let w = round_half_even(libm::sqrt(target_area * aspect));
            let h = round_half_even(libm::sqrt(target_area / aspect));
            if 0.0 < w && w <= f64::from(width) && 0.0 < h && h <= f64::from(height) {
                let (w, h) = (w as u32, h as u32);
                let y = d.below(height - h + 1);
                let x = d.below(width - w + 1);
                return Rect::new(x, y, w, h);
            }
        }
        // Fallback: the whole image, cut to the nearest allowed ratio.
        let in_ratio = f64::from(width) / f64::from(height);
        let (w, h) = if in_ratio < self.ratio.0 {
            let h = round_half_even(f64::from(width) / self.ratio.0) as u32;
            (width, h.clamp(1, height))
        } else if in_ratio > self.ratio.1 {
            let w = round_half_even(f64::from(height) * self.ratio.1) as u32;
            (w.clamp(1, width), height)
        } else {
            (width, height)
        };
        Rect::new((width - w) / 2, (height - h) / 2, w, h)
    }
}

impl Augmentation for RandomResizedCrop {
    fn check(&self) -> Result<()> {
        let (s, r) = (self.scale, self.ratio);
        let ok = self.width > 0
            && self.height > 0
            && s.0.is_finite()
            && s.1.is_finite()
            && 0.0 < s.0
            && s.0 <= s.1
            && r.0.is_finite()
            && r.1.is_finite()
            && 0.0 < r.0
            && r.0 <= r.1;
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "RandomResizedCrop",
                reason: "a positive size, 0 < scale.0 <= scale.1, 0 < ratio.0 <= ratio.1",
            })
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        ops.push(Drawn::Op(Op::Crop(self.draw_box(d, size))))?;
        ops.push(Drawn::Op(Op::Resize(Resize {
            size: SizeRule::Exact {
                width: self.width,
                height: self.height,
            },
            resample: self.resample,
        })))?;
        Ok((self.width, self.height))
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        Some((self.width, self.height))
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        true
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

/// Python's `round()`: halves go to the even integer.
fn round_half_even(v: f64) -> f64 {
    let r = libm::round(v);
    if (v - libm::trunc(v)).abs() == 0.5 && r % 2.0 != 0.0 {
        r - v.signum()
    } else {
        r
    }
}

impl fmt::Display for RandomResizedCrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomResizedCrop {}x{} scale {:?} ratio {:?} with {:?}",
            self.width, self.height, self.scale, self.ratio, self.resample
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_rounding() {
        assert_eq!(round_half_even(2.5), 2.0);
        assert_eq!(round_half_even(3.5), 4.0);
        assert_eq!(round_half_even(2.4999), 2.0);
        assert_eq!(round_half_even(7.0), 7.0);
    }
}
