//! Resizing float32 images (depth maps, HDR, disparity, a model's float
//! output) with a reference library's arithmetic:
//!
//! - [`Resample::Pillow`], every filter: Pillow's `Image.resize` of an `F`
//!   (float32) image, channel by channel: the same passes, boxes and
//!   shortcuts as for 8-bit images, with the unquantized `f64` weights,
//!   products and sums in `f64` and each pass stored as float32
//!   (`ImagingResampleHorizontal_32bpc`); `NEAREST` is its affine sampling.
//! - [`Resample::TorchFloat`], BILINEAR or BICUBIC: PyTorch's
//!   `interpolate(..., antialias=True)` of a float32 tensor (torchvision's
//!   `Resize` on float tensors): float32 weights, horizontal then vertical
//!   pass, each tap a fused multiply-add as in PyTorch's x86 and aarch64
//!   builds, no clamping.
//!
//! Other methods are refused by name. Values are resampled as they are:
//! negative, above 1, infinite or NaN samples spread through the filter as
//! the reference spreads them.
//!
//! ```
//! use tensorprep::resize::{Filter, FloatImage, FloatResizer, FloatView, Resample};
//! use tensorprep::size::SizeRule;
//!
//! // A 64x48 depth map in metres, one channel.
//! let depth: Vec<f32> = (0..64 * 48).map(|i| 1.5 + (i % 64) as f32 * 0.01).collect();
//! let src = FloatView::new(&depth, 64, 48, 1)?;
//! let rule = SizeRule::Exact { width: 32, height: 24 };
//! let mut resizer = FloatResizer::new();
//! let mut out = FloatImage::zeros(32, 24, 1)?;
//! resizer.resize(&src, &mut out.view_mut(), Resample::Pillow(Filter::Bilinear))?;
//! assert!(out.as_slice().iter().all(|&m| (1.5..2.14).contains(&m)));
//! // The one-shot form, with a size rule.
//! let half = tensorprep::resize::resize_f32_by_rule(&src, rule, Resample::Pillow(Filter::Bilinear))?;
//! assert_eq!(half.as_slice(), out.as_slice());
//! # Ok::<(), tensorprep::Error>(())
//! ```

use alloc::vec::Vec;

use super::coeffs::F64Axis;
use super::kernels::FloatPath;
use super::pillow::{Arithmetic, F64Plan, PillowShape};
use super::torch_float::{FloatAxis, TorchFloatShape};
use super::{Resample, Simd, SourceBox};
use crate::arena::{Heap, Pools};
use crate::math::fmaf;
use crate::size::SizeRule;
use crate::{Error, Limits, Rect, Result};

/// Most channels a float image may have.
pub const MAX_FLOAT_CHANNELS: usize = 16;

fn check_layout(len: usize, width: u32, height: u32, channels: usize, stride: usize) -> Result<()> {
    crate::image::check_dimensions(u64::from(width), u64::from(height))?;
    if !(1..=MAX_FLOAT_CHANNELS).contains(&channels) {
        return Err(Error::InvalidParameter {
            name: "float image",
            reason: "channels must be 1 to MAX_FLOAT_CHANNELS",
        });
    }
    let row = width as usize * channels;
    if stride < row {
        return Err(Error::StrideTooSmall {
            plane: 0,
            stride,
            min: row,
        });
    }
    let needed = (height as usize - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(row))
        .ok_or(Error::InvalidDimensions {
            width: u64::from(width),
            height: u64::from(height),
        })?;
    if len < needed {
        return Err(Error::BufferTooSmall {
            plane: 0,
            len,
            needed,
        });
    }
    Ok(())
}

/// A float32 image: `channels` interleaved samples per pixel (HWC, as numpy
/// and OpenCV hold them), rows `stride` samples apart, over `D`: borrowed
/// ([`FloatView`]), borrowed for writing ([`FloatViewMut`]) or owned
/// ([`FloatImage`]). The layout is checked against the data once, when made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatPixels<D> {
    data: D,
    width: u32,
    height: u32,
    channels: usize,
    stride: usize,
}

/// A borrowed float32 image.
pub type FloatView<'a> = FloatPixels<&'a [f32]>;
/// A borrowed, writable float32 image.
pub type FloatViewMut<'a> = FloatPixels<&'a mut [f32]>;
/// An owned float32 image.
pub type FloatImage = FloatPixels<Vec<f32>>;

