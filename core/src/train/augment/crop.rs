//! `RandomCrop`: torchvision's optional padding (fixed borders, and
//! `pad_if_needed` on both sides of a short axis), then a uniformly placed
//! crop of the size: a `Pad` and a `Crop`.

use core::fmt;

use super::Drawing;
use super::Drawn;
use super::unit::{At, Augmentation, Nested, Targets};
use crate::pipeline::{Op, Pad, PadTo};
use crate::{Error, Rect, Result};

/// torchvision's `RandomCrop(size, padding, pad_if_needed, fill)` with
/// constant padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RandomCrop {
    /// Crop width.
    pub width: u32,
    /// Crop height.
    pub height: u32,
    /// Borders added first: left, top, right, bottom.
    pub padding: [u32; 4],
    /// Pad a side shorter than the crop by the difference on both ends.
    pub pad_if_needed: bool,
    /// Fill colour (R, G, B).
    pub fill: [u8; 3],
}

impl RandomCrop {
    /// A crop of `width` x `height`, no padding.
    pub const fn new(width: u32, height: u32) -> RandomCrop {
        RandomCrop {
            width,
            height,
            padding: [0; 4],
            pad_if_needed: false,
            fill: [0; 3],
        }
    }

    /// The padding to add to a `w` x `h` image: the fixed borders, then
    /// what `pad_if_needed` adds on both ends of a short side.
    fn padding_for(&self, (w, h): (u32, u32)) -> [u32; 4] {
        let [mut l, mut t, mut r, mut b] = self.padding;
        // Saturating: sums past the largest side are refused by the pad.
        let (pw, ph) = (
            w.saturating_add(l).saturating_add(r),
            h.saturating_add(t).saturating_add(b),
        );
        if self.pad_if_needed && pw < self.width {
            let d = self.width - pw;
            (l, r) = (l.saturating_add(d), r.saturating_add(d));
        }
        if self.pad_if_needed && ph < self.height {
            let d = self.height - ph;
            (t, b) = (t.saturating_add(d), b.saturating_add(d));
        }
        [l, t, r, b]
    }
}

impl Augmentation for RandomCrop {
    fn check(&self) -> Result<()> {
        if self.width == 0 || self.height == 0 {
            return Err(Error::InvalidParameter {
                name: "RandomCrop",
                reason: "width and height must be positive",
            });
        }
        Ok(())
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        let [left, top, right, bottom] = self.padding_for(size);
        let (mut w, mut h) = size;
        if [left, top, right, bottom] != [0; 4] {
            let pad = Op::Pad(Pad {
                to: PadTo::Borders {
                    left,
                    top,
                    right,
                    bottom,
                },
                fill: self.fill,
            });
            (w, h) = pad.output_size(size)?;
            ops.push(Drawn::Op(pad))?;
        }
        if w < self.width || h < self.height {
            return Err(Error::RectOutOfBounds {
                rect: Rect::new(0, 0, self.width, self.height),
                width: w,
                height: h,
            });
        }
        let (y, x) = if (w, h) == (self.width, self.height) {
            (0, 0)
        } else {
            (d.below(h - self.height + 1), d.below(w - self.width + 1))
        };
        ops.push(Drawn::Op(Op::Crop(Rect::new(
            x,
            y,
            self.width,
            self.height,
        ))))?;
        Ok((self.width, self.height))
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        Some((self.width, self.height))
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for RandomCrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomCrop {}x{} padding {:?}{} fill {:?}",
            self.width,
            self.height,
            self.padding,
            if self.pad_if_needed {
                " (pad if needed)"
            } else {
                ""
            },
            self.fill
        )
    }
}
