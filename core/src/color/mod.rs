//! Colour conversion between every [`PixelFormat`] and the packed formats.
//!
//! - RGB/BGR/RGBA/BGRA reorder bytes; alpha is dropped (as Pillow's `convert("RGB")`
//!   does, with no compositing) or set to 255 when the source has none.
//! - To gray: Pillow's ITU-R 601-2 luma in 16-bit fixed point,
//!   `L = (19595 R + 38470 G + 7471 B + 32768) >> 16`, identical to `convert("L")`.
//! - From gray: the value is repeated into R, G and B.
//! - From YUV (4:2:0: NV12, NV21, I420; 4:2:2: YUYV, UYVY): BT.601, each chroma
//!   sample shared by the pixels it covers (2x2 for 4:2:0, 2x1 for 4:2:2:
//!   nearest-neighbour chroma, as Android, V4L2 and OpenCV do). With
//!   `u = U - 128`, `v = V - 128`:
//!   - full range (JFIF; the Android camera default), in 16-bit fixed point
//!     rounded to nearest: `R = Y + 1.402 v`, `G = Y - 0.344136 u - 0.714136 v`,
//!     `B = Y + 1.772 u`;
//!   - limited "video" range (Y 16-235; webcams, OpenCV's `YUV2RGB` codes), with
//!     `y = max(Y - 16, 0)`: `R = 1.164 y + 1.596 v`, `G = 1.164 y - 0.391 u - 0.813 v`,
//!     `B = 1.164 y + 2.018 u`, in exactly OpenCV's integer arithmetic
//!     (20-bit coefficients) for `COLOR_YUV2RGB_NV21`, `COLOR_YUV2RGB_YUYV`,
//!     `COLOR_YUV2RGB_UYVY` and their siblings, so the bytes are OpenCV's.
//!
//!   To gray, a YUV source gives its luma term alone (`Y`, or `1.164 y` in
//!   limited range), clamped to 0..=255.
//! - From RGB565 (both byte orders): each channel's bits moved to the top of
//!   its byte, `R = r5 << 3`, `G = g6 << 2`, `B = b5 << 3` (white is 248, 252,
//!   248), as OpenCV's `COLOR_BGR5652RGB` gives them byte for byte; to gray,
//!   Pillow's luma of those.
//!
//! ```
//! use tensorprep::color::{convert_color, YuvRange};
//! use tensorprep::{ImageView, ImageViewMut, PixelFormat};
//!
//! // A 2x2 NV21 frame: four Y bytes, then one V,U pair.
//! let nv21 = [76u8, 76, 76, 76, 255, 85];
//! let src = ImageView::new(PixelFormat::Nv21, 2, 2, &nv21)?;
//! let mut rgb = [0u8; 12];
//! convert_color(&src, &mut ImageViewMut::new(PixelFormat::Rgb8, 2, 2, &mut rgb)?, YuvRange::Full)?;
//! assert_eq!(&rgb[..3], &[254, 0, 0]); // red: 76 + 1.402 * 127 = 254.05
//! # Ok::<(), tensorprep::Error>(())
//! ```

#[cfg(target_arch = "aarch64")]
mod yuv_neon;
#[cfg(all(target_arch = "x86_64", feature = "std"))]
mod yuv_x86;

#[cfg(any(target_arch = "aarch64", all(target_arch = "x86_64", feature = "std")))]
mod shuffle;

use crate::cpu::Simd;
use crate::image::packed_bpp;
use crate::{Error, ImageView, ImageViewMut, PixelFormat, Result};

/// Range of the Y, U and V samples of a YUV image (BT.601 matrix in both cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum YuvRange {
    /// Y, U, V use 0-255 (JFIF, Android camera `YUV_420_888`/`NV21`).
    #[default]
    Full,
    /// Y uses 16-235 and U, V 16-240 (broadcast video, OpenCV's `YUV2RGB` codes).
    Limited,
}

/// Fixed-point BT.601 YUV to RGB coefficients with `shift` fractional bits.
/// A channel is `clamp((max(0, Y - y_off) * y_mul + half + c) >> shift)`.
#[derive(Clone, Copy, Debug)]
struct YuvMatrix {
    y_mul: i32,
    y_off: i32,
    r_v: i32,
    g_u: i32,
    g_v: i32,
    b_u: i32,
    shift: u32,
}

const fn fix(x: f64) -> i32 {
    (x * 65536.0 + 0.5) as i32
}

impl YuvMatrix {
    const FULL: YuvMatrix = YuvMatrix {
        y_mul: 1 << 16,
        y_off: 0,
        r_v: fix(1.402),
        g_u: fix(0.344_136),
        g_v: fix(0.714_136),
        b_u: fix(1.772),
        shift: 16,
    };
    /// OpenCV's `ITUR_BT_601_*` constants (1.164, 1.596, 0.813, 0.391, 2.018 in
    /// 20-bit fixed point), checked byte for byte against `cv::cvtColor`.
    const LIMITED: YuvMatrix = YuvMatrix {
        y_mul: 1_220_542,
        y_off: 16,
        r_v: 1_673_527,
        g_u: 409_993,
        g_v: 852_492,
        b_u: 2_116_026,
        shift: 20,
    };

    const fn for_range(range: YuvRange) -> YuvMatrix {
        match range {
            YuvRange::Full => YuvMatrix::FULL,
            YuvRange::Limited => YuvMatrix::LIMITED,
        }
    }

    #[inline(always)]
    fn luma(&self, y: u8) -> i32 {
        (i32::from(y) - self.y_off).max(0) * self.y_mul + (1 << (self.shift - 1))
    }

