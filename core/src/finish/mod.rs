//! The finish kernel: crop, value scale, per-channel normalize, layout and cast in one pass.
//!
//! Every model input ends with the same steps: take the final pixels (often a
//! crop of them), divide by 255, subtract a mean and divide by a standard
//! deviation per channel, lay the channels out as CHW or HWC, and store as the
//! engine's element type. For 8-bit input each channel maps 256 possible bytes
//! to 256 possible outputs, so [`Finisher`] computes those once into a table per
//! channel, with exactly torchvision's float32 arithmetic
//! `(v / 255 - mean) / std` (or the quantized/f16 value of it), and the
//! per-pixel work is a table look-up and a store.
//!
//! For float32 output from gray, RGB, BGR, RGBA or BGRA pixels, a vector kernel
//! (AVX2 with FMA, detected at run time; NEON) computes the values instead,
//! 8 or 16 pixels at a time, each division done as a fused multiplication
//! by the reciprocal carried to twice float32's precision. A finisher uses it only
//! where that arithmetic reproduces every entry of its tables (checked for
//! all 256 byte values of each channel when it is built), so the output is
//! the tables' bit for bit; the tables finish the last pixels of each row.
//!
//! ```
//! use tensorprep::finish::{Finisher, FinishSpec};
//! use tensorprep::{ImageView, PixelFormat, Rect, TensorMut};
//!
//! let pixels = vec![128u8; 8 * 8 * 3];
//! let image = ImageView::new(PixelFormat::Rgb8, 8, 8, &pixels)?;
//! let finisher = Finisher::new(&FinishSpec::imagenet())?;
//! let mut tensor = vec![0f32; 3 * 4 * 4];
//! // Crop is a zero-copy view, so crop + normalize + CHW + cast is one pass.
//! finisher.run(&image.crop(Rect::new(2, 2, 4, 4))?, TensorMut::F32(&mut tensor))?;
//! assert_eq!(tensor[0], (128f32 / 255.0 - 0.485) / 0.229);
//! # Ok::<(), tensorprep::Error>(())
//! ```

use half::f16;

use crate::cpu::Simd;
use crate::rows::RowSource;
use crate::{DType, Error, ImageView, Layout, PixelFormat, Quantization, Result, TensorMut};

mod arith;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Per-channel normalization `(v / divisor - mean[c]) / std[c]`, in float32
/// (or `(v / divisor - mean[c]) * (1 / std[c])` with [`Normalize::std_reciprocal`]),
/// then divided by [`Normalize::second_std`] (1 unless a reference divides twice).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalize {
    /// Mean per output channel (R, G, B order for colour; index 0 for gray).
    pub mean: [f32; 3],
    /// Standard deviation per output channel; must be finite and non-zero.
    pub std: [f32; 3],
    /// Pixel bytes are divided by this first: 255 for values in 0-1 (torchvision,
    /// timm, Hugging Face), 1 for values in 0-255 (TFLite, MindSpore, Caffe).
    pub divisor: f32,
    /// Multiply by the float32 of `1 / std` instead of dividing by `std`, as
    /// the TFLite Task Library does (the two differ in the last bit for some
    /// values).
    pub std_reciprocal: bool,
    /// A second division after the first, per channel, in float32: Hugging
    /// Face EfficientNet's `include_top` divides by `std` again. `[1.0; 3]`
    /// (dividing by 1 changes nothing) for everything else.
    pub second_std: [f32; 3],
}

impl Normalize {
    /// torchvision's ImageNet statistics in 0-1 units.
    pub const IMAGENET: Normalize = Normalize {
        mean: [0.485, 0.456, 0.406],
        std: [0.229, 0.224, 0.225],
        divisor: 255.0,
        std_reciprocal: false,
        second_std: [1.0; 3],
    };

    /// `ToTensor` alone: values `v / 255` in 0-1.
    pub const UNIT: Normalize = Normalize {
        mean: [0.0; 3],
        std: [1.0; 3],
        divisor: 255.0,
        std_reciprocal: false,
        second_std: [1.0; 3],
    };

