//! Image file formats, told apart by their first bytes.

use core::fmt;

/// An image file format, as recognised from the file's leading bytes.
///
/// Every format tensorprep can name, whether or not this build decodes it:
/// [`ImageFormat::is_supported`] says which it decodes, so that an unsupported
/// file is refused by name ("GIF is not supported") rather than as a corrupt JPEG.
///
/// ```
/// use tensorprep::decode::ImageFormat;
///
/// assert_eq!(ImageFormat::sniff(b"\x89PNG\r\n\x1a\n...."), Some(ImageFormat::Png));
/// assert_eq!(ImageFormat::sniff(b"GIF89a......"), Some(ImageFormat::Gif));
/// assert_eq!(ImageFormat::sniff(b"hello"), None);
/// assert!(!ImageFormat::Gif.is_supported());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImageFormat {
    /// JPEG (JFIF, EXIF, Adobe), any coding process.
    Jpeg,
    /// PNG, including APNG (whose first frame is the image).
    Png,
    /// WebP: lossy (VP8), lossless (VP8L) or extended (VP8X).
    WebP,
    /// GIF 87a or 89a.
    Gif,
    /// Windows bitmap.
    Bmp,
    /// TIFF, classic or BigTIFF, either byte order.
    Tiff,
    /// Windows icon or cursor.
    Ico,
    /// AVIF (AV1 in an ISO-BMFF container).
    Avif,
    /// HEIF / HEIC (an ISO-BMFF image container other than AVIF).
    Heif,
    /// JPEG XL, bare codestream or container.
    JpegXl,
    /// JPEG 2000, JP2 container or bare codestream.
    Jpeg2000,
    /// Netpbm: PBM, PGM, PPM, PAM.
    Pnm,
    /// The Quite OK Image format.
    Qoi,
    /// Photoshop document.
    Psd,
    /// OpenEXR.
    OpenExr,
    /// Radiance RGBE (`.hdr`).
    Hdr,
}

impl ImageFormat {
    /// Every format this crate can recognise.
    pub const ALL: [ImageFormat; 16] = [
        ImageFormat::Jpeg,
        ImageFormat::Png,
        ImageFormat::WebP,
        ImageFormat::Gif,
        ImageFormat::Bmp,
        ImageFormat::Tiff,
        ImageFormat::Ico,
        ImageFormat::Avif,
        ImageFormat::Heif,
        ImageFormat::JpegXl,
        ImageFormat::Jpeg2000,
        ImageFormat::Pnm,
        ImageFormat::Qoi,
        ImageFormat::Psd,
        ImageFormat::OpenExr,
        ImageFormat::Hdr,
    ];

    /// The formats this build decodes, in the order [`ImageFormat::ALL`] lists them.
    ///
    /// ```
    /// use tensorprep::decode::ImageFormat;
    /// assert_eq!(ImageFormat::supported().next(), Some(ImageFormat::Jpeg));
    /// ```
    pub fn supported() -> impl Iterator<Item = ImageFormat> {
        ImageFormat::ALL.into_iter().filter(|f| f.is_supported())
    }

    /// Whether this build decodes the format (JPEG always; PNG with the `png`
    /// feature, WebP with the `webp` feature).
    pub const fn is_supported(self) -> bool {
        matches!(self, ImageFormat::Jpeg)
            || (matches!(self, ImageFormat::Png) && cfg!(feature = "png"))
            || (matches!(self, ImageFormat::WebP) && cfg!(feature = "webp"))
    }