    /// A channel's byte from its fixed-point sum.
    #[inline(always)]
    fn clamp8(&self, x: i32) -> u8 {
        (x >> self.shift).clamp(0, 255) as u8
    }

    /// Chroma contributions `(r, g, b)` for one (U, V) pair.
    #[inline(always)]
    fn chroma(&self, u: u8, v: u8) -> (i32, i32, i32) {
        let (u, v) = (i32::from(u) - 128, i32::from(v) - 128);
        (self.r_v * v, -self.g_u * u - self.g_v * v, self.b_u * u)
    }
}

/// Pillow's `convert("L")` luma.
#[inline(always)]
pub(crate) fn luma601(r: u8, g: u8, b: u8) -> u8 {
    ((u32::from(r) * 19595 + u32::from(g) * 38470 + u32::from(b) * 7471 + 0x8000) >> 16) as u8
}

/// Converts `src` into `dst`'s format (a packed format); both must have the same size.
///
/// `range` matters only for YUV sources.
pub fn convert_color(
    src: &ImageView<'_>,
    dst: &mut ImageViewMut<'_>,
    range: YuvRange,
) -> Result<()> {
    if (src.width(), src.height()) != (dst.width(), dst.height()) {
        return Err(Error::SizeMismatch {
            expected: (src.width(), src.height()),
            found: (dst.width(), dst.height()),
        });
    }
    let convert = RowConverter::new(src.format(), dst.format(), range)?;
    for (y, d) in dst.plane_rows_mut(0).enumerate() {
        convert.row(src, y, d);
    }
    Ok(())
}

