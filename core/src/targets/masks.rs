//! Masks through the geometric ops, as torchvision v2's mask kernels move
//! them: `[N, H, W]` uint8 (instance masks; a semantic mask is `N = 1`),
//! resized with torch's `nearest`, cropped and padded with zeros, and
//! warped (affine, rotate, perspective) with torch's nearest `grid_sample`.

use alloc::vec;
use alloc::vec::Vec;

use super::boxes::check_keep;
use super::points::{self, Affine};
use super::{Canvas, Padding};
use crate::pipeline::CropRounding;
use crate::warp::{py_mod, torchvision_affine};
use crate::{Error, Limits, Result};

/// `count` masks of one canvas, stored mask after mask, row after row
/// (torchvision's `tv_tensors.Mask` of shape `[N, H, W]`, uint8).
///
/// ```
/// use tensorprep::targets::{Canvas, Masks};
///
/// let mut m = Masks::new(vec![1, 2, 3, 4, 5, 6], 1, Canvas::new(2, 3)?)?;
/// m.horizontal_flip();
/// assert_eq!(m.data(), &[3, 2, 1, 6, 5, 4]);
/// m.crop(-1, 1, 2, 2)?; // top, left, height, width: zeros outside
/// assert_eq!(m.data(), &[0, 0, 2, 1]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Masks {
    data: Vec<u8>,
    count: usize,
    canvas: Canvas,
}

impl Masks {
    /// `count` masks of `canvas`'s size in `data` (`count * H * W` bytes).
    pub fn new(data: Vec<u8>, count: usize, canvas: Canvas) -> Result<Masks> {
        let needed = (area(canvas) as u64).saturating_mul(count as u64);
        if data.len() as u64 != needed {
            return Err(Error::TensorSize {
                len: data.len(),
                needed: usize::try_from(needed).unwrap_or(usize::MAX),
            });
        }
        Ok(Masks {
            data,
            count,
            canvas,
        })
    }

    /// The masks' bytes, `[N, H, W]`.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The bytes, given back.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// How many masks there are (`N`).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Their size.
    pub fn canvas(&self) -> Canvas {
        self.canvas
    }

    fn rows_mut(&mut self) -> impl Iterator<Item = &mut [u8]> {
        let w = self.canvas.width as usize;
        self.data.chunks_exact_mut(w)
    }

