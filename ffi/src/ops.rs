//! The eager ops: one call, one op, written into the caller's image or
//! tensor. For a chain of ops run per image, compile a plan instead (fused,
//! no allocation per image); these allocate their scratch on every call.

use std::ffi::c_void;

use tensorprep::decode::ImageDecoder;
use tensorprep::finish::{FinishSpec, Finisher, Normalize};
use tensorprep::geometry::{self, Transform};
use tensorprep::jpeg::{DecodeOptions, JpegDecoder, Orientation};
#[cfg(feature = "resize-float")]
use tensorprep::resize::{FloatView, FloatViewMut};
use tensorprep::{ImageView, ImageViewMut, PixelFormat, Quantization, Rect};

use crate::args::{self, Span, lookup};
use crate::boundary::boundary;
use crate::result::{Failure, Result, tp_result};
use crate::types::{
    self, CHANNEL_ORDERS, DTYPES, FLIPS, LAYOUTS, PIXEL_FORMATS, PLACEMENTS, RESAMPLES, ROTATIONS,
    YUV_RANGES, tp_float_image, tp_float_image_mut, tp_image, tp_image_info, tp_image_mut,
    tp_jpeg_info, tp_rect,
};

/// `tp_decode_options.flags`: apply the EXIF orientation tag (Pillow's
/// `ImageOps.exif_transpose`); without it pixels come as stored, as
/// torchvision's loader reads them.
pub const TP_DECODE_APPLY_EXIF_ORIENTATION: u32 = 1;
/// `tp_decode_options.flags`: decode damaged files as far as possible
/// (missing parts gray) instead of failing.
pub const TP_DECODE_LENIENT: u32 = 2;

/// Options of `tp_image_read_info`, `tp_image_decode`, `tp_jpeg_read_info` and
/// `tp_jpeg_decode`. All zero (or a NULL pointer) means the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tp_decode_options {
    /// Output `tp_pixel_format`: 0 for RGB8; a packed format (GRAY8, RGB8,
    /// BGR8, RGBA8, BGRA8).
    pub format: u32,
    /// A `tp_decoder`; `TP_DECODER_AUTO` (0) picks libjpeg-turbo when built in.
    pub decoder: u32,
    /// `TP_DECODE_*` bits.
    pub flags: u32,
    /// Largest image accepted, in pixels; 0 for the default (128 Mpixel).
    pub max_pixels: u64,
    /// Largest single allocation, in bytes; 0 for the default (1 GiB).
    pub max_alloc_bytes: u64,
}

fn decode_options(o: Option<&tp_decode_options>) -> Result<DecodeOptions> {
    let o = o.copied().unwrap_or_default();
    let flags = args::flags(
        o.flags,
        TP_DECODE_APPLY_EXIF_ORIENTATION | TP_DECODE_LENIENT,
        "options.flags",
    )?;
    Ok(DecodeOptions {
        format: match o.format {
            0 => PixelFormat::Rgb8,
            f => lookup(&PIXEL_FORMATS, f, "options.format")?,
        },
        orientation: if flags & TP_DECODE_APPLY_EXIF_ORIENTATION != 0 {
            Orientation::Apply
        } else {
            Orientation::Ignore
        },
        strict: flags & TP_DECODE_LENIENT == 0,
        limits: crate::plan::limits(o.max_pixels, o.max_alloc_bytes),
        backend: types::decoder(o.decoder, None)?,
        ..DecodeOptions::default()
    })
}

/// The body of the `_read_info` calls: `read` runs on the checked arguments.
///
/// # Safety
///
/// As for `tp_image_read_info`.
unsafe fn read_info<T>(
    data: *const u8,
    len: usize,
    options: *const tp_decode_options,
    out: *mut T,
    read: impl FnOnce(DecodeOptions, &[u8]) -> tensorprep::Result<T>,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the pointers.
        let (bytes, options, out) = unsafe {
            (
                args::bytes(data, len, "data")?,
                args::optional(options, "options")?,
                args::out(out, "out")?,
            )
        };
        out.write(read(decode_options(options)?, bytes)?);
        Ok(())
    })
}

/// The body of the `_decode` calls: `decode` runs on the checked arguments.
///
/// # Safety
///
/// As for `tp_image_decode`.
unsafe fn decode<T>(
    data: *const u8,
    len: usize,
    options: *const tp_decode_options,
    dst: *const tp_image_mut,
    info: *mut T,
    decode: impl FnOnce(DecodeOptions, &[u8], &mut ImageViewMut<'_>) -> tensorprep::Result<T>,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the pointers.
        let (bytes, options, dst, info) = unsafe {
            (
                args::bytes(data, len, "data")?,
                args::optional(options, "options")?,
                args::required(dst, "dst")?,
                args::optional_out(info, "info")?,
            )
        };
        // SAFETY: the caller guarantees the planes; overlap with `data` is checked.
        let mut view = unsafe { types::view_mut(dst, "dst", &[Span::of(bytes, "data")]) }?;
        // The decoder checks `dst`'s format and size against the file and options.
        let got = decode(decode_options(options)?, bytes, &mut view)?;
        if let Some(out) = info {
            out.write(got);
        }
        Ok(())
    })
}

