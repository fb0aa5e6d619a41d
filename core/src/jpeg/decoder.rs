//! The decoder: headers, backends, conversion and orientation into a caller buffer.

#[cfg(feature = "turbojpeg")]
use super::turbo;
use super::{
    Backend, DecodeOptions, JpegFeature, JpegInfo, Orientation, Scale, exif, markers,
    max_pixels_for,
};
use crate::decode::ImageFormat;

use alloc::vec::Vec;

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder as Zune;
use zune_jpeg::errors::DecodeErrors;

use crate::color::{YuvRange, convert_color};
use crate::geometry::{Transform, transform};
use crate::{
    Error, Image, ImageView, ImageViewMut, JpegErrorKind, Limits, PixelFormat, Rect, Result,
};

/// A reusable decoder: options plus scratch buffers kept between images.
#[derive(Clone, Debug, Default)]
pub struct JpegDecoder {
    options: DecodeOptions,
    scratch: Vec<u8>,
    scratch2: Vec<u8>,
    /// The file with a run of 1-bits before its end-of-image marker (strict
    /// zune-jpeg decoding, see [`JpegDecoder::run_zune`]).
    padded: Vec<u8>,
    #[cfg(feature = "turbojpeg")]
    turbo: turbo::Turbo,
    /// A progressive file without the scans a 1/8 decode leaves unread
    /// ([`super::progressive`]).
    #[cfg(feature = "turbojpeg")]
    reduced: Vec<u8>,
}

