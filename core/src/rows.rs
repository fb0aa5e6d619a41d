//! Row access for the passes that read pixels first: the resampler and the finish pass.
//!
//! A fused pipeline never converts a whole frame in a pass of its own. The first
//! pass that reads the pixels asks for rows in its working format, and each row
//! (or block of rows) is converted — YUV to RGB, BGRA to RGB, RGBA premultiplied
//! — into a small scratch buffer just before it is used, while it is still in
//! cache. When nothing needs converting the rows are read in place.

use crate::ImageView;

/// Rows of a plane: row `i` is `data[i * stride..][..len]`.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) stride: usize,
    pub(crate) len: usize,
}

impl<'a> Rows<'a> {
    /// The rows from `y` on.
    #[inline(always)]
    pub(crate) fn from(&self, y: usize) -> Rows<'a> {
        Rows {
            data: &self.data[y * self.stride..],
            ..*self
        }
    }

    /// Row `i`.
    #[inline(always)]
    pub(crate) fn row(&self, i: usize) -> &'a [u8] {
        &self.data[i * self.stride..][..self.len]
    }
}

/// A source of rows in a packed working format, read one at a time.
pub(crate) trait RowSource {
    /// Row `y`, exactly one row of working-format bytes.
    fn row(&mut self, y: usize) -> &[u8];
}

/// A packed view read in place.
impl RowSource for ImageView<'_> {
    #[inline(always)]
    fn row(&mut self, y: usize) -> &[u8] {
        self.plane_row(0, y)
    }
}

pub(crate) use reader::{RowReader, premultiply, unpremultiply, unpremultiply_fir};

mod reader {
    use super::{RowSource, Rows};
    use crate::arena::Scratch;
    use crate::color::{RowConverter, YuvRange};
    use crate::image::packed_bpp;
    use crate::{ImageView, PixelFormat, Rect, Result};