/// Reads a JPEG's headers: the size the decoded image will have with these
/// options (EXIF orientation applied or not), without decoding.
///
/// # Safety
///
/// `data` must be valid for reads of `len` bytes; `options` NULL or pointing
/// to a `tp_decode_options`; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_jpeg_read_info(
    data: *const u8,
    len: usize,
    options: *const tp_decode_options,
    out: *mut tp_jpeg_info,
) -> tp_result {
    // SAFETY: forwarded; the caller guarantees the pointers.
    unsafe {
        read_info(data, len, options, out, |o, bytes| {
            JpegDecoder::new(o).read_info(bytes).map(Into::into)
        })
    }
}

/// Decodes a JPEG into `dst`, whose format must be the options' format and
/// whose size must be the one `tp_jpeg_read_info` reports. `*info` (may be
/// NULL) receives the headers.
///
/// # Safety
///
/// `data` must be valid for reads of `len` bytes; `options` NULL or pointing
/// to a `tp_decode_options`; `dst` must point to a `tp_image_mut` whose plane
/// is valid for writes of its `len`; `info` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_jpeg_decode(
    data: *const u8,
    len: usize,
    options: *const tp_decode_options,
    dst: *const tp_image_mut,
    info: *mut tp_jpeg_info,
) -> tp_result {
    // SAFETY: forwarded; the caller guarantees the pointers.
    unsafe {
        decode(data, len, options, dst, info, |o, bytes, view| {
            JpegDecoder::new(o).decode_into(bytes, view).map(Into::into)
        })
    }
}

/// Reads the headers of a JPEG, PNG or WebP file (the format is found from
/// the bytes): format, the size the decoded image will have with these
/// options, without decoding. Other formats give
/// `TP_RESULT_UNSUPPORTED_IMAGE_FORMAT`, whose message names them.
///
/// # Safety
///
/// `data` must be valid for reads of `len` bytes; `options` NULL or pointing
/// to a `tp_decode_options`; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_image_read_info(
    data: *const u8,
    len: usize,
    options: *const tp_decode_options,
    out: *mut tp_image_info,
) -> tp_result {
    // SAFETY: forwarded; the caller guarantees the pointers.
    unsafe {
        read_info(data, len, options, out, |o, bytes| {
            ImageDecoder::new(o).read_info(bytes).map(Into::into)
        })
    }
}

/// Decodes a JPEG, PNG or WebP file into `dst`, whose format must be the
/// options' format and whose size must be the one `tp_image_read_info`
/// reports; the pixels are Pillow's `Image.open(f).convert(mode)`. `*info`
/// (may be NULL) receives the headers.
///
/// # Safety
///
/// As for `tp_jpeg_decode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_image_decode(
    data: *const u8,
    len: usize,
    options: *const tp_decode_options,
    dst: *const tp_image_mut,
    info: *mut tp_image_info,
) -> tp_result {
    // SAFETY: forwarded; the caller guarantees the pointers.
    unsafe {
        decode(data, len, options, dst, info, |o, bytes, view| {
            ImageDecoder::new(o)
                .decode_into(bytes, view)
                .map(Into::into)
        })
    }
}

/// Both images of a `src` to `dst` op, checked: `dst`'s planes overlap
/// neither each other, `src`'s planes nor `read`.
///
/// # Safety
///
/// `src` and `dst` NULL or valid images whose planes are valid for their
/// `len` (reads for `src`, writes for `dst`) for `'a`.
unsafe fn images<'a>(
    src: *const tp_image,
    dst: *const tp_image_mut,
    read: &[Span],
) -> Result<(ImageView<'a>, ImageViewMut<'a>)> {
    // SAFETY: the caller guarantees the images.
    let (src, dst) = unsafe { (args::required(src, "src")?, args::required(dst, "dst")?) };
    // SAFETY: as above.
    let (src, mut spans) = unsafe { types::view(src, "src") }?;
    for s in read {
        spans.push(*s);
    }
    // SAFETY: as above; `view_mut` checks the overlaps.
    let dst = unsafe { types::view_mut(dst, "dst", spans.as_slice()) }?;
    Ok((src, dst))
}

