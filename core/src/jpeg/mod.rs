//! JPEG decoding: headers first, then into a caller buffer.
//!
//! Two backends, chosen per decoder at run time ([`Backend`]): `zune-jpeg`
//! (pure Rust, the default and the only one without `std`) and, with the
//! `turbojpeg` feature, libjpeg-turbo, the decoder inside Pillow's wheels, whose
//! pixels are Pillow's bit for bit and which can decode at 1/2, 1/4 or 1/8 size
//! in the DCT domain ([`Scale`]).
//!
//! - **Strict by default**: a truncated or corrupt file is an error. (`zune-jpeg`
//!   on its own fills what it could not decode with gray and reports success.)
//!   [`DecodeOptions::strict`]` = false` restores that lenient behaviour.
//! - **Limits before allocation**: the header's width x height is checked
//!   against [`Limits`] before any pixel buffer exists.
//! - **EXIF orientation** is applied on request, as Pillow's `ImageOps.exif_transpose`.
//! - Baseline, progressive, grayscale and Adobe CMYK/YCCK files; output Gray8,
//!   RGB, BGR, RGBA or BGRA. Gray output from a colour file uses Pillow's
//!   `convert("L")` luma; colour output from a gray file repeats the value.
//!
//! ```
//! use tensorprep::jpeg::{DecodeOptions, JpegDecoder};
//! use tensorprep::{Image, PixelFormat};
//!
//! let bytes = include_bytes!("../../../tests/fixtures/sample.jpg");
//! let mut decoder = JpegDecoder::new(DecodeOptions::default());
//! let info = decoder.read_info(bytes)?;           // headers only
//! let mut image = Image::new(PixelFormat::Rgb8, info.width, info.height)?;
//! decoder.decode_into(bytes, &mut image.view_mut())?; // no pixel allocation of ours
//! assert_eq!((info.width, info.height), (451, 300));
//!
//! // A truncated file is an error, not a gray-filled image.
//! assert!(decoder.decode(&bytes[..bytes.len() / 2]).is_err());
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod exif;
#[cfg(feature = "turbojpeg")]
mod turbo;

use alloc::vec::Vec;

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder as Zune;
use zune_jpeg::errors::DecodeErrors;

use crate::color::{YuvRange, convert_color};
use crate::geometry::{Transform, transform};
use crate::{Error, Image, ImageView, ImageViewMut, JpegErrorKind, Limits, PixelFormat, Result};

/// Whether to apply the EXIF `Orientation` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Orientation {
    /// Return pixels as stored (Pillow's `Image.open` + `convert`, torchvision's loader).
    #[default]
    Ignore,
    /// Return the upright image (Pillow's `ImageOps.exif_transpose`).
    Apply,
}

/// Which decoder produces the pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// `zune-jpeg`: pure Rust, `no_std`. Identical to Pillow on 4:4:4 and gray
    /// files within 1-2 levels; on 4:2:0 files its chroma upsampling rounds twice
    /// (mean difference up to about 0.3 level).
    #[default]
    Zune,
    /// libjpeg-turbo (feature `turbojpeg`): the decoder Pillow ships, so the
    /// pixels are Pillow's exactly; supports [`Scale`]d decoding.
    LibjpegTurbo,
}

impl Backend {
    /// Every backend, whether built in or not.
    pub const ALL: [Backend; 2] = [Backend::Zune, Backend::LibjpegTurbo];

    /// The backends this build includes.
    ///
    /// ```
    /// use tensorprep::jpeg::Backend;
    /// assert_eq!(Backend::available().next(), Some(Backend::Zune));
    /// ```
    pub fn available() -> impl DoubleEndedIterator<Item = Backend> {
        Backend::ALL.into_iter().filter(|b| b.is_available())
    }

    /// Whether this build includes the backend.
    pub fn is_available(self) -> bool {
        match self {
            Backend::Zune => true,
            Backend::LibjpegTurbo => cfg!(feature = "turbojpeg"),
        }
    }
}

/// Decode at a fraction of the stored size, in the DCT domain (libjpeg-turbo only).
///
/// Not Pillow-exact: it is Pillow's `draft()` mode, a fast path for when the
/// target is much smaller than the photo. Sides round up (`ceil(side / n)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Scale {
    /// Full size (the default).
    #[default]
    Full,
    /// 1/2.
    Half,
    /// 1/4.
    Quarter,
    /// 1/8.
    Eighth,
}

impl Scale {
    /// The `n` of 1/n.
    pub fn denominator(self) -> u32 {
        match self {
            Scale::Full => 1,
            Scale::Half => 2,
            Scale::Quarter => 4,
            Scale::Eighth => 8,
        }
    }