    /// A region of an image read in a packed working format: in place when the
    /// formats agree, otherwise converted row by row on first read.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct RowReader<'a> {
        /// The region, widened to start on a chroma sample for subsampled sources.
        view: ImageView<'a>,
        /// Byte offset of the region's first pixel in a converted row.
        x: usize,
        /// Rows of `view` above the region.
        y: usize,
        width: u32,
        height: u32,
        bpp: usize,
        format: PixelFormat,
        convert: Option<RowConverter>,
    }

    impl<'a> RowReader<'a> {
        /// Reads `region` of `src` as `format` (packed); `range` applies to YUV sources.
        pub(crate) fn new(
            src: &ImageView<'a>,
            region: Rect,
            format: PixelFormat,
            range: YuvRange,
        ) -> Result<Self> {
            let bpp = packed_bpp("reading rows (the working format)", format)?;
            let convert = if src.format() == format {
                None
            } else {
                Some(RowConverter::new(src.format(), format, range)?)
            };
            // A subsampled view must start on a chroma sample; the pixels before
            // the region are skipped after converting.
            let (sx, sy) = src.format().chroma_subsampling();
            let (dx, dy) = (region.x % sx, region.y % sy);
            let view = src.crop(Rect::new(
                region.x - dx,
                region.y - dy,
                region.width + dx,
                region.height + dy,
            ))?;
            Ok(RowReader {
                view,
                x: dx as usize * bpp,
                y: dy as usize,
                width: region.width,
                height: region.height,
                bpp,
                format,
                convert,
            })
        }

        /// The working format.
        pub(crate) fn format(&self) -> PixelFormat {
            self.format
        }

        /// Region width and height.
        pub(crate) fn size(&self) -> (u32, u32) {
            (self.width, self.height)
        }

        /// Whether rows are read in place (no conversion).
        pub(crate) fn is_direct(&self) -> bool {
            self.convert.is_none()
        }

        /// The pixels of region row `y` at region columns `cols`, converted to
        /// the working format into `scratch` (only those pixels are converted).
        pub(crate) fn gather<'s>(
            &'s self,
            y: usize,
            cols: &[u32],
            scratch: &'s mut impl Scratch,
        ) -> &'s [u8] {
            let n = cols.len();
            let (out, planes) = scratch
                .grow(self.gather_scratch(n))
                .split_at_mut(n * self.bpp);
            // The view starts one pixel early for a 4:2:0 region at an odd column.
            let dx = self.x / self.bpp;
            match &self.convert {
                Some(c) => c.gather(&self.view, self.y + y, cols, dx, out, planes),
                None => {
                    let row = self.view.plane_row(0, self.y + y);
                    for (o, &x) in out.chunks_exact_mut(self.bpp).zip(cols) {
                        o.copy_from_slice(&row[(dx + x as usize) * self.bpp..][..self.bpp]);
                    }
                }
            }
            out
        }

        /// The scratch bytes [`RowReader::rows`] fills for `count` rows (none
        /// when the rows are read in place).
        pub(crate) fn rows_scratch(&self, count: usize, premultiplied: bool) -> usize {
            rows_scratch(
                self.convert.is_some(),
                premultiplied,
                self.view.width(),
                self.bpp,
                count,
            )
        }

        /// [`RowReader::rows_scratch`] of a reader over `region` of a
        /// `from` image read as `to`, known before there are pixels.
        pub(crate) fn rows_scratch_for(
            from: PixelFormat,
            region: Rect,
            to: PixelFormat,
            count: usize,
            premultiplied: bool,
        ) -> Result<usize> {
            let bpp = packed_bpp("reading rows (the working format)", to)?;
            let width = region.width + region.x % from.chroma_subsampling().0;
            Ok(rows_scratch(from != to, premultiplied, width, bpp, count))
        }

        /// The scratch bytes [`RowReader::gather`] fills for `n` columns.
        pub(crate) fn gather_scratch(&self, n: usize) -> usize {
            Self::gather_scratch_for(self.bpp, n)
        }

        /// [`RowReader::gather_scratch`] for a working format of `bpp` bytes:
        /// the pixels, then the Y, U and V of a 4:2:0 source's.
        pub(crate) fn gather_scratch_for(bpp: usize, n: usize) -> usize {
            n * (bpp + 3)
        }

        /// Bytes per working-format pixel.
        pub(crate) fn bpp(&self) -> usize {
            self.bpp
        }

        /// Rows `[first, first + count)` of the region in the working format,
        /// premultiplied (Pillow's `RGBa`) when asked. They point into the source
        /// when nothing needs changing, into `scratch` otherwise.
        pub(crate) fn rows<'s>(
            &'s self,
            first: usize,
            count: usize,
            premultiplied: bool,
            scratch: &'s mut impl Scratch,
        ) -> Rows<'s> {
            let len = self.width as usize * self.bpp;
            if self.convert.is_none() && !premultiplied {
                let p = self.view.plane(0);
                return Rows {
                    data: &p.data[(self.y + first) * p.stride..],
                    stride: p.stride,
                    len,
                };
            }
            let row_len = self.view.width() as usize * self.bpp;
            let out = scratch.grow(self.rows_scratch(count, premultiplied));
            for (i, o) in out.chunks_exact_mut(row_len).enumerate() {
                let y = self.y + first + i;
                match (&self.convert, premultiplied) {
                    (Some(c), pre) => {
                        c.row(&self.view, y, o);
                        if pre {
                            o.chunks_exact_mut(4).for_each(|p| {
                                let q = premultiply(p);
                                p.copy_from_slice(&q);
                            });
                        }
                    }
                    (None, _) => {
                        for (q, p) in o
                            .chunks_exact_mut(4)
                            .zip(self.view.plane_row(0, y).chunks_exact(4))
                        {
                            q.copy_from_slice(&premultiply(p));
                        }
                    }
                }
            }
            Rows {
                data: &out[self.x..],
                stride: row_len,
                len,
            }
        }

        /// A [`RowSource`] over the region, converting through `scratch`.
        pub(crate) fn source<'s, B: Scratch>(
            &'s self,
            scratch: &'s mut B,
        ) -> ReaderSource<'s, 'a, B> {
            ReaderSource {
                reader: self,
                scratch,
            }
        }
    }

    /// A [`RowReader`] and the scratch its conversions go through.
    pub(crate) struct ReaderSource<'s, 'a, B: Scratch> {
        reader: &'s RowReader<'a>,
        scratch: &'s mut B,
    }

    impl<B: Scratch> RowSource for ReaderSource<'_, '_, B> {
        #[inline]
        fn row(&mut self, y: usize) -> &[u8] {
            self.reader.rows(y, 1, false, self.scratch).row(0)
        }
    }

    /// The bytes of scratch `count` rows read through a reader take: none when
    /// they are read in place, else `width` pixels of the region's view
    /// (widened to its first chroma sample) of `bpp` bytes each.
    pub(crate) fn rows_scratch(
        convert: bool,
        premultiplied: bool,
        width: u32,
        bpp: usize,
        count: usize,
    ) -> usize {
        if !convert && !premultiplied {
            return 0;
        }
        count * width as usize * bpp
    }

    /// Pillow's `RGBA -> RGBa`: `c * a / 255` rounded by its shift formula.
    #[inline(always)]
    pub(crate) fn premultiply(p: &[u8]) -> [u8; 4] {
        let a = u32::from(p[3]);
        let m = |c: u8| {
            let t = u32::from(c) * a + 128;
            (((t >> 8) + t) >> 8) as u8
        };
        [m(p[0]), m(p[1]), m(p[2]), p[3]]
    }

    /// Pillow's `RGBa -> RGBA`: `255 * c / a` truncated and clamped, unchanged for a = 0 or 255.
    #[inline(always)]
    pub(crate) fn unpremultiply(p: &mut [u8]) {
        let a = u32::from(p[3]);
        if a != 0 && a != 255 {
            for c in &mut p[..3] {
                *c = (255 * u32::from(*c) / a).min(255) as u8;
            }
        }
    }

    /// `fast_image_resize`'s division by alpha: `c` times a rounded
    /// reciprocal with 8 fractional bits, `round(255 * 2^8 / a)`, then rounded
    /// and clamped; 0 for a = 0.
    #[inline(always)]
    pub(crate) fn unpremultiply_fir(p: &mut [u8]) {
        let a = u32::from(p[3]);
        let recip = (255u32 << 9).checked_div(a).map_or(0, |r| (r + 1) >> 1);
        for c in &mut p[..3] {
            *c = ((u32::from(*c) * recip + 128) >> 8).min(255) as u8;
        }
    }
}
