//! torchvision's random colour transforms: `ColorJitter`, `GaussianBlur`,
//! and the single adjustments applied with a probability (`RandomInvert`,
//! `RandomPosterize`, `RandomSolarize`, `RandomAdjustSharpness`,
//! `RandomAutocontrast`, `RandomEqualize`, `RandomGrayscale`).

use core::fmt;

use super::Drawing;
use super::unit::{At, SizeKeeping, Targets};
use super::{Drawn, invalid};
use crate::Result;
use crate::adjust::Point;
use crate::functional::ImageOp;

/// `ColorJitter(brightness, contrast, saturation, hue)`: each factor drawn
/// uniformly from its range, the four applied in a random order.
///
/// ```
/// use tensorprep::train::ColorJitter;
///
/// // ColorJitter(0.4, 0.4, 0.4, 0.1), as timm and torchvision's recipes use.
/// let j = ColorJitter::new(0.4, 0.4, 0.4, 0.1);
/// assert_eq!(j.brightness, Some((0.6, 1.4)));
/// assert_eq!(j.hue, Some((-0.1, 0.1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ColorJitter {
    /// Brightness factor range (`None`: left alone).
    pub brightness: Option<(f64, f64)>,
    /// Contrast factor range.
    pub contrast: Option<(f64, f64)>,
    /// Saturation factor range.
    pub saturation: Option<(f64, f64)>,
    /// Hue shift range, within `-0.5..=0.5`.
    pub hue: Option<(f64, f64)>,
}

impl ColorJitter {
    /// torchvision's single-value form: factors in `1 - v ..= 1 + v`
    /// (floored at 0), hue in `-h ..= h`; 0 leaves that one alone.
    pub fn new(brightness: f64, contrast: f64, saturation: f64, hue: f64) -> ColorJitter {
        let factor = |v: f64| (v != 0.0).then_some(((1.0 - v).max(0.0), 1.0 + v));
        ColorJitter {
            brightness: factor(brightness),
            contrast: factor(contrast),
            saturation: factor(saturation),
            hue: (hue != 0.0).then_some((-hue, hue)),
        }
    }
}

impl SizeKeeping for ColorJitter {
    fn check(&self) -> Result<()> {
        let ok = |r: Option<(f64, f64)>, lo: f64, hi: f64| {
            r.is_none_or(|(a, b)| a.is_finite() && b.is_finite() && lo <= a && a <= b && b <= hi)
        };
        let factors = [self.brightness, self.contrast, self.saturation];
        if !factors.iter().all(|&r| ok(r, 0.0, f64::MAX)) {
            return Err(invalid(
                "ColorJitter",
                "factor ranges must be finite, not negative, min <= max",
            ));
        }
        if !ok(self.hue, -0.5, 0.5) {
            return Err(invalid(
                "ColorJitter",
                "the hue range must be within -0.5..=0.5",
            ));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        // get_params' order: the permutation, then each factor.
        let mut order = [0usize, 1, 2, 3];
        for i in (1..4).rev() {
            order.swap(i, d.below(i as u32 + 1) as usize);
        }
        let mut draw = |r: Option<(f64, f64)>| r.map(|(a, b)| d.uniform(a, b) as f32);
        let b = draw(self.brightness);
        let c = draw(self.contrast);
        let s = draw(self.saturation);
        let h = draw(self.hue);
        for i in order {
            let op = match i {
                0 => b.map(|factor| ImageOp::Point(Point::Brightness { factor })),
                1 => c.map(ImageOp::Contrast),
                2 => s.map(ImageOp::Saturation),
                _ => h.map(|h| ImageOp::Hue(h.clamp(-0.5, 0.5))),
            };
            if let Some(op) = op {
                ops.push(Drawn::Image(op))?;
            }
        }
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Unchanged
    }
}

impl fmt::Display for ColorJitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ColorJitter brightness {:?} contrast {:?} saturation {:?} hue {:?}",
            self.brightness, self.contrast, self.saturation, self.hue
        )
    }
}

/// `GaussianBlur(kernel_size, sigma)`: sigma drawn uniformly from its
/// range (torchvision's default 0.1 to 2.0).
///
/// ```
/// use tensorprep::train::GaussianBlur;
///
/// // SimCLR's blur on 224-pixel crops.
/// let b = GaussianBlur::new(23, 23);
/// assert_eq!(b.sigma, (0.1, 2.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct GaussianBlur {
    /// Taps along rows and along columns (odd).
    pub kernel: (u16, u16),
    /// The standard deviation's range.
    pub sigma: (f64, f64),
}

impl GaussianBlur {
    /// A `width` x `height` kernel, sigma in 0.1 to 2.0.
    pub const fn new(width: u16, height: u16) -> GaussianBlur {
        GaussianBlur {
            kernel: (width, height),
            sigma: (0.1, 2.0),
        }
    }
}