    /// Keeps the masks whose `keep` entry is true (one per mask), as
    /// `SanitizeBoundingBoxes` keeps instance masks in step with their boxes.
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        check_keep(keep, self.count)?;
        let size = area(self.canvas);
        let mut kept = 0;
        for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
            self.data.copy_within(i * size..(i + 1) * size, kept * size);
            kept += 1;
        }
        self.data.truncate(kept * size);
        self.count = kept;
        Ok(())
    }

    /// torchvision's `horizontal_flip`: each row reversed.
    pub fn horizontal_flip(&mut self) {
        self.rows_mut().for_each(<[u8]>::reverse);
    }

    /// torchvision's `vertical_flip`: each mask's rows in reverse order.
    pub fn vertical_flip(&mut self) {
        let (w, h) = (self.canvas.width as usize, self.canvas.height as usize);
        if w == 0 {
            return;
        }
        for mask in self.data.chunks_exact_mut(w * h) {
            for y in 0..h / 2 {
                let (top, bottom) = mask.split_at_mut((h - 1 - y) * w);
                top[y * w..(y + 1) * w].swap_with_slice(&mut bottom[..w]);
            }
        }
    }

    /// torchvision's `resize` of a mask to `size` (its default; a mask
    /// resized with `NEAREST_EXACT`, which torchvision passes on to masks,
    /// is not built): torch's `nearest`
    /// (`interpolate(mode="nearest")`), the source index of each output
    /// index `i` being `min(floor(i * (in / out)), in - 1)` with the ratio
    /// in float32 (`i` itself when the side is unchanged, `i / 2` when it
    /// doubles).
    pub fn resize(&mut self, size: Canvas) -> Result<()> {
        if size == self.canvas {
            return Ok(());
        }
        let xs = nearest_indices(self.canvas.width, size.width);
        let ys = nearest_indices(self.canvas.height, size.height);
        let (iw, ih) = (self.canvas.width as usize, self.canvas.height as usize);
        let mut out = self.allocation(size)?;
        let ow = size.width as usize;
        for (src, dst) in self
            .data
            .chunks_exact(iw * ih)
            .zip(out.chunks_exact_mut(area(size)))
        {
            for (row, &y) in dst.chunks_exact_mut(ow).zip(&ys) {
                let src_row = &src[y * iw..][..iw];
                for (d, &x) in row.iter_mut().zip(&xs) {
                    *d = src_row[x];
                }
            }
        }
        self.data = out;
        self.canvas = size;
        Ok(())
    }

    /// A zeroed buffer for the masks at `size`, its length checked against
    /// the default allocation cap ([`Limits`]) first.
    fn allocation(&self, size: Canvas) -> Result<Vec<u8>> {
        Ok(vec![0; self.allocation_size(size)?])
    }

    /// The bytes of the masks at `size`, checked against the cap.
    fn allocation_size(&self, size: Canvas) -> Result<usize> {
        let bytes = (area(size) as u64).saturating_mul(self.count as u64);
        Limits::default().check_alloc(bytes)
    }

    /// torchvision's `crop(top, left, height, width)`: the window, zeros
    /// where it lies outside the masks.
    pub fn crop(&mut self, top: i64, left: i64, height: u32, width: u32) -> Result<()> {
        self.window(top, left, height, width, 0)
    }

    /// The window at (`top`, `left`) of `height` x `width`, `fill` where it
    /// lies outside the masks.
    fn window(&mut self, top: i64, left: i64, height: u32, width: u32, fill: u8) -> Result<()> {
        let size = Canvas::new(height, width)?;
        let mut out = self.allocation(size)?;
        if fill != 0 {
            out.fill(fill);
        }
        let (iw, ih) = (i64::from(self.canvas.width), i64::from(self.canvas.height));
        // The columns of the window inside the source, and where they land.
        let x0 = left.clamp(0, iw);
        let x1 = left.saturating_add(i64::from(width)).clamp(0, iw);
        let ow = width as usize;
        if x1 > x0 {
            let n = (x1 - x0) as usize;
            let dst_x = (x0 - left) as usize;
            for (src, dst) in self
                .data
                .chunks_exact((iw * ih) as usize)
                .zip(out.chunks_exact_mut(area(size)))
            {
                for (oy, row) in dst.chunks_exact_mut(ow).enumerate() {
                    let y = top.saturating_add(oy as i64);
                    if (0..ih).contains(&y) {
                        let start = (y * iw + x0) as usize;
                        row[dst_x..dst_x + n].copy_from_slice(&src[start..start + n]);
                    }
                }
            }
        }
        self.data = out;
        self.canvas = size;
        Ok(())
    }

    /// torchvision's `center_crop(output_size=[height, width])` of a mask:
    /// as the image is cropped (zero padding first where the crop is larger,
    /// `(crop - side) // 2` before), which can place it a pixel apart from
    /// the boxes' crop, as in torchvision.
    pub fn center_crop(&mut self, height: u32, width: u32) -> Result<()> {
        let offset = |side: u32, crop: u32| {
            let (side, crop) = (i64::from(side), i64::from(crop));
            if crop > side {
                -((crop - side) / 2)
            } else {
                CropRounding::HalfEven.offset(side - crop)
            }
        };
        let top = offset(self.canvas.height, height);
        let left = offset(self.canvas.width, width);
        self.crop(top, left, height, width)
    }

    /// torchvision's `resized_crop(top, left, height, width, size)`:
    /// [`crop`](Self::crop), then [`resize`](Self::resize) (nearest).
    pub fn resized_crop(
        &mut self,
        top: i64,
        left: i64,
        height: u32,
        width: u32,
        size: Canvas,
    ) -> Result<()> {
        // Both steps' sizes checked first: a refusal leaves the masks as they were.
        Canvas::new(height, width)?;
        self.allocation_size(size)?;
        self.crop(top, left, height, width)?;
        self.resize(size)
    }

    /// torchvision's `pad(padding)` with zeros (constant padding, fill 0).
    pub fn pad(&mut self, padding: Padding) -> Result<()> {
        self.pad_with(padding, 0)
    }

    /// torchvision's `pad(padding, fill)` (constant padding): the new
    /// border gets `fill` (255, for instance, as segmentation's ignore index).
    pub fn pad_with(&mut self, padding: Padding, fill: u8) -> Result<()> {
        let size = padding.canvas(self.canvas)?;
        let negated = |v: i64| {
            v.checked_neg().ok_or(Error::InvalidParameter {
                name: "padding",
                reason: "the padded canvas is out of range",
            })
        };
        self.window(
            negated(padding.top)?,
            negated(padding.left)?,
            size.height,
            size.width,
            fill,
        )
    }

    /// torchvision's `affine(angle, translate, scale, shear, center, fill)`
    /// of a mask: its tensor image kernel with nearest interpolation forced
    /// (`grid_sample(mode="nearest", padding_mode="zeros",
    /// align_corners=False)` on a float32 copy), the canvas unchanged.
    ///
    /// `fill` is torchvision's `fill` for the masks: `&[]` for `None`, `&[v]`
    /// for the number `v`, or one value per mask (a list of `N`); it is
    /// what pixels read from outside the masks get (zeros for `&[]`, which
    /// `&[0]` gives too). Any other length is an error, as in torchvision.
    /// torchvision takes a float and rounds it half to even into the mask's
    /// type: give that byte.
    ///
    /// ```
    /// use tensorprep::targets::{Affine, Canvas, Masks};
    ///
    /// // One 2x3 mask moved a pixel right; the column it leaves gets 9.
    /// let mut m = Masks::new(vec![1, 2, 3, 4, 5, 6], 1, Canvas::new(2, 3)?)?;
    /// let shift = Affine::new(0.0, (1.0, 0.0), 1.0, (0.0, 0.0), None);
    /// m.affine(&shift, &[9])?;
    /// assert_eq!(m.data(), &[9, 1, 2, 9, 4, 5]);
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn affine(&mut self, affine: &Affine, fill: &[u8]) -> Result<()> {
        let canvas = self.canvas;
        let center = image_center(affine.center, canvas);
        let m = torchvision_affine(
            center,
            affine.angle,
            affine.translate,
            affine.scale,
            affine.shear,
            true,
        )?;
        self.warp(canvas, fill, affine_grid(&m, canvas, canvas))
    }

    /// torchvision's `rotate(angle, expand, center, fill)` of a mask
    /// (counter-clockwise, in degrees; `fill` as for [`affine`](Self::affine)).
    ///
    /// As torchvision's tensor kernel: the angle taken modulo 360 (Python's
    /// `%`), then, without a `center`, 0 leaves the masks as they are, 180
    /// turns them over and 90 or 270 turn them a quarter (torch's `rot90`)
    /// when `expand` is set or the masks are square; every other rotation
    /// samples the grid as [`affine`](Self::affine) does. With `expand` the
    /// canvas is sized as torchvision sizes the *image*
    /// (`_compute_affine_output_size` on the matrix about the centre), which
    /// can differ by a pixel from the canvas
    /// [`BoundingBoxes::rotate`](super::BoundingBoxes::rotate) gives, as in
    /// torchvision. The fast paths never check `fill`, as in torchvision.
    pub fn rotate(
        &mut self,
        angle: f64,
        expand: bool,
        center: Option<(f64, f64)>,
        fill: &[u8],
    ) -> Result<()> {
        let canvas = self.canvas;
        let turn = Turn::new(angle, expand, center, canvas)?;
        match turn.quarters {
            Some(0) => return Ok(()),
            Some(k) => return self.quarter_turns(k),
            None => {}
        }
        let size = turn.canvas;
        let center = image_center(center, canvas);
        let rotation = Affine::rotation(turn.angle, Some(center));
        let m = torchvision_affine(center, rotation.angle, (0.0, 0.0), 1.0, (0.0, 0.0), true)?;
        self.warp(size, fill, affine_grid(&m, canvas, size))
    }

    /// torchvision's `perspective(startpoints, endpoints, fill)` of a mask
    /// (corners top-left, top-right, bottom-right, bottom-left; `fill` as
    /// for [`affine`](Self::affine)). The coefficients are the system's
    /// solution rounded to float32, which torchvision's least-squares
    /// solver can miss by a float32 step: for its exact output, give its
    /// coefficients to
    /// [`perspective_coefficients`](Self::perspective_coefficients).
    pub fn perspective(
        &mut self,
        start: [(f64, f64); 4],
        end: [(f64, f64); 4],
        fill: &[u8],
    ) -> Result<()> {
        self.perspective_coefficients(&points::perspective_coefficients(start, end)?, fill)
    }

    /// torchvision's `perspective(coefficients=..., fill)` of a mask: the 8
    /// coefficients mapping output pixels to input pixels, in float32 (each
    /// must be finite there), sampled with nearest `grid_sample` as
    /// [`affine`](Self::affine) does. A pixel whose denominator is 0 reads
    /// nothing (zero or the fill), as in torch.
    pub fn perspective_coefficients(&mut self, coefficients: &[f64; 8], fill: &[u8]) -> Result<()> {
        let c = coefficients.map(|v| v as f32);
        if !c.iter().all(|v| v.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "perspective",
                reason: "the coefficients must be finite in float32",
            });
        }
        let canvas = self.canvas;
        let (sw, sh) = half_sides(canvas);
        let r = [
            c[0] / sw,
            c[1] / sw,
            c[2] / sw,
            c[3] / sh,
            c[4] / sh,
            c[5] / sh,
        ];
        let (g, h) = (c[6], c[7]);
        self.warp(canvas, fill, move |ox: u32, oy: u32| {
            // torch's linspace(0.5, side - 0.5): steps of exactly 1.
            let (x, y) = (ox as f32 + 0.5, oy as f32 + 0.5);
            let d = x * g + y * h + 1.0;
            (
                (x * r[0] + y * r[1] + r[2]) / d - 1.0,
                (x * r[3] + y * r[4] + r[5]) / d - 1.0,
            )
        })
    }

    /// torch's `rot90(k, dims=(-2, -1))` of every mask (counter-clockwise).
    fn quarter_turns(&mut self, k: u8) -> Result<()> {
        let (w, h) = (self.canvas.width as usize, self.canvas.height as usize);
        if k == 2 {
            for mask in self.data.chunks_exact_mut(w * h) {
                mask.reverse();
            }
            return Ok(());
        }
        let size = Canvas {
            height: self.canvas.width,
            width: self.canvas.height,
        };
        let mut out = self.allocation(size)?;
        for (src, dst) in self
            .data
            .chunks_exact(w * h)
            .zip(out.chunks_exact_mut(w * h))
        {
            // Output row i, column j (W rows of H).
            for (i, row) in dst.chunks_exact_mut(h).enumerate() {
                for (j, d) in row.iter_mut().enumerate() {
                    *d = if k == 1 {
                        src[j * w + (w - 1 - i)]
                    } else {
                        src[(h - 1 - j) * w + i]
                    };
                }
            }
        }
        self.data = out;
        self.canvas = size;
        Ok(())
    }

    /// torchvision's `_apply_grid_transform` with nearest interpolation on
    /// the masks: output pixel `(x, y)` of `size` reads the input pixel
    /// `grid(x, y)` points to (normalized, `align_corners=False`), rounded
    /// half to even; outside the input it gets the fill.
    fn warp(
        &mut self,
        size: Canvas,
        fill: &[u8],
        grid: impl Fn(u32, u32) -> (f32, f32),
    ) -> Result<()> {
        if !(fill.len() <= 1 || fill.len() == self.count) {
            return Err(Error::InvalidParameter {
                name: "fill",
                reason: "fill has no value, one, or one per mask",
            });
        }
        let (iw, ih) = (self.canvas.width, self.canvas.height);
        let mut out = self.allocation(size)?;
        let (ow, cells, plane) = (size.width as usize, area(size), area(self.canvas));
        // Where each pixel of an output row reads (an offset in a mask), or
        // usize::MAX outside; computed once for all the masks.
        let slot = core::mem::size_of::<usize>() as u64;
        Limits::default().check_alloc(slot.saturating_mul(ow as u64))?;
        let mut reads = vec![usize::MAX; ow];
        // grid_sample's unnormalize, ((g + 1) * side - 1) / 2, as torch's CPU
        // kernel computes it: (g + 1) * (side / 2) - 0.5 (the same value).
        let (sx, sy) = (iw as f32 / 2.0, ih as f32 / 2.0);
        let (fw, fh) = (iw as f32, ih as f32);
        // No masks, nothing to sample (torchvision returns at once too).
        let rows = if self.count == 0 { 0 } else { size.height };
        for oy in 0..rows {
            for (ox, read) in (0..size.width).zip(reads.iter_mut()) {
                let (gx, gy) = grid(ox, oy);
                let x = libm::rintf((gx + 1.0) * sx - 0.5);
                let y = libm::rintf((gy + 1.0) * sy - 0.5);
                // NaN fails every comparison: outside.
                let inside = x > -1.0 && x < fw && y > -1.0 && y < fh;
                *read = if inside {
                    y as usize * iw as usize + x as usize
                } else {
                    usize::MAX
                };
            }
            let row = oy as usize * ow;
            for (n, dst) in out.chunks_exact_mut(cells).enumerate() {
                let src = &self.data[n * plane..][..plane];
                let outside = match fill {
                    [] => 0,
                    [v] => *v,
                    per_mask => per_mask[n],
                };
                for (d, &r) in dst[row..row + ow].iter_mut().zip(&reads) {
                    *d = src.get(r).copied().unwrap_or(outside);
                }
            }
        }
        self.data = out;
        self.canvas = size;
        Ok(())
    }
}