    /// A side length after scaling, as libjpeg computes it: `ceil(side / n)`.
    pub fn apply(self, side: u32) -> u32 {
        side.div_ceil(self.denominator())
    }

    /// The smallest scale whose output stays at least twice `target` on both
    /// sides (the rule of the pipeline's fast mode), `Full` if none.
    ///
    /// ```
    /// use tensorprep::jpeg::Scale;
    /// assert_eq!(Scale::for_target((4000, 3000), (224, 224)), Scale::Quarter);
    /// assert_eq!(Scale::for_target((640, 480), (224, 224)), Scale::Full);
    /// ```
    pub fn for_target((w, h): (u32, u32), (tw, th): (u32, u32)) -> Scale {
        [Scale::Eighth, Scale::Quarter, Scale::Half]
            .into_iter()
            .find(|s| {
                u64::from(s.apply(w)) >= 2 * u64::from(tw)
                    && u64::from(s.apply(h)) >= 2 * u64::from(th)
            })
            .unwrap_or(Scale::Full)
    }
}

/// Options of a [`JpegDecoder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Output format: Gray8, Rgb8, Bgr8, Rgba8 or Bgra8.
    pub format: PixelFormat,
    /// EXIF orientation handling.
    pub orientation: Orientation,
    /// Reject truncated or corrupt data (default). When false, damaged parts decode as gray.
    pub strict: bool,
    /// Caps on pixels and on allocations.
    pub limits: Limits,
    /// Which decoder to run.
    pub backend: Backend,
    /// Reduced-size decoding ([`Backend::LibjpegTurbo`] only).
    pub scale: Scale,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            format: PixelFormat::Rgb8,
            orientation: Orientation::Ignore,
            strict: true,
            limits: Limits::DEFAULT,
            backend: Backend::Zune,
            scale: Scale::Full,
        }
    }
}

/// What the headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JpegInfo {
    /// Width of the output (after scale and orientation, if applied).
    pub width: u32,
    /// Height of the output (after scale and orientation, if applied).
    pub height: u32,
    /// Width as stored in the file.
    pub stored_width: u32,
    /// Height as stored in the file.
    pub stored_height: u32,
    /// Number of colour components in the file (1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK).
    pub components: u8,
    /// The EXIF orientation tag (1 when absent or invalid).
    pub exif_orientation: u16,
}

/// A reusable decoder: options plus scratch buffers kept between images.
#[derive(Clone, Debug, Default)]
pub struct JpegDecoder {
    options: DecodeOptions,
    scratch: Vec<u8>,
    scratch2: Vec<u8>,
    #[cfg(feature = "turbojpeg")]
    turbo: turbo::Turbo,
}

/// Largest side a JPEG can declare.
const JPEG_MAX_SIDE: usize = 65_535;

fn map_error(e: &DecodeErrors) -> Error {
    let kind = match e {
        DecodeErrors::ExhaustedData | DecodeErrors::IoErrors(_) => JpegErrorKind::Truncated,
        DecodeErrors::FormatStatic(msg) if msg.contains("end of buffer") => {
            JpegErrorKind::Truncated
        }
        DecodeErrors::Unsupported(_) => JpegErrorKind::Unsupported,
        _ => JpegErrorKind::Corrupt,
    };
    Error::Jpeg { kind }
}

/// Pixel format `zune-jpeg` writes for a colour space we ask it for.
fn zune_space(format: PixelFormat) -> ColorSpace {
    match format {
        PixelFormat::Gray8 => ColorSpace::Luma,
        PixelFormat::Bgr8 => ColorSpace::BGR,
        PixelFormat::Rgba8 => ColorSpace::RGBA,
        PixelFormat::Bgra8 => ColorSpace::BGRA,
        _ => ColorSpace::RGB,
    }
}