    /// The Cargo feature that builds the format's decoder, for the formats
    /// tensorprep has a decoder for (`None` for JPEG, always built, and for
    /// the formats it never decodes).
    ///
    /// ```
    /// use tensorprep::decode::ImageFormat;
    /// assert_eq!(ImageFormat::WebP.feature(), Some("webp"));
    /// assert_eq!(ImageFormat::Gif.feature(), None);
    /// ```
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            ImageFormat::Png => Some("png"),
            ImageFormat::WebP => Some("webp"),
            _ => None,
        }
    }

    /// [`crate::Error::NotBuilt`] for a format whose decoder this build leaves out.
    #[cfg(feature = "alloc")]
    pub(crate) fn check_built(self) -> crate::Result<()> {
        match self.feature() {
            Some(feature) if !self.is_supported() => Err(crate::Error::NotBuilt {
                what: match self {
                    ImageFormat::Png => "PNG decoding",
                    _ => "WebP decoding",
                },
                feature,
            }),
            _ => Ok(()),
        }
    }

    /// The format's usual name ("JPEG", "PNG", "WebP", ...).
    pub const fn name(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Png => "PNG",
            ImageFormat::WebP => "WebP",
            ImageFormat::Gif => "GIF",
            ImageFormat::Bmp => "BMP",
            ImageFormat::Tiff => "TIFF",
            ImageFormat::Ico => "ICO",
            ImageFormat::Avif => "AVIF",
            ImageFormat::Heif => "HEIF",
            ImageFormat::JpegXl => "JPEG XL",
            ImageFormat::Jpeg2000 => "JPEG 2000",
            ImageFormat::Pnm => "PNM",
            ImageFormat::Qoi => "QOI",
            ImageFormat::Psd => "PSD",
            ImageFormat::OpenExr => "OpenEXR",
            ImageFormat::Hdr => "Radiance HDR",
        }
    }

    /// The format whose signature `bytes` start with, `None` if no known one.
    ///
    /// For the formats this crate decodes, a prefix shorter than the signature
    /// matches (a file cut after two bytes is still a truncated JPEG, not an
    /// unknown format); the empty input is no format.
    pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
        if bytes.is_empty() {
            return None;
        }
        // Prefix-tolerant: `bytes` shorter than `sig` match if they agree so far.
        let starts = |sig: &[u8]| {
            let n = bytes.len().min(sig.len());
            bytes[..n] == sig[..n]
        };
        if starts(b"\xff\xd8\xff") {
            return Some(ImageFormat::Jpeg);
        }
        if starts(b"\x89PNG\r\n\x1a\n") {
            return Some(ImageFormat::Png);
        }
        if starts(b"RIFF") && (bytes.len() < 12 || &bytes[8..12] == b"WEBP") {
            return Some(ImageFormat::WebP);
        }
        let full = |sig: &[u8]| bytes.starts_with(sig);
        if full(b"GIF87a") || full(b"GIF89a") {
            return Some(ImageFormat::Gif);
        }
        if full(b"\xff\x0a") || full(b"\0\0\0\x0cJXL \r\n\x87\n") {
            return Some(ImageFormat::JpegXl);
        }
        if full(b"\0\0\0\x0cjP  \r\n\x87\n") || full(b"\xff\x4f\xff\x51") {
            return Some(ImageFormat::Jpeg2000);
        }
        if let Some(brand) = bytes.get(4..12).filter(|b| &b[..4] == b"ftyp") {
            return Some(match &brand[4..] {
                b"avif" | b"avis" => ImageFormat::Avif,
                _ => ImageFormat::Heif,
            });
        }
        if full(b"II*\0") || full(b"MM\0*") || full(b"II+\0") || full(b"MM\0+") {
            return Some(ImageFormat::Tiff);
        }
        if full(b"\0\0\x01\0") || full(b"\0\0\x02\0") {
            return Some(ImageFormat::Ico);
        }
        if full(b"qoif") {
            return Some(ImageFormat::Qoi);
        }
        if full(b"8BPS") {
            return Some(ImageFormat::Psd);
        }
        if full(b"\x76\x2f\x31\x01") {
            return Some(ImageFormat::OpenExr);
        }
        if full(b"#?RADIANCE") || full(b"#?RGBE") {
            return Some(ImageFormat::Hdr);
        }
        if let [b'P', b'1'..=b'7', ws, ..] = bytes
            && ws.is_ascii_whitespace()
        {
            return Some(ImageFormat::Pnm);
        }
        if let [b'B', b'M', _, _, _, _, 0, 0, 0, 0, ..] = bytes {
            return Some(ImageFormat::Bmp);
        }
        None
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Writes "JPEG, PNG, WebP": the formats this build decodes.
pub(crate) struct SupportedList;