impl<D: AsRef<[f32]>> FloatPixels<D> {
    /// A tightly packed image (`stride = width * channels`).
    pub fn new(data: D, width: u32, height: u32, channels: usize) -> Result<Self> {
        Self::with_stride(data, width, height, channels, width as usize * channels)
    }

    /// An image whose rows are `stride` samples apart (only the rows'
    /// pixels are read or written).
    pub fn with_stride(
        data: D,
        width: u32,
        height: u32,
        channels: usize,
        stride: usize,
    ) -> Result<Self> {
        check_layout(data.as_ref().len(), width, height, channels, stride)?;
        Ok(FloatPixels {
            data,
            width,
            height,
            channels,
            stride,
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Samples per pixel.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The image, borrowed.
    pub fn view(&self) -> FloatView<'_> {
        FloatPixels {
            data: self.data.as_ref(),
            width: self.width,
            height: self.height,
            channels: self.channels,
            stride: self.stride,
        }
    }

    /// The samples from the first row's start to the last row's end.
    pub fn as_slice(&self) -> &[f32] {
        let data = self.data.as_ref();
        let len = (self.height as usize - 1) * self.stride + self.width as usize * self.channels;
        &data[..len]
    }

    /// Row `y`'s samples.
    fn row(&self, y: usize) -> &[f32] {
        &self.data.as_ref()[y * self.stride..][..self.width as usize * self.channels]
    }
}

impl<D: AsRef<[f32]> + AsMut<[f32]>> FloatPixels<D> {
    /// The image, borrowed for writing.
    pub fn view_mut(&mut self) -> FloatViewMut<'_> {
        FloatPixels {
            data: self.data.as_mut(),
            width: self.width,
            height: self.height,
            channels: self.channels,
            stride: self.stride,
        }
    }

    fn row_mut(&mut self, y: usize) -> &mut [f32] {
        let row = self.width as usize * self.channels;
        &mut self.data.as_mut()[y * self.stride..][..row]
    }
}

impl<'a> FloatView<'a> {
    /// The part of the image inside `rect` (no copy).
    pub fn crop(&self, rect: Rect) -> Result<FloatView<'a>> {
        if !rect.fits_in(self.width, self.height) || rect.width == 0 || rect.height == 0 {
            return Err(Error::RectOutOfBounds {
                rect,
                width: self.width,
                height: self.height,
            });
        }
        let start = rect.y as usize * self.stride + rect.x as usize * self.channels;
        FloatView::with_stride(
            &self.data[start..],
            rect.width,
            rect.height,
            self.channels,
            self.stride,
        )
    }
}

impl FloatImage {
    /// A zeroed, tightly packed image (its size checked against
    /// [`Limits::DEFAULT`] before allocating).
    pub fn zeros(width: u32, height: u32, channels: usize) -> Result<FloatImage> {
        let len = u64::from(width) * u64::from(height) * channels as u64;
        Limits::DEFAULT.check_alloc(len.saturating_mul(4))?;
        check_layout(
            len as usize,
            width,
            height,
            channels,
            width as usize * channels,
        )?;
        let mut data = Vec::new();
        data.try_reserve_exact(len as usize)
            .map_err(|_| Error::OutOfMemory { bytes: len * 4 })?;
        data.resize(len as usize, 0.0);
        FloatImage::new(data, width, height, channels)
    }
}

/// What a plan is made for.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Key {
    src: (u32, u32),
    source_box: SourceBox,
    dst: (u32, u32),
    resample: Resample,
}

/// The passes for one [`Key`]; indices relative to `region`.
#[derive(Debug)]
enum Passes {
    Pillow(F64Plan),
    Torch {
        h: Option<FloatAxis<Heap>>,
        v: Option<FloatAxis<Heap>>,
    },
}

#[derive(Debug)]
struct Plan {
    key: Key,
    region: Rect,
    passes: Passes,
}