/// What torchvision's mask (and image) kernel makes of `rotate(angle,
/// expand, center)` on a canvas: what [`Masks::rotate`] does, and what
/// polygons follow to be rasterised on the same canvas.
pub(super) struct Turn {
    /// The angle modulo 360 (Python's `%`).
    pub(super) angle: f64,
    /// The quarter turns (counter-clockwise; 0 leaves the masks) of its
    /// fast path: no `center`, a multiple of 90 degrees, and for a quarter
    /// turn `expand` or a square canvas. `None`: it samples a grid.
    pub(super) quarters: Option<u8>,
    /// The canvas it leaves.
    pub(super) canvas: Canvas,
}

impl Turn {
    /// `rotate(angle, expand, center)` of `canvas`; the angle must be finite.
    pub(super) fn new(
        angle: f64,
        expand: bool,
        center: Option<(f64, f64)>,
        canvas: Canvas,
    ) -> Result<Turn> {
        if !angle.is_finite() {
            return Err(Error::InvalidParameter {
                name: "rotate",
                reason: "the angle must be finite",
            });
        }
        let angle = py_mod(angle, 360.0);
        let turnable = expand || canvas.width == canvas.height;
        let quarters = match angle {
            _ if center.is_some() => None,
            0.0 => Some(0),
            180.0 => Some(2),
            90.0 if turnable => Some(1),
            270.0 if turnable => Some(3),
            _ => None,
        };
        let canvas = match quarters {
            Some(1 | 3) => Canvas {
                height: canvas.width,
                width: canvas.height,
            },
            Some(_) => canvas,
            // The rotation pivots on the image kernel's centre (relative to
            // the canvas's centre), so its expanded canvas is sized from
            // that matrix, as the image kernel sizes it.
            None if expand => Affine::rotation(angle, Some(image_center(center, canvas)))
                .expanded_canvas(canvas)?,
            None => canvas,
        };
        Ok(Turn {
            angle,
            quarters,
            canvas,
        })
    }
}

