//! Borrowed image views (validated once, trusted by every kernel) and the owned [`Image`].

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::{Error, PixelFormat, Result};

/// An axis-aligned rectangle in pixel coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Rect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Rect {
    /// A rectangle from its left, top, width and height.
    pub const fn new(x: u32, y: u32, width: u32, height: u32) -> Self {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    /// Whether the rectangle is non-empty and lies inside a `width` x `height` image.
    pub const fn fits_in(&self, width: u32, height: u32) -> bool {
        self.width > 0
            && self.height > 0
            && self.x as u64 + self.width as u64 <= width as u64
            && self.y as u64 + self.height as u64 <= height as u64
    }

    pub(crate) fn check(&self, width: u32, height: u32) -> Result<()> {
        if self.fits_in(width, height) {
            Ok(())
        } else {
            Err(Error::RectOutOfBounds {
                rect: *self,
                width,
                height,
            })
        }
    }
}

/// Caps checked before anything is allocated for an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest width x height accepted.
    pub max_pixels: u64,
    /// Largest single allocation, in bytes.
    pub max_alloc_bytes: u64,
}

impl Limits {
    /// Largest width or height of any image or view (2^18 = 262 144).
    pub const MAX_DIMENSION: u32 = 1 << 18;

    /// 128 Mpixel and 1 GiB: room for any camera photo, small enough to stop decompression bombs.
    pub const DEFAULT: Limits = Limits {
        max_pixels: 1 << 27,
        max_alloc_bytes: 1 << 30,
    };

    /// Checks `width` x `height` against the dimension and pixel caps.
    pub fn check_pixels(&self, width: u64, height: u64) -> Result<()> {
        check_dimensions(width, height)?;
        let pixels = width * height;
        if pixels > self.max_pixels {
            return Err(Error::TooManyPixels {
                pixels,
                limit: self.max_pixels,
            });
        }
        Ok(())
    }

    /// Checks an allocation of `bytes` against the cap (and against `usize`).
    pub fn check_alloc(&self, bytes: u64) -> Result<usize> {
        if bytes > self.max_alloc_bytes {
            return Err(Error::AllocationTooLarge {
                bytes,
                limit: self.max_alloc_bytes,
            });
        }
        usize::try_from(bytes).map_err(|_| Error::AllocationTooLarge {
            bytes,
            limit: usize::MAX as u64,
        })
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

pub(crate) fn check_dimensions(width: u64, height: u64) -> Result<()> {
    let max = u64::from(Limits::MAX_DIMENSION);
    if width == 0 || height == 0 || width > max || height > max {
        return Err(Error::InvalidDimensions { width, height });
    }
    Ok(())
}

/// Checks one plane's stride and length for `format` at `width` x `height`.
fn check_plane(
    format: PixelFormat,
    index: usize,
    width: u32,
    height: u32,
    len: usize,
    stride: usize,
) -> Result<()> {
    let Some(g) = format.plane_geometry(index, width, height) else {
        return Err(Error::WrongPlaneCount {
            format,
            given: index as u8 + 1,
        });
    };
    let plane = index as u8;
    let row = g.row_bytes();
    if stride < row {
        return Err(Error::StrideTooSmall {
            plane,
            stride,
            min: row,
        });
    }
    // The last row need not be padded to the full stride (as in Android's YUV_420_888).
    let needed = (g.rows - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(row))
        .ok_or(Error::StrideTooLarge {
            plane,
            stride,
            rows: g.rows,
        })?;
    if len < needed {
        return Err(Error::BufferTooSmall { plane, len, needed });
    }
    Ok(())
}

/// Bytes of a tightly packed image (all planes, no row padding).
pub(crate) fn tight_len(format: PixelFormat, width: u32, height: u32) -> Option<u64> {
    let mut total = 0u64;
    for i in 0..format.plane_count() {
        let g = format.plane_geometry(i, width, height)?;
        total = total.checked_add((g.row_bytes() as u64).checked_mul(g.rows as u64)?)?;
    }
    Some(total)
}

/// Byte offset, in each plane, of the pixel at `rect`'s top-left corner, after
/// checking that `rect` lies inside the image (and is chroma-aligned for 4:2:0).
fn crop_offsets(
    format: PixelFormat,
    width: u32,
    height: u32,
    rect: Rect,
    strides: [usize; 3],
) -> Result<[usize; 3]> {
    rect.check(width, height)?;
    let (sx, sy) = format.chroma_subsampling();
    if !rect.x.is_multiple_of(sx) || !rect.y.is_multiple_of(sy) {
        return Err(Error::UnalignedCrop { rect });
    }
    let mut offsets = [0; 3];
    for (i, (offset, stride)) in offsets
        .iter_mut()
        .zip(strides)
        .enumerate()
        .take(format.plane_count())
    {
        let bpe = format
            .plane_geometry(i, width, height)
            .map_or(0, |g| g.bytes_per_element);
        // Subsampled planes (and YUV 4:2:2's pixel pairs) hold fewer elements.
        let (ex, ey) = format.element_pixels(i);
        *offset = rect.y as usize / ey * stride + rect.x as usize / ex * bpe;
    }
    Ok(offsets)
}

/// Tight stride of plane `index` and its byte length.
fn tight_plane(format: PixelFormat, index: usize, width: u32, height: u32) -> (usize, usize) {
    match format.plane_geometry(index, width, height) {
        Some(g) => (g.row_bytes(), g.row_bytes() * g.rows),
        None => (0, 0),
    }
}

/// One plane of a borrowed image: its bytes and row stride.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plane<'a> {
    /// The bytes, starting at the first pixel of the first row.
    pub data: &'a [u8],
    /// Distance in bytes between the starts of two rows.
    pub stride: usize,
}

impl<'a> Plane<'a> {
    /// A plane from its bytes and row stride.
    pub const fn new(data: &'a [u8], stride: usize) -> Self {
        Plane { data, stride }
    }
}

/// One plane of a mutable borrowed image.
#[derive(Debug, Default)]
pub struct PlaneMut<'a> {
    /// The bytes, starting at the first pixel of the first row.
    pub data: &'a mut [u8],
    /// Distance in bytes between the starts of two rows.
    pub stride: usize,
}

