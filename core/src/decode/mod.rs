//! Decoding any supported image file: the format is found from the bytes,
//! never from a file name, and each format's pixels are Pillow's
//! `Image.open(f).convert(mode)`.
//!
//! - **JPEG** through [`crate::jpeg`] (zune-jpeg, or libjpeg-turbo with the
//!   `turbojpeg` feature: Pillow's own decoder, region and DCT-scaled decoding).
//! - **PNG** (feature `png`, `no_std` + `alloc`): every colour type and bit
//!   depth, palettes with `tRNS`, Adam7; 16-bit samples and palettes become
//!   8-bit as Pillow makes them (see [`ImageDecoder`]). Bit-exact with Pillow.
//! - **WebP** (feature `webp`, needs `std`): lossy, lossless, alpha, the
//!   first frame of an animation. Lossless is exact; lossy is within a few
//!   levels of libwebp (docs/ops.md, "Inputs", gives the figure).
//! - Anything else is refused by name: [`crate::Error::UnsupportedImageFormat`]
//!   ("GIF is not supported; this build reads JPEG, PNG, WebP").
//! - **Untrusted files**: the size in the header is checked against
//!   [`crate::Limits`] and against what the file's coded data can possibly describe
//!   ([`crate::Error::ImplausibleSize`]) before any pixel buffer is allocated.
//!
//! ```
//! use tensorprep::decode::{ImageDecoder, ImageFormat};
//! use tensorprep::jpeg::DecodeOptions;
//!
//! let mut decoder = ImageDecoder::new(DecodeOptions::default()); // RGB output
//! for file in ["sample.jpg", "formats/palette8_trns.png", "formats/sample_lossless.webp"] {
//!     let bytes = std::fs::read(format!("../tests/fixtures/{file}")).unwrap();
//!     let info = decoder.read_info(&bytes)?; // headers only
//!     let image = decoder.decode(&bytes)?;
//!     assert_eq!((image.width(), image.height()), (info.width, info.height));
//! }
//! let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;";
//! let err = decoder.decode(gif).unwrap_err();
//! assert!(err.to_string().starts_with("GIF is not supported; this build reads JPEG"));
//! # Ok::<(), tensorprep::Error>(())
//! ```

mod format;
#[cfg(feature = "png")]
mod png;
#[cfg(feature = "webp")]
mod webp;

pub use format::ImageFormat;
pub(crate) use format::SupportedList;

#[cfg(feature = "alloc")]
pub use decoder::{ImageDecoder, ImageInfo, decode};

#[cfg(feature = "alloc")]
mod decoder {
    #[cfg(any(feature = "png", feature = "webp"))]
    use alloc::vec::Vec;

    use super::ImageFormat;
    #[cfg(any(feature = "png", feature = "webp"))]
    use crate::geometry::{Transform, transform};
    use crate::jpeg::{DecodeOptions, JpegDecoder, JpegInfo};
    #[cfg(any(feature = "png", feature = "webp"))]
    use crate::jpeg::{Orientation, Scale};
    use crate::{Error, Image, ImageViewMut, Result};

