//! The three axis-aligned box formats and the conversions between them, in
//! torchvision v2's order of float32 operations (`convert_bounding_box_format`).

use core::fmt;
use core::str::FromStr;

use crate::{Error, Result};

/// How the four numbers of a box are laid out (torchvision's `BoundingBoxFormat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BoxFormat {
    /// Corners: `[x1, y1, x2, y2]` (torchvision's and Pascal VOC's).
    #[default]
    Xyxy,
    /// Top-left corner and size: `[x, y, w, h]` (COCO's).
    Xywh,
    /// Centre and size: `[cx, cy, w, h]` (YOLO's and DETR's, there normalised).
    Cxcywh,
}

impl BoxFormat {
    /// torchvision's name: `"XYXY"`, `"XYWH"` or `"CXCYWH"`.
    pub fn name(self) -> &'static str {
        match self {
            BoxFormat::Xyxy => "XYXY",
            BoxFormat::Xywh => "XYWH",
            BoxFormat::Cxcywh => "CXCYWH",
        }
    }

    /// `b`, given in this format, in format `to`.
    ///
    /// Each step rounds to float32 where torchvision's does: `CXCYWH` from
    /// corners is `cx = (2 * x1 + w) / 2` and back `x1 = cx - w / 2`,
    /// `x2 = x1 + w` (not the symmetric forms), so a round trip may change
    /// the last bit, as it does in torchvision.
    ///
    /// ```
    /// use tensorprep::targets::BoxFormat;
    ///
    /// let xywh = BoxFormat::Xyxy.convert([10.0, 20.0, 30.0, 60.0], BoxFormat::Xywh);
    /// assert_eq!(xywh, [10.0, 20.0, 20.0, 40.0]);
    /// assert_eq!(BoxFormat::Xywh.convert(xywh, BoxFormat::Cxcywh), [20.0, 40.0, 20.0, 40.0]);
    /// ```
    pub fn convert(self, b: [f32; 4], to: BoxFormat) -> [f32; 4] {
        use BoxFormat::*;
        let [p, q, r, s] = b;
        match (self, to) {
            (Xyxy, Xyxy) | (Xywh, Xywh) | (Cxcywh, Cxcywh) => b,
            (Xywh, Xyxy) => [p, q, p + r, q + s],
            (Xyxy, Xywh) => [p, q, r - p, s - q],
            (Xyxy, Cxcywh) => {
                let (w, h) = (r - p, s - q);
                [(p * 2.0 + w) / 2.0, (q * 2.0 + h) / 2.0, w, h]
            }
            (Cxcywh, Xyxy) => {
                let (x1, y1) = (p - r / 2.0, q - s / 2.0);
                [x1, y1, x1 + r, y1 + s]
            }
            (Xywh, Cxcywh) => [p + r / 2.0, q + s / 2.0, r, s],
            (Cxcywh, Xywh) => [p - r / 2.0, q - s / 2.0, r, s],
        }
    }
}

impl fmt::Display for BoxFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BoxFormat {
    type Err = Error;

    /// torchvision's names, in any case.
    fn from_str(s: &str) -> Result<BoxFormat> {
        [BoxFormat::Xyxy, BoxFormat::Xywh, BoxFormat::Cxcywh]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or(Error::InvalidParameter {
                name: "format",
                reason: "a box format is XYXY, XYWH or CXCYWH",
            })
    }
}