impl<'a> PlaneMut<'a> {
    /// A plane from its bytes and row stride.
    pub fn new(data: &'a mut [u8], stride: usize) -> Self {
        PlaneMut { data, stride }
    }
}

/// A borrowed, read-only image: format, size and up to three planes with their own strides.
///
/// The constructors check every stride and buffer length once; after that,
/// every op can read any row of any plane without further checks.
///
/// ```
/// use tensorprep::{ImageView, PixelFormat};
/// let pixels = vec![0u8; 4 * 3 * 3];
/// let view = ImageView::new(PixelFormat::Rgb8, 4, 3, &pixels)?;
/// assert_eq!(view.row(2).len(), 12);
/// // A buffer too short for the shape is an error, not a panic.
/// assert!(ImageView::new(PixelFormat::Rgb8, 5, 3, &pixels).is_err());
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ImageView<'a> {
    format: PixelFormat,
    width: u32,
    height: u32,
    planes: [Plane<'a>; 3],
}

impl<'a> ImageView<'a> {
    /// A tightly packed image. For the YUV formats `data` holds the planes one after
    /// another without padding (the layout of Android's `NV21` byte arrays).
    pub fn new(format: PixelFormat, width: u32, height: u32, data: &'a [u8]) -> Result<Self> {
        check_dimensions(u64::from(width), u64::from(height))?;
        let mut planes = [Plane::default(); 3];
        let mut rest = data;
        for (i, plane) in planes.iter_mut().enumerate().take(format.plane_count()) {
            let (stride, len) = tight_plane(format, i, width, height);
            if rest.len() < len {
                return Err(Error::BufferTooSmall {
                    plane: i as u8,
                    len: rest.len(),
                    needed: len,
                });
            }
            let (head, tail) = rest.split_at(len);
            *plane = Plane::new(head, stride);
            rest = tail;
        }
        Self::from_planes(format, width, height, &planes[..format.plane_count()])
    }

    /// A packed image whose rows are `stride` bytes apart.
    ///
    /// For `Nv12`/`Nv21` this is the contiguous camera layout: `height` luma rows of
    /// `stride` bytes, then the chroma rows with the same stride.
    pub fn with_stride(
        format: PixelFormat,
        width: u32,
        height: u32,
        data: &'a [u8],
        stride: usize,
    ) -> Result<Self> {
        check_dimensions(u64::from(width), u64::from(height))?;
        match format {
            PixelFormat::Nv12 | PixelFormat::Nv21 => {
                let luma = stride
                    .checked_mul(height as usize)
                    .filter(|&n| n <= data.len())
                    .ok_or(Error::BufferTooSmall {
                        plane: 0,
                        len: data.len(),
                        needed: stride.saturating_mul(height as usize),
                    })?;
                let (y, uv) = data.split_at(luma);
                Self::from_planes(
                    format,
                    width,
                    height,
                    &[Plane::new(y, stride), Plane::new(uv, stride)],
                )
            }
            PixelFormat::I420 => Err(Error::UnsupportedFormat {
                op: "ImageView::with_stride (use from_planes)",
                format,
            }),
            _ => Self::from_planes(format, width, height, &[Plane::new(data, stride)]),
        }
    }

