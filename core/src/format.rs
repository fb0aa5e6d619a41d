//! Pixel formats and their plane geometry.

/// How the pixels of an image are laid out in memory.
///
/// The 8-bit formats (`Gray8`, `Rgb8`, `Bgr8`, `Rgba8`, `Bgra8`) hold one
/// interleaved plane with a byte per channel: every op works in them.
///
/// The camera formats are inputs, converted to one of those as they are first
/// read ([`crate::color`] gives the equations):
/// - 8-bit YUV 4:2:0 with chroma at half width and half height (rounded up):
///   `Nv12` (Y plane, then interleaved U,V), `Nv21` (Y, then interleaved V,U —
///   Android's camera default) and `I420` (Y, U, V planes). Each plane has its
///   own row stride, as Android `YUV_420_888` and iOS `CVPixelBuffer` deliver them.
/// - 8-bit YUV 4:2:2 in one plane, two pixels per 4-byte group sharing one U,V
///   pair (chroma at half width, rounded up): `Yuyv` (Y0 U Y1 V, also called
///   YUY2: Linux webcams, V4L2 `YUYV`) and `Uyvy` (U Y0 V Y1).
/// - RGB565, 16 bits per pixel with red in the top 5 bits, green in the middle
///   6 and blue in the low 5 (the display and camera format of microcontroller
///   boards): `Rgb565Le` stores each pixel's 16-bit word little-endian (low byte
///   first: Android `RGB_565`, V4L2 `RGBP`, OpenCV's `BGR565`), `Rgb565Be`
///   big-endian (high byte first, as most SPI camera modules and LCDs send it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PixelFormat {
    /// One 8-bit luminance channel.
    Gray8,
    /// Red, green, blue; 3 bytes per pixel.
    Rgb8,
    /// Blue, green, red; 3 bytes per pixel (OpenCV's default).
    Bgr8,
    /// Red, green, blue, alpha; 4 bytes per pixel.
    Rgba8,
    /// Blue, green, red, alpha; 4 bytes per pixel.
    Bgra8,
    /// YUV 4:2:0, Y plane then one interleaved U,V plane.
    Nv12,
    /// YUV 4:2:0, Y plane then one interleaved V,U plane.
    Nv21,
    /// YUV 4:2:0, three planes Y, U, V.
    I420,
    /// YUV 4:2:2 in one plane: bytes Y0 U Y1 V per pair of pixels (YUY2).
    Yuyv,
    /// YUV 4:2:2 in one plane: bytes U Y0 V Y1 per pair of pixels.
    Uyvy,
    /// RGB565, each 16-bit pixel stored low byte first.
    Rgb565Le,
    /// RGB565, each 16-bit pixel stored high byte first.
    Rgb565Be,
}

impl PixelFormat {
    /// Every format, in declaration order.
    pub const ALL: [PixelFormat; 12] = [
        PixelFormat::Gray8,
        PixelFormat::Rgb8,
        PixelFormat::Bgr8,
        PixelFormat::Rgba8,
        PixelFormat::Bgra8,
        PixelFormat::Nv12,
        PixelFormat::Nv21,
        PixelFormat::I420,
        PixelFormat::Yuyv,
        PixelFormat::Uyvy,
        PixelFormat::Rgb565Le,
        PixelFormat::Rgb565Be,
    ];