/// Converts row `y` of a source into one row of the destination format.
type RowFn = fn(&ImageView<'_>, usize, &mut [u8], &YuvMatrix);

/// Converts only the pixels of row `y` at the listed columns plus an offset,
/// one destination pixel each.
/// `scratch` holds 3 bytes per column for the 4:2:0 sources.
/// The last argument: the conversion's constants and the path of its vector kernels.
type GatherFn = fn(&ImageView<'_>, usize, &[u32], usize, &mut [u8], &mut [u8], (&YuvMatrix, Simd));

/// A conversion chosen once for a (source, destination) format pair and applied
/// one row at a time, so that a consumer (the resampler, the finish pass) can
/// convert each row as it first reads it instead of converting the whole frame
/// in a pass of its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowConverter {
    matrix: YuvMatrix,
    convert: RowFn,
    gather: GatherFn,
    /// The path of the gathers' vector kernels.
    simd: Simd,
}

impl RowConverter {
    /// The conversion from `from` (any format) to `to` (a packed format).
    pub(crate) fn new(from: PixelFormat, to: PixelFormat, range: YuvRange) -> Result<Self> {
        Self::with_simd(from, to, range, Simd::detect())
    }

    /// [`RowConverter::new`] with the row kernels of `simd`, an available
    /// path (`Simd::Scalar`: the scalar code, the reference the vector kernels
    /// are tested against).
    fn with_simd(from: PixelFormat, to: PixelFormat, range: YuvRange, simd: Simd) -> Result<Self> {
        from.check_built()?;
        packed_bpp("colour conversion destination", to)?;
        let vector = simd_row(simd, from, to);
        let convert: RowFn = match from {
            _ if vector.is_some() => vector.unwrap_or(copy_row),
            f if f == to => copy_row,
            PixelFormat::Nv12 => with_layout!(to, D => yuv420_row::<D, NV12>),
            PixelFormat::Nv21 => with_layout!(to, D => yuv420_row::<D, NV21>),
            PixelFormat::I420 => with_layout!(to, D => yuv420_row::<D, I420>),
            #[cfg(feature = "yuv422")]
            PixelFormat::Yuyv => with_layout!(to, D => yuv422_row::<D, YUYV>),
            #[cfg(feature = "yuv422")]
            PixelFormat::Uyvy => with_layout!(to, D => yuv422_row::<D, UYVY>),
            #[cfg(feature = "rgb565")]
            PixelFormat::Rgb565Le => with_layout!(to, D => packed_row::<Rgb565<false>, D>),
            #[cfg(feature = "rgb565")]
            PixelFormat::Rgb565Be => with_layout!(to, D => packed_row::<Rgb565<true>, D>),
            f => with_layout!(f, S => with_layout!(to, D => packed_row::<S, D>)),
        };
        let gather: GatherFn = match from {
            f if f == to => copy_gather,
            PixelFormat::Nv12 => with_layout!(to, D => yuv420_gather::<D, NV12>),
            PixelFormat::Nv21 => with_layout!(to, D => yuv420_gather::<D, NV21>),
            PixelFormat::I420 => with_layout!(to, D => yuv420_gather::<D, I420>),
            #[cfg(feature = "yuv422")]
            PixelFormat::Yuyv => with_layout!(to, D => yuv422_gather::<D, YUYV>),
            #[cfg(feature = "yuv422")]
            PixelFormat::Uyvy => with_layout!(to, D => yuv422_gather::<D, UYVY>),
            #[cfg(feature = "rgb565")]
            PixelFormat::Rgb565Le => with_layout!(to, D => packed_gather::<Rgb565<false>, D>),
            #[cfg(feature = "rgb565")]
            PixelFormat::Rgb565Be => with_layout!(to, D => packed_gather::<Rgb565<true>, D>),
            f => with_layout!(f, S => with_layout!(to, D => packed_gather::<S, D>)),
        };
        Ok(RowConverter {
            gather,
            matrix: YuvMatrix::for_range(range),
            convert,
            simd,
        })
    }

    /// Converts row `y` of `src` into `out`, which holds exactly one row of
    /// `src.width()` destination pixels.
    #[inline]
    pub(crate) fn row(&self, src: &ImageView<'_>, y: usize, out: &mut [u8]) {
        (self.convert)(src, y, out, &self.matrix);
    }

    /// Converts the pixels of row `y` at columns `offset + cols[i]` into `out`,
    /// which holds exactly `cols.len()` destination pixels (for resamplers that
    /// read few columns).
    /// `scratch` must hold at least 3 bytes per column.
    #[inline]
    pub(crate) fn gather(
        &self,
        src: &ImageView<'_>,
        y: usize,
        cols: &[u32],
        offset: usize,
        out: &mut [u8],
        scratch: &mut [u8],
    ) {
        (self.gather)(
            src,
            y,
            cols,
            offset,
            out,
            scratch,
            (&self.matrix, self.simd),
        );
    }
}

fn copy_gather(
    src: &ImageView<'_>,
    y: usize,
    cols: &[u32],
    offset: usize,
    out: &mut [u8],
    _: &mut [u8],
    _: (&YuvMatrix, Simd),
) {
    let row = src.plane_row(0, y);
    // Same format on both sides, and a packed one (4:2:0 sources convert).
    let bpp = src.format().bytes_per_pixel().unwrap_or(1);
    for (o, &x) in out.chunks_exact_mut(bpp).zip(cols) {
        o.copy_from_slice(&row[(offset + x as usize) * bpp..][..bpp]);
    }
}

fn packed_gather<S: SourceLayout, D: PackedLayout>(
    src: &ImageView<'_>,
    y: usize,
    cols: &[u32],
    offset: usize,
    out: &mut [u8],
    _: &mut [u8],
    _: (&YuvMatrix, Simd),
) {
    let row = src.plane_row(0, y);
    for (dp, &x) in out.chunks_exact_mut(D::BPP).zip(cols) {
        let sp = &row[(offset + x as usize) * S::BPP..][..S::BPP];
        let (r, g, b) = S::load(sp);
        D::store(dp, r, g, b);
        if let (Some(sa), Some(da)) = (S::ALPHA, D::ALPHA) {
            dp[da] = sp[sa];
        }
    }
}

fn yuv420_gather<D: PackedLayout, const CHROMA: u8>(
    src: &ImageView<'_>,
    y: usize,
    cols: &[u32],
    offset: usize,
    out: &mut [u8],
    scratch: &mut [u8],
    (m, simd): (&YuvMatrix, Simd),
) {
    let luma = src.plane_row(0, y);
    let c1 = src.plane_row(1, y / 2);
    let c2 = if CHROMA == I420 {
        src.plane_row(2, y / 2)
    } else {
        &[]
    };
    // The listed pixels' Y, U and V side by side, then converted as a row whose
    // chroma is already one sample per pixel (by the vector kernel where there is one).
    let n = cols.len();
    let (ys, rest) = scratch[..3 * n].split_at_mut(n);
    let (us, vs) = rest.split_at_mut(n);
    for (i, &x) in cols.iter().enumerate() {
        let x = offset + x as usize;
        let k = x / 2;
        ys[i] = luma[x];
        (us[i], vs[i]) = match CHROMA {
            NV12 => (c1[2 * k], c1[2 * k + 1]),
            NV21 => (c1[2 * k + 1], c1[2 * k]),
            _ => (c1[k], c2[k]),
        };
    }
    // The vector kernel writes colour only; gray keeps the luma term alone.
    let done = if D::BPP == 1 {
        0
    } else {
        vector_per_pixel::<D>(ys, us, vs, out, m, simd)
    };
    for (((px, &l), &u), &v) in out[done * D::BPP..]
        .chunks_exact_mut(D::BPP)
        .zip(&ys[done..])
        .zip(&us[done..])
        .zip(&vs[done..])
    {
        store_yuv::<D>(px, m.luma(l), m.chroma(u, v), m);
    }
}

/// Converts the first multiple of 16 pixels of planar Y, U, V (one chroma
/// sample per pixel) with `simd`'s vector kernel, if it has one; returns how many.
fn vector_per_pixel<D: PackedLayout>(
    ys: &[u8],
    us: &[u8],
    vs: &[u8],
    out: &mut [u8],
    m: &YuvMatrix,
    simd: Simd,
) -> usize {
    if !simd.color_kernel() {
        return 0;
    }
    // SAFETY: `simd` is the converter's path, an available one, and has the
    // colour kernels; the planes hold `ys.len()` pixels each
    // and `out` as many destination pixels.
    unsafe { vector_blocks::<D, PER_PIXEL>(ys, us, vs, out, m) }
}

fn copy_row(src: &ImageView<'_>, y: usize, out: &mut [u8], _: &YuvMatrix) {
    out.copy_from_slice(src.plane_row(0, y));
}

/// Allocating form of [`convert_color`].
#[cfg(feature = "alloc")]
pub fn convert_color_owned(
    src: &ImageView<'_>,
    format: PixelFormat,
    range: YuvRange,
) -> Result<crate::Image> {
    let mut img = crate::Image::new(format, src.width(), src.height())?;
    convert_color(src, &mut img.view_mut(), range)?;
    Ok(img)
}

/// Byte layout of a packed pixel format as constants, so every conversion loop is
/// monomorphized with constant offsets instead of matching per pixel. The
/// constants come from [`PixelFormat`]'s own tables.
trait PackedLayout {
    const FORMAT: PixelFormat;
    const BPP: usize = Self::FORMAT.bytes_per_pixel().unwrap();
    /// Offsets of red, green, blue (all 0 for gray).
    const RGB: [usize; 3] = Self::FORMAT.rgb_offsets().unwrap();
    const ALPHA: Option<usize> = Self::FORMAT.alpha_offset();

    #[inline(always)]
    fn load(px: &[u8]) -> (u8, u8, u8) {
        (px[Self::RGB[0]], px[Self::RGB[1]], px[Self::RGB[2]])
    }

    #[inline(always)]
    fn store(px: &mut [u8], r: u8, g: u8, b: u8) {
        if Self::BPP == 1 {
            px[0] = luma601(r, g, b);
        } else {
            px[Self::RGB[0]] = r;
            px[Self::RGB[1]] = g;
            px[Self::RGB[2]] = b;
            if let Some(a) = Self::ALPHA {
                px[a] = 255;
            }
        }
    }
}

/// What a row conversion reads one pixel as: the 8-bit packed layouts, and
/// RGB565 in either byte order.
trait SourceLayout {
    /// Bytes per source pixel.
    const BPP: usize;
    /// Offset of alpha, for sources that have it.
    const ALPHA: Option<usize>;
    /// Red, green and blue of one pixel.
    fn load(px: &[u8]) -> (u8, u8, u8);
}

impl<L: PackedLayout> SourceLayout for L {
    const BPP: usize = <L as PackedLayout>::BPP;
    const ALPHA: Option<usize> = <L as PackedLayout>::ALPHA;
    #[inline(always)]
    fn load(px: &[u8]) -> (u8, u8, u8) {
        <L as PackedLayout>::load(px)
    }
}

/// RGB565, `BE`: high byte first.
#[cfg(feature = "rgb565")]
struct Rgb565<const BE: bool>;

#[cfg(feature = "rgb565")]
impl<const BE: bool> SourceLayout for Rgb565<BE> {
    const BPP: usize = 2;
    const ALPHA: Option<usize> = None;
    #[inline(always)]
    fn load(px: &[u8]) -> (u8, u8, u8) {
        rgb565::<BE>(px)
    }
}

macro_rules! packed_layouts {
    ($($name:ident: $format:ident;)*) => {$(
        struct $name;
        impl PackedLayout for $name {
            const FORMAT: PixelFormat = PixelFormat::$format;
        }
    )*};
}

packed_layouts! {
    Gray: Gray8;
    Rgb: Rgb8;
    Bgr: Bgr8;
    Rgba: Rgba8;
    Bgra: Bgra8;
}

/// Runs `$body` with `$l` bound to the [`PackedLayout`] of packed format `$format`.
macro_rules! with_layout {
    ($format:expr, $l:ident => $body:expr) => {
        match $format {
            PixelFormat::Gray8 => {
                type $l = Gray;
                $body
            }
            PixelFormat::Rgb8 => {
                type $l = Rgb;
                $body
            }
            PixelFormat::Bgr8 => {
                type $l = Bgr;
                $body
            }
            PixelFormat::Rgba8 => {
                type $l = Rgba;
                $body
            }
            PixelFormat::Bgra8 => {
                type $l = Bgra;
                $body
            }
            format => {
                return Err(Error::UnsupportedFormat {
                    op: "convert_color",
                    format,
                })
            }
        }
    };
}
use with_layout;

fn packed_row<S: SourceLayout, D: PackedLayout>(
    src: &ImageView<'_>,
    y: usize,
    out: &mut [u8],
    _: &YuvMatrix,
) {
    packed_pixels::<S, D>(src.plane_row(0, y), out);
}

/// The byte moves between two 8-bit packed layouts (and on x86 their
/// `pshufb` masks), made once per pair at compile time.
// Only named as a type (its constants), never made.
#[allow(dead_code)]
#[cfg(any(target_arch = "aarch64", all(target_arch = "x86_64", feature = "std")))]
struct Moves<S, D>(core::marker::PhantomData<(S, D)>);

#[cfg(any(target_arch = "aarch64", all(target_arch = "x86_64", feature = "std")))]
impl<S: PackedLayout, D: PackedLayout> shuffle::Pair for Moves<S, D> {
    const MOVES: shuffle::Moves = shuffle::Moves {
        from_bpp: <S as PackedLayout>::BPP,
        to_bpp: D::BPP,
        from_rgb: S::RGB,
        from_alpha: <S as PackedLayout>::ALPHA,
        to_rgb: D::RGB,
        to_alpha: D::ALPHA,
    };
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    const MASKS: shuffle::x86::Masks = shuffle::x86::Masks::new(&Self::MOVES);
}

/// [`packed_row`] with the vector kernel for whole blocks of 16 pixels and
/// the scalar code for the rest. Chosen only where [`Simd::color_kernel`] holds
/// and the destination has colour (3 or 4 bytes).
#[cfg(any(target_arch = "aarch64", all(target_arch = "x86_64", feature = "std")))]
fn packed_row_vector<S: PackedLayout, D: PackedLayout>(
    src: &ImageView<'_>,
    y: usize,
    out: &mut [u8],
    _: &YuvMatrix,
) {
    let row = src.plane_row(0, y);
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    // SAFETY: `simd_row` picks this function only for an available path
    // with `Simd::color_kernel`, on x86_64 AVX2.
    let done = unsafe { shuffle::x86::row::<Moves<S, D>>(row, out) };
    #[cfg(target_arch = "aarch64")]
    let done = shuffle::neon::row::<Moves<S, D>>(row, out);
    let (row, out) = (
        &row[done * <S as PackedLayout>::BPP..],
        &mut out[done * D::BPP..],
    );
    packed_pixels::<S, D>(row, out);
}

/// Converts the pixels of `row` into `out`, pixel by pixel.
#[inline(always)]
fn packed_pixels<S: SourceLayout, D: PackedLayout>(row: &[u8], out: &mut [u8]) {
    for (dp, sp) in out.chunks_exact_mut(D::BPP).zip(row.chunks_exact(S::BPP)) {
        let (r, g, b) = S::load(sp);
        D::store(dp, r, g, b);
        if let (Some(sa), Some(da)) = (S::ALPHA, D::ALPHA) {
            dp[da] = sp[sa];
        }
    }
}

/// Chroma layouts of the 4:2:0 formats, as const parameters of [`yuv420_row`].
const NV12: u8 = 0;
const NV21: u8 = 1;
const I420: u8 = 2;
/// U and V planes with one sample per pixel (gathered pixels).
#[cfg_attr(
    not(any(target_arch = "aarch64", all(target_arch = "x86_64", feature = "std"))),
    allow(dead_code)
)]
const PER_PIXEL: u8 = 3;