    /// What a file's headers say.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct ImageInfo {
        /// The format, found from the bytes.
        pub format: ImageFormat,
        /// Width of the output (after JPEG scaling and orientation, if applied).
        pub width: u32,
        /// Height of the output (after JPEG scaling and orientation, if applied).
        pub height: u32,
        /// Width as stored in the file.
        pub stored_width: u32,
        /// Height as stored in the file.
        pub stored_height: u32,
        /// The EXIF orientation tag (1 when absent or invalid). PNG's `eXIf`
        /// and WebP's `EXIF` chunks count, as they do for Pillow's `exif_transpose`.
        pub exif_orientation: u16,
        /// Whether the file carries alpha (an alpha channel, a PNG `tRNS` chunk).
        pub has_alpha: bool,
        /// For JPEG files, what the JPEG headers say (MCU width for region decoding).
        pub jpeg: Option<JpegInfo>,
    }

    /// The channels of pixels as Pillow opens a file (8 bits each).
    #[cfg(any(feature = "png", feature = "webp"))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Opened {
        #[cfg_attr(not(feature = "png"), allow(dead_code))]
        L,
        #[cfg_attr(not(feature = "png"), allow(dead_code))]
        La,
        Rgb,
        Rgba,
    }

    #[cfg(any(feature = "png", feature = "webp"))]
    impl Opened {
        fn channels(self) -> usize {
            match self {
                Opened::L => 1,
                Opened::La => 2,
                Opened::Rgb => 3,
                Opened::Rgba => 4,
            }
        }
    }

    /// A reusable decoder for every supported format: options plus scratch
    /// buffers kept between images.
    ///
    /// Output is Gray8, Rgb8, Bgr8, Rgba8 or Bgra8, as Pillow's
    /// `Image.open(f).convert("L" | "RGB" | "RGBA")` gives it (BGR orders swapped):
    /// alpha is dropped for RGB and gray (never composited), gray from colour
    /// is Pillow's luma, and RGBA from a file without alpha is opaque. PNG
    /// details: 1/2/4-bit gray scales to 0-255, 16-bit RGB(A) and gray + alpha
    /// keep the high byte, **16-bit gray clips to 255** (Pillow's `I;16`),
    /// a palette's `tRNS` and a colour's `tRNS` give alpha in RGBA output only.
    #[derive(Clone, Debug, Default)]
    pub struct ImageDecoder {
        jpeg: JpegDecoder,
        /// Pixels as the file opens (PNG, WebP).
        #[cfg(any(feature = "png", feature = "webp"))]
        opened: Vec<u8>,
        /// 16-bit PNG samples.
        #[cfg(feature = "png")]
        wide: Vec<u8>,
        /// Converted pixels before the EXIF orientation.
        #[cfg(any(feature = "png", feature = "webp"))]
        converted: Vec<u8>,
    }

    /// Headers of a PNG or WebP.
    #[cfg(any(feature = "png", feature = "webp"))]
    enum Header {
        #[cfg(feature = "png")]
        Png(super::png::Header),
        #[cfg(feature = "webp")]
        WebP(super::webp::Header),
    }

    impl ImageDecoder {
        /// A decoder with `options` (the JPEG backend and scale apply to JPEG files only).
        #[cfg_attr(
            not(any(feature = "png", feature = "webp")),
            allow(clippy::needless_update)
        )]
        pub fn new(options: DecodeOptions) -> Self {
            ImageDecoder {
                jpeg: JpegDecoder::new(options),
                ..ImageDecoder::default()
            }
        }

        /// The options in force.
        pub fn options(&self) -> &DecodeOptions {
            self.jpeg.options()
        }

        /// Changes the options, keeping the scratch buffers.
        pub fn set_options(&mut self, options: DecodeOptions) {
            self.jpeg.set_options(options);
        }

        /// The JPEG decoder inside, for what only JPEG has (region decoding).
        pub fn jpeg_mut(&mut self) -> &mut JpegDecoder {
            &mut self.jpeg
        }

        #[cfg(any(feature = "png", feature = "webp"))]
        fn header(
            &self,
            bytes: &[u8],
            found: Option<ImageFormat>,
        ) -> Result<(ImageFormat, Header)> {
            let options = self.options();
            match found {
                #[cfg(feature = "png")]
                Some(ImageFormat::Png) => Ok((
                    ImageFormat::Png,
                    Header::Png(super::png::read_header(bytes, &options.limits)?),
                )),
                #[cfg(feature = "webp")]
                Some(ImageFormat::WebP) => Ok((
                    ImageFormat::WebP,
                    Header::WebP(super::webp::read_header(bytes, &options.limits)?),
                )),
                _ => Err(Error::UnsupportedImageFormat { found }),
            }
        }

        #[cfg(any(feature = "png", feature = "webp"))]
        fn info_of(&self, bytes: &[u8], format: ImageFormat, header: &Header) -> Result<ImageInfo> {
            let options = self.options();
            if options.scale != Scale::Full {
                return Err(Error::InvalidParameter {
                    name: "decode",
                    reason: "reduced-size (DCT-scaled) decoding is for JPEG files only",
                });
            }
            crate::image::packed_bpp("decode output", options.format)?;
            let (w, h, has_alpha, exif) = match header {
                #[cfg(feature = "png")]
                Header::Png(p) => (p.width, p.height, p.has_alpha, p.exif),
                #[cfg(feature = "webp")]
                Header::WebP(p) => (p.width, p.height, p.has_alpha, p.exif),
            };
            let exif_orientation = exif
                .and_then(|(a, b)| bytes.get(a..b))
                .and_then(crate::jpeg::exif::orientation)
                .filter(|v| (1..=8).contains(v))
                .unwrap_or(1);
            let (width, height) = self.transform_for(exif_orientation).output_size(w, h);
            Ok(ImageInfo {
                format,
                width,
                height,
                stored_width: w,
                stored_height: h,
                exif_orientation,
                has_alpha,
                jpeg: None,
            })
        }

        #[cfg(any(feature = "png", feature = "webp"))]
        fn transform_for(&self, exif_orientation: u16) -> Transform {
            match self.options().orientation {
                Orientation::Apply => Transform::from_exif(exif_orientation).unwrap_or_default(),
                Orientation::Ignore => Transform::IDENTITY,
            }
        }

        /// Parses the headers only: format, size, orientation. Checks the
        /// limits, and that the file's data can fill the size it claims.
        pub fn read_info(&mut self, bytes: &[u8]) -> Result<ImageInfo> {
            let found = ImageFormat::sniff(bytes);
            if found == Some(ImageFormat::Jpeg) {
                return self.jpeg.read_info(bytes).map(from_jpeg);
            }
            // A PNG or WebP file in a build without its decoder names the feature.
            if let Some(format) = found {
                format.check_built()?;
            }
            #[cfg(any(feature = "png", feature = "webp"))]
            {
                let (format, header) = self.header(bytes, found)?;
                self.info_of(bytes, format, &header)
            }
            #[cfg(not(any(feature = "png", feature = "webp")))]
            Err(Error::UnsupportedImageFormat { found })
        }

        /// Decodes into `dst`, whose format must be the options' format and
        /// whose size must be [`ImageInfo`]'s `width` x `height`. Any row stride works.
        pub fn decode_into(
            &mut self,
            bytes: &[u8],
            dst: &mut ImageViewMut<'_>,
        ) -> Result<ImageInfo> {
            let found = ImageFormat::sniff(bytes);
            if found == Some(ImageFormat::Jpeg) {
                return self.jpeg.decode_into(bytes, dst).map(from_jpeg);
            }
            if let Some(format) = found {
                format.check_built()?;
            }
            #[cfg(any(feature = "png", feature = "webp"))]
            {
                self.decode_other(bytes, found, dst)
            }
            #[cfg(not(any(feature = "png", feature = "webp")))]
            Err(Error::UnsupportedImageFormat { found })
        }

        /// [`ImageDecoder::decode_into`] for PNG and WebP.
        #[cfg(any(feature = "png", feature = "webp"))]
        fn decode_other(
            &mut self,
            bytes: &[u8],
            found: Option<ImageFormat>,
            dst: &mut ImageViewMut<'_>,
        ) -> Result<ImageInfo> {
            let (format, header) = self.header(bytes, found)?;
            let info = self.info_of(bytes, format, &header)?;
            let options = *self.options();
            if dst.format() != options.format {
                return Err(Error::FormatMismatch {
                    expected: options.format,
                    found: dst.format(),
                });
            }
            if (dst.width(), dst.height()) != (info.width, info.height) {
                return Err(Error::SizeMismatch {
                    expected: (info.width, info.height),
                    found: (dst.width(), dst.height()),
                });
            }
            let opened = match &header {
                #[cfg(feature = "png")]
                Header::Png(p) => super::png::decode(
                    bytes,
                    p,
                    options.strict,
                    &options.limits,
                    &mut self.opened,
                    &mut self.wide,
                )?,
                #[cfg(feature = "webp")]
                Header::WebP(p) => {
                    super::webp::decode(bytes, p, &options.limits, &mut self.opened)?
                }
            };
            let (w, h) = (info.stored_width, info.stored_height);
            let t = self.transform_for(info.exif_orientation);
            if t == Transform::IDENTITY {
                convert_opened(&self.opened, opened, w as usize, dst);
                return Ok(info);
            }
            let bpp = options.format.bytes_per_pixel().unwrap_or(4);
            let len = options
                .limits
                .check_alloc(u64::from(w) * u64::from(h) * bpp as u64)?;
            crate::buffer::zero(&mut self.converted, len)?;
            let mut upright = ImageViewMut::new(options.format, w, h, &mut self.converted)?;
            convert_opened(&self.opened, opened, w as usize, &mut upright);
            transform(&upright.as_view(), dst, t)?;
            Ok(info)
        }

        /// Decodes into a new [`Image`].
        pub fn decode(&mut self, bytes: &[u8]) -> Result<Image> {
            let info = self.read_info(bytes)?;
            let options = self.options();
            let mut img =
                Image::new_with_limits(options.format, info.width, info.height, &options.limits)?;
            self.decode_into(bytes, &mut img.view_mut())?;
            Ok(img)
        }
    }

    fn from_jpeg(j: JpegInfo) -> ImageInfo {
        ImageInfo {
            format: ImageFormat::Jpeg,
            width: j.width,
            height: j.height,
            stored_width: j.stored_width,
            stored_height: j.stored_height,
            exif_orientation: j.exif_orientation,
            has_alpha: false,
            jpeg: Some(j),
        }
    }

    /// Pillow's `convert` from the opened channels (`width` pixels a row,
    /// tightly packed) to `dst`'s packed format.
    #[cfg(any(feature = "png", feature = "webp"))]
    fn convert_opened(src: &[u8], opened: Opened, width: usize, dst: &mut ImageViewMut<'_>) {
        let n = opened.channels();
        let format = dst.format();
        let bpp = format.bytes_per_pixel().unwrap_or(1);
        let [ro, go, bo] = format.rgb_offsets().unwrap_or([0, 0, 0]);
        let alpha = format.alpha_offset();
        for (y, out) in dst.plane_rows_mut(0).enumerate() {
            let row = &src[y * width * n..(y + 1) * width * n];
            for (s, d) in row.chunks_exact(n).zip(out.chunks_exact_mut(bpp)) {
                let (r, g, b, a) = match opened {
                    Opened::L => (s[0], s[0], s[0], 255),
                    Opened::La => (s[0], s[0], s[0], s[1]),
                    Opened::Rgb => (s[0], s[1], s[2], 255),
                    Opened::Rgba => (s[0], s[1], s[2], s[3]),
                };
                if bpp == 1 {
                    d[0] = if n <= 2 {
                        r
                    } else {
                        crate::color::luma601(r, g, b)
                    };
                    continue;
                }
                d[ro] = r;
                d[go] = g;
                d[bo] = b;
                if let Some(ao) = alpha {
                    d[ao] = a;
                }
            }
        }
    }

    /// One-shot decode of any supported format with `options` (see
    /// [`ImageDecoder`] to reuse scratch buffers).
    pub fn decode(bytes: &[u8], options: &DecodeOptions) -> Result<Image> {
        ImageDecoder::new(*options).decode(bytes)
    }
}

#[cfg(any(feature = "png", feature = "webp"))]
pub(crate) use decoder::Opened;
