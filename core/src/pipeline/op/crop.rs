//! `CenterCrop` and `Crop`: a part of the image. Never a pass of its own: the
//! next reader reads only the region (a crop right after a resize becomes the
//! window the resampler computes).

use core::fmt;

use crate::Rect;

/// How a centred crop's offset is rounded when the leftover is odd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CropRounding {
    /// torchvision: `int(round((size - crop) / 2.0))`, ties to even.
    #[default]
    HalfEven,
    /// Floor, `(size - crop) // 2` (Hugging Face's PIL path, OpenCV code).
    Floor,
}

/// A centred crop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CenterCrop {
    /// Crop width; must not exceed the image width.
    pub width: u32,
    /// Crop height; must not exceed the image height.
    pub height: u32,
    /// Offset rounding.
    pub rounding: CropRounding,
}

impl CenterCrop {
    /// The crop rectangle inside a `width` x `height` image, if it fits.
    ///
    /// ```
    /// use tensorprep::pipeline::{CenterCrop, CropRounding};
    /// use tensorprep::Rect;
    ///
    /// // (5 - 2) / 2 = 1.5: torchvision rounds half to even (2), floor gives 1.
    /// let crop = CenterCrop { width: 2, height: 2, rounding: CropRounding::HalfEven };
    /// assert_eq!(crop.rect(5, 5), Some(Rect::new(2, 2, 2, 2)));
    /// let floor = CenterCrop { rounding: CropRounding::Floor, ..crop };
    /// assert_eq!(floor.rect(5, 5), Some(Rect::new(1, 1, 2, 2)));
    /// assert_eq!(crop.rect(1, 5), None);
    /// ```
    pub fn rect(&self, width: u32, height: u32) -> Option<Rect> {
        if self.width > width || self.height > height {
            return None;
        }
        let offset = |d: u32| match self.rounding {
            CropRounding::Floor => d / 2,
            // round(d / 2) with ties to even.
            CropRounding::HalfEven => d / 2 + u32::from(d % 2 == 1 && (d / 2) % 2 == 1),
        };
        Some(Rect::new(
            offset(width - self.width),
            offset(height - self.height),
            self.width,
            self.height,
        ))
    }
}

impl fmt::Display for CenterCrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CenterCrop {}x{} (offsets {:?})",
            self.width, self.height, self.rounding
        )
    }
}

/// Describes `Op::Crop`.
pub(super) fn describe_rect(f: &mut fmt::Formatter<'_>, r: &Rect) -> fmt::Result {
    write!(f, "Crop {}x{} at ({}, {})", r.width, r.height, r.x, r.y)
}

#[cfg(feature = "alloc")]
pub(in crate::pipeline) use compiled::Crop;

#[cfg(feature = "alloc")]
mod compiled {
    use super::CenterCrop;
    use crate::pipeline::Affine;
    use crate::pipeline::op::{Compiling, Step, op_error};
    use crate::pipeline::resolve::{Resolver, offset};
    use crate::{Error, Rect, Result};

    /// A checked crop: centred, or at a fixed rectangle.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(in crate::pipeline) enum Crop {
        Center(CenterCrop),
        Rect(Rect),
    }

    impl Crop {
        /// Checks the crop's size.
        pub(in crate::pipeline) fn compile(self, cx: &mut Compiling<'_>) -> Result<()> {
            let (w, h, name) = match self {
                Crop::Center(c) => (
                    c.width,
                    c.height,
                    "CenterCrop: width and height must be positive",
                ),
                Crop::Rect(r) => (r.width, r.height, "Crop: width and height must be positive"),
            };
            if w == 0 || h == 0 {
                return Err(op_error(name));
            }
            cx.steps.push(Step::Crop(self));
            Ok(())
        }

        /// The crop's size, whatever the image's.
        pub(in crate::pipeline) fn size(&self) -> (u32, u32) {
            match self {
                Crop::Center(c) => (c.width, c.height),
                Crop::Rect(r) => (r.width, r.height),
            }
        }

        /// The crop rectangle in a `width` x `height` image, which it must fit.
        pub(in crate::pipeline) fn rect(&self, width: u32, height: u32) -> Result<Rect> {
            let rect = match self {
                Crop::Center(c) => c.rect(width, height),
                Crop::Rect(r) => r.fits_in(width, height).then_some(*r),
            };
            let (w, h) = self.size();
            rect.filter(|r| r.width > 0 && r.height > 0)
                .ok_or(Error::RectOutOfBounds {
                    rect: match self {
                        Crop::Center(_) => Rect::new(0, 0, w, h),
                        Crop::Rect(r) => *r,
                    },
                    width,
                    height,
                })
        }

        /// Narrows what the next reader reads.
        pub(in crate::pipeline) fn resolve(&self, r: &mut Resolver<'_>) -> Result<()> {
            let (w, h) = r.size();
            let rect = self.rect(w, h)?;
            r.read.region = offset(r.read.region, rect);
            r.map = r.map.then(&Affine::scale_translate(
                1.0,
                1.0,
                -f64::from(rect.x),
                -f64::from(rect.y),
            ));
            Ok(())
        }
    }
}