/// The vector row function for a conversion, where this CPU has one.
fn simd_row(simd: Simd, from: PixelFormat, to: PixelFormat) -> Option<RowFn> {
    if !simd.color_kernel() || to.bytes_per_pixel() == Some(1) {
        return None;
    }
    // `with_layout!` returns an error for YUV targets; `to` is packed here.
    // `Ok(None)`: no vector kernel for this pair of formats (the scalar rows
    // serve it), which is not an error.
    let f = || -> Result<Option<RowFn>> {
        Ok(match from {
            PixelFormat::Nv12 => Some(with_layout!(to, D => yuv420_row_vector::<D, NV12>)),
            PixelFormat::Nv21 => Some(with_layout!(to, D => yuv420_row_vector::<D, NV21>)),
            PixelFormat::I420 => Some(with_layout!(to, D => yuv420_row_vector::<D, I420>)),
            #[cfg(any(target_arch = "aarch64", all(target_arch = "x86_64", feature = "std")))]
            f if f != to && f.bytes_per_pixel().is_some() => Some(with_layout!(f, S => {
                with_layout!(to, D => packed_row_vector::<S, D>)
            })),
            _ => None,
        })
    };
    f().ok().flatten()
}

/// [`yuv420_row`] with the vector kernel for whole blocks of 16 pixels and the
/// scalar code for the rest of the row. Chosen only where [`Simd::color_kernel`] holds.
fn yuv420_row_vector<D: PackedLayout, const CHROMA: u8>(
    src: &ImageView<'_>,
    y: usize,
    out: &mut [u8],
    m: &YuvMatrix,
) {
    yuv420_row_with::<D, CHROMA>(src, y, out, m, |luma, c1, c2, out| {
        // SAFETY: `simd_row` picks this function only where the path has `Simd::color_kernel`.
        unsafe { vector_blocks::<D, CHROMA>(luma, c1, c2, out, m) }
    });
}