fn area(c: Canvas) -> usize {
    c.width as usize * c.height as usize
}

/// The image kernels' centre: relative to the canvas's centre (`c - side *
/// 0.5`), or the origin (the canvas's centre) without one.
fn image_center(center: Option<(f64, f64)>, canvas: Canvas) -> (f64, f64) {
    center.map_or((0.0, 0.0), |(x, y)| {
        (
            x - f64::from(canvas.width) * 0.5,
            y - f64::from(canvas.height) * 0.5,
        )
    })
}

/// `0.5 * W` and `0.5 * H` in float32 (what torchvision divides theta by).
fn half_sides(canvas: Canvas) -> (f32, f32) {
    (
        (0.5 * f64::from(canvas.width)) as f32,
        (0.5 * f64::from(canvas.height)) as f32,
    )
}

/// torchvision's `_affine_grid` for the inverse matrix `m` (double, rounded
/// once to float32), the input canvas `input` and the output `size`: the
/// output pixel's centre relative to the output's centre (torch's
/// `linspace((1 - ow) / 2, (ow - 1) / 2)`, steps of exactly 1), through
/// theta divided by half the input's sides, `((x * a) + (y * b)) + c` in
/// float32 (the order of torch's `bmm`; no fused multiply-add).
fn affine_grid(m: &[f64; 6], input: Canvas, size: Canvas) -> impl Fn(u32, u32) -> (f32, f32) {
    let t = m.map(|v| v as f32);
    let (sw, sh) = half_sides(input);
    let r = [
        t[0] / sw,
        t[1] / sw,
        t[2] / sw,
        t[3] / sh,
        t[4] / sh,
        t[5] / sh,
    ];
    let (ow, oh) = (i64::from(size.width), i64::from(size.height));
    move |ox: u32, oy: u32| {
        // Exact: half-integers far below 2^24.
        let x = ((2 * i64::from(ox) + 1 - ow) as f64 * 0.5) as f32;
        let y = ((2 * i64::from(oy) + 1 - oh) as f64 * 0.5) as f32;
        (x * r[0] + y * r[1] + r[2], x * r[3] + y * r[4] + r[5])
    }
}

/// torch's `nearest` source index for each of `out` output indices.
fn nearest_indices(input: u32, out: u32) -> Vec<usize> {
    let scale = input as f32 / out as f32;
    (0..out)
        .map(|i| {
            if out == input {
                i as usize
            } else if out == 2 * input {
                (i >> 1) as usize
            } else {
                (libm::floorf(i as f32 * scale) as usize).min(input as usize - 1)
            }
        })
        .collect()
}
