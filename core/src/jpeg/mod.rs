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

#[cfg(feature = "alloc")]
mod decoder;
// Issue 37's decoder, not yet a backend: built and tested on its own (its
// tests against Pillow need `png` and `std`; without them nothing calls it).
#[cfg(feature = "alloc")]
#[allow(dead_code)]
mod exact;
#[cfg(feature = "alloc")]
pub(crate) mod exif;
#[cfg(feature = "alloc")]
mod markers;
#[cfg(feature = "turbojpeg")]
mod progressive;
#[cfg(feature = "turbojpeg")]
mod turbo;

#[cfg(feature = "alloc")]
pub use decoder::{JpegDecoder, decode_jpeg};

use crate::{Limits, PixelFormat, Rect};

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

    /// The decoder's name ("zune-jpeg", "libjpeg-turbo").
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Zune => "zune-jpeg",
            Backend::LibjpegTurbo => "libjpeg-turbo",
        }
    }

    /// Whether this build includes the backend.
    pub fn is_available(self) -> bool {
        match self {
            Backend::Zune => true,
            Backend::LibjpegTurbo => cfg!(feature = "turbojpeg"),
        }
    }
}

/// A JPEG coding feature that not every decoder has ([`crate::Error::JpegFeature`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JpegFeature {
    /// Arithmetic entropy coding (SOF9-SOF11).
    ArithmeticCoding,
    /// The lossless process (SOF3).
    Lossless,
    /// Hierarchical (differential) coding (SOF5-SOF7, SOF13-SOF15).
    Hierarchical,
    /// Samples of more than 8 bits (12-bit JPEG).
    Precision(u8),
    /// Three components stored as RGB (Adobe APP14 transform 0), not YCbCr.
    AdobeRgb,
}

impl JpegFeature {
    /// The feature a frame header (SOF marker and sample precision) needs, if
    /// any beyond the 8-bit Huffman-coded baseline, extended and progressive processes.
    #[cfg(feature = "alloc")]
    pub(crate) fn of_frame(frame: &markers::Frame, jpeg: &[u8]) -> Option<JpegFeature> {
        if frame.components == 3 && markers::adobe_transform(jpeg) == Some(0) {
            return Some(JpegFeature::AdobeRgb);
        }
        match frame.marker {
            0xC5..=0xC7 | 0xCD..=0xCF => Some(JpegFeature::Hierarchical),
            0xC3 => Some(JpegFeature::Lossless),
            _ if frame.precision > 8 => Some(JpegFeature::Precision(frame.precision)),
            0xC9..=0xCB => Some(JpegFeature::ArithmeticCoding),
            _ => None,
        }
    }

    /// The backend that decodes the feature into 8-bit pixels, if one does.
    pub const fn decoded_by(self) -> Option<Backend> {
        match self {
            JpegFeature::ArithmeticCoding | JpegFeature::Lossless | JpegFeature::AdobeRgb => {
                Some(Backend::LibjpegTurbo)
            }
            JpegFeature::Hierarchical | JpegFeature::Precision(_) => None,
        }
    }
}

impl core::fmt::Display for JpegFeature {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            JpegFeature::ArithmeticCoding => f.write_str("arithmetic coding"),
            JpegFeature::Lossless => f.write_str("lossless coding (SOF3)"),
            JpegFeature::Hierarchical => f.write_str("hierarchical coding"),
            JpegFeature::Precision(bits) => write!(f, "{bits}-bit samples"),
            JpegFeature::AdobeRgb => f.write_str("RGB samples (Adobe APP14 transform 0)"),
        }
    }
}

/// The most scans a JPEG may have (the start-of-scan markers in the file).
/// Progressive encoders write about 10 (libjpeg's default script), mozjpeg
/// up to about 20; each scan can cost a pass over every block of the image,
/// so hundreds of them make a small file a CPU bomb.
pub const MAX_SCANS: u32 = 256;

/// Start-of-scan markers in `jpeg`: `FF DA` appears nowhere else (entropy-coded
/// data escapes `FF` as `FF 00`).
#[cfg(feature = "alloc")]
pub(crate) fn count_scans(jpeg: &[u8]) -> u32 {
    jpeg.windows(2).filter(|w| w == &[0xFF, 0xDA]).count() as u32
}