impl fmt::Display for SupportedList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, format) in ImageFormat::supported().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(format.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG or WebP file in a build without its decoder is refused naming
    /// the Cargo feature (not as a corrupt file, not as an unknown format).
    #[test]
    #[cfg(feature = "alloc")]
    fn a_decoder_left_out_of_the_build_is_not_built() {
        use crate::Error;
        use crate::decode::ImageDecoder;
        let files: [(&[u8], ImageFormat); 2] = [
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", ImageFormat::Png),
            (b"RIFF\x24\0\0\0WEBPVP8 ", ImageFormat::WebP),
        ];
        for (bytes, format) in files {
            assert_eq!(ImageFormat::sniff(bytes), Some(format));
            for got in [
                ImageDecoder::default().read_info(bytes).err(),
                ImageDecoder::default().decode(bytes).err(),
            ] {
                let not_built = matches!(got, Some(Error::NotBuilt { feature, .. })
                    if Some(feature) == format.feature());
                assert_eq!(not_built, !format.is_supported(), "{format:?}: {got:?}");
                assert!(got.is_some(), "{format:?}: a truncated file decodes");
            }
        }
    }

    #[test]
    fn signatures() {
        let cases: &[(&[u8], Option<ImageFormat>)] = &[
            (b"\xff\xd8\xff\xe0\0\x10JFIF", Some(ImageFormat::Jpeg)),
            (b"\xff\xd8", Some(ImageFormat::Jpeg)),
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some(ImageFormat::Png)),
            (b"RIFF\x24\0\0\0WEBPVP8 ", Some(ImageFormat::WebP)),
            (b"RIFF\x24\0\0\0WAVEfmt ", None),
            (b"GIF89a\x01\0\x01\0", Some(ImageFormat::Gif)),
            (b"BM\x3a\0\0\0\0\0\0\0\x36\0", Some(ImageFormat::Bmp)),
            (b"II*\0\x08\0\0\0", Some(ImageFormat::Tiff)),
            (b"MM\0*\0\0\0\x08", Some(ImageFormat::Tiff)),
            (b"\0\0\0\x1cftypavif\0\0\0\0", Some(ImageFormat::Avif)),
            (b"\0\0\0\x18ftypheic\0\0\0\0", Some(ImageFormat::Heif)),
            (b"\xff\x0a\xfa\x7f", Some(ImageFormat::JpegXl)),
            (b"\0\0\0\x0cJXL \r\n\x87\n", Some(ImageFormat::JpegXl)),
            (b"\0\0\0\x0cjP  \r\n\x87\n", Some(ImageFormat::Jpeg2000)),
            (b"P6\n3 2\n255\n", Some(ImageFormat::Pnm)),
            (b"qoif\0\0\0\x01", Some(ImageFormat::Qoi)),
            (b"8BPS\0\x01", Some(ImageFormat::Psd)),
            (b"\0\0\x01\0\x01\0", Some(ImageFormat::Ico)),
            (b"#?RADIANCE\n", Some(ImageFormat::Hdr)),
            (b"\x76\x2f\x31\x01", Some(ImageFormat::OpenExr)),
            (b"", None),
            (b"\0", None),
            (b"<svg xmlns", None),
            (b"PK\x03\x04", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(ImageFormat::sniff(bytes), *want, "{bytes:?}");
        }
    }

    #[test]
    fn supported_list_names_each_built_format() {
        use alloc::string::ToString;
        let list = SupportedList.to_string();
        assert!(list.starts_with("JPEG"));
        assert!(list.contains("PNG"));
        assert_eq!(list.contains("WebP"), cfg!(feature = "webp"));
    }
}