/// The vector kernel on the whole blocks of 16 pixels of a row; returns how
/// many pixels it converted (0 where there is no kernel).
///
/// # Safety
/// [`Simd::color_kernel`] must hold for an available path (AVX2 is then available).
#[allow(unused_variables)]
unsafe fn vector_blocks<D: PackedLayout, const CHROMA: u8>(
    luma: &[u8],
    c1: &[u8],
    c2: &[u8],
    out: &mut [u8],
    m: &YuvMatrix,
) -> usize {
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    return match D::BPP {
        // SAFETY: AVX2 is available (the caller's contract); the rows are the
        // image's own and `out` holds a destination row.
        3 => unsafe { yuv_x86::row::<3, CHROMA>(luma, c1, c2, out, D::RGB, m) },
        // SAFETY: as above.
        4 => unsafe { yuv_x86::row::<4, CHROMA>(luma, c1, c2, out, D::RGB, m) },
        _ => 0,
    };
    #[cfg(target_arch = "aarch64")]
    return match D::BPP {
        3 => yuv_neon::row::<3, CHROMA>(luma, c1, c2, out, D::RGB, m),
        4 => yuv_neon::row::<4, CHROMA>(luma, c1, c2, out, D::RGB, m),
        _ => 0,
    };
    #[allow(unreachable_code)]
    0
}

/// A 4:2:0 row converted by `kernel` for as many pixels as it handles (a
/// multiple of 16, possibly none), then by the scalar code for the rest.
#[inline(always)]
fn yuv420_row_with<D: PackedLayout, const CHROMA: u8>(
    src: &ImageView<'_>,
    y: usize,
    out: &mut [u8],
    m: &YuvMatrix,
    kernel: impl FnOnce(&[u8], &[u8], &[u8], &mut [u8]) -> usize,
) {
    let luma = src.plane_row(0, y);
    let c1 = src.plane_row(1, y / 2);
    let c2 = if CHROMA == I420 {
        src.plane_row(2, y / 2)
    } else {
        &[]
    };
    let done = kernel(luma, c1, c2, out);
    // `done` is a multiple of 16: the rest starts on a chroma pair.
    let k = done / 2;
    let (luma, out) = (&luma[done..], &mut out[done * D::BPP..]);
    match CHROMA {
        NV12 => yuv_row::<D>(
            luma,
            c1[2 * k..].chunks_exact(2).map(|p| (p[0], p[1])),
            out,
            m,
        ),
        NV21 => yuv_row::<D>(
            luma,
            c1[2 * k..].chunks_exact(2).map(|p| (p[1], p[0])),
            out,
            m,
        ),
        _ => {
            let uv = c1[k..].iter().copied().zip(c2[k..].iter().copied());
            yuv_row::<D>(luma, uv, out, m);
        }
    }
}