    /// An image from its planes, each with its own stride (`YUV_420_888`, `CVPixelBuffer`).
    pub fn from_planes(
        format: PixelFormat,
        width: u32,
        height: u32,
        planes: &[Plane<'a>],
    ) -> Result<Self> {
        check_dimensions(u64::from(width), u64::from(height))?;
        if planes.len() != format.plane_count() {
            return Err(Error::WrongPlaneCount {
                format,
                given: planes.len().min(255) as u8,
            });
        }
        let mut out = [Plane::default(); 3];
        for (i, p) in planes.iter().enumerate() {
            check_plane(format, i, width, height, p.data.len(), p.stride)?;
            out[i] = *p;
        }
        Ok(ImageView {
            format,
            width,
            height,
            planes: out,
        })
    }

    /// The pixel format.
    pub const fn format(&self) -> PixelFormat {
        self.format
    }

    /// Width in pixels.
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub const fn height(&self) -> u32 {
        self.height
    }

    /// Plane `index` (an empty plane if the format has fewer).
    pub fn plane(&self, index: usize) -> Plane<'a> {
        self.planes.get(index).copied().unwrap_or_default()
    }

    /// Row `y` of plane 0 without stride padding. Panics if `y >= height`.
    pub fn row(&self, y: u32) -> &'a [u8] {
        self.plane_row(0, y as usize)
    }

    /// Row `y` of plane `index`, exactly one row of bytes. Panics if out of range.
    pub(crate) fn plane_row(&self, index: usize, y: usize) -> &'a [u8] {
        let g = self
            .format
            .plane_geometry(index, self.width, self.height)
            .expect("plane index checked by caller");
        let p = self.planes[index];
        let start = y * p.stride;
        &p.data[start..start + g.row_bytes()]
    }

    /// Iterates over the rows of plane `index`, each exactly one row of bytes.
    pub(crate) fn plane_rows(&self, index: usize) -> impl Iterator<Item = &'a [u8]> + 'a {
        let g = self.format.plane_geometry(index, self.width, self.height);
        let (rows, row_bytes) = g.map_or((0, 0), |g| (g.rows, g.row_bytes()));
        let p = self.planes.get(index).copied().unwrap_or_default();
        p.data
            .chunks(p.stride.max(1))
            .take(rows)
            .map(move |r| &r[..row_bytes])
    }

    /// A zero-copy view of the pixels inside `rect`.
    ///
    /// For the 4:2:0 formats `rect.x` and `rect.y` must be even.
    pub fn crop(&self, rect: Rect) -> Result<ImageView<'a>> {
        let strides = self.planes.map(|p| p.stride);
        let offsets = crop_offsets(self.format, self.width, self.height, rect, strides)?;
        let mut planes = [Plane::default(); 3];
        for ((out, p), offset) in planes.iter_mut().zip(self.planes).zip(offsets) {
            *out = Plane::new(p.data.get(offset..).unwrap_or_default(), p.stride);
        }
        Self::from_planes(
            self.format,
            rect.width,
            rect.height,
            &planes[..self.format.plane_count()],
        )
    }
}

/// A borrowed, writable image; the destination of every op.
///
/// ```
/// use tensorprep::{ImageViewMut, PixelFormat, Rect};
/// let mut pixels = vec![0u8; 8 * 8];
/// let mut view = ImageViewMut::new(PixelFormat::Gray8, 8, 8, &mut pixels)?;
/// // Write into a sub-rectangle, as a letterbox does.
/// view.sub_view_mut(Rect::new(2, 2, 4, 4))?.fill(&[255]);
/// assert_eq!(pixels[2 * 8 + 2], 255);
/// assert_eq!(pixels[0], 0);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Debug)]
pub struct ImageViewMut<'a> {
    format: PixelFormat,
    width: u32,
    height: u32,
    planes: [PlaneMut<'a>; 3],
}