impl Plan {
    fn new(key: Key, limits: &Limits) -> Result<Plan> {
        let Key {
            src,
            source_box,
            dst,
            resample,
        } = key;
        let window = Rect::new(0, 0, dst.0, dst.1);
        resample.check_built()?;
        super::plan::check_sizes(src, source_box, dst, window, limits)?;
        match resample {
            Resample::Pillow(filter) => {
                let shape = PillowShape::new(
                    src,
                    source_box,
                    dst,
                    window,
                    filter,
                    Arithmetic::PILLOW,
                    limits,
                )?;
                Ok(Plan {
                    key,
                    region: shape.region(),
                    passes: Passes::Pillow(shape.build_f64()),
                })
            }
            Resample::TorchFloat(filter) => {
                super::plan::check_torch_filter(resample)?;
                let (origin, boxed) = super::plan::integral_box(source_box, resample)?;
                let shape = TorchFloatShape::new(boxed, dst, window, filter, limits)?;
                let plan = shape.build(&mut Pools::default())?;
                let (h, v) = plan.axes();
                let r = shape.region();
                Ok(Plan {
                    key,
                    region: Rect::new(r.x + origin.0, r.y + origin.1, r.width, r.height),
                    passes: Passes::Torch {
                        h: h.cloned(),
                        v: v.cloned(),
                    },
                })
            }
            _ => Err(Error::InvalidParameter {
                name: "resize",
                reason: "float images resize with Pillow's filters or PyTorch's float \
                       resize (Resample::Pillow, Resample::TorchFloat) only",
            }),
        }
    }
}

/// Resizes float32 images, keeping the tables of the last size and its
/// scratch: after the first image of a size, resizing more of that size
/// allocates nothing.
#[derive(Debug)]
pub struct FloatResizer {
    plan: Option<Plan>,
    limits: Limits,
    simd: Simd,
    scratch: Scratch,
}

impl Default for FloatResizer {
    fn default() -> Self {
        FloatResizer {
            plan: None,
            limits: Limits::DEFAULT,
            simd: Simd::detect(),
            scratch: Scratch::default(),
        }
    }
}

/// The buffers a run grows (and keeps): the first pass's float32 result,
/// eight interleaved source rows, a row of sums in each precision.
#[derive(Debug, Default)]
struct Scratch {
    floats: Vec<f32>,
    block: Vec<f32>,
    sums64: Vec<f64>,
    sums32: Vec<f32>,
}

/// [`Scratch`]'s buffers, grown for one run.
struct Grown<'s> {
    floats: &'s mut [f32],
    block: &'s mut [f32],
    sums64: &'s mut [f64],
    sums32: &'s mut [f32],
}

/// The horizontal and vertical passes that change the size (`h`, `v`), in
/// `S`'s arithmetic, the vertical first when asked (Pillow's split of very
/// tall images), through a float32 intermediate when both run.
fn separable<S: Sum, A: Taps<S::Weight>>(
    path: FloatPath,
    (h, v, vertical_first): (Option<&A>, Option<&A>, bool),
    region: &FloatView<'_>,
    dst: &mut FloatViewMut<'_>,
    scratch: &mut Scratch,
    limits: &Limits,
) -> Result<()> {
    let c = region.channels;
    // Rows of sums and blocks as wide as the widest side read.
    let row = region.width.max(dst.width);
    // The intermediate: rows first, or columns first.
    let (mw, mh) = match (h, v, vertical_first) {
        (Some(_), Some(_), true) => (region.width, dst.height),
        (Some(_), Some(_), false) => (dst.width, region.height),
        _ => (0, 0),
    };
    let Grown {
        floats,
        block,
        sums64,
        sums32,
    } = scratch.grow(mw, mh, c, row, limits)?;
    let sums = S::sums(sums64, sums32);
    match (h, v) {
        (Some(h), Some(v)) if vertical_first => {
            build::v::<S>(
                path,
                v,
                region,
                &mut FloatViewMut::new(&mut *floats, mw, mh, c)?,
                sums,
            );
            build::h::<S>(path, h, c, &FloatView::new(floats, mw, mh, c)?, dst, block);
        }
        (Some(h), Some(v)) => {
            build::h::<S>(
                path,
                h,
                c,
                region,
                &mut FloatViewMut::new(&mut *floats, mw, mh, c)?,
                block,
            );
            build::v::<S>(path, v, &FloatView::new(floats, mw, mh, c)?, dst, sums);
        }
        (Some(h), None) => build::h::<S>(path, h, c, region, dst, block),
        (None, Some(v)) => build::v::<S>(path, v, region, dst, sums),
        (None, None) => copy_rows(region, dst),
    }
    Ok(())
}