impl JpegDecoder {
    /// A decoder with `options`.
    pub fn new(options: DecodeOptions) -> Self {
        JpegDecoder {
            options,
            scratch: Vec::new(),
            scratch2: Vec::new(),
            #[cfg(feature = "turbojpeg")]
            turbo: turbo::Turbo::default(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &DecodeOptions {
        &self.options
    }

    fn zune<'b>(&self, bytes: &'b [u8], space: ColorSpace) -> Zune<ZCursor<&'b [u8]>> {
        let side = (Limits::MAX_DIMENSION as usize).min(JPEG_MAX_SIDE);
        let opts = DecoderOptions::new_safe()
            .set_strict_mode(self.options.strict)
            .set_max_width(side)
            .set_max_height(side)
            .jpeg_set_out_colorspace(space);
        Zune::new_with_options(ZCursor::new(bytes), opts)
    }

    fn check_format(&self) -> Result<()> {
        if !self.options.backend.is_available() {
            return Err(Error::InvalidParameter {
                name: "JPEG backend: libjpeg-turbo needs the `turbojpeg` feature",
            });
        }
        if self.options.scale != Scale::Full && self.options.backend != Backend::LibjpegTurbo {
            return Err(Error::InvalidParameter {
                name: "JPEG scale: reduced-size decoding needs the libjpeg-turbo backend",
            });
        }
        match self.options.format {
            PixelFormat::Gray8
            | PixelFormat::Rgb8
            | PixelFormat::Bgr8
            | PixelFormat::Rgba8
            | PixelFormat::Bgra8 => Ok(()),
            format => Err(Error::UnsupportedFormat {
                op: "JPEG decode output",
                format,
            }),
        }
    }

    /// Parses the headers only: size, components, orientation. Checks the limits.
    pub fn read_info(&self, bytes: &[u8]) -> Result<JpegInfo> {
        self.check_format()?;
        #[cfg(feature = "turbojpeg")]
        if self.options.backend == Backend::LibjpegTurbo {
            // A short-lived instance: `&self` cannot use the decoder's own.
            return self.info_from_turbo(&mut turbo::Turbo::default(), bytes);
        }
        let mut d = self.zune(bytes, ColorSpace::RGB);
        d.decode_headers().map_err(|e| map_error(&e))?;
        let (w, h) = d.dimensions().ok_or(Error::Jpeg {
            kind: JpegErrorKind::Corrupt,
        })?;
        let components = d.info().map_or(0, |i| i.components);
        let exif_orientation = d.exif().and_then(|e| exif::orientation(e));
        self.info(w as u32, h as u32, components, exif_orientation)
    }

    /// Headers through libjpeg-turbo (no Rust-heap allocation).
    #[cfg(feature = "turbojpeg")]
    fn info_from_turbo(&self, turbo: &mut turbo::Turbo, bytes: &[u8]) -> Result<JpegInfo> {
        let (w, h, components) = turbo.header(bytes)?;
        let exif_orientation = exif::find_in_jpeg(bytes).and_then(exif::orientation);
        self.info(w, h, components, exif_orientation)
    }

    fn info(
        &self,
        w: u32,
        h: u32,
        components: u8,
        exif_orientation: Option<u16>,
    ) -> Result<JpegInfo> {
        self.options
            .limits
            .check_pixels(u64::from(w), u64::from(h))?;
        let exif_orientation = exif_orientation
            .filter(|v| (1..=8).contains(v))
            .unwrap_or(1);
        let t = self.transform_for(exif_orientation);
        let scale = self.options.scale;
        let (width, height) = t.output_size(scale.apply(w), scale.apply(h));
        Ok(JpegInfo {
            width,
            height,
            stored_width: w,
            stored_height: h,
            components,
            exif_orientation,
        })
    }

    fn transform_for(&self, exif_orientation: u16) -> Transform {
        match self.options.orientation {
            Orientation::Apply => Transform::from_exif(exif_orientation).unwrap_or_default(),
            Orientation::Ignore => Transform::IDENTITY,
        }
    }

    /// Bytes of the decoded image in the output format, without row padding.
    pub fn output_size(&self, info: &JpegInfo) -> usize {
        let bpp = self.options.format.bytes_per_pixel().unwrap_or(0);
        info.width as usize * info.height as usize * bpp
    }

    /// Decodes into `dst`, whose format must be the options' format and whose size must be
    /// [`JpegInfo`]'s `width` x `height`. Any row stride works.
    pub fn decode_into(&mut self, bytes: &[u8], dst: &mut ImageViewMut<'_>) -> Result<JpegInfo> {
        #[cfg(feature = "turbojpeg")]
        let info = if self.options.backend == Backend::LibjpegTurbo {
            self.check_format()?;
            let mut turbo = core::mem::take(&mut self.turbo);
            let info = self.info_from_turbo(&mut turbo, bytes);
            self.turbo = turbo;
            info?
        } else {
            self.read_info(bytes)?
        };
        #[cfg(not(feature = "turbojpeg"))]
        let info = self.read_info(bytes)?;
        let target = self.options.format;
        if dst.format() != target {
            return Err(Error::FormatMismatch {
                expected: target,
                found: dst.format(),
            });
        }
        if (dst.width(), dst.height()) != (info.width, info.height) {
            return Err(Error::SizeMismatch {
                expected: (info.width, info.height),
                found: (dst.width(), dst.height()),
            });
        }
        // What zune-jpeg writes: gray files stay gray (expanded by us, like Pillow's
        // L -> RGB), gray output from colour files goes through RGB and Pillow's luma.
        let decoded = match (info.components, target) {
            (1, _) => PixelFormat::Gray8,
            (_, PixelFormat::Gray8) => PixelFormat::Rgb8,
            (_, f) => f,
        };
        let t = self.transform_for(info.exif_orientation);
        let scale = self.options.scale;
        let (sw, sh) = (
            scale.apply(info.stored_width),
            scale.apply(info.stored_height),
        );
        let bpp = decoded.bytes_per_pixel().unwrap_or(3);
        let tight = sw as usize * bpp;

        if decoded == target && t == Transform::IDENTITY && dst.stride(0) == tight {
            let out = dst.plane_data_mut(0);
            let (have, len) = (out.len(), tight * sh as usize);
            let out = out.get_mut(..len).ok_or(Error::BufferTooSmall {
                plane: 0,
                len: have,
                needed: len,
            })?;
            return self
                .run_backend(bytes, &info, decoded, out, tight)
                .map(|()| info);
        }

        let bytes_needed = (tight as u64) * u64::from(sh);
        let len = self.options.limits.check_alloc(bytes_needed)?;
        let mut scratch = core::mem::take(&mut self.scratch);
        scratch.resize(len, 0);
        let result = self
            .run_backend(bytes, &info, decoded, &mut scratch, tight)
            .and_then(|()| {
                let src = ImageView::new(decoded, sw, sh, &scratch)?;
                if decoded == target {
                    return transform(&src, dst, t);
                }
                if t == Transform::IDENTITY {
                    return convert_color(&src, dst, YuvRange::Full);
                }
                let mut converted = core::mem::take(&mut self.scratch2);
                let n = self.options.limits.check_alloc(
                    u64::from(sw) * u64::from(sh) * target.bytes_per_pixel().unwrap_or(4) as u64,
                )?;
                converted.resize(n, 0);
                let r = ImageViewMut::new(target, sw, sh, &mut converted).and_then(|mut c| {
                    convert_color(&src, &mut c, YuvRange::Full)?;
                    transform(&c.as_view(), dst, t)
                });
                self.scratch2 = converted;
                r
            });
        self.scratch = scratch;
        result.map(|()| info)
    }

    /// Decodes the stored (unrotated, scaled) image as `format` into `out`, rows `stride` apart.
    #[cfg_attr(not(feature = "turbojpeg"), allow(unused_variables))]
    fn run_backend(
        &mut self,
        bytes: &[u8],
        info: &JpegInfo,
        format: PixelFormat,
        out: &mut [u8],
        stride: usize,
    ) -> Result<()> {
        match self.options.backend {
            #[cfg(feature = "turbojpeg")]
            Backend::LibjpegTurbo => {
                let scale = self.options.scale;
                let size = (
                    scale.apply(info.stored_width),
                    scale.apply(info.stored_height),
                );
                self.turbo.decode(
                    bytes,
                    format,
                    scale,
                    self.options.strict,
                    &self.options.limits,
                    size,
                    out,
                    stride,
                    &mut self.scratch2,
                )
            }
            _ => self.run_zune(bytes, format, out),
        }
    }

    fn run_zune(&self, bytes: &[u8], format: PixelFormat, out: &mut [u8]) -> Result<()> {
        let mut d = self.zune(bytes, zune_space(format));
        d.decode_headers().map_err(|e| map_error(&e))?;
        if d.output_buffer_size() != Some(out.len()) {
            return Err(Error::Jpeg {
                kind: JpegErrorKind::UnsupportedColorSpace,
            });
        }
        d.decode_into(out).map_err(|e| map_error(&e))
    }

    /// Decodes into a new [`Image`].
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Image> {
        let info = self.read_info(bytes)?;
        let mut img = Image::new_with_limits(
            self.options.format,
            info.width,
            info.height,
            &self.options.limits,
        )?;
        self.decode_into(bytes, &mut img.view_mut())?;
        Ok(img)
    }
}

/// One-shot decode with `options` (see [`JpegDecoder`] to reuse scratch buffers).
pub fn decode_jpeg(bytes: &[u8], options: &DecodeOptions) -> Result<Image> {
    JpegDecoder::new(*options).decode(bytes)
}