/// Most pixels a JPEG of `data_bytes` bytes with the frame header `frame`
/// can describe, from the fewest bits its coding process spends on each 8x8
/// block of each component (an image has `blocks_per_mcu / mcu_blocks`
/// blocks per 64 pixels: 3 for 4:4:4, 1.5 for 4:2:0, 1 for gray):
///
/// - sequential Huffman (SOF0, SOF1): 2 bits, a DC code and an end-of-block
///   code (or a coefficient's), each at least one bit long;
/// - progressive Huffman (SOF2): 1 bit, the DC code of the first DC scan
///   (the AC scans can cover thousands of empty blocks with one end-of-band
///   run);
/// - lossless Huffman (SOF3): 1 bit (each sample's code costs at least one,
///   64 per block);
/// - arithmetic coding, whose codes can cost a small fraction of a bit:
///   1 bit per block of one plane, a heuristic no real file comes near.
///
/// The count ignores the rounding of each component's size up to whole
/// blocks, so it only errs towards allowing more. Photos spend 7 to 150 bits
/// per block, a flat image as little as the minimum (Pillow's optimized
/// baseline 4:2:0 file of a gray image: 2.03, passing on its headers), while
/// a small file cannot claim a gigapixel.
#[cfg(feature = "alloc")]
pub(crate) fn max_pixels_for(data_bytes: usize, frame: &markers::Frame) -> u64 {
    let (bits_per_block, blocks_per_mcu, mcu_blocks): (u64, u32, u32) = match frame.marker {
        0xC0 | 0xC1 => (2, frame.blocks_per_mcu, frame.mcu_blocks),
        0xC2 | 0xC3 => (1, frame.blocks_per_mcu, frame.mcu_blocks),
        _ => (1, 1, 1),
    };
    // bits / (bits per block) blocks, of 64 * mcu_blocks / blocks_per_mcu pixels each.
    let bits = (data_bytes as u64).saturating_mul(8);
    let per = bits_per_block * u64::from(blocks_per_mcu.max(1));
    bits.saturating_mul(64 * u64::from(mcu_blocks.max(1))) / per
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
    pub fn for_target(size: (u32, u32), target: (u32, u32)) -> Scale {
        Scale::keeping(size, target, 2)
    }

    /// The smallest scale whose output stays at least `gap` times `target`
    /// on both sides, `Full` if none. A gap of 1 is Pillow's
    /// `draft(mode, target)`; 2 its `thumbnail()`.
    ///
    /// ```
    /// use tensorprep::jpeg::Scale;
    /// assert_eq!(Scale::keeping((4000, 3000), (455, 256), 1), Scale::Eighth);
    /// assert_eq!(Scale::keeping((4000, 3000), (455, 256), 2), Scale::Quarter);
    /// ```
    pub fn keeping((w, h): (u32, u32), (tw, th): (u32, u32), gap: u32) -> Scale {
        [Scale::Eighth, Scale::Quarter, Scale::Half]
            .into_iter()
            .find(|s| {
                u64::from(s.apply(w)) >= u64::from(gap) * u64::from(tw)
                    && u64::from(s.apply(h)) >= u64::from(gap) * u64::from(th)
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
    /// Width in pixels of the file's MCU (8, 16 or 32) as libjpeg-turbo reports
    /// it; region decoding starts on a multiple of it. 0 when unknown (the
    /// `zune-jpeg` backend does not report it).
    pub mcu_width: u32,
}

impl JpegInfo {
    /// The region to pass to [`JpegDecoder::decode_region_into`] so that the
    /// pixels of `wanted` come out exactly as in the full decode at `scale`
    /// (coordinates of the stored image scaled by `scale`, orientation not
    /// applied): the left edge moved down to an MCU boundary, then one more MCU
    /// on each side, clamped to the image — chroma upsampling reads a
    /// neighbouring column that a region starting or ending on an MCU boundary
    /// would not decode. `None` when the MCU width is unknown.
    ///
    /// ```
    /// # use tensorprep::jpeg::{JpegInfo, Scale};
    /// # use tensorprep::Rect;
    /// let info = JpegInfo { width: 640, height: 480, stored_width: 640, stored_height: 480,
    ///     components: 3, exif_orientation: 1, mcu_width: 16 };
    /// let r = info.region_covering(Rect::new(100, 50, 200, 100), Scale::Full);
    /// assert_eq!(r, Some(Rect::new(80, 50, 236, 100)));
    /// ```
    pub fn region_covering(&self, wanted: Rect, scale: Scale) -> Option<Rect> {
        if self.mcu_width == 0 {
            return None;
        }
        // TurboJPEG's TJSCALED: the scaled MCU width, rounded up.
        let mcu = self.mcu_width.div_ceil(scale.denominator());
        let width = scale.apply(self.stored_width);
        let x0 = (wanted.x - wanted.x % mcu).saturating_sub(mcu);
        let x1 = wanted
            .x
            .saturating_add(wanted.width)
            .saturating_add(mcu)
            .min(width);
        (x1 > x0).then(|| Rect::new(x0, wanted.y, x1 - x0, wanted.height))
    }
}