    /// torchvision v2's `ToDtype(torch.float32, scale=True)` on 8-bit
    /// pixels: `v * (1 / 255)` in float32, 0-1. It multiplies where
    /// [`Normalize::UNIT`] (v1's `ToTensor`) divides: the two differ in the
    /// last bit for 126 of the 256 values.
    pub const TO_DTYPE_SCALE: Normalize = Normalize {
        mean: [0.0; 3],
        std: [255.0; 3],
        divisor: 1.0,
        std_reciprocal: true,
        second_std: [1.0; 3],
    };

    /// The byte values themselves, 0-255.
    pub const RAW: Normalize = Normalize {
        mean: [0.0; 3],
        std: [1.0; 3],
        divisor: 1.0,
        std_reciprocal: false,
        second_std: [1.0; 3],
    };

    /// The float32 value for byte `v` in channel `c` (`c < 3`).
    pub fn apply(&self, c: usize, v: u8) -> f32 {
        let centred = f32::from(v) / self.divisor - self.mean[c];
        let scaled = if self.std_reciprocal {
            centred * (1.0 / self.std[c])
        } else {
            centred / self.std[c]
        };
        scaled / self.second_std[c]
    }

    /// The inverse of [`Normalize::apply`]: the byte value (unrounded,
    /// unclamped, in 0-255 units) that gives `x` in channel `c` (`c < 3`).
    pub fn invert(&self, c: usize, x: f32) -> f32 {
        let scaled = x * self.second_std[c];
        let centred = if self.std_reciprocal {
            scaled / (1.0 / self.std[c])
        } else {
            scaled * self.std[c]
        };
        (centred + self.mean[c]) * self.divisor
    }

    fn validate(&self) -> Result<()> {
        let ok = |x: f32| x.is_finite();
        if !(self.divisor.is_finite() && self.divisor > 0.0) {
            return Err(Error::InvalidParameter {
                name: "normalize divisor",
                reason: "must be finite and positive",
            });
        }
        let divisors = self.std.iter().chain(&self.second_std);
        if !self.mean.iter().all(|&m| ok(m)) || !divisors.into_iter().all(|&s| ok(s) && s != 0.0) {
            return Err(Error::InvalidParameter {
                name: "normalize",
                reason: "mean must be finite and std finite and non-zero",
            });
        }
        // Each parameter finite is not enough (std 1e-30 with mean 3e38, a
        // divisor of 1e-45): every 8-bit input must give a finite value.
        if !(0..3).all(|c| (0..=255u8).all(|v| ok(self.apply(c, v)))) {
            return Err(Error::InvalidParameter {
                name: "normalize",
                reason: "(v / divisor - mean) / std overflows to infinity for some 8-bit v",
            });
        }
        Ok(())
    }

    /// The largest magnitude an 8-bit input gives.
    fn max_abs(&self) -> f32 {
        (0..3)
            .flat_map(|c| [0u8, 255].map(|v| self.apply(c, v).abs()))
            .fold(0.0, f32::max)
    }
}

/// Channel order of the output tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ChannelOrder {
    /// Red, green, blue (PyTorch and most models). A gray source is repeated into all three.
    #[default]
    Rgb,
    /// Blue, green, red (Caffe- and OpenCV-trained models). A gray source is repeated.
    Bgr,
    /// One channel; the source must be [`PixelFormat::Gray8`].
    Gray,
}

impl ChannelOrder {
    /// Channels of the output tensor.
    pub const fn channels(self) -> usize {
        match self {
            ChannelOrder::Gray => 1,
            _ => 3,
        }
    }
}

/// Everything the finish kernel does after the pixels are final.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FinishSpec {
    /// Value scaling and per-channel normalization.
    pub normalize: Normalize,
    /// Channel order of the output.
    pub order: ChannelOrder,
    /// CHW or HWC.
    pub layout: Layout,
    /// Output element type.
    pub dtype: DType,
    /// For [`DType::U8`] and [`DType::I8`]: how the normalized value is quantized.
    pub quantization: Quantization,
}

impl FinishSpec {
    /// torchvision's `ToTensor()` + `Normalize(IMAGENET)`: RGB, CHW, f32.
    pub const fn imagenet() -> Self {
        FinishSpec {
            normalize: Normalize::IMAGENET,
            order: ChannelOrder::Rgb,
            layout: Layout::Chw,
            dtype: DType::F32,
            quantization: Quantization::IDENTITY,
        }
    }
}