    /// The format's short lowercase name (`"rgb"`, `"nv21"`, `"rgb565le"`), as
    /// the command-line tool and the Python package spell it.
    ///
    /// ```
    /// use tensorprep::PixelFormat;
    /// assert_eq!(PixelFormat::Nv21.name(), "nv21");
    /// assert_eq!(PixelFormat::from_name("RGB565LE"), Some(PixelFormat::Rgb565Le));
    /// assert_eq!(PixelFormat::from_name("grey"), Some(PixelFormat::Gray8));
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            PixelFormat::Gray8 => "gray",
            PixelFormat::Rgb8 => "rgb",
            PixelFormat::Bgr8 => "bgr",
            PixelFormat::Rgba8 => "rgba",
            PixelFormat::Bgra8 => "bgra",
            PixelFormat::Nv12 => "nv12",
            PixelFormat::Nv21 => "nv21",
            PixelFormat::I420 => "i420",
            PixelFormat::Yuyv => "yuyv",
            PixelFormat::Uyvy => "uyvy",
            PixelFormat::Rgb565Le => "rgb565le",
            PixelFormat::Rgb565Be => "rgb565be",
        }
    }

    /// The format named `name` ([`PixelFormat::name`], any case; `"grey"`,
    /// `"l"`, `"yuy2"` and `"rgb565"` (little-endian) are accepted too).
    pub fn from_name(name: &str) -> Option<PixelFormat> {
        const ALIASES: [(&str, PixelFormat); 4] = [
            ("grey", PixelFormat::Gray8),
            ("l", PixelFormat::Gray8),
            ("yuy2", PixelFormat::Yuyv),
            ("rgb565", PixelFormat::Rgb565Le),
        ];
        PixelFormat::ALL
            .into_iter()
            .map(|f| (f.name(), f))
            .chain(ALIASES)
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| f)
    }

    /// Bytes per pixel of an 8-bit interleaved format (the formats ops work in);
    /// `None` for the camera formats (YUV, RGB565), which are converted when read.
    pub const fn bytes_per_pixel(self) -> Option<usize> {
        match self {
            PixelFormat::Gray8 => Some(1),
            PixelFormat::Rgb8 | PixelFormat::Bgr8 => Some(3),
            PixelFormat::Rgba8 | PixelFormat::Bgra8 => Some(4),
            _ => None,
        }
    }

    /// The 8-bit interleaved format of `channels` per pixel (1, 3 or 4), in
    /// blue-first order when `bgr`: the inverse of
    /// [`bytes_per_pixel`](PixelFormat::bytes_per_pixel), for arrays that
    /// carry only their channel count.
    ///
    /// ```
    /// use tensorprep::PixelFormat;
    ///
    /// assert_eq!(PixelFormat::of_channels(3, true), Some(PixelFormat::Bgr8));
    /// assert_eq!(PixelFormat::of_channels(1, true), Some(PixelFormat::Gray8));
    /// assert_eq!(PixelFormat::of_channels(2, false), None);
    /// ```
    pub const fn of_channels(channels: usize, bgr: bool) -> Option<PixelFormat> {
        match (channels, bgr) {
            (1, _) => Some(PixelFormat::Gray8),
            (3, false) => Some(PixelFormat::Rgb8),
            (3, true) => Some(PixelFormat::Bgr8),
            (4, false) => Some(PixelFormat::Rgba8),
            (4, true) => Some(PixelFormat::Bgra8),
            _ => None,
        }
    }

    /// Whether the format is packed: one interleaved plane (the 8-bit formats,
    /// YUV 4:2:2 and RGB565).
    pub const fn is_packed(self) -> bool {
        self.plane_count() == 1
    }

    /// Whether the format is one of the camera formats converted when read
    /// (YUV 4:2:0, YUV 4:2:2, RGB565) rather than an 8-bit working format.
    pub const fn is_camera(self) -> bool {
        self.bytes_per_pixel().is_none()
    }

    /// The Cargo feature that builds the reading of the format (`None` for the
    /// 8-bit formats and YUV 4:2:0, which are always built).
    ///
    /// ```
    /// use tensorprep::PixelFormat;
    /// assert_eq!(PixelFormat::Nv21.feature(), None);
    /// assert_eq!(PixelFormat::Yuyv.feature(), Some("yuv422"));
    /// ```
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            PixelFormat::Yuyv | PixelFormat::Uyvy => Some("yuv422"),
            PixelFormat::Rgb565Le | PixelFormat::Rgb565Be => Some("rgb565"),
            _ => None,
        }
    }

    /// Whether this build reads the format ([`PixelFormat::feature`] enabled).
    pub const fn is_built(self) -> bool {
        let yuv422 = matches!(self, PixelFormat::Yuyv | PixelFormat::Uyvy);
        let rgb565 = matches!(self, PixelFormat::Rgb565Le | PixelFormat::Rgb565Be);
        (!yuv422 || cfg!(feature = "yuv422")) && (!rgb565 || cfg!(feature = "rgb565"))
    }

    /// [`crate::Error::NotBuilt`] naming the feature if this build does not read the format.
    pub(crate) fn check_built(self) -> crate::Result<()> {
        match self.feature() {
            Some(feature) if !self.is_built() => Err(crate::Error::NotBuilt {
                what: match self {
                    PixelFormat::Yuyv | PixelFormat::Uyvy => "the YUV 4:2:2 input formats",
                    _ => "the RGB565 input formats",
                },
                feature,
            }),
            _ => Ok(()),
        }
    }

    /// Pixels per chroma sample horizontally and vertically: `(2, 2)` for
    /// YUV 4:2:0, `(2, 1)` for YUV 4:2:2, `(1, 1)` otherwise. Crops of a
    /// subsampled image start on multiples of these.
    pub const fn chroma_subsampling(self) -> (u32, u32) {
        match self {
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420 => (2, 2),
            PixelFormat::Yuyv | PixelFormat::Uyvy => (2, 1),
            _ => (1, 1),
        }
    }

    /// Pixels one element of plane `index` covers horizontally and vertically.
    pub(crate) const fn element_pixels(self, index: usize) -> (usize, usize) {
        match (self, index) {
            (PixelFormat::Yuyv | PixelFormat::Uyvy, _) => (2, 1),
            (PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420, 1 | 2) => (2, 2),
            _ => (1, 1),
        }
    }

    /// Number of planes.
    pub const fn plane_count(self) -> usize {
        match self {
            PixelFormat::Nv12 | PixelFormat::Nv21 => 2,
            PixelFormat::I420 => 3,
            _ => 1,
        }
    }

    /// Colour channels a tensor made from this format has (alpha is not counted, YUV gives 3).
    pub const fn color_channels(self) -> usize {
        match self {
            PixelFormat::Gray8 => 1,
            _ => 3,
        }
    }

    /// Byte offsets of red, green and blue inside one packed pixel (gray: all 0).
    /// `None` for the YUV formats.
    pub const fn rgb_offsets(self) -> Option<[usize; 3]> {
        match self {
            PixelFormat::Gray8 => Some([0, 0, 0]),
            PixelFormat::Rgb8 | PixelFormat::Rgba8 => Some([0, 1, 2]),
            PixelFormat::Bgr8 | PixelFormat::Bgra8 => Some([2, 1, 0]),
            _ => None,
        }
    }

    /// Byte offset of alpha inside one packed pixel, if the format has alpha.
    pub const fn alpha_offset(self) -> Option<usize> {
        match self {
            PixelFormat::Rgba8 | PixelFormat::Bgra8 => Some(3),
            _ => None,
        }
    }

    /// Geometry of plane `index` for an image of `width` x `height`:
    /// `(bytes per element, elements per row, rows)`.
    ///
    /// `None` when the plane does not exist.
    pub const fn plane_geometry(
        self,
        index: usize,
        width: u32,
        height: u32,
    ) -> Option<PlaneGeometry> {
        let (w, h) = (width as usize, height as usize);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let g = match (self, index) {
            (PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420, 0) => (1, w, h),
            (PixelFormat::Nv12 | PixelFormat::Nv21, 1) => (2, cw, ch),
            (PixelFormat::I420, 1 | 2) => (1, cw, ch),
            (PixelFormat::Yuyv | PixelFormat::Uyvy, 0) => (4, cw, h),
            (PixelFormat::Rgb565Le | PixelFormat::Rgb565Be, 0) => (2, w, h),
            (_, 0) => match self.bytes_per_pixel() {
                Some(bpp) => (bpp, w, h),
                None => return None,
            },
            _ => return None,
        };
        Some(PlaneGeometry {
            bytes_per_element: g.0,
            elements: g.1,
            rows: g.2,
        })
    }

    /// Whether width and height are halved in planes after the first.
    pub const fn is_yuv420(self) -> bool {
        matches!(
            self,
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420
        )
    }
}

/// Shape of one plane; see [`PixelFormat::plane_geometry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneGeometry {
    /// Bytes per element (a pixel, or an interleaved chroma pair).
    pub bytes_per_element: usize,
    /// Elements per row.
    pub elements: usize,
    /// Number of rows.
    pub rows: usize,
}

impl PlaneGeometry {
    /// Bytes in one row, without padding.
    pub const fn row_bytes(&self) -> usize {
        self.bytes_per_element * self.elements
    }
}
