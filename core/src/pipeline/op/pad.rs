//! `Pad`: a constant border, fixed or out to a canvas (the second half of a
//! letterbox). A pass of its own: fills the border, copies the rows in.

use core::fmt;

use crate::geometry::Placement;

/// The op's name in messages, and the feature a graph file using it lists.
pub(super) const NAMES: (&str, &str) = ("Pad", "op.pad");

/// A padding step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pad {
    /// Where the image goes.
    pub to: PadTo,
    /// Fill colour as R, G, B (gray uses its luma; alpha is opaque).
    pub fill: [u8; 3],
}

/// The padded size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PadTo {
    /// Fixed borders on each side.
    Borders {
        /// Columns added on the left.
        left: u32,
        /// Rows added on top.
        top: u32,
        /// Columns added on the right.
        right: u32,
        /// Rows added at the bottom.
        bottom: u32,
    },
    /// A canvas of this size, the image placed inside (it must fit).
    Canvas {
        /// Canvas width.
        width: u32,
        /// Canvas height.
        height: u32,
        /// Where the image goes.
        placement: Placement,
    },
    /// Each side padded up to at least this size; sides already as large
    /// stay as they are. Followed by a centre crop of the same size: timm's
    /// `CenterCropOrPad`.
    AtLeast {
        /// Smallest width.
        width: u32,
        /// Smallest height.
        height: u32,
        /// Where the image goes.
        placement: Placement,
    },
}

impl fmt::Display for Pad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pad {:?} fill {:?}", self.to, self.fill)
    }
}

pub(in crate::pipeline) use compiled::PadWork;

mod compiled {
    use super::{Pad, PadTo};
    use crate::arena::{Scratch, Storage};
    use crate::geometry::fill_border;
    use crate::pipeline::Affine;
    use crate::pipeline::op::{Compiling, Step, Work, packed};
    use crate::pipeline::resolve::{Read, Resolver, Shape};
    use crate::rows::RowReader;
    use crate::{ImageView, ImageViewMut, PixelFormat, Rect, Result};

    /// The pass: the image's place in the canvas and the fill pixel.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(in crate::pipeline) struct PadWork {
        rect: Rect,
        fill: [u8; 4],
    }

    impl Pad {
        /// Padding needs packed pixels.
        pub(in crate::pipeline) fn compile(&self, cx: &mut Compiling<'_>) -> Result<()> {
            packed("Pad", cx.format)?;
            cx.push(Step::Pad(*self))
        }

        /// The canvas size and where a `w` x `h` image goes in it; every sum
        /// checked against the largest image side.
        pub(in crate::pipeline) fn layout(&self, w: u32, h: u32) -> Result<(u32, u32, Rect)> {
            match self.to {
                PadTo::Borders {
                    left,
                    top,
                    right,
                    bottom,
                } => {
                    let cw = u64::from(w) + u64::from(left) + u64::from(right);
                    let ch = u64::from(h) + u64::from(top) + u64::from(bottom);
                    crate::image::check_dimensions(cw, ch)?;
                    Ok((cw as u32, ch as u32, Rect::new(left, top, w, h)))
                }
                PadTo::Canvas {
                    width,
                    height,
                    placement,
                } => Ok((width, height, placement.rect(w, h, width, height)?)),
                PadTo::AtLeast {
                    width,
                    height,
                    placement,
                } => {
                    let (cw, ch) = (w.max(width), h.max(height));
                    crate::image::check_dimensions(u64::from(cw), u64::from(ch))?;
                    Ok((cw, ch, placement.rect(w, h, cw, ch)?))
                }
            }
        }

        /// A canvas is fixed; borders fix the size when the size before is.
        pub(in crate::pipeline) fn fixed_size(
            &self,
            before: Option<(u32, u32)>,
        ) -> Result<Option<(u32, u32)>> {
            match (self.to, before) {
                (PadTo::Canvas { width, height, .. }, _) => Ok(Some((width, height))),
                (PadTo::Borders { .. } | PadTo::AtLeast { .. }, Some((w, h))) => {
                    let (cw, ch, _) = self.layout(w, h)?;
                    Ok(Some((cw, ch)))
                }
                (PadTo::Borders { .. } | PadTo::AtLeast { .. }, None) => Ok(None),
            }
        }

        /// One pass into a canvas-sized buffer.
        pub(in crate::pipeline) fn resolve<S: Storage>(
            &self,
            r: &mut Resolver<'_, S>,
        ) -> Result<()> {
            let (w, h) = r.size();
            let (cw, ch, rect) = self.layout(w, h)?;
            r.map = r.map.then(&Affine::scale_translate(
                1.0,
                1.0,
                f64::from(rect.x),
                f64::from(rect.y),
            ));
            let work = PadWork {
                rect,
                fill: fill_bytes(r.read.format, self.fill),
            };
            let out = Shape {
                format: r.read.format,
                width: cw,
                height: ch,
            };
            r.read = r.emit(Work::Pad(work), out, r.read)?;
            r.stored = r.read.format;
            Ok(())
        }
    }

    impl PadWork {
        /// Fills the border, then copies the rows (converted on reading) in.
        pub(in crate::pipeline) fn run(
            &self,
            src: &ImageView<'_>,
            read: Read,
            dst: &mut ImageViewMut<'_>,
            line: &mut impl Scratch,
        ) -> Result<()> {
            let bpp = dst.format().bytes_per_pixel().unwrap_or(1);
            fill_border(dst, self.rect, &self.fill[..bpp])?;
            let reader = RowReader::new(src, read.region, read.format, read.range)?;
            line.reserve(reader.rows_scratch(1, false))?;
            let x0 = self.rect.x as usize * bpp;
            for y in 0..self.rect.height as usize {
                let row = reader.rows(y, 1, false, line).row(0);
                dst.plane_row_mut(0, self.rect.y as usize + y)[x0..x0 + row.len()]
                    .copy_from_slice(row);
            }
            Ok(())
        }
    }

    /// The fill colour as the bytes of one `format` pixel.
    fn fill_bytes(format: PixelFormat, [r, g, b]: [u8; 3]) -> [u8; 4] {
        let mut px = [255u8; 4];
        match format.rgb_offsets() {
            Some([ro, go, bo]) if format.bytes_per_pixel() != Some(1) => {
                px[ro] = r;
                px[go] = g;
                px[bo] = b;
            }
            _ => px[0] = crate::color::luma601(r, g, b),
        }
        px
    }
}