/// One 256-entry look-up table per output channel.
type Tables<T> = [[T; 256]; 3];

// The tables live inline (3 KiB at most) so that the finisher needs no allocator;
// it is built once per spec, so the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum AnyTables {
    F32(Tables<f32>),
    F16(Tables<f16>),
    U8(Tables<u8>),
    I8(Tables<i8>),
}

impl FinishSpec {
    /// Checks the values a [`Finisher`] is built from: finite normalization,
    /// a positive quantization scale, float16's range.
    pub(crate) fn check(&self) -> Result<()> {
        self.normalize.validate()?;
        let q = self.quantization;
        if matches!(self.dtype, DType::U8 | DType::I8) && !(q.scale.is_finite() && q.scale > 0.0) {
            return Err(Error::InvalidParameter {
                name: "quantization scale",
                reason: "must be finite and positive",
            });
        }
        if self.dtype == DType::F16 && self.normalize.max_abs() > f32::from(f16::MAX) {
            return Err(Error::InvalidParameter {
                name: "normalize",
                reason: "some 8-bit values fall outside float16's range (65504)",
            });
        }
        Ok(())
    }
}

/// A compiled finish step: tables built once, then run on any number of images
/// without allocating.
#[derive(Clone, Debug)]
pub struct Finisher {
    spec: FinishSpec,
    tables: AnyTables,
    /// Float32 output: the constants the vector kernels compute the tables'
    /// values from, when they reproduce every entry ([`arith::checked`]).
    computed: Option<[arith::Channel; 3]>,
}

/// Fills `t` with `f` of every channel's normalized byte values (in place:
/// a table is up to 3 KiB, which a small device's stack should not hold twice).
fn fill<T: Copy>(t: &mut Tables<T>, n: &Normalize, f: impl Fn(f32) -> T) {
    for (c, table) in t.iter_mut().enumerate() {
        for (v, out) in table.iter_mut().enumerate() {
            *out = f(n.apply(c, v as u8));
        }
    }
}

fn quantize(x: f32, q: Quantization, lo: f32, hi: f32) -> f32 {
    let v = libm::rintf(x / q.scale) + q.zero_point as f32;
    v.clamp(lo, hi)
}

impl Finisher {
    /// Builds the per-channel tables for `spec`, the vector kernels chosen
    /// for this CPU ([`Simd::detect`]).
    pub fn new(spec: &FinishSpec) -> Result<Self> {
        Finisher::with_simd(spec, Simd::detect())
    }

    /// [`Finisher::new`] running on `simd`'s kernels (`Simd::Scalar`: the
    /// tables alone, the reference the vector kernels are tested against);
    /// the output is the same on every path. Refused if the CPU lacks `simd`.
    pub fn with_simd(spec: &FinishSpec, simd: Simd) -> Result<Self> {
        let simd = simd.check()?;
        spec.check()?;
        let (n, q) = (&spec.normalize, spec.quantization);
        let mut finisher = Finisher {
            spec: *spec,
            tables: match spec.dtype {
                DType::F32 => AnyTables::F32([[0.0; 256]; 3]),
                DType::F16 => AnyTables::F16([[f16::ZERO; 256]; 3]),
                DType::U8 => AnyTables::U8([[0; 256]; 3]),
                DType::I8 => AnyTables::I8([[0; 256]; 3]),
            },
            computed: None,
        };
        match &mut finisher.tables {
            AnyTables::F32(t) => fill(t, n, |x| x),
            AnyTables::F16(t) => fill(t, n, f16::from_f32),
            AnyTables::U8(t) => fill(t, n, |x| quantize(x, q, 0.0, 255.0) as u8),
            AnyTables::I8(t) => fill(t, n, |x| quantize(x, q, -128.0, 127.0) as i8),
        }
        if spec.dtype == DType::F32 && simd.finish_kernel() {
            finisher.computed = arith::checked(n);
        }
        Ok(finisher)
    }

    /// The spec this finisher was built from.
    pub fn spec(&self) -> &FinishSpec {
        &self.spec
    }

    /// Elements of the output tensor for a `width` x `height` source.
    pub fn output_len(&self, width: u32, height: u32) -> usize {
        self.spec.order.channels() * width as usize * height as usize
    }