/// `src`'s rows into `dst` (the same size).
fn copy_rows(src: &FloatView<'_>, dst: &mut FloatViewMut<'_>) {
    for y in 0..dst.height as usize {
        dst.row_mut(y).copy_from_slice(src.row(y));
    }
}

/// `buf` with at least `len` elements (its size checked against `limits`).
fn grow<'b, T: Copy + Default>(
    buf: &'b mut Vec<T>,
    len: usize,
    limits: &Limits,
) -> Result<&'b mut [T]> {
    if buf.len() < len {
        let bytes = (len as u64).saturating_mul(core::mem::size_of::<T>() as u64);
        limits.check_alloc(bytes)?;
        buf.try_reserve(len - buf.len())
            .map_err(|_| Error::OutOfMemory { bytes })?;
        buf.resize(len, T::default());
    }
    Ok(&mut buf[..len])
}

impl Scratch {
    /// Room for a `width` x `height` intermediate of `c` channels, the
    /// interleaved block of rows `row` pixels wide and a row of sums as wide.
    fn grow(
        &mut self,
        width: u32,
        height: u32,
        c: usize,
        row: u32,
        limits: &Limits,
    ) -> Result<Grown<'_>> {
        let mid = width as usize * height as usize * c;
        let row = row as usize * c;
        Ok(Grown {
            floats: grow(&mut self.floats, mid, limits)?,
            block: grow(&mut self.block, row * LANES, limits)?,
            sums64: grow(&mut self.sums64, row, limits)?,
            sums32: grow(&mut self.sums32, row, limits)?,
        })
    }
}

impl FloatResizer {
    /// A resizer with the default [`Limits`] and the best [`Simd`] path.
    pub fn new() -> Self {
        Self::default()
    }

    /// A resizer refusing sizes beyond `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        FloatResizer {
            limits,
            ..Self::default()
        }
    }

    /// The same resizer on the loops built for `simd` (the results are the
    /// same on every path; refused if the CPU lacks it).
    pub fn with_simd(mut self, simd: Simd) -> Result<Self> {
        self.simd = simd.check()?;
        Ok(self)
    }

    /// Resizes all of `src` into `dst` (same channel count).
    pub fn resize(
        &mut self,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        resample: Resample,
    ) -> Result<()> {
        let whole = SourceBox::full(src.width, src.height);
        self.resize_box(src, whole, dst, resample)
    }

    /// Resizes the part of `src` inside `source_box` into `dst`, as Pillow's
    /// `resize(size, box=...)` (PyTorch's resize takes only an integral box,
    /// a crop).
    pub fn resize_box(
        &mut self,
        src: &FloatView<'_>,
        source_box: SourceBox,
        dst: &mut FloatViewMut<'_>,
        resample: Resample,
    ) -> Result<()> {
        if src.channels != dst.channels {
            return Err(Error::InvalidParameter {
                name: "resize",
                reason: "float source and destination have different channel counts",
            });
        }
        let key = Key {
            src: (src.width, src.height),
            source_box,
            dst: (dst.width, dst.height),
            resample,
        };
        if self.plan.as_ref().is_none_or(|p| p.key != key) {
            self.plan = None;
            self.plan = Some(Plan::new(key, &self.limits)?);
        }
        let Some(plan) = &self.plan else {
            return Ok(());
        };
        let region = src.crop(plan.region)?;
        let c = src.channels;
        let path = self.simd.float_path();
        match &plan.passes {
            Passes::Pillow(F64Plan::Copy) => copy_rows(&region, dst),
            Passes::Pillow(F64Plan::Nearest { xs, ys }) => {
                for (y, &sy) in ys.iter().enumerate() {
                    let out = dst.row_mut(y);
                    if sy == u32::MAX {
                        out.fill(0.0);
                        continue;
                    }
                    let row = region.row(sy as usize);
                    for (o, &sx) in out.chunks_exact_mut(c).zip(xs) {
                        match sx {
                            u32::MAX => o.fill(0.0),
                            sx => o.copy_from_slice(&row[sx as usize * c..][..c]),
                        }
                    }
                }
            }
            Passes::Pillow(F64Plan::Convolve {
                h,
                v,
                vertical_first,
            }) => separable::<PillowSum, _>(
                path,
                (h.as_ref(), v.as_ref(), *vertical_first),
                &region,
                dst,
                &mut self.scratch,
                &self.limits,
            )?,
            Passes::Torch { h, v } => separable::<TorchSum, _>(
                path,
                (h.as_ref(), v.as_ref(), false),
                &region,
                dst,
                &mut self.scratch,
                &self.limits,
            )?,
        }
        Ok(())
    }
}