impl SizeKeeping for GaussianBlur {
    fn check(&self) -> Result<()> {
        let odd = |k: u16| k % 2 == 1 && usize::from(k) <= crate::adjust::MAX_GAUSSIAN_TAPS;
        if !(odd(self.kernel.0) && odd(self.kernel.1)) {
            return Err(invalid(
                "GaussianBlur",
                "kernel sizes must be odd and at most 255",
            ));
        }
        let (a, b) = self.sigma;
        if !(a.is_finite() && b.is_finite() && 0.0 < a && a <= b) {
            return Err(invalid(
                "GaussianBlur",
                "sigma must be positive, min <= max",
            ));
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        let sigma = d.uniform(self.sigma.0, self.sigma.1) as f32;
        ops.push(Drawn::Image(ImageOp::GaussianBlur {
            kernel: self.kernel,
            sigma,
        }))?;
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Unchanged
    }
}

impl fmt::Display for GaussianBlur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GaussianBlur kernel {:?} sigma {:?}",
            self.kernel, self.sigma
        )
    }
}

/// torchvision's `RandomPhotometricDistort(brightness, contrast, saturation,
/// hue, p)` (SSD's colour distortion): each of brightness, contrast,
/// saturation and hue drawn with probability `p`, contrast before or after
/// the other two (even odds), then with probability `p` a random
/// permutation of the channels.
///
/// ```
/// use tensorprep::train::RandomPhotometricDistort;
///
/// let d = RandomPhotometricDistort::new();
/// assert_eq!((d.brightness, d.hue, d.p), ((0.875, 1.125), (-0.05, 0.05), 0.5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomPhotometricDistort {
    /// Brightness factor range.
    pub brightness: (f64, f64),
    /// Contrast factor range.
    pub contrast: (f64, f64),
    /// Saturation factor range.
    pub saturation: (f64, f64),
    /// Hue shift range, within `-0.5..=0.5`.
    pub hue: (f64, f64),
    /// The probability of each part.
    pub p: f64,
}

impl RandomPhotometricDistort {
    /// torchvision's defaults.
    pub const fn new() -> RandomPhotometricDistort {
        RandomPhotometricDistort {
            brightness: (0.875, 1.125),
            contrast: (0.5, 1.5),
            saturation: (0.5, 1.5),
            hue: (-0.05, 0.05),
            p: 0.5,
        }
    }
}

impl Default for RandomPhotometricDistort {
    fn default() -> RandomPhotometricDistort {
        RandomPhotometricDistort::new()
    }
}

impl SizeKeeping for RandomPhotometricDistort {
    fn check(&self) -> Result<()> {
        let ok = |(a, b): (f64, f64), lo: f64, hi: f64| {
            a.is_finite() && b.is_finite() && lo <= a && a <= b && b <= hi
        };
        let factors = [self.brightness, self.contrast, self.saturation];
        if !(factors.iter().all(|r| ok(*r, 0.0, f64::MAX)) && ok(self.hue, -0.5, 0.5)) {
            return Err(invalid(
                "RandomPhotometricDistort",
                "factor ranges finite, not negative, min <= max; hue within -0.5..=0.5",
            ));
        }
        super::probability(self.p, "RandomPhotometricDistort", "p must be in 0..=1")
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        // make_params' order: for each factor a chance, then its value;
        // contrast's place; the permutation's chance, then the permutation.
        let mut factor = |(a, b): (f64, f64)| d.chance(self.p).then(|| d.uniform(a, b) as f32);
        let brightness = factor(self.brightness);
        let contrast = factor(self.contrast);
        let saturation = factor(self.saturation);
        let hue = factor(self.hue);
        let contrast_before = d.chance(0.5);
        let permutation = d.chance(self.p).then(|| {
            let mut p = [0u8, 1, 2];
            for i in (1..3).rev() {
                p.swap(i, d.below(i as u32 + 1) as usize);
            }
            p
        });
        let steps = [
            brightness.map(|factor| ImageOp::Point(Point::Brightness { factor })),
            contrast.filter(|_| contrast_before).map(ImageOp::Contrast),
            saturation.map(ImageOp::Saturation),
            hue.map(ImageOp::Hue),
            contrast.filter(|_| !contrast_before).map(ImageOp::Contrast),
            permutation.map(ImageOp::PermuteChannels),
        ];
        for op in steps.into_iter().flatten() {
            ops.push(Drawn::Image(op))?;
        }
        Ok(size)
    }

    fn targets(&self) -> Targets {
        Targets::Unchanged
    }
}

impl fmt::Display for RandomPhotometricDistort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomPhotometricDistort brightness {:?} contrast {:?} saturation {:?} hue {:?} p {}",
            self.brightness, self.contrast, self.saturation, self.hue, self.p
        )
    }
}