/// Row `y` of a 4:2:0 image; each chroma sample serves a 2x2 block of pixels.
fn yuv420_row<D: PackedLayout, const CHROMA: u8>(
    src: &ImageView<'_>,
    y: usize,
    out: &mut [u8],
    m: &YuvMatrix,
) {
    if D::BPP == 1 {
        for (d, &l) in out.iter_mut().zip(src.plane_row(0, y)) {
            *d = m.clamp8(m.luma(l));
        }
        return;
    }
    // No vector kernel: the scalar code does the whole row.
    yuv420_row_with::<D, CHROMA>(src, y, out, m, |_, _, _, _| 0);
}

/// One output row: each (U, V) sample serves two luma samples.
#[inline(always)]
fn yuv_row<D: PackedLayout>(
    luma: &[u8],
    uv: impl Iterator<Item = (u8, u8)>,
    out: &mut [u8],
    m: &YuvMatrix,
) {
    let mut uv = uv;
    let pairs = luma.chunks_exact(2).zip(out.chunks_exact_mut(2 * D::BPP));
    for ((l, o), (u, v)) in pairs.zip(&mut uv) {
        let c = m.chroma(u, v);
        let (p0, p1) = o.split_at_mut(D::BPP);
        store_yuv::<D>(p0, m.luma(l[0]), c, m);
        store_yuv::<D>(p1, m.luma(l[1]), c, m);
    }
    // Odd width: the last pixel has a chroma sample of its own.
    if let (false, Some(&l), Some((u, v))) = (luma.len().is_multiple_of(2), luma.last(), uv.next())
    {
        let n = out.len();
        store_yuv::<D>(&mut out[n - D::BPP..], m.luma(l), m.chroma(u, v), m);
    }
}

/// Stores one pixel of luma term `l` (from [`YuvMatrix::luma`]) and chroma
/// terms `c` (from [`YuvMatrix::chroma`]); gray keeps the luma alone.
#[inline(always)]
fn store_yuv<D: PackedLayout>(px: &mut [u8], l: i32, c: (i32, i32, i32), m: &YuvMatrix) {
    if D::BPP == 1 {
        px[0] = m.clamp8(l);
    } else {
        D::store(px, m.clamp8(l + c.0), m.clamp8(l + c.1), m.clamp8(l + c.2));
    }
}

/// Byte positions of Y0, U, Y1, V in a YUV 4:2:2 group, as const parameters.
#[cfg(feature = "yuv422")]
const YUYV: u8 = 0;
#[cfg(feature = "yuv422")]
const UYVY: u8 = 1;

/// Y0, U, Y1, V of one 4-byte group of a YUV 4:2:2 row.
#[cfg(feature = "yuv422")]
#[inline(always)]
fn yuv422_group<const ORDER: u8>(g: &[u8]) -> [u8; 4] {
    if ORDER == YUYV {
        [g[0], g[1], g[2], g[3]]
    } else {
        [g[1], g[0], g[3], g[2]]
    }
}

/// Row `y` of a YUV 4:2:2 image; each group's U,V pair serves its two pixels
/// (an odd width uses the first pixel of the last group).
#[cfg(feature = "yuv422")]
fn yuv422_row<D: PackedLayout, const ORDER: u8>(
    src: &ImageView<'_>,
    y: usize,
    out: &mut [u8],
    m: &YuvMatrix,
) {
    for (o, g) in out
        .chunks_mut(2 * D::BPP)
        .zip(src.plane_row(0, y).chunks_exact(4))
    {
        let [y0, u, y1, v] = yuv422_group::<ORDER>(g);
        let c = m.chroma(u, v);
        let (p0, p1) = o.split_at_mut(D::BPP);
        store_yuv::<D>(p0, m.luma(y0), c, m);
        if !p1.is_empty() {
            store_yuv::<D>(p1, m.luma(y1), c, m);
        }
    }
}

#[cfg(feature = "yuv422")]
fn yuv422_gather<D: PackedLayout, const ORDER: u8>(
    src: &ImageView<'_>,
    y: usize,
    cols: &[u32],
    offset: usize,
    out: &mut [u8],
    _: &mut [u8],
    (m, _): (&YuvMatrix, Simd),
) {
    let row = src.plane_row(0, y);
    for (px, &x) in out.chunks_exact_mut(D::BPP).zip(cols) {
        let x = offset + x as usize;
        let [y0, u, y1, v] = yuv422_group::<ORDER>(&row[x / 2 * 4..][..4]);
        let l = if x.is_multiple_of(2) { y0 } else { y1 };
        store_yuv::<D>(px, m.luma(l), m.chroma(u, v), m);
    }
}