/// Converts `src` (any format, YUV included) into `dst`'s packed format
/// (GRAY8, RGB8, BGR8, RGBA8, BGRA8) at the same size. `yuv_range` (a
/// `tp_yuv_range`) matters only for YUV sources.
///
/// # Safety
///
/// `src` must point to a `tp_image` whose used planes are valid for reads of
/// their `len`; `dst` to a `tp_image_mut` whose used planes are valid for
/// writes of theirs. They must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_convert_color(
    src: *const tp_image,
    dst: *const tp_image_mut,
    yuv_range: u32,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the images.
        let (s, mut d) = unsafe { images(src, dst, &[]) }?;
        let range = lookup(&YUV_RANGES, yuv_range, "yuv_range")?;
        Ok(tensorprep::color::convert_color(&s, &mut d, range)?)
    })
}

/// Resizes `src` to `dst`'s size (same packed format) with a `tp_resample`
/// method: Pillow's filters are bit-exact with `Image.resize` (antialiased
/// when shrinking), OpenCV's with `cv::resize`.
///
/// # Safety
///
/// As for `tp_convert_color`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_resize(
    src: *const tp_image,
    dst: *const tp_image_mut,
    resample: u32,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the images.
        let (s, mut d) = unsafe { images(src, dst, &[]) }?;
        let resample = lookup(&RESAMPLES, resample, "resample")?;
        Ok(tensorprep::resize::resize(&s, &mut d, resample)?)
    })
}

/// Resizes the float32 image `src` to `dst`'s size (same channel count)
/// with a `tp_resample` method: the Pillow filters reproduce Pillow's
/// resize of `F` images channel by channel, `TP_RESAMPLE_TORCH_FLOAT_*`
/// PyTorch's antialiased `interpolate` of float tensors; other methods are
/// refused (`TP_RESULT_INVALID_PARAMETER`). One-shot: it allocates its tables
/// and scratch each call. Returns `TP_RESULT_NOT_BUILT` without the
/// `resize-float` feature.
///
/// # Safety
///
/// `src->data` must be valid for reads of `src->len` floats and
/// `dst->data` for writes of `dst->len` floats; they must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_resize_f32(
    src: *const tp_float_image,
    dst: *const tp_float_image_mut,
    resample: u32,
) -> tp_result {
    #[cfg(not(feature = "resize-float"))]
    return boundary(|| {
        let _ = (src, dst, resample);
        Err(tensorprep::Error::NotBuilt {
            what: "float32 resizing",
            feature: "resize-float",
        }
        .into())
    });
    #[cfg(feature = "resize-float")]
    boundary(|| {
        // SAFETY: the caller guarantees the images.
        let (s, d) = unsafe { (args::required(src, "src")?, args::required(dst, "dst")?) };
        let resample = lookup(&RESAMPLES, resample, "resample")?;
        let tight = |width: u32, channels: u32, stride: usize| match stride {
            0 => width as usize * channels as usize,
            given => given,
        };
        let read = Span::raw(s.data, s.len, "src");
        args::no_overlap(&[Span::raw(d.data.cast_const(), d.len, "dst")], &[read])?;
        // SAFETY: the caller guarantees `len` readable floats at `data`.
        let data = unsafe { args::slice(s.data, s.len, "src.data") }?;
        let view = FloatView::with_stride(
            data,
            s.width,
            s.height,
            s.channels as usize,
            tight(s.width, s.channels, s.stride),
        )?;
        // SAFETY: the caller guarantees `len` writable floats at `data`,
        // which overlap nothing read (checked above).
        let out = unsafe { args::slice_mut(d.data, d.len, "dst.data") }?;
        let mut out = FloatViewMut::with_stride(
            out,
            d.width,
            d.height,
            d.channels as usize,
            tight(d.width, d.channels, d.stride),
        )?;
        Ok(tensorprep::resize::resize_f32(&view, &mut out, resample)?)
    })
}

/// Copies the `rect` region of `src` into `dst` (same format, the rect's
/// size). 4:2:0 formats need even coordinates.
///
/// # Safety
///
/// As for `tp_convert_color`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_crop(
    src: *const tp_image,
    rect: tp_rect,
    dst: *const tp_image_mut,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the images.
        let (s, mut d) = unsafe { images(src, dst, &[]) }?;
        let region = s.crop(Rect::from(rect))?;
        Ok(geometry::transform(&region, &mut d, Transform::IDENTITY)?)
    })
}