/// Bytes of 1-bits (`FF 00`, stuffed) put after the last scan's coded data:
/// more than the longest Huffman code plus its extra bits and the
/// decoder's look-ahead.
const ONES_PADDING: usize = 16;

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
            padded: Vec::new(),
            #[cfg(feature = "turbojpeg")]
            turbo: turbo::Turbo::default(),
            #[cfg(feature = "turbojpeg")]
            reduced: Vec::new(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &DecodeOptions {
        &self.options
    }

    /// Changes the options, keeping the scratch buffers.
    pub fn set_options(&mut self, options: DecodeOptions) {
        self.options = options;
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
                name: "JPEG backend",
                reason: "libjpeg-turbo is not in this build",
            });
        }
        if self.options.scale != Scale::Full && self.options.backend != Backend::LibjpegTurbo {
            return Err(Error::InvalidParameter {
                name: "JPEG scale",
                reason: "reduced-size decoding needs the libjpeg-turbo backend",
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

    /// Checks what the frame header says before any decoder sees the data: a
    /// coding feature the backend lacks is refused by name, and a size the
    /// file's bytes cannot plausibly fill is refused before anything is allocated.
    fn check_frame(&self, bytes: &[u8]) -> Result<()> {
        let Some(frame) = markers::frame(bytes) else {
            return Ok(()); // the backend reports what is wrong
        };
        if let Some(feature) = JpegFeature::of_frame(&frame, bytes) {
            let backend = self.options.backend;
            if feature.decoded_by() != Some(backend) {
                return Err(Error::JpegFeature { feature, backend });
            }
        }
        // Only progressive files can have many scans (a sequential one has at
        // most one per component, which the decoders check).
        let progressive = matches!(frame.marker, 0xC2 | 0xC6 | 0xCA | 0xCE);
        let scans = if progressive {
            super::count_scans(bytes)
        } else {
            0
        };
        if scans > super::MAX_SCANS {
            return Err(Error::TooManyScans {
                scans,
                limit: super::MAX_SCANS,
            });
        }
        let (width, height) = (u32::from(frame.width), u32::from(frame.height));
        if width == 0 || height == 0 {
            return Ok(()); // a DNL marker gives the height later; the backend decides
        }
        self.options
            .limits
            .check_pixels(u64::from(width), u64::from(height))?;
        let max_pixels = max_pixels_for(bytes.len(), &frame);
        if u64::from(width) * u64::from(height) > max_pixels {
            // A file cut short is reported as such; a whole one as implausible.
            if !bytes.ends_with(&[0xFF, 0xD9]) {
                return Err(Error::Jpeg {
                    kind: JpegErrorKind::Truncated,
                });
            }
            return Err(Error::ImplausibleSize {
                format: ImageFormat::Jpeg,
                width,
                height,
                data_bytes: bytes.len() as u64,
                max_pixels,
            });
        }
        Ok(())
    }

    /// Parses the headers only: size, components, orientation. Checks the
    /// limits, the coding features against the backend, and that the file is
    /// large enough for the size it claims.
    ///
    /// With libjpeg-turbo, the decoder's own instance reads the header (made
    /// on first use, kept for every image after).
    pub fn read_info(&mut self, bytes: &[u8]) -> Result<JpegInfo> {
        self.check_format()?;
        self.check_frame(bytes)?;
        // The backend's size, components and MCU width (0 when unknown).
        let (w, h, components, mcu_width) = match self.options.backend {
            // No Rust-heap allocation.
            #[cfg(feature = "turbojpeg")]
            Backend::LibjpegTurbo => self.turbo.header(bytes)?,
            _ => {
                let mut d = self.zune(bytes, ColorSpace::RGB);
                d.decode_headers().map_err(|e| map_error(&e))?;
                let (w, h) = d.dimensions().ok_or(Error::Jpeg {
                    kind: JpegErrorKind::Corrupt,
                })?;
                (w as u32, h as u32, d.info().map_or(0, |i| i.components), 0)
            }
        };
        // Our own scan on every backend, not zune-jpeg's accessor: with two
        // EXIF segments it keeps the last, where Pillow and libjpeg-turbo
        // read the first.
        let exif_orientation = exif::find_in_jpeg(bytes).and_then(exif::orientation);
        self.info(w, h, components, exif_orientation, mcu_width)
    }

    fn info(
        &self,
        w: u32,
        h: u32,
        components: u8,
        exif_orientation: Option<u16>,
        mcu_width: u32,
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
            mcu_width,
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
                .run_backend(bytes, Rect::new(0, 0, sw, sh), decoded, out, tight)
                .map(|()| info);
        }

        let bytes_needed = (tight as u64) * u64::from(sh);
        let len = self.options.limits.check_alloc(bytes_needed)?;
        let mut scratch = core::mem::take(&mut self.scratch);
        crate::buffer::grow(&mut scratch, len)?;
        let result = self
            .run_backend(
                bytes,
                Rect::new(0, 0, sw, sh),
                decoded,
                &mut scratch[..len],
                tight,
            )
            .and_then(|()| {
                let src = ImageView::new(decoded, sw, sh, &scratch[..len])?;
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
                let r = crate::buffer::grow(&mut converted, n)
                    .and_then(|c| ImageViewMut::new(target, sw, sh, c))
                    .and_then(|mut c| {
                        convert_color(&src, &mut c, YuvRange::Full)?;
                        transform(&c.as_view(), dst, t)
                    });
                self.scratch2 = converted;
                r
            });
        self.scratch = scratch;
        result.map(|()| info)
    }

    /// Decodes `region` of the stored (unrotated, scaled) image as `format` into
    /// `out`, rows `stride` apart. Only libjpeg-turbo decodes less than the whole image.
    #[cfg_attr(not(feature = "turbojpeg"), allow(unused_variables))]
    fn run_backend(
        &mut self,
        bytes: &[u8],
        region: Rect,
        format: PixelFormat,
        out: &mut [u8],
        stride: usize,
    ) -> Result<()> {
        match self.options.backend {
            #[cfg(feature = "turbojpeg")]
            Backend::LibjpegTurbo => self.turbo.decode(
                if self.options.scale == Scale::Eighth
                    && super::progressive::dc_only_stream(bytes, &mut self.reduced)
                {
                    &self.reduced
                } else {
                    bytes
                },
                format,
                self.options.scale,
                self.options.strict,
                &self.options.limits,
                region,
                out,
                stride,
                &mut self.scratch2,
            ),
            _ => self.run_zune(bytes, format, out),
        }
    }

    /// Decodes with zune-jpeg. In strict mode the file is first checked for
    /// what zune-jpeg would decode silently wrong where libjpeg-turbo refuses:
    ///
    /// - A scan with fewer restart markers than its restart interval needs
    ///   is refused ([`Error::JpegRestartMarkers`]).
    /// - A scan cut short and followed by an end-of-image marker: zune-jpeg
    ///   reads zero bits past the marker and reports success. The last scan's
    ///   coded data is decoded followed by 1-bits instead (a copy of the file):
    ///   a whole scan never reads them (an encoder pads its last byte with
    ///   1-bits anyway), a cut one soon meets the all-ones code no Huffman
    ///   table has, and fails. Such a failure is reported as truncated when
    ///   the file as it is decodes.
    fn run_zune(&mut self, bytes: &[u8], format: PixelFormat, out: &mut [u8]) -> Result<()> {
        if !self.options.strict {
            return self.zune_into(bytes, format, out);
        }
        let layout = markers::scan_layout(bytes);
        if let Some((scan, found, expected)) = layout.missing_restarts {
            return Err(Error::JpegRestartMarkers {
                scan,
                found,
                expected,
            });
        }
        let Some(eoi) = layout.final_eoi else {
            return self.zune_into(bytes, format, out);
        };
        let mut padded = core::mem::take(&mut self.padded);
        let result =
            crate::buffer::grow(&mut padded, bytes.len() + 2 * ONES_PADDING).and_then(|p| {
                let (head, tail) = bytes.split_at(eoi);
                p[..eoi].copy_from_slice(head);
                for pair in p[eoi..eoi + 2 * ONES_PADDING].chunks_exact_mut(2) {
                    pair.copy_from_slice(&[0xFF, 0x00]);
                }
                p[eoi + 2 * ONES_PADDING..].copy_from_slice(tail);
                match self.zune_into(p, format, out) {
                    // Only the padding can have made a whole file fail.
                    Err(_) if self.zune_into(bytes, format, out).is_ok() => Err(Error::Jpeg {
                        kind: JpegErrorKind::Truncated,
                    }),
                    r => r,
                }
            });
        self.padded = padded;
        result
    }

    fn zune_into(&self, bytes: &[u8], format: PixelFormat, out: &mut [u8]) -> Result<()> {
        let mut d = self.zune(bytes, zune_space(format));
        d.decode_headers().map_err(|e| map_error(&e))?;
        if d.output_buffer_size() != Some(out.len()) {
            return Err(Error::Jpeg {
                kind: JpegErrorKind::UnsupportedColorSpace,
            });
        }
        d.decode_into(out).map_err(|e| map_error(&e))
    }

    /// Decodes only `region` of the image into `dst` (the region's size, the
    /// options' format): the same pixels as the full decode has there, for the
    /// cost of the rows above and the MCU columns inside the region.
    ///
    /// libjpeg-turbo only, without EXIF orientation applied. `region` is in the
    /// coordinates of the (scaled) image, and `region.x` must be a multiple of
    /// the scaled MCU width, `ceil(mcu_width / scale)` ([`JpegInfo::mcu_width`]).
    /// In chroma-subsampled files the first column, and the last when the region
    /// ends on an MCU boundary, can differ from the full decode (upsampling has
    /// no neighbour there): decode [`JpegInfo::region_covering`] the pixels you
    /// need, as the pipeline does.
    pub fn decode_region_into(
        &mut self,
        bytes: &[u8],
        region: Rect,
        dst: &mut ImageViewMut<'_>,
    ) -> Result<JpegInfo> {
        if self.options.backend != Backend::LibjpegTurbo {
            return Err(Error::InvalidParameter {
                name: "JPEG region",
                reason: "region decoding needs the libjpeg-turbo backend",
            });
        }
        #[cfg(feature = "turbojpeg")]
        {
            let info = self.read_info(bytes)?;
            if self.transform_for(info.exif_orientation) != Transform::IDENTITY {
                return Err(Error::InvalidParameter {
                    name: "JPEG region",
                    reason: "region decoding does not apply EXIF orientation",
                });
            }
            let target = self.options.format;
            if dst.format() != target {
                return Err(Error::FormatMismatch {
                    expected: target,
                    found: dst.format(),
                });
            }
            let (w, h) = (region.width, region.height);
            if (dst.width(), dst.height()) != (w, h) {
                return Err(Error::SizeMismatch {
                    expected: (w, h),
                    found: (dst.width(), dst.height()),
                });
            }
            if info.components != 1 || target == PixelFormat::Gray8 {
                // Colour files decode straight into the destination (CMYK via scratch).
                let decoded = if info.components == 1 {
                    PixelFormat::Gray8
                } else {
                    target
                };
                if decoded == target {
                    let stride = dst.stride(0);
                    let out = dst.plane_data_mut(0);
                    return self
                        .run_backend(bytes, region, target, out, stride)
                        .map(|()| info);
                }
            }
            // A gray file to a colour format: decode gray, then repeat the value.
            let len = self
                .options
                .limits
                .check_alloc(u64::from(w) * u64::from(h))?;
            let mut scratch = core::mem::take(&mut self.scratch);
            crate::buffer::grow(&mut scratch, len)?;
            let result = self
                .run_backend(
                    bytes,
                    region,
                    PixelFormat::Gray8,
                    &mut scratch[..len],
                    w as usize,
                )
                .and_then(|()| {
                    let src = ImageView::new(PixelFormat::Gray8, w, h, &scratch[..len])?;
                    convert_color(&src, dst, YuvRange::Full)
                });
            self.scratch = scratch;
            result.map(|()| info)
        }
        #[cfg(not(feature = "turbojpeg"))]
        {
            let _ = (bytes, region, dst);
            unreachable!("the libjpeg-turbo backend is available only with its feature")
        }
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