/// How a library sums one sample's taps.
trait Sum {
    type Weight: Copy;
    type Acc: Copy + Default;
    /// The sum after the first tap.
    fn start(p: f32, w: Self::Weight) -> Self::Acc;
    /// The sum after one more tap.
    fn add(acc: Self::Acc, p: f32, w: Self::Weight) -> Self::Acc;
    /// The stored sample.
    fn end(acc: Self::Acc) -> f32;
    /// Of a row of sums in each precision, the one this arithmetic keeps.
    fn sums<'s>(f64s: &'s mut [f64], f32s: &'s mut [f32]) -> &'s mut [Self::Acc];
}

/// Pillow's `F` mode: `ss = 0.0; ss += p * k` in `f64` (the `0.0 +` keeps
/// its sign of zero), stored as float32.
struct PillowSum;

impl Sum for PillowSum {
    type Weight = f64;
    type Acc = f64;
    #[inline(always)]
    fn start(p: f32, w: f64) -> f64 {
        0.0 + f64::from(p) * w
    }
    #[inline(always)]
    fn add(acc: f64, p: f32, w: f64) -> f64 {
        acc + f64::from(p) * w
    }
    #[inline(always)]
    fn end(acc: f64) -> f32 {
        acc as f32
    }
    fn sums<'s>(f64s: &'s mut [f64], _: &'s mut [f32]) -> &'s mut [f64] {
        f64s
    }
}

/// PyTorch's float32 kernel: `t0 * w0`, then a fused multiply-add per tap.
struct TorchSum;

impl Sum for TorchSum {
    type Weight = f32;
    type Acc = f32;
    #[inline(always)]
    fn start(p: f32, w: f32) -> f32 {
        p * w
    }
    #[inline(always)]
    fn add(acc: f32, p: f32, w: f32) -> f32 {
        fmaf(p, w, acc)
    }
    #[inline(always)]
    fn end(acc: f32) -> f32 {
        acc
    }
    fn sums<'s>(_: &'s mut [f64], f32s: &'s mut [f32]) -> &'s mut [f32] {
        f32s
    }
}

/// An axis's taps as the passes read them.
trait Taps<W> {
    /// Output `i`: its first source index and its weights.
    fn taps(&self, i: usize) -> (usize, &[W]);
}

impl Taps<f64> for F64Axis {
    #[inline(always)]
    fn taps(&self, i: usize) -> (usize, &[f64]) {
        self.at(i)
    }
}

impl Taps<f32> for FloatAxis<Heap> {
    #[inline(always)]
    fn taps(&self, i: usize) -> (usize, &[f32]) {
        self.at(i)
    }
}

/// Rows the horizontal pass sums at once, one per vector lane.
const LANES: usize = 8;

/// The horizontal pass of every row of `src` into `dst` (as many rows):
/// eight rows at a time, interleaved into `block` (sample `i` of row `r` at
/// `8 i + r`; a partial block repeats its last row) so that each output's
/// taps are summed for the eight rows together, in the library's order.
#[inline(always)]
fn h_body<S: Sum>(
    axis: &impl Taps<S::Weight>,
    c: usize,
    src: &FloatView<'_>,
    dst: &mut FloatViewMut<'_>,
    block: &mut [f32],
) {
    let len = src.width as usize * c;
    let block = &mut block[..len * LANES];
    let rows = src.height as usize;
    for y0 in (0..rows).step_by(LANES) {
        let m = LANES.min(rows - y0);
        for r in 0..LANES {
            let row = src.row(y0 + r.min(m - 1));
            for (i, &p) in row.iter().enumerate() {
                block[i * LANES + r] = p;
            }
        }
        for x in 0..dst.width as usize {
            let (start, k) = axis.taps(x);
            for ch in 0..c {
                let lane = |j: usize| {
                    let at = ((start + j) * c + ch) * LANES;
                    <&[f32; LANES]>::try_from(&block[at..at + LANES]).unwrap()
                };
                let mut acc = [S::Acc::default(); LANES];
                if let Some(&w0) = k.first() {
                    let t = lane(0);
                    acc = core::array::from_fn(|r| S::start(t[r], w0));
                }
                for (j, &w) in k.iter().enumerate().skip(1) {
                    let t = lane(j);
                    for r in 0..LANES {
                        acc[r] = S::add(acc[r], t[r], w);
                    }
                }
                for (r, &a) in acc.iter().enumerate().take(m) {
                    dst.row_mut(y0 + r)[x * c + ch] = S::end(a);
                }
            }
        }
    }
}