/// Red, green and blue of one RGB565 pixel (`BE`: high byte first), each
/// channel's bits shifted to the top of its byte as OpenCV's `cvtColor` does:
/// `R = (p >> 8) & 0xF8`, `G = (p >> 3) & 0xFC`, `B = (p << 3) & 0xF8`.
#[cfg(feature = "rgb565")]
#[inline(always)]
fn rgb565<const BE: bool>(px: &[u8]) -> (u8, u8, u8) {
    let p = if BE {
        u16::from_be_bytes([px[0], px[1]])
    } else {
        u16::from_le_bytes([px[0], px[1]])
    };
    (
        (p >> 8) as u8 & 0xF8,
        (p >> 3) as u8 & 0xFC,
        (p << 3) as u8 & 0xF8,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A camera format this build leaves out is refused, naming its Cargo
    /// feature, where its conversion is chosen; every format built converts.
    #[test]
    #[cfg(feature = "std")]
    fn a_camera_format_left_out_of_the_build_is_not_built() {
        for from in PixelFormat::ALL {
            let got = RowConverter::new(from, PixelFormat::Rgb8, YuvRange::Full);
            match from.feature() {
                Some(feature) if !from.is_built() => {
                    let e = got.unwrap_err();
                    assert!(
                        matches!(e, Error::NotBuilt { feature: f, .. } if f == feature),
                        "{from:?}: {e:?}"
                    );
                    assert!(std::format!("{e}").contains(feature), "{e}");
                }
                _ => assert!(got.is_ok(), "{from:?}: {got:?}"),
            }
        }
    }

    /// The BT.601 equations in f64, the reference the fixed-point code must match to 1 level.
    fn reference(y: u8, u: u8, v: u8, range: YuvRange) -> [f64; 3] {
        let (y, u, v) = (f64::from(y), f64::from(u) - 128.0, f64::from(v) - 128.0);
        let (y, cs) = match range {
            YuvRange::Full => (y, 1.0),
            YuvRange::Limited => ((y - 16.0) * 255.0 / 219.0, 255.0 / 224.0),
        };
        let (u, v) = (u * cs, v * cs);
        [
            y + 1.402 * v,
            y - 0.344_136 * u - 0.714_136 * v,
            y + 1.772 * u,
        ]
        .map(|x| x.clamp(0.0, 255.0))
    }

    #[test]
    fn yuv_matches_bt601_equations_for_every_range() {
        for range in [YuvRange::Full, YuvRange::Limited] {
            for y in (0..=255i32).step_by(3) {
                for u in (0..=255i32).step_by(5) {
                    for v in (0..=255i32).step_by(7) {
                        let i420 = [y as u8, u as u8, v as u8];
                        let src = ImageView::new(PixelFormat::I420, 1, 1, &i420).unwrap();
                        let mut rgb = [0u8; 3];
                        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 1, 1, &mut rgb).unwrap();
                        convert_color(&src, &mut dst, range).unwrap();
                        let want = reference(y as u8, u as u8, v as u8, range);
                        // Full range rounds the exact equations; limited range uses
                        // OpenCV's rounded 20-bit constants, within a level of them
                        // inside the legal range (Y 16-235, chroma 16-240).
                        let legal = (16..=235).contains(&y)
                            && (16..=240).contains(&u)
                            && (16..=240).contains(&v);
                        let bar = match range {
                            YuvRange::Full => 0.51,
                            YuvRange::Limited if legal => 1.0,
                            YuvRange::Limited => f64::INFINITY,
                        };
                        for c in 0..3 {
                            let d = (f64::from(rgb[c]) - want[c]).abs();
                            assert!(d <= bar, "{range:?} yuv {y},{u},{v}: {rgb:?} vs {want:?}");
                        }
                        if range == YuvRange::Limited {
                            // OpenCV's `yRGBuvToRGBA`, written out: Y below 16 counts as 16.
                            let (yy, uu, vv) = ((y - 16).max(0) * 1_220_542, u - 128, v - 128);
                            let px = |c: i32| ((yy + (1 << 19) + c) >> 20).clamp(0, 255) as u8;
                            let cv = [
                                px(1_673_527 * vv),
                                px(-852_492 * vv - 409_993 * uu),
                                px(2_116_026 * uu),
                            ];
                            assert_eq!(rgb, cv, "limited yuv {y},{u},{v}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn nv12_nv21_i420_agree_with_odd_sizes_and_strides() {
        let (w, h) = (5u32, 3u32);
        let (cw, ch) = (3usize, 2usize);
        let ys: [u8; 15] = core::array::from_fn(|i| (i * 17) as u8);
        let us: [u8; 6] = core::array::from_fn(|i| (40 + i * 30) as u8);
        let vs: [u8; 6] = core::array::from_fn(|i| (200 - i * 25) as u8);
        let mut nv12 = [0u8; 12];
        let mut nv21 = [0u8; 12];
        for i in 0..cw * ch {
            nv12[2 * i] = us[i];
            nv12[2 * i + 1] = vs[i];
            nv21[2 * i] = vs[i];
            nv21[2 * i + 1] = us[i];
        }
        let i420 = ImageView::from_planes(
            PixelFormat::I420,
            w,
            h,
            &[
                crate::Plane::new(&ys, 5),
                crate::Plane::new(&us, 3),
                crate::Plane::new(&vs, 3),
            ],
        )
        .unwrap();
        let a = convert_color_owned(&i420, PixelFormat::Rgb8, YuvRange::Full).unwrap();
        for (fmt, uv) in [(PixelFormat::Nv12, &nv12), (PixelFormat::Nv21, &nv21)] {
            let src = ImageView::from_planes(
                fmt,
                w,
                h,
                &[crate::Plane::new(&ys, 5), crate::Plane::new(uv, 6)],
            )
            .unwrap();
            let b = convert_color_owned(&src, PixelFormat::Rgb8, YuvRange::Full).unwrap();
            assert_eq!(a, b, "{fmt:?}");
        }
        // Pixel (4, 2) uses chroma sample (2, 1).
        let px = &a.as_bytes()[(2 * 5 + 4) * 3..][..3];
        let want = reference(ys[14], us[5], vs[5], YuvRange::Full);
        for c in 0..3 {
            assert!((f64::from(px[c]) - want[c]).abs() <= 0.51);
        }
    }

    #[test]
    #[cfg(feature = "std")]
    fn vector_kernels_equal_the_scalar_code() {
        for (w, h) in [(16u32, 2u32), (17, 3), (33, 4), (47, 5), (64, 2), (1, 1)] {
            let len = crate::image::tight_len(PixelFormat::I420, w, h).unwrap() as usize;
            let frame = crate::testing::noise(len, w * h);
            for from in [PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::I420] {
                let src = ImageView::new(from, w, h, &frame).unwrap();
                for to in [
                    PixelFormat::Rgb8,
                    PixelFormat::Bgr8,
                    PixelFormat::Rgba8,
                    PixelFormat::Bgra8,
                ] {
                    for range in [YuvRange::Full, YuvRange::Limited] {
                        let bpp = to.bytes_per_pixel().unwrap();
                        let fast =
                            RowConverter::with_simd(from, to, range, Simd::detect()).unwrap();
                        let slow = RowConverter::with_simd(from, to, range, Simd::Scalar).unwrap();
                        for y in 0..h as usize {
                            let mut a = std::vec![0u8; w as usize * bpp];
                            let mut b = a.clone();
                            fast.row(&src, y, &mut a);
                            slow.row(&src, y, &mut b);
                            assert_eq!(a, b, "{from:?} -> {to:?} {range:?} {w}x{h} row {y}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[cfg(feature = "std")]
    fn packed_shuffles_equal_the_scalar_code() {
        let packed = [
            PixelFormat::Gray8,
            PixelFormat::Rgb8,
            PixelFormat::Bgr8,
            PixelFormat::Rgba8,
            PixelFormat::Bgra8,
        ];
        for (w, h) in [
            (1u32, 1u32),
            (15, 2),
            (16, 3),
            (17, 2),
            (47, 2),
            (64, 1),
            (100, 3),
        ] {
            for from in packed {
                let len = from.bytes_per_pixel().unwrap() * (w * h) as usize;
                let frame = crate::testing::noise(len, w * h + 7);
                let src = ImageView::new(from, w, h, &frame).unwrap();
                for to in packed {
                    let bpp = to.bytes_per_pixel().unwrap();
                    let fast =
                        RowConverter::with_simd(from, to, YuvRange::Full, Simd::detect()).unwrap();
                    let slow =
                        RowConverter::with_simd(from, to, YuvRange::Full, Simd::Scalar).unwrap();
                    for y in 0..h as usize {
                        let mut a = std::vec![0u8; w as usize * bpp];
                        let mut b = std::vec![1u8; w as usize * bpp];
                        fast.row(&src, y, &mut a);
                        slow.row(&src, y, &mut b);
                        assert_eq!(a, b, "{from:?} -> {to:?} {w}x{h} row {y}");
                    }
                }
            }
        }
    }

    #[test]
    #[cfg(feature = "std")]
    fn gathered_pixels_equal_the_converted_row() {
        let (w, h) = (101u32, 3u32);
        // Long enough for the RGB source too.
        let frame: std::vec::Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 253) as u8).collect();
        for from in [
            PixelFormat::Nv12,
            PixelFormat::Nv21,
            PixelFormat::I420,
            PixelFormat::Rgb8,
        ] {
            let src = ImageView::new(from, w, h, &frame).unwrap();
            // The gathers of every path against the scalar path's rows.
            for (to, simd) in [PixelFormat::Rgb8, PixelFormat::Bgra8, PixelFormat::Gray8]
                .into_iter()
                .flat_map(|to| [(to, Simd::detect()), (to, Simd::Scalar)])
            {
                let c = RowConverter::with_simd(from, to, YuvRange::Limited, simd).unwrap();
                let reference = RowConverter::with_simd(from, to, YuvRange::Limited, Simd::Scalar);
                let bpp = to.bytes_per_pixel().unwrap();
                let mut row = std::vec![0u8; w as usize * bpp];
                reference.unwrap().row(&src, 2, &mut row);
                for n in [0usize, 1, 15, 16, 17, 33, 50] {
                    // Every other column from 1, as a linear resize reads them.
                    let cols: std::vec::Vec<u32> = (0..n as u32).map(|i| 2 * i).collect();
                    let mut out = std::vec![0u8; n * bpp];
                    let mut scratch = std::vec![0u8; 3 * n];
                    c.gather(&src, 2, &cols, 1, &mut out, &mut scratch);
                    for (i, &x) in cols.iter().enumerate() {
                        let x = x as usize + 1;
                        assert_eq!(
                            out[i * bpp..][..bpp],
                            row[x * bpp..][..bpp],
                            "{from:?} -> {to:?} {simd:?} n={n} col {x}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn gray_matches_pillow_formula_and_round_trips() {
        let px = [255u8, 0, 0, 0, 255, 0, 0, 0, 255, 12, 200, 99];
        let src = ImageView::new(PixelFormat::Rgb8, 4, 1, &px).unwrap();
        let g = convert_color_owned(&src, PixelFormat::Gray8, YuvRange::Full).unwrap();
        // Pillow: Image.new("RGB", ...).convert("L") gives 76, 150, 29 for pure R, G, B.
        assert_eq!(&g.as_bytes()[..3], &[76, 150, 29]);
        let rgb = convert_color_owned(&g.view(), PixelFormat::Bgra8, YuvRange::Full).unwrap();
        assert_eq!(&rgb.as_bytes()[..8], &[76, 76, 76, 255, 150, 150, 150, 255]);
    }

    #[test]
    fn size_mismatch_and_yuv_destination_are_errors() {
        let px = [0u8; 12];
        let src = ImageView::new(PixelFormat::Rgb8, 2, 2, &px).unwrap();
        let mut out = [0u8; 12];
        let mut dst = ImageViewMut::new(PixelFormat::Rgb8, 4, 1, &mut out).unwrap();
        assert!(matches!(
            convert_color(&src, &mut dst, YuvRange::Full),
            Err(Error::SizeMismatch { .. })
        ));
        let mut yuv = [0u8; 6];
        let mut dst = ImageViewMut::new(PixelFormat::Nv12, 2, 2, &mut yuv).unwrap();
        assert!(matches!(
            convert_color(&src, &mut dst, YuvRange::Full),
            Err(Error::UnsupportedFormat { .. })
        ));
    }
}