impl<'a> ImageViewMut<'a> {
    /// A tightly packed writable image; see [`ImageView::new`].
    pub fn new(format: PixelFormat, width: u32, height: u32, data: &'a mut [u8]) -> Result<Self> {
        check_dimensions(u64::from(width), u64::from(height))?;
        let mut planes: [PlaneMut<'a>; 3] = Default::default();
        let mut rest = data;
        for (i, plane) in planes.iter_mut().enumerate().take(format.plane_count()) {
            let (stride, len) = tight_plane(format, i, width, height);
            if rest.len() < len {
                return Err(Error::BufferTooSmall {
                    plane: i as u8,
                    len: rest.len(),
                    needed: len,
                });
            }
            let (head, tail) = core::mem::take(&mut rest).split_at_mut(len);
            *plane = PlaneMut::new(head, stride);
            rest = tail;
        }
        Self::from_planes(format, width, height, planes)
    }

    /// A packed writable image whose rows are `stride` bytes apart.
    pub fn with_stride(
        format: PixelFormat,
        width: u32,
        height: u32,
        data: &'a mut [u8],
        stride: usize,
    ) -> Result<Self> {
        if !format.is_packed() {
            return Err(Error::UnsupportedFormat {
                op: "ImageViewMut::with_stride (use from_planes)",
                format,
            });
        }
        let mut planes: [PlaneMut<'a>; 3] = Default::default();
        planes[0] = PlaneMut::new(data, stride);
        Self::from_planes(format, width, height, planes)
    }

    /// A writable image from its planes (unused trailing planes may be empty).
    pub fn from_planes(
        format: PixelFormat,
        width: u32,
        height: u32,
        planes: [PlaneMut<'a>; 3],
    ) -> Result<Self> {
        check_dimensions(u64::from(width), u64::from(height))?;
        for (i, p) in planes.iter().enumerate().take(format.plane_count()) {
            check_plane(format, i, width, height, p.data.len(), p.stride)?;
        }
        Ok(ImageViewMut {
            format,
            width,
            height,
            planes,
        })
    }

    /// The pixel format.
    pub const fn format(&self) -> PixelFormat {
        self.format
    }

    /// Width in pixels.
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub const fn height(&self) -> u32 {
        self.height
    }

    /// A read-only view of the same pixels.
    pub fn as_view(&self) -> ImageView<'_> {
        let mut planes = [Plane::default(); 3];
        for (out, p) in planes.iter_mut().zip(self.planes.iter()) {
            *out = Plane::new(p.data, p.stride);
        }
        ImageView {
            format: self.format,
            width: self.width,
            height: self.height,
            planes,
        }
    }

    /// Stride of plane `index`.
    pub fn stride(&self, index: usize) -> usize {
        self.planes.get(index).map_or(0, |p| p.stride)
    }

    /// The bytes of plane `index` (from the first pixel; rows `stride` apart).
    pub(crate) fn plane_data_mut(&mut self, index: usize) -> &mut [u8] {
        match self.planes.get_mut(index) {
            Some(p) => p.data,
            None => &mut [],
        }
    }

    /// Row `y` of plane 0, exactly one row of bytes. Panics if `y >= height`.
    pub fn row_mut(&mut self, y: u32) -> &mut [u8] {
        self.plane_row_mut(0, y as usize)
    }

    pub(crate) fn plane_row_mut(&mut self, index: usize, y: usize) -> &mut [u8] {
        let g = self
            .format
            .plane_geometry(index, self.width, self.height)
            .expect("plane index checked by caller");
        let p = &mut self.planes[index];
        let start = y * p.stride;
        &mut p.data[start..start + g.row_bytes()]
    }

    /// Iterates over the rows of plane `index`, each exactly one row of bytes.
    pub(crate) fn plane_rows_mut(&mut self, index: usize) -> impl Iterator<Item = &mut [u8]> {
        let g = self.format.plane_geometry(index, self.width, self.height);
        let (rows, row_bytes) = g.map_or((0, 0), |g| (g.rows, g.row_bytes()));
        let stride = self.planes.get(index).map_or(1, |p| p.stride.max(1));
        let data: &mut [u8] = match self.planes.get_mut(index) {
            Some(p) => p.data,
            None => &mut [],
        };
        data.chunks_mut(stride)
            .take(rows)
            .map(move |r| &mut r[..row_bytes])
    }

    /// A writable view of the pixels inside `rect` (packed formats, or even offsets for 4:2:0).
    pub fn sub_view_mut(&mut self, rect: Rect) -> Result<ImageViewMut<'_>> {
        let format = self.format;
        let strides = [0, 1, 2].map(|i| self.stride(i));
        let offsets = crop_offsets(format, self.width, self.height, rect, strides)?;
        let mut planes: [PlaneMut<'_>; 3] = Default::default();
        for ((out, p), offset) in planes.iter_mut().zip(self.planes.iter_mut()).zip(offsets) {
            let data: &mut [u8] = p.data;
            *out = PlaneMut::new(data.get_mut(offset..).unwrap_or_default(), p.stride);
        }
        ImageViewMut::from_planes(format, rect.width, rect.height, planes)
    }

    /// Sets every pixel of a packed image to `pixel` (one value per byte of a pixel).
    pub fn fill(&mut self, pixel: &[u8]) -> Result<()> {
        let bpp = packed_bpp("fill", self.format)?;
        if pixel.len() != bpp {
            return Err(Error::InvalidParameter {
                name: "fill",
                reason: "its length must equal the bytes per pixel",
            });
        }
        for row in self.plane_rows_mut(0) {
            for px in row.chunks_exact_mut(bpp) {
                px.copy_from_slice(pixel);
            }
        }
        Ok(())
    }
}

/// Bytes per pixel of a packed format, or the error naming `op`.
pub(crate) fn packed_bpp(op: &'static str, format: PixelFormat) -> Result<usize> {
    format
        .bytes_per_pixel()
        .ok_or(Error::UnsupportedFormat { op, format })
}

/// An owned, tightly packed image (planes contiguous for the YUV formats).
///
/// ```
/// use tensorprep::{Image, PixelFormat};
/// let img = Image::new(PixelFormat::Nv21, 6, 4)?;
/// assert_eq!(img.as_bytes().len(), 6 * 4 + 6 * 2);
/// // Absurd sizes are refused before anything is allocated.
/// assert!(Image::new(PixelFormat::Rgb8, 200_000, 200_000).is_err());
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    format: PixelFormat,
    width: u32,
    height: u32,
    data: Vec<u8>,
}

#[cfg(feature = "alloc")]
impl Image {
    /// A zero-filled image, within [`Limits::DEFAULT`].
    pub fn new(format: PixelFormat, width: u32, height: u32) -> Result<Self> {
        Self::new_with_limits(format, width, height, &Limits::DEFAULT)
    }