/// The vertical pass from `src` into `dst`: a row of sums at a time, each
/// sample's taps in order.
#[inline(always)]
fn v_body<S: Sum>(
    axis: &impl Taps<S::Weight>,
    src: &FloatView<'_>,
    dst: &mut FloatViewMut<'_>,
    sums: &mut [S::Acc],
) {
    let width = dst.width as usize * dst.channels;
    let sums = &mut sums[..width];
    for y in 0..dst.height as usize {
        let (start, k) = axis.taps(y);
        match k.first() {
            Some(&w0) => {
                for (s, &p) in sums.iter_mut().zip(src.row(start)) {
                    *s = S::start(p, w0);
                }
            }
            None => sums.fill(S::Acc::default()),
        }
        for (j, &w) in k.iter().enumerate().skip(1) {
            for (s, &p) in sums.iter_mut().zip(src.row(start + j)) {
                *s = S::add(*s, p, w);
            }
        }
        for (o, &s) in dst.row_mut(y).iter_mut().zip(sums.iter()) {
            *o = S::end(s);
        }
    }
}

/// The passes built for the CPU: the same arithmetic (Rust never fuses a
/// multiply and an add by itself; PyTorch's `fmaf` is fused on every path),
/// vectorized by the compiler for AVX2 (and FMA, one instruction per tap).
mod build {
    use super::{FloatView, FloatViewMut, Sum, Taps, h_body, v_body};
    use crate::resize::kernels::FloatPath;

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn h_avx2<S: Sum>(
        axis: &impl Taps<S::Weight>,
        c: usize,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        block: &mut [f32],
    ) {
        h_body::<S>(axis, c, src, dst, block)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn h_avx2_fma<S: Sum>(
        axis: &impl Taps<S::Weight>,
        c: usize,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        block: &mut [f32],
    ) {
        h_body::<S>(axis, c, src, dst, block)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn v_avx2<S: Sum>(
        axis: &impl Taps<S::Weight>,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        sums: &mut [S::Acc],
    ) {
        v_body::<S>(axis, src, dst, sums)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn v_avx2_fma<S: Sum>(
        axis: &impl Taps<S::Weight>,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        sums: &mut [S::Acc],
    ) {
        v_body::<S>(axis, src, dst, sums)
    }

    /// [`h_body`] for `path`.
    pub(super) fn h<S: Sum>(
        path: FloatPath,
        axis: &impl Taps<S::Weight>,
        c: usize,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        block: &mut [f32],
    ) {
        #[cfg(target_arch = "x86_64")]
        match path {
            // SAFETY: the paths come from `Simd::float_path` of an available
            // `Simd::Avx2` (checked by `Simd::is_available`), with FMA detected.
            FloatPath::Avx2Fma => return unsafe { h_avx2_fma::<S>(axis, c, src, dst, block) },
            // SAFETY: as above, AVX2 only.
            FloatPath::Avx2 => return unsafe { h_avx2::<S>(axis, c, src, dst, block) },
            FloatPath::Portable => {}
        }
        let _ = path;
        h_body::<S>(axis, c, src, dst, block)
    }

    /// [`v_body`] for `path`.
    pub(super) fn v<S: Sum>(
        path: FloatPath,
        axis: &impl Taps<S::Weight>,
        src: &FloatView<'_>,
        dst: &mut FloatViewMut<'_>,
        sums: &mut [S::Acc],
    ) {
        #[cfg(target_arch = "x86_64")]
        match path {
            // SAFETY: as in `h`.
            FloatPath::Avx2Fma => return unsafe { v_avx2_fma::<S>(axis, src, dst, sums) },
            // SAFETY: as in `h`.
            FloatPath::Avx2 => return unsafe { v_avx2::<S>(axis, src, dst, sums) },
            FloatPath::Portable => {}
        }
        let _ = path;
        v_body::<S>(axis, src, dst, sums)
    }
}

/// One-shot [`FloatResizer::resize`] (keep a [`FloatResizer`] for repeated calls).
pub fn resize_f32(
    src: &FloatView<'_>,
    dst: &mut FloatViewMut<'_>,
    resample: Resample,
) -> Result<()> {
    FloatResizer::new().resize(src, dst, resample)
}

/// A new image of the size `rule` gives `src`, resized into.
pub fn resize_f32_by_rule(
    src: &FloatView<'_>,
    rule: SizeRule,
    resample: Resample,
) -> Result<FloatImage> {
    let (w, h) = rule.output_size(src.width, src.height)?;
    let mut out = FloatImage::zeros(w, h, src.channels)?;
    resize_f32(src, &mut out.view_mut(), resample)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resize::Filter;

    #[test]
    fn constant_images_stay_constant() {
        let px = [0.25f32; 13 * 9 * 3];
        let src = FloatView::new(&px, 13, 9, 3).unwrap();
        let methods = Filter::ALL
            .map(Resample::Pillow)
            .into_iter()
            .chain([Filter::Bilinear, Filter::Bicubic].map(Resample::TorchFloat));
        let mut resizer = FloatResizer::new();
        for r in methods {
            for (w, h) in [(5, 4), (26, 18), (13, 9), (1, 1), (13, 4), (3, 9)] {
                let mut out = FloatImage::zeros(w, h, 3).unwrap();
                resizer.resize(&src, &mut out.view_mut(), r).unwrap();
                let ok = out.as_slice().iter().all(|&v| (v - 0.25).abs() < 1e-6);
                assert!(ok, "{r:?} {w}x{h}: {:?}", &out.as_slice()[..6]);
            }
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let px = [0.0f32; 8 * 8];
        assert!(FloatView::new(&px, 8, 9, 1).is_err());
        assert!(FloatView::new(&px, 0, 8, 1).is_err());
        assert!(FloatView::new(&px, 8, 8, 0).is_err());
        assert!(FloatView::with_stride(&px, 8, 4, 1, 7).is_err());
        let src = FloatView::new(&px, 8, 8, 1).unwrap();
        assert!(src.crop(Rect::new(4, 4, 5, 1)).is_err());
        let mut out = [0.0f32; 4 * 4 * 2];
        let mut two = FloatViewMut::new(&mut out, 4, 4, 2).unwrap();
        let mut resizer = FloatResizer::new();
        let bilinear = Resample::Pillow(Filter::Bilinear);
        assert!(resizer.resize(&src, &mut two, bilinear).is_err());
        let mut one = FloatViewMut::new(&mut out, 4, 4, 1).unwrap();
        for r in [
            Resample::OpenCvLinear,
            Resample::Torch(Filter::Bilinear),
            Resample::TorchFloat(Filter::Lanczos3),
        ] {
            assert!(resizer.resize(&src, &mut one, r).is_err(), "{r:?}");
        }
        let fractional = SourceBox {
            x0: 0.5,
            y0: 0.0,
            x1: 8.0,
            y1: 8.0,
        };
        let torch = Resample::TorchFloat(Filter::Bilinear);
        assert!(
            resizer
                .resize_box(&src, fractional, &mut one, torch)
                .is_err()
        );
        assert!(
            resizer
                .resize_box(&src, fractional, &mut one, bilinear)
                .is_ok()
        );
        let outside = SourceBox {
            x0: 0.0,
            y0: 0.0,
            x1: 9.0,
            y1: 8.0,
        };
        assert!(
            resizer
                .resize_box(&src, outside, &mut one, bilinear)
                .is_err()
        );
        let tiny = FloatResizer::with_limits(Limits {
            max_pixels: 10,
            ..Limits::DEFAULT
        })
        .resize(&src, &mut one, bilinear);
        assert!(tiny.is_err());
    }
}