    /// Shape of the output for a `width` x `height` source, in the spec's layout.
    pub fn output_shape(&self, width: u32, height: u32) -> [usize; 3] {
        let (c, h, w) = (self.spec.order.channels(), height as usize, width as usize);
        match self.spec.layout {
            Layout::Chw => [c, h, w],
            Layout::Hwc => [h, w, c],
        }
    }

    /// Writes the tensor for `src` (crop it with [`ImageView::crop`] first) into `dst`,
    /// which must hold exactly [`Finisher::output_len`] elements of the spec's dtype.
    pub fn run(&self, src: &ImageView<'_>, dst: TensorMut<'_>) -> Result<()> {
        let mut rows = *src;
        self.run_rows(&mut rows, src.format(), (src.width(), src.height()), dst)
    }

    /// [`Finisher::run`] on rows of packed `format` read from `rows`, `size` being
    /// (width, height): the rows may be converted on the fly by their source.
    pub(crate) fn run_rows<R: RowSource>(
        &self,
        rows: &mut R,
        format: PixelFormat,
        (width, height): (u32, u32),
        dst: TensorMut<'_>,
    ) -> Result<()> {
        let bpp = format.bytes_per_pixel().ok_or(Error::UnsupportedFormat {
            op: "finish (convert YUV to RGB first)",
            format,
        })?;
        if self.spec.order == ChannelOrder::Gray && format != PixelFormat::Gray8 {
            return Err(Error::UnsupportedFormat {
                op: "finish to one gray channel (convert to Gray8 first)",
                format,
            });
        }
        let needed = self.output_len(width, height);
        if dst.len() != needed {
            return Err(Error::TensorSize {
                len: dst.len(),
                needed,
            });
        }
        if dst.dtype() != self.spec.dtype {
            return Err(Error::DTypeMismatch {
                expected: self.spec.dtype,
                found: dst.dtype(),
            });
        }
        let src_bgr = format.rgb_offsets() == Some([2, 1, 0]);
        let out_bgr = self.spec.order == ChannelOrder::Bgr;
        let k = Kernel {
            bpp,
            src_bgr,
            out_bgr,
            layout: self.spec.layout,
            width: width as usize,
            height: height as usize,
        };
        match (&self.tables, dst) {
            (AnyTables::F32(t), TensorMut::F32(d)) => match &self.computed {
                Some(c) => k.dispatch_with(rows, t, d, |row, out, map| {
                    vector_row(row, bpp, out, map, c)
                }),
                None => k.dispatch(rows, t, d),
            },
            (AnyTables::F16(t), TensorMut::F16(d)) => k.dispatch(rows, t, d),
            (AnyTables::U8(t), TensorMut::U8(d)) => k.dispatch(rows, t, d),
            (AnyTables::I8(t), TensorMut::I8(d)) => k.dispatch(rows, t, d),
            _ => unreachable!("dtype checked above"),
        }
        Ok(())
    }

    /// Allocating form of [`Finisher::run`].
    #[cfg(feature = "alloc")]
    pub fn run_to_tensor(&self, src: &ImageView<'_>) -> Result<crate::Tensor> {
        let mut t =
            crate::Tensor::zeros(self.spec.dtype, self.output_len(src.width(), src.height()));
        self.run(src, t.as_mut())?;
        Ok(t)
    }
}

/// The run-time choices of one finish run, resolved into a monomorphized loop.
struct Kernel {
    bpp: usize,
    src_bgr: bool,
    out_bgr: bool,
    layout: Layout,
    width: usize,
    height: usize,
}

impl Kernel {
    fn dispatch<T: Copy, R: RowSource>(&self, rows: &mut R, t: &Tables<T>, dst: &mut [T]) {
        self.dispatch_with(rows, t, dst, |_, _, _| 0);
    }