/// The op in graph files (message `Pad`).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use alloc::vec::Vec;

    use super::{Pad, PadTo};
    use crate::geometry::Placement;
    use crate::graph::GraphError;
    use crate::graph::convert::{At, from_pb, to_pb};
    use crate::graph::proto as pb;

    pub(crate) const PLACEMENTS: [(Placement, pb::Placement); 2] = [
        (Placement::Center, pb::Placement::Center),
        (Placement::TopLeft, pb::Placement::TopLeft),
    ];
    const BORDERS: &str = "pad.borders";
    const CANVAS: &str = "pad.canvas";
    const AT_LEAST: &str = "pad.at_least";

    impl Pad {
        pub(crate) fn to_message(self) -> pb::Pad {
            pb::Pad {
                to: Some(match self.to {
                    PadTo::Borders {
                        left,
                        top,
                        right,
                        bottom,
                    } => pb::pad::To::Borders(pb::PadBorders {
                        left,
                        top,
                        right,
                        bottom,
                    }),
                    PadTo::Canvas {
                        width,
                        height,
                        placement,
                    } => pb::pad::To::Canvas(pb::PadCanvas {
                        width,
                        height,
                        placement: to_pb(&PLACEMENTS, placement) as i32,
                    }),
                    PadTo::AtLeast {
                        width,
                        height,
                        placement,
                    } => pb::pad::To::AtLeast(pb::PadAtLeast {
                        width,
                        height,
                        placement: to_pb(&PLACEMENTS, placement) as i32,
                    }),
                }),
                fill: self.fill.iter().map(|&v| u32::from(v)).collect(),
            }
        }

        pub(crate) fn from_message(p: &pb::Pad, at: At) -> Result<Pad, GraphError> {
            let bad = |message: &str| GraphError::invalid(at, message.into());
            let to = match p
                .to
                .as_ref()
                .ok_or_else(|| bad("borders, canvas or at_least must be given"))?
            {
                pb::pad::To::Borders(b) => PadTo::Borders {
                    left: b.left,
                    top: b.top,
                    right: b.right,
                    bottom: b.bottom,
                },
                pb::pad::To::Canvas(c) => PadTo::Canvas {
                    width: c.width,
                    height: c.height,
                    placement: from_pb(&PLACEMENTS, c.placement, "placement", at)?,
                },
                pb::pad::To::AtLeast(c) => PadTo::AtLeast {
                    width: c.width,
                    height: c.height,
                    placement: from_pb(&PLACEMENTS, c.placement, "placement", at)?,
                },
            };
            let fill = match p.fill[..] {
                [r, g, b] if r < 256 && g < 256 && b < 256 => [r as u8, g as u8, b as u8],
                _ => return Err(bad("fill must be three values in 0-255 (R, G, B)")),
            };
            Ok(Pad { to, fill })
        }

        /// The features a reader needs for this padding.
        pub(crate) fn features(&self, out: &mut Vec<&'static str>) {
            out.push(match self.to {
                PadTo::Borders { .. } => BORDERS,
                PadTo::Canvas { .. } => CANVAS,
                PadTo::AtLeast { .. } => AT_LEAST,
            });
        }
    }

    /// Every feature a padding can need.
    pub(crate) fn known_features() -> impl Iterator<Item = &'static str> {
        [BORDERS, CANVAS, AT_LEAST].into_iter()
    }
}