    /// A zero-filled image, refusing sizes over `limits` before allocating.
    pub fn new_with_limits(
        format: PixelFormat,
        width: u32,
        height: u32,
        limits: &Limits,
    ) -> Result<Self> {
        limits.check_pixels(u64::from(width), u64::from(height))?;
        let bytes = tight_len(format, width, height).unwrap_or(u64::MAX);
        let len = limits.check_alloc(bytes)?;
        Ok(Image {
            format,
            width,
            height,
            data: crate::buffer::zeroed(len)?,
        })
    }

    /// Takes ownership of tightly packed pixels.
    pub fn from_vec(format: PixelFormat, width: u32, height: u32, data: Vec<u8>) -> Result<Self> {
        ImageView::new(format, width, height, &data)?;
        let needed = tight_len(format, width, height).unwrap_or(u64::MAX);
        if data.len() as u64 != needed {
            return Err(Error::InvalidParameter {
                name: "Image::from_vec",
                reason: "data length must equal the tight image size",
            });
        }
        Ok(Image {
            format,
            width,
            height,
            data,
        })
    }

    /// The pixel format.
    pub const fn format(&self) -> PixelFormat {
        self.format
    }

    /// Width in pixels.
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub const fn height(&self) -> u32 {
        self.height
    }

    /// The pixel bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// The pixel bytes, writable.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// Gives back the pixel bytes.
    pub fn into_vec(self) -> Vec<u8> {
        self.data
    }

    /// A read-only view.
    pub fn view(&self) -> ImageView<'_> {
        ImageView::new(self.format, self.width, self.height, &self.data)
            .expect("an Image always holds a valid tight buffer")
    }

    /// A writable view.
    pub fn view_mut(&mut self) -> ImageViewMut<'_> {
        ImageViewMut::new(self.format, self.width, self.height, &mut self.data)
            .expect("an Image always holds a valid tight buffer")
    }
}
