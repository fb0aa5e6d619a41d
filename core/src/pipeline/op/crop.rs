//! `CenterCrop` and `Crop`: a part of the image. Never a pass of its own: the
//! next reader reads only the region (a crop right after a resize becomes the
//! window the resampler computes).

use core::fmt;

use crate::Rect;

/// The ops' names in messages, and the features graph files using them list.
pub(super) const CENTER_CROP_NAMES: (&str, &str) = ("CenterCrop", "op.center_crop");
pub(super) const CROP_NAMES: (&str, &str) = ("Crop", "op.crop");

/// How a centred crop's offset is rounded when the leftover is odd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CropRounding {
    /// torchvision: `int(round((size - crop) / 2.0))`, ties to even.
    #[default]
    HalfEven,
    /// Floor, `(size - crop) // 2` (Hugging Face's PIL path, OpenCV code).
    Floor,
}

impl CropRounding {
    /// The offset of a centred crop whose leftover (image side minus crop
    /// side) is `leftover`; negative when the crop is larger than the image,
    /// as torchvision's boxes and key points use it then.
    ///
    /// ```
    /// use tensorprep::pipeline::CropRounding;
    ///
    /// assert_eq!(CropRounding::HalfEven.offset(5), 2); // round(2.5) == 2
    /// assert_eq!(CropRounding::HalfEven.offset(-3), -2); // round(-1.5) == -2
    /// assert_eq!(CropRounding::Floor.offset(-3), -2); // -3 // 2 == -2
    /// ```
    pub fn offset(self, leftover: i64) -> i64 {
        match self {
            CropRounding::Floor => leftover.div_euclid(2),
            // round(leftover / 2), ties to even: the half is exact or .5.
            CropRounding::HalfEven => {
                let half = leftover.div_euclid(2);
                half + i64::from(leftover.rem_euclid(2) == 1 && half.rem_euclid(2) == 1)
            }
        }
    }
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
        // Both leftovers are non-negative here, so are their halves.
        let offset = |d: u32| self.rounding.offset(i64::from(d)) as u32;
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

pub(in crate::pipeline) use compiled::Crop;

mod compiled {
    use super::CenterCrop;
    use crate::arena::Storage;
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
                Crop::Center(c) => (c.width, c.height, "CenterCrop"),
                Crop::Rect(r) => (r.width, r.height, "Crop"),
            };
            if w == 0 || h == 0 {
                return Err(op_error(name, "width and height must be positive"));
            }
            cx.push(Step::Crop(self))
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
        pub(in crate::pipeline) fn resolve<S: Storage>(
            &self,
            r: &mut Resolver<'_, S>,
        ) -> Result<()> {
            if let (Some((sx, sy)), Some((w, h))) = (r.reduced, r.logical) {
                // Reduced decoding, before the first resize: the crop is
                // taken in full-size coordinates and read by the resize as
                // a fractional box of the reduced image.
                let rect = self.rect(w, h)?;
                let origin = r.crop.map_or((0, 0), |c| (c.x, c.y));
                r.crop = Some(offset(Rect::new(origin.0, origin.1, w, h), rect));
                r.logical = Some((rect.width, rect.height));
                r.map = r.map.then(&Affine::scale_translate(
                    1.0,
                    1.0,
                    -f64::from(rect.x) * sx,
                    -f64::from(rect.y) * sy,
                ));
                return Ok(());
            }
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

/// The ops in graph files (messages `CenterCrop` and `Crop`).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use alloc::vec::Vec;

    use super::{CenterCrop, CropRounding};
    use crate::Rect;
    use crate::graph::GraphError;
    use crate::graph::convert::{At, feature, from_pb, to_pb};
    use crate::graph::proto as pb;

    pub(crate) const CROP_ROUNDINGS: [(CropRounding, pb::CropRounding, &str); 2] = [
        (
            CropRounding::HalfEven,
            pb::CropRounding::HalfEven,
            "crop_rounding.half_even",
        ),
        (
            CropRounding::Floor,
            pb::CropRounding::Floor,
            "crop_rounding.floor",
        ),
    ];

    impl CenterCrop {
        pub(crate) fn to_message(self) -> pb::CenterCrop {
            pb::CenterCrop {
                width: self.width,
                height: self.height,
                rounding: to_pb(&CROP_ROUNDINGS, self.rounding) as i32,
            }
        }

        pub(crate) fn from_message(c: &pb::CenterCrop, at: At) -> Result<CenterCrop, GraphError> {
            Ok(CenterCrop {
                width: c.width,
                height: c.height,
                rounding: from_pb(&CROP_ROUNDINGS, c.rounding, "rounding", at)?,
            })
        }

        /// The features a reader needs for this crop.
        pub(crate) fn features(&self, out: &mut Vec<&'static str>) {
            out.push(feature(&CROP_ROUNDINGS, self.rounding));
        }
    }

    /// Every feature a centred crop can need.
    pub(crate) fn known_features() -> impl Iterator<Item = &'static str> {
        CROP_ROUNDINGS.iter().map(|r| r.2)
    }

    pub(crate) fn rect_to_message(r: &Rect) -> pb::Crop {
        pb::Crop {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        }
    }

    pub(crate) fn rect_from_message(c: &pb::Crop) -> Rect {
        Rect::new(c.x, c.y, c.width, c.height)
    }
}