/// Copies `src` onto the larger `dst` (same packed format) at a
/// `tp_placement`, filling the rest with `fill` (one byte per channel of the
/// format: `fill_len` must be its bytes per pixel). `*placed` (may be NULL)
/// receives where the image went. With `tp_resize` first, this is a letterbox.
///
/// # Safety
///
/// As for `tp_convert_color`; `fill` must be valid for reads of `fill_len`
/// bytes and `placed` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_pad(
    src: *const tp_image,
    dst: *const tp_image_mut,
    placement: u32,
    fill: *const u8,
    fill_len: usize,
    placed: *mut tp_rect,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the pointers.
        let (fill, placed) = unsafe {
            (
                args::bytes(fill, fill_len, "fill")?,
                args::optional_out(placed, "placed")?,
            )
        };
        // SAFETY: the caller guarantees the images.
        let (s, mut d) = unsafe { images(src, dst, &[Span::of(fill, "fill")]) }?;
        let placement = lookup(&PLACEMENTS, placement, "placement")?;
        let bpp = s.format().bytes_per_pixel().unwrap_or(0);
        if fill.len() != bpp {
            return Err(Failure::invalid(format!(
                "`fill` has {} bytes; the format has {bpp} per pixel",
                fill.len()
            )));
        }
        let rect = geometry::pad(&s, &mut d, placement, fill)?;
        if let Some(p) = placed {
            p.write(rect.into());
        }
        Ok(())
    })
}

/// Mirrors `src` into `dst` (same format and size) along a `tp_flip_axis`.
///
/// # Safety
///
/// As for `tp_convert_color`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_flip(
    src: *const tp_image,
    dst: *const tp_image_mut,
    axis: u32,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the images.
        let (s, mut d) = unsafe { images(src, dst, &[]) }?;
        Ok(geometry::flip(&s, &mut d, lookup(&FLIPS, axis, "axis")?)?)
    })
}

/// Rotates `src` clockwise by a `tp_rotation` into `dst` (same format; sides
/// swapped for quarter turns).
///
/// # Safety
///
/// As for `tp_convert_color`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_rotate(
    src: *const tp_image,
    dst: *const tp_image_mut,
    rotation: u32,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the images.
        let (s, mut d) = unsafe { images(src, dst, &[]) }?;
        let rotation = lookup(&ROTATIONS, rotation, "rotation")?;
        Ok(geometry::rotate(&s, &mut d, rotation)?)
    })
}

/// What `tp_finish` does: `(v / divisor - mean[c]) / std[c]` per channel,
/// then layout, channel order, element type and quantization.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_finish_spec {
    /// Mean per output channel (R, G, B order; index 0 for gray).
    pub mean: [f32; 3],
    /// Standard deviation per output channel; finite and non-zero.
    pub std: [f32; 3],
    /// 255 for values in 0-1 (torchvision), 1 for values in 0-255.
    pub divisor: f32,
    /// A `tp_layout`.
    pub layout: u32,
    /// A `tp_channel_order`.
    pub channel_order: u32,
    /// A `tp_dtype`.
    pub dtype: u32,
    /// Quantization scale for U8/I8 (1 with zero point 0 stores the values
    /// clamped); ignored for float types.
    pub quant_scale: f32,
    /// Quantization zero point for U8/I8.
    pub quant_zero_point: i32,
}

/// Normalizes `src` (GRAY8, RGB8, BGR8, RGBA8 or BGRA8) into a tensor:
/// torchvision's `ToTensor()` + `Normalize()`, HWC to CHW, and the cast or
/// quantization, in one pass. `out_bytes` must be at least
/// `channels * height * width` elements of the dtype; `out` must be aligned
/// for it.
///
/// # Safety
///
/// `src` must point to a `tp_image` whose plane is valid for reads of its
/// `len`; `spec` to a `tp_finish_spec`; `out` valid for writes of
/// `out_bytes` bytes, not overlapping `src`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_finish(
    src: *const tp_image,
    spec: *const tp_finish_spec,
    out: *mut c_void,
    out_bytes: usize,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the pointers.
        let (src, spec) = unsafe { (args::required(src, "src")?, args::required(spec, "spec")?) };
        // SAFETY: as above.
        let (view, read) = unsafe { types::view(src, "src") }?;
        let spec = FinishSpec {
            normalize: Normalize {
                mean: spec.mean,
                std: spec.std,
                divisor: spec.divisor,
                std_reciprocal: false,
                second_std: [1.0; 3],
            },
            order: lookup(&CHANNEL_ORDERS, spec.channel_order, "spec.channel_order")?,
            layout: lookup(&LAYOUTS, spec.layout, "spec.layout")?,
            dtype: lookup(&DTYPES, spec.dtype, "spec.dtype")?,
            quantization: Quantization {
                scale: spec.quant_scale,
                zero_point: spec.quant_zero_point,
            },
        };
        let finisher = Finisher::new(&spec)?;
        let elements = finisher.output_len(view.width(), view.height());
        // SAFETY: the caller guarantees `out`; overlap with `src` is checked.
        let tensor =
            unsafe { crate::plan::tensor(out, out_bytes, spec.dtype, elements, read.as_slice()) }?;
        Ok(finisher.run(&view, tensor)?)
    })
}