    /// [`Kernel::dispatch`] with `head` finishing the start of each colour
    /// row (a vector kernel; see [`color`]).
    fn dispatch_with<T: Copy, R: RowSource>(
        &self,
        rows: &mut R,
        t: &Tables<T>,
        dst: &mut [T],
        head: impl FnMut(&[u8], RowOut<'_, T>, [(usize, usize); 3]) -> usize,
    ) {
        let (l, size) = (self.layout, (self.width, self.height));
        match (self.bpp, self.src_bgr, self.out_bgr) {
            (1, _, out_bgr) => gray(rows, size, l, out_bgr, t, dst, head),
            (3, false, false) => color::<T, R, 3, false, false>(rows, size, l, t, dst, head),
            (3, false, true) => color::<T, R, 3, false, true>(rows, size, l, t, dst, head),
            (3, true, false) => color::<T, R, 3, true, false>(rows, size, l, t, dst, head),
            (3, true, true) => color::<T, R, 3, true, true>(rows, size, l, t, dst, head),
            (4, false, false) => color::<T, R, 4, false, false>(rows, size, l, t, dst, head),
            (4, false, true) => color::<T, R, 4, false, true>(rows, size, l, t, dst, head),
            (4, true, false) => color::<T, R, 4, true, false>(rows, size, l, t, dst, head),
            (4, true, true) => color::<T, R, 4, true, true>(rows, size, l, t, dst, head),
            _ => unreachable!("packed formats have 1, 3 or 4 bytes per pixel"),
        }
    }
}

/// Where a row's finished values go: one plane, three planes, or the
/// channels interleaved.
// Targets without a vector kernel only pass these along.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
enum RowOut<'a, T> {
    Plane(&'a mut [T]),
    Planes([&'a mut [T]; 3]),
    Interleaved(&'a mut [T]),
}

/// The vector kernel on the start of one row; `map[i]` is the source byte
/// and the colour of plane (or output channel) `i`. The pixels done.
#[allow(unused_variables)]
fn vector_row(
    row: &[u8],
    bpp: usize,
    out: RowOut<'_, f32>,
    map: [(usize, usize); 3],
    constants: &[arith::Channel; 3],
) -> usize {
    let channels = map.map(|(_, colour)| &constants[colour]);
    let sources = map.map(|(source, _)| source);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a finisher keeps computed constants only for an available
    // `Simd` with `finish_kernel()`, on x86_64 AVX2 and FMA; planes are the row's width and an
    // interleaved row 3 floats per pixel. Planes come in source-byte order.
    return unsafe {
        match out {
            RowOut::Plane(o) => x86::plane(row, o, channels[0]),
            RowOut::Planes(planes) => x86::planes(row, bpp, planes, channels),
            RowOut::Interleaved(o) if bpp == 3 => x86::interleaved(row, o, sources, channels),
            RowOut::Interleaved(_) => 0,
        }
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: NEON is part of the aarch64 target; the outputs are the row's size.
    return unsafe {
        match out {
            RowOut::Plane(o) => neon::plane(row, o, channels[0]),
            RowOut::Planes(planes) => neon::planes(row, bpp, planes, channels),
            RowOut::Interleaved(o) => neon::interleaved(row, bpp, o, sources, channels),
        }
    };
    #[allow(unreachable_code)]
    0
}

/// Colour (0 = R, 2 = B) of source byte `k` (0 or 2).
const fn src_color(k: usize, src_bgr: bool) -> usize {
    if src_bgr { 2 - k } else { k }
}

/// Output channel that carries colour `c`.
const fn out_channel(c: usize, out_bgr: bool) -> usize {
    if out_bgr { 2 - c } else { c }
}

/// Colour source with `BPP` bytes per pixel. Tables are indexed by colour (R, G, B);
/// the const parameters resolve which table and which output channel each source
/// byte goes to, so every index in the inner loop is a constant.
///
/// `head(row, out, map)` may finish the start of each row (`map[i]`: the
/// source byte and the colour of plane or output channel `i`) and returns
/// the pixels it did; the tables do the rest.
fn color<T: Copy, R: RowSource, const BPP: usize, const SRC_BGR: bool, const OUT_BGR: bool>(
    rows: &mut R,
    (w, h): (usize, usize),
    layout: Layout,
    t: &Tables<T>,
    dst: &mut [T],
    mut head: impl FnMut(&[u8], RowOut<'_, T>, [(usize, usize); 3]) -> usize,
) {
    let (col0, col2) = (src_color(0, SRC_BGR), src_color(2, SRC_BGR));
    let (ch0, ch2) = (out_channel(col0, OUT_BGR), out_channel(col2, OUT_BGR));
    let (t0, t1, t2) = (&t[col0], &t[1], &t[col2]);
    match layout {
        Layout::Chw => {
            let hw = w * h;
            let (first, rest) = dst.split_at_mut(hw);
            let (p1, last) = rest.split_at_mut(hw);
            let (p0, p2) = if ch0 == 0 {
                (first, last)
            } else {
                (last, first)
            };
            let planes = p0
                .chunks_exact_mut(w)
                .zip(p1.chunks_exact_mut(w))
                .zip(p2.chunks_exact_mut(w));
            for (y, ((o0, o1), o2)) in planes.enumerate() {
                let row = rows.row(y);
                // Equal lengths up front let the compiler drop every bounds check.
                let (o1, o2, row) = (
                    &mut o1[..o0.len()],
                    &mut o2[..o0.len()],
                    &row[..o0.len() * BPP],
                );
                let planes = RowOut::Planes([&mut *o0, &mut *o1, &mut *o2]);
                let done = head(row, planes, [(0, col0), (1, 1), (2, col2)]);
                for x in done..o0.len() {
                    let px = &row[x * BPP..x * BPP + BPP];
                    o0[x] = t0[px[0] as usize];
                    o1[x] = t1[px[1] as usize];
                    o2[x] = t2[px[2] as usize];
                }
            }
        }
        Layout::Hwc => {
            // Output channel `j`: its colour and the source byte holding it.
            let map = [0, 1, 2].map(|j| {
                let colour = out_channel(j, OUT_BGR);
                (src_color(colour, SRC_BGR), colour)
            });
            for (y, out) in dst.chunks_exact_mut(w * 3).enumerate() {
                let row = &rows.row(y)[..w * BPP];
                let done = head(row, RowOut::Interleaved(&mut *out), map);
                let pixels = row.chunks_exact(BPP).zip(out.chunks_exact_mut(3));
                for (px, o) in pixels.skip(done) {
                    o[ch0] = t0[px[0] as usize];
                    o[1] = t1[px[1] as usize];
                    o[ch2] = t2[px[2] as usize];
                }
            }
        }
    }
}

/// Gray source: one channel out, or the gray value through each colour's table.
/// `head` as for [`color`] (planar outputs only).
fn gray<T: Copy, R: RowSource>(
    rows: &mut R,
    (w, h): (usize, usize),
    layout: Layout,
    out_bgr: bool,
    t: &Tables<T>,
    dst: &mut [T],
    mut head: impl FnMut(&[u8], RowOut<'_, T>, [(usize, usize); 3]) -> usize,
) {
    let hw = w * h;
    if dst.len() == hw {
        for (y, o) in dst.chunks_exact_mut(w).enumerate() {
            let row = &rows.row(y)[..w];
            let done = head(row, RowOut::Plane(&mut *o), [(0, 0); 3]);
            for (o, &v) in o.iter_mut().zip(row).skip(done) {
                *o = t[0][v as usize];
            }
        }
        return;
    }
    // Table feeding output channel `ch`.
    let table = |ch: usize| &t[out_channel(ch, out_bgr)];
    match layout {
        Layout::Chw => {
            let (p0, rest) = dst.split_at_mut(hw);
            let (p1, p2) = rest.split_at_mut(hw);
            let (a, b, c) = (table(0), table(1), table(2));
            let planes = p0
                .chunks_exact_mut(w)
                .zip(p1.chunks_exact_mut(w))
                .zip(p2.chunks_exact_mut(w));
            let map = [0, 1, 2].map(|ch| (0, out_channel(ch, out_bgr)));
            for (y, ((o0, o1), o2)) in planes.enumerate() {
                let row = &rows.row(y)[..w];
                let done = head(row, RowOut::Planes([&mut *o0, &mut *o1, &mut *o2]), map);
                for (x, &v) in row.iter().enumerate().skip(done) {
                    o0[x] = a[v as usize];
                    o1[x] = b[v as usize];
                    o2[x] = c[v as usize];
                }
            }
        }
        Layout::Hwc => {
            let (a, b, c) = (table(0), table(1), table(2));
            for (y, out) in dst.chunks_exact_mut(w * 3).enumerate() {
                for (o, &v) in out.chunks_exact_mut(3).zip(rows.row(y)) {
                    o[0] = a[v as usize];
                    o[1] = b[v as usize];
                    o[2] = c[v as usize];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn bgr_source_to_rgb_chw_swaps_channels() {
        let px = [10u8, 20, 30, 40, 50, 60]; // two BGR pixels
        let img = ImageView::new(PixelFormat::Bgr8, 2, 1, &px).unwrap();
        let f = Finisher::new(&FinishSpec {
            normalize: Normalize::RAW,
            ..FinishSpec::imagenet()
        })
        .unwrap();
        let mut out = [0f32; 6];
        f.run(&img, TensorMut::F32(&mut out)).unwrap();
        assert_eq!(out, [30.0, 60.0, 20.0, 50.0, 10.0, 40.0]);
    }

    #[test]
    fn each_colour_keeps_its_own_statistics_in_every_order() {
        let n = Normalize {
            mean: [1.0, 2.0, 3.0],
            std: [1.0, 1.0, 1.0],
            divisor: 1.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        };
        let rgb = [10u8, 20, 30];
        let bgr = [30u8, 20, 10];
        for (fmt, px) in [(PixelFormat::Rgb8, &rgb), (PixelFormat::Bgr8, &bgr)] {
            let img = ImageView::new(fmt, 1, 1, px).unwrap();
            for (order, want) in [
                (ChannelOrder::Rgb, [9.0, 18.0, 27.0]),
                (ChannelOrder::Bgr, [27.0, 18.0, 9.0]),
            ] {
                for layout in [Layout::Chw, Layout::Hwc] {
                    let f = Finisher::new(&FinishSpec {
                        normalize: n,
                        order,
                        layout,
                        ..FinishSpec::imagenet()
                    })
                    .unwrap();
                    let mut out = [0f32; 3];
                    f.run(&img, TensorMut::F32(&mut out)).unwrap();
                    assert_eq!(out, want, "{fmt:?} -> {order:?} {layout:?}");
                }
            }
        }
    }

    #[test]
    fn rgba_to_bgr_hwc_drops_alpha() {
        let px = [1u8, 2, 3, 255, 4, 5, 6, 255];
        let img = ImageView::new(PixelFormat::Rgba8, 2, 1, &px).unwrap();
        let f = Finisher::new(&FinishSpec {
            normalize: Normalize::RAW,
            order: ChannelOrder::Bgr,
            layout: Layout::Hwc,
            dtype: DType::U8,
            quantization: Quantization::IDENTITY,
        })
        .unwrap();
        let mut out = [0u8; 6];
        f.run(&img, TensorMut::U8(&mut out)).unwrap();
        assert_eq!(out, [3, 2, 1, 6, 5, 4]);
    }

    #[test]
    fn int8_quantization_rounds_half_even_and_clamps() {
        // value v/255 with scale 1/127.5... use RAW domain for easy numbers: x = v.
        let spec = FinishSpec {
            normalize: Normalize::RAW,
            order: ChannelOrder::Gray,
            layout: Layout::Chw,
            dtype: DType::I8,
            quantization: Quantization {
                scale: 2.0,
                zero_point: -128,
            },
        };
        let f = Finisher::new(&spec).unwrap();
        let px = [0u8, 1, 3, 5, 255];
        let img = ImageView::new(PixelFormat::Gray8, 5, 1, &px).unwrap();
        let mut out = [0i8; 5];
        f.run(&img, TensorMut::I8(&mut out)).unwrap();
        // 0/2=0 -> -128; 0.5 -> 0 (even) -> -128; 1.5 -> 2 -> -126; 2.5 -> 2 -> -126; 127.5 -> 128 -> 0
        assert_eq!(out, [-128, -128, -126, -126, 0]);
    }

    #[test]
    fn the_vector_kernel_equals_the_tables_bit_for_bit() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let unit = |v: u64| (v >> 40) as f32 / (1u64 << 24) as f32;
        let mut computed = 0;
        for case in 0..600 {
            let normalize = match case {
                0 => Normalize::IMAGENET,
                1 => Normalize::RAW,
                _ => Normalize {
                    mean: [unit(next()), unit(next()), unit(next())],
                    std: [
                        0.05 + unit(next()),
                        0.05 + unit(next()),
                        0.05 + unit(next()),
                    ],
                    divisor: if case % 2 == 0 { 255.0 } else { 1.0 },
                    std_reciprocal: false,
                    second_std: [1.0; 3],
                },
            };
            let format = [
                PixelFormat::Rgb8,
                PixelFormat::Bgr8,
                PixelFormat::Rgba8,
                PixelFormat::Bgra8,
                PixelFormat::Gray8,
            ][case % 5];
            let order = match (format, case % 3) {
                (PixelFormat::Gray8, 0) => ChannelOrder::Gray,
                _ => [ChannelOrder::Rgb, ChannelOrder::Bgr][case / 4 % 2],
            };
            let layout = [Layout::Chw, Layout::Hwc][case / 8 % 2];
            let (w, h) = (1 + (next() % 70) as u32, 1 + (next() % 3) as u32);
            let (w, h) = if case == 2 { (224, 224) } else { (w, h) };
            let bpp = format.bytes_per_pixel().unwrap();
            let px: Vec<u8> = (0..w as usize * h as usize * bpp)
                .map(|_| next() as u8)
                .collect();
            let img = ImageView::new(format, w, h, &px).unwrap();
            let spec = FinishSpec {
                normalize,
                order,
                layout,
                ..FinishSpec::imagenet()
            };
            let vector = Finisher::new(&spec).unwrap();
            let mut tables = vector.clone();
            tables.computed = None;
            computed += usize::from(vector.computed.is_some());
            let n = vector.output_len(w, h);
            let (mut a, mut b) = (vec![0f32; n], vec![1f32; n]);
            vector.run(&img, TensorMut::F32(&mut a)).unwrap();
            tables.run(&img, TensorMut::F32(&mut b)).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&a),
                bits(&b),
                "{format:?} -> {order:?} {layout:?} {w}x{h} {normalize:?}"
            );
        }
        if Simd::detect().finish_kernel() {
            assert!(computed > 560, "{computed} of 600 finishers computed");
        } else {
            // Without the kernel every finisher uses its tables.
            assert_eq!(computed, 0);
        }
    }

    #[test]
    fn a_finisher_pinned_to_a_path_runs_its_kernels_only() {
        let spec = FinishSpec::imagenet();
        let scalar = Finisher::with_simd(&spec, Simd::Scalar).unwrap();
        assert!(scalar.computed.is_none());
        let detected = Finisher::new(&spec).unwrap();
        assert_eq!(detected.computed.is_some(), Simd::detect().finish_kernel());
        for simd in Simd::ALL {
            match Finisher::with_simd(&spec, simd) {
                Ok(f) => {
                    assert!(simd.is_available() && (f.computed.is_some() == simd.finish_kernel()))
                }
                Err(e) => {
                    assert!(!simd.is_available());
                    assert_eq!(e, Error::UnsupportedCpu { requested: simd });
                }
            }
        }
    }

    #[test]
    fn gray_source_repeats_into_three_channels() {
        let px = [0u8, 255];
        let img = ImageView::new(PixelFormat::Gray8, 2, 1, &px).unwrap();
        let f = Finisher::new(&FinishSpec::imagenet()).unwrap();
        let mut out = [0f32; 6];
        f.run(&img, TensorMut::F32(&mut out)).unwrap();
        for c in 0..3 {
            assert_eq!(out[c * 2], Normalize::IMAGENET.apply(c, 0));
            assert_eq!(out[c * 2 + 1], Normalize::IMAGENET.apply(c, 255));
        }
    }

    #[test]
    fn wrong_sizes_and_types_are_errors() {
        let px = [0u8; 12];
        let img = ImageView::new(PixelFormat::Rgb8, 2, 2, &px).unwrap();
        let f = Finisher::new(&FinishSpec::imagenet()).unwrap();
        let mut short = [0f32; 11];
        assert_eq!(
            f.run(&img, TensorMut::F32(&mut short)),
            Err(Error::TensorSize {
                len: 11,
                needed: 12
            })
        );
        let mut wrong = [0u8; 12];
        assert!(f.run(&img, TensorMut::U8(&mut wrong)).is_err());
        let mut bad = FinishSpec::imagenet();
        bad.normalize.std[1] = 0.0;
        assert!(Finisher::new(&bad).is_err());
    }
}
