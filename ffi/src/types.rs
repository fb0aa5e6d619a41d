//! The plain C types: enum values, images, rectangles, tensor descriptions,
//! options. Enum-typed fields and parameters are `uint32_t` in the header and
//! checked against these tables on every call (a C enum can hold any value).

use tensorprep::finish::ChannelOrder;
use tensorprep::geometry::{Flip, Placement, Rotation};
use tensorprep::jpeg::Backend;
use tensorprep::pipeline::{Affine, Geometry};
use tensorprep::resize::{Filter, Resample};
use tensorprep::{DType, ImageView, ImageViewMut, Layout, PixelFormat, Plane, PlaneMut, Rect};

use crate::args::{self, Span, Spans, lookup};
use crate::result::{Failure, Result};

/// Pixel formats. The YUV 4:2:0 formats have chroma at half width and height
/// (rounded up): NV12 is a Y plane then interleaved U,V; NV21 a Y plane then
/// interleaved V,U (Android's camera default); I420 three planes Y, U, V.
/// YUYV, UYVY (YUV 4:2:2) and RGB565 are one plane each. The camera formats
/// (YUV, RGB565) are inputs: they are converted when the plan first reads them.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_pixel_format {
    /// One 8-bit luminance channel.
    Gray8 = 1,
    /// Red, green, blue; 3 bytes per pixel.
    Rgb8 = 2,
    /// Blue, green, red; 3 bytes per pixel (OpenCV's default).
    Bgr8 = 3,
    /// Red, green, blue, alpha; 4 bytes per pixel.
    Rgba8 = 4,
    /// Blue, green, red, alpha; 4 bytes per pixel (Android `Bitmap`, iOS `BGRA`).
    Bgra8 = 5,
    /// YUV 4:2:0: a Y plane, then one interleaved U,V plane. For a W x H
    /// frame: plane 0 is H rows of W bytes (Y); plane 1 is (H + 1) / 2 rows
    /// of 2 * ((W + 1) / 2) bytes (U, V pairs). Each row may be padded to its
    /// plane's stride; a plane's length must be at least
    /// stride * (rows - 1) + the bytes of one row.
    Nv12 = 6,
    /// YUV 4:2:0: a Y plane, then one interleaved V,U plane (Android's camera
    /// default). Plane sizes as for NV12, with V before U in each pair.
    Nv21 = 7,
    /// YUV 4:2:0: three planes. For a W x H frame: plane 0 is H rows of W
    /// bytes (Y); planes 1 (U) and 2 (V) are (H + 1) / 2 rows of (W + 1) / 2
    /// bytes each. Strides and lengths as for NV12.
    I420 = 8,
    /// YUV 4:2:2 in one plane (YUY2, Linux webcams): each pair of pixels is 4
    /// bytes Y0 U Y1 V sharing one U,V pair. Plane 0 is H rows of
    /// 4 * ((W + 1) / 2) bytes (an odd width uses the first pixel of the last pair).
    Yuyv = 9,
    /// YUV 4:2:2 in one plane: each pair of pixels is 4 bytes U Y0 V Y1.
    /// Sizes as for YUYV.
    Uyvy = 10,
    /// RGB565, 16 bits per pixel (red in the top 5 bits, green 6, blue the low
    /// 5), each pixel's word stored low byte first (Android `RGB_565`, V4L2
    /// `RGBP`, OpenCV's BGR565). Plane 0 is H rows of 2 * W bytes.
    Rgb565Le = 11,
    /// RGB565 with each pixel's word stored high byte first (most SPI camera
    /// modules and displays). Sizes as for RGB565_LE.
    Rgb565Be = 12,
}

pub(crate) const PIXEL_FORMATS: [(u32, PixelFormat); 12] = {
    use tp_pixel_format as F;
    [
        (F::Gray8 as u32, PixelFormat::Gray8),
        (F::Rgb8 as u32, PixelFormat::Rgb8),
        (F::Bgr8 as u32, PixelFormat::Bgr8),
        (F::Rgba8 as u32, PixelFormat::Rgba8),
        (F::Bgra8 as u32, PixelFormat::Bgra8),
        (F::Nv12 as u32, PixelFormat::Nv12),
        (F::Nv21 as u32, PixelFormat::Nv21),
        (F::I420 as u32, PixelFormat::I420),
        (F::Yuyv as u32, PixelFormat::Yuyv),
        (F::Uyvy as u32, PixelFormat::Uyvy),
        (F::Rgb565Le as u32, PixelFormat::Rgb565Le),
        (F::Rgb565Be as u32, PixelFormat::Rgb565Be),
    ]
};

/// Tensor element types.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_dtype {
    /// 32-bit float (`float`).
    F32 = 1,
    /// IEEE half precision, stored as `uint16_t`.
    F16 = 2,
    /// Unsigned 8-bit, quantized.
    U8 = 3,
    /// Signed 8-bit, quantized.
    I8 = 4,
}

pub(crate) const DTYPES: [(u32, DType); 4] = {
    use tp_dtype as D;
    [
        (D::F32 as u32, DType::F32),
        (D::F16 as u32, DType::F16),
        (D::U8 as u32, DType::U8),
        (D::I8 as u32, DType::I8),
    ]
};

/// Tensor layouts (the batch dimension excluded).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_layout {
    /// Planar: channel, row, column (PyTorch, ONNX).
    Chw = 1,
    /// Interleaved: row, column, channel (TFLite, most NHWC engines).
    Hwc = 2,
}

pub(crate) const LAYOUTS: [(u32, Layout); 2] = [
    (tp_layout::Chw as u32, Layout::Chw),
    (tp_layout::Hwc as u32, Layout::Hwc),
];

/// Channel order of a tensor.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_channel_order {
    /// Red, green, blue.
    Rgb = 1,
    /// Blue, green, red (Caffe- and OpenCV-trained models).
    Bgr = 2,
    /// One gray channel.
    Gray = 3,
}

pub(crate) const CHANNEL_ORDERS: [(u32, ChannelOrder); 3] = [
    (tp_channel_order::Rgb as u32, ChannelOrder::Rgb),
    (tp_channel_order::Bgr as u32, ChannelOrder::Bgr),
    (tp_channel_order::Gray as u32, ChannelOrder::Gray),
];

/// Range of YUV samples (BT.601 matrix in both).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_yuv_range {
    /// 0-255 (JFIF, Android camera frames).
    Full = 1,
    /// Y 16-235, U and V 16-240 (video).
    Limited = 2,
}

pub(crate) const YUV_RANGES: [(u32, tensorprep::color::YuvRange); 2] = [
    (tp_yuv_range::Full as u32, tensorprep::color::YuvRange::Full),
    (
        tp_yuv_range::Limited as u32,
        tensorprep::color::YuvRange::Limited,
    ),
];

/// Resampling methods: Pillow's filters (antialiased when shrinking,
/// bit-exact with `Image.resize`), OpenCV's `cv::resize` modes and PyTorch's
/// antialiased `interpolate` (torchvision's `Resize` on tensors).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_resample {
    /// Pillow `NEAREST`.
    PillowNearest = 1,
    /// Pillow `BOX`.
    PillowBox = 2,
    /// Pillow `BILINEAR` (torchvision's default).
    PillowBilinear = 3,
    /// Pillow `HAMMING`.
    PillowHamming = 4,
    /// Pillow `BICUBIC`.
    PillowBicubic = 5,
    /// Pillow `LANCZOS`.
    PillowLanczos = 6,
    /// OpenCV `INTER_LINEAR`.
    OpencvLinear = 7,
    /// OpenCV `INTER_AREA`.
    OpencvArea = 8,
    /// PyTorch `interpolate(mode="bilinear", antialias=True)` on uint8
    /// (torchvision's `Resize` on tensors).
    TorchBilinear = 9,
    /// PyTorch `interpolate(mode="bicubic", antialias=True)` on uint8.
    TorchBicubic = 10,
    /// PyTorch `interpolate(mode="bilinear", antialias=True)` on float32,
    /// clamped and rounded (torchvision on CPUs without PyTorch's AVX2 kernel).
    TorchFloatBilinear = 11,
    /// PyTorch `interpolate(mode="bicubic", antialias=True)` on float32, clamped and rounded.
    TorchFloatBicubic = 12,
    /// libyuv `ARGBScale(..., kFilterBilinear)`, `ScalePlane` for gray (TFLite
    /// Task Library, MediaPipe).
    LibyuvBilinear = 13,
    /// PyTorch `interpolate(mode="nearest")` on uint8 (torchvision's
    /// `Resize(interpolation=NEAREST)` on tensors).
    TorchNearest = 14,
    /// PyTorch `interpolate(mode="nearest-exact")` on uint8 (what the Hugging
    /// Face processors' torchvision backend runs for NEAREST).
    TorchNearestExact = 15,
    /// The `fast_image_resize` crate's nearest sampling: not exact to any
    /// Python library, chosen for speed (as are the five below).
    FastImageResizeNearest = 16,
    /// `fast_image_resize`'s box convolution.
    FastImageResizeBox = 17,
    /// `fast_image_resize`'s bilinear convolution (antialiased when shrinking).
    FastImageResizeBilinear = 18,
    /// `fast_image_resize`'s Hamming convolution.
    FastImageResizeHamming = 19,
    /// `fast_image_resize`'s Catmull-Rom convolution (Pillow's bicubic kernel).
    FastImageResizeBicubic = 20,
    /// `fast_image_resize`'s Lanczos-3 convolution.
    FastImageResizeLanczos = 21,
}

pub(crate) const RESAMPLES: [(u32, Resample); Resample::ALL.len()] = {
    use tp_resample as R;
    [
        (R::PillowNearest as u32, Resample::Pillow(Filter::Nearest)),
        (R::PillowBox as u32, Resample::Pillow(Filter::Box)),
        (R::PillowBilinear as u32, Resample::Pillow(Filter::Bilinear)),
        (R::PillowHamming as u32, Resample::Pillow(Filter::Hamming)),
        (R::PillowBicubic as u32, Resample::Pillow(Filter::Bicubic)),
        (R::PillowLanczos as u32, Resample::Pillow(Filter::Lanczos3)),
        (R::OpencvLinear as u32, Resample::OpenCvLinear),
        (R::OpencvArea as u32, Resample::OpenCvArea),
        (R::TorchBilinear as u32, Resample::Torch(Filter::Bilinear)),
        (R::TorchBicubic as u32, Resample::Torch(Filter::Bicubic)),
        (
            R::TorchFloatBilinear as u32,
            Resample::TorchFloat(Filter::Bilinear),
        ),
        (
            R::TorchFloatBicubic as u32,
            Resample::TorchFloat(Filter::Bicubic),
        ),
        (R::LibyuvBilinear as u32, Resample::LibyuvBilinear),
        (R::TorchNearest as u32, Resample::Torch(Filter::Nearest)),
        (R::TorchNearestExact as u32, Resample::TorchNearestExact),
        (
            R::FastImageResizeNearest as u32,
            Resample::FastImageResize(Filter::Nearest),
        ),
        (
            R::FastImageResizeBox as u32,
            Resample::FastImageResize(Filter::Box),
        ),
        (
            R::FastImageResizeBilinear as u32,
            Resample::FastImageResize(Filter::Bilinear),
        ),
        (
            R::FastImageResizeHamming as u32,
            Resample::FastImageResize(Filter::Hamming),
        ),
        (
            R::FastImageResizeBicubic as u32,
            Resample::FastImageResize(Filter::Bicubic),
        ),
        (
            R::FastImageResizeLanczos as u32,
            Resample::FastImageResize(Filter::Lanczos3),
        ),
    ]
};

/// Which of transformers' implementations of an image processor a Hugging
/// Face graph reproduces (`tp_graph_from_hugging_face_backend`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_hf_backend {
    /// The torchvision backend, transformers' default, as current PyTorch
    /// runs it on AVX2, AVX-512 and ARM CPUs: BILINEAR and BICUBIC on uint8.
    Torchvision = 1,
    /// The old name of `TP_HF_BACKEND_TORCHVISION` (the uint8 resize, from
    /// when the default was the float32 one): the same graph.
    TorchvisionAvx2 = 2,
    /// The PIL backend (`...ImageProcessorPil`): Pillow's resize.
    Pil = 3,
    /// The torchvision backend where torchvision resizes BILINEAR through
    /// float32: AVX-512 CPUs up to torch 2.8 (torchvision 0.23), ARM up to
    /// torch 2.11 (0.26), x86 CPUs without AVX2. BICUBIC stays on uint8.
    TorchvisionFloat32 = 4,
}

/// Mirror axes.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_flip_axis {
    /// Left-right.
    Horizontal = 1,
    /// Top-bottom.
    Vertical = 2,
    /// Both (a half turn).
    Both = 3,
}

pub(crate) const FLIPS: [(u32, Flip); 3] = [
    (tp_flip_axis::Horizontal as u32, Flip::Horizontal),
    (tp_flip_axis::Vertical as u32, Flip::Vertical),
    (tp_flip_axis::Both as u32, Flip::Both),
];

/// Clockwise rotations.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_rotation {
    /// 90 degrees clockwise.
    Cw90 = 1,
    /// 180 degrees.
    Cw180 = 2,
    /// 270 degrees clockwise (90 counter-clockwise).
    Cw270 = 3,
}

pub(crate) const ROTATIONS: [(u32, Rotation); 3] = [
    (tp_rotation::Cw90 as u32, Rotation::Cw90),
    (tp_rotation::Cw180 as u32, Rotation::Cw180),
    (tp_rotation::Cw270 as u32, Rotation::Cw270),
];

/// Where an image goes on a larger canvas.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_placement {
    /// Centred; an odd leftover pixel goes right or bottom.
    Center = 1,
    /// Top-left corner; all padding right and bottom.
    TopLeft = 2,
}

pub(crate) const PLACEMENTS: [(u32, Placement); 2] = [
    (tp_placement::Center as u32, Placement::Center),
    (tp_placement::TopLeft as u32, Placement::TopLeft),
];

/// JPEG decoders.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_decoder {
    /// The graph's own decoder if this build has it, otherwise zune-jpeg (for
    /// eager decoding: the best this build has, libjpeg-turbo first).
    Auto = 0,
    /// zune-jpeg (pure Rust, always built in).
    Zune = 1,
    /// libjpeg-turbo, Pillow's decoder (the `turbojpeg` Cargo feature).
    LibjpegTurbo = 2,
}

pub(crate) const DECODERS: [(u32, Option<Backend>); 3] = [
    (tp_decoder::Auto as u32, None),
    (tp_decoder::Zune as u32, Some(Backend::Zune)),
    (tp_decoder::LibjpegTurbo as u32, Some(Backend::LibjpegTurbo)),
];

/// The decoder a `tp_decoder` value selects; `graph` is what the graph asks for.
pub(crate) fn decoder(value: u32, graph: Option<Backend>) -> Result<Backend> {
    let chosen = match lookup(&DECODERS, value, "decoder")? {
        Some(b) => b,
        None => match graph {
            Some(b) if b.is_available() => b,
            Some(_) => Backend::Zune,
            None => Backend::available().last().unwrap_or(Backend::Zune),
        },
    };
    if !chosen.is_available() {
        return Err(Failure::new(
            crate::result::tp_result::NotBuilt,
            "the libjpeg-turbo decoder is not in this build (Cargo feature `turbojpeg`)",
        ));
    }
    Ok(chosen)
}

/// One plane of an image: its bytes and row stride.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_plane {
    /// The first byte of the first row.
    pub data: *const u8,
    /// Bytes readable from `data` (at least `stride * (rows - 1) + row bytes`).
    pub len: usize,
    /// Bytes from one row's start to the next; 0 for tightly packed rows.
    pub stride: usize,
}

/// A read-only image: format, size and planes (one for packed formats, two
/// for NV12/NV21, three for I420; the rest are ignored). Android's
/// `YUV_420_888` and iOS's `CVPixelBuffer` planes map onto it directly.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_image {
    /// A `tp_pixel_format`.
    pub format: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The planes, in the format's order.
    pub planes: [tp_plane; 3],
}

/// A read-only float32 image (a depth map, HDR pixels, a model's float
/// output): `channels` interleaved samples per pixel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_float_image {
    /// The first sample of the first row (aligned for `float`).
    pub data: *const f32,
    /// Samples readable from `data`.
    pub len: usize,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Samples per pixel (1 to 16).
    pub channels: u32,
    /// Samples from one row's start to the next; 0 for tightly packed rows.
    pub stride: usize,
}

/// A writable float32 image, laid out as `tp_float_image`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_float_image_mut {
    /// The first sample of the first row (aligned for `float`).
    pub data: *mut f32,
    /// Samples writable from `data`.
    pub len: usize,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Samples per pixel (1 to 16).
    pub channels: u32,
    /// Samples from one row's start to the next; 0 for tightly packed rows.
    pub stride: usize,
}

/// One plane of a writable image.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_plane_mut {
    /// The first byte of the first row.
    pub data: *mut u8,
    /// Bytes writable from `data`.
    pub len: usize,
    /// Bytes from one row's start to the next; 0 for tightly packed rows.
    pub stride: usize,
}

/// A writable image (a destination), laid out as `tp_image`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_image_mut {
    /// A `tp_pixel_format`.
    pub format: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The planes, in the format's order.
    pub planes: [tp_plane_mut; 3],
}

/// A byte buffer (one encoded image of a batch).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_bytes {
    /// The first byte.
    pub data: *const u8,
    /// Its length.
    pub len: usize,
}

/// A rectangle in pixels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tp_rect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl From<Rect> for tp_rect {
    fn from(r: Rect) -> tp_rect {
        tp_rect {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        }
    }
}

impl From<tp_rect> for Rect {
    fn from(r: tp_rect) -> Rect {
        Rect::new(r.x, r.y, r.width, r.height)
    }
}

/// What a plan's output tensor is.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tp_tensor_info {
    /// A `tp_dtype`.
    pub dtype: u32,
    /// A `tp_layout`.
    pub layout: u32,
    /// A `tp_channel_order`.
    pub channel_order: u32,
    /// `{C, H, W}` or `{H, W, C}` without the batch dimension; all 0 when the
    /// size depends on the input (a JPEG plan without a final crop or canvas:
    /// ask `tp_plan_output_info_for_jpeg`).
    pub shape: [usize; 3],
    /// Elements of one image's tensor (0 when unknown).
    pub elements: usize,
    /// Bytes of one image's tensor (0 when unknown).
    pub bytes: usize,
}

/// How a run moved and scaled the image: the side outputs needed to map a
/// detection back to the input. Coordinates are continuous: pixel (i, j)
/// covers [i, i+1) x [j, j+1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct tp_geometry {
    /// Input width (after decoding and EXIF orientation).
    pub input_width: u32,
    /// Input height.
    pub input_height: u32,
    /// The output tensor's width.
    pub output_width: u32,
    /// The output tensor's height.
    pub output_height: u32,
    /// Input to output coordinates, row-major `{a, b, c, d, e, f}`:
    /// `x' = a x + b y + c`, `y' = d x + e y + f`.
    pub to_output: [f64; 6],
    /// Output pixels per input pixel along the output's x.
    pub scale_x: f64,
    /// Output pixels per input pixel along the output's y.
    pub scale_y: f64,
    /// Where the input's origin lands in the output (a letterbox's left padding).
    pub offset_x: f64,
    /// Where the input's origin lands in the output (a letterbox's top padding).
    pub offset_y: f64,
}

impl From<Geometry> for tp_geometry {
    fn from(g: Geometry) -> tp_geometry {
        let (scale_x, scale_y) = g.scale();
        let (offset_x, offset_y) = g.offset();
        tp_geometry {
            input_width: g.input.0,
            input_height: g.input.1,
            output_width: g.output.0,
            output_height: g.output.1,
            to_output: g.to_output.m,
            scale_x,
            scale_y,
            offset_x,
            offset_y,
        }
    }
}

impl tp_geometry {
    /// The core geometry, refusing a map that cannot be inverted.
    pub(crate) fn to_core(self) -> Result<Geometry> {
        let to_output = Affine { m: self.to_output };
        if !self.to_output.iter().all(|v| v.is_finite()) || to_output.inverse().is_none() {
            return Err(Failure::invalid(
                "`geometry.to_output` is not an invertible map (not from a run?)",
            ));
        }
        Ok(Geometry {
            input: (self.input_width, self.input_height),
            output: (self.output_width, self.output_height),
            to_output,
        })
    }
}

/// An image file format, as found from a file's leading bytes. Only
/// JPEG, PNG and WebP are decoded; the others are named in errors.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_image_format {
    /// No known signature.
    Unknown = 0,
    /// JPEG.
    Jpeg = 1,
    /// PNG (APNG: its first frame).
    Png = 2,
    /// WebP (lossy, lossless; an animation's first frame).
    Webp = 3,
    /// GIF (not decoded).
    Gif = 4,
    /// Another recognised format that is not decoded (BMP, TIFF, AVIF, HEIF,
    /// JPEG XL, JPEG 2000, ...); the error message names it.
    Other = 99,
}

impl From<Option<tensorprep::decode::ImageFormat>> for tp_image_format {
    fn from(f: Option<tensorprep::decode::ImageFormat>) -> tp_image_format {
        use tensorprep::decode::ImageFormat as F;
        match f {
            None => tp_image_format::Unknown,
            Some(F::Jpeg) => tp_image_format::Jpeg,
            Some(F::Png) => tp_image_format::Png,
            Some(F::WebP) => tp_image_format::Webp,
            Some(F::Gif) => tp_image_format::Gif,
            Some(_) => tp_image_format::Other,
        }
    }
}

/// What an image file's headers say (any supported format).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tp_image_info {
    /// A `tp_image_format`.
    pub format: u32,
    /// Width of the decoded image (after EXIF orientation, if applied).
    pub width: u32,
    /// Height of the decoded image.
    pub height: u32,
    /// Width as stored.
    pub stored_width: u32,
    /// Height as stored.
    pub stored_height: u32,
    /// The EXIF orientation tag, 1-8 (1 when absent).
    pub exif_orientation: u32,
    /// 1 when the file carries alpha (an alpha channel, a PNG `tRNS` chunk), else 0.
    pub has_alpha: u32,
}

impl From<tensorprep::decode::ImageInfo> for tp_image_info {
    fn from(i: tensorprep::decode::ImageInfo) -> tp_image_info {
        tp_image_info {
            format: tp_image_format::from(Some(i.format)) as u32,
            width: i.width,
            height: i.height,
            stored_width: i.stored_width,
            stored_height: i.stored_height,
            exif_orientation: u32::from(i.exif_orientation),
            has_alpha: u32::from(i.has_alpha),
        }
    }
}

/// What a JPEG's headers say.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tp_jpeg_info {
    /// Width of the decoded image (after EXIF orientation, if applied).
    pub width: u32,
    /// Height of the decoded image.
    pub height: u32,
    /// Width as stored.
    pub stored_width: u32,
    /// Height as stored.
    pub stored_height: u32,
    /// Colour components in the file: 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK.
    pub components: u32,
    /// The EXIF orientation tag, 1-8 (1 when absent).
    pub exif_orientation: u32,
}

impl From<tensorprep::jpeg::JpegInfo> for tp_jpeg_info {
    fn from(i: tensorprep::jpeg::JpegInfo) -> tp_jpeg_info {
        tp_jpeg_info {
            width: i.width,
            height: i.height,
            stored_width: i.stored_width,
            stored_height: i.stored_height,
            components: u32::from(i.components),
            exif_orientation: u32::from(i.exif_orientation),
        }
    }
}

/// A view of a C image; the spans of its planes for overlap checks.
///
/// # Safety
///
/// Each used plane's `data` must be valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn view<'a>(
    img: &tp_image,
    name: &'static str,
) -> Result<(ImageView<'a>, Spans)> {
    let format = lookup(&PIXEL_FORMATS, img.format, "format")?;
    let mut planes = [Plane::default(); 3];
    let mut spans = Spans::default();
    for (i, p) in img.planes.iter().enumerate().take(format.plane_count()) {
        if p.data.is_null() && p.len != 0 {
            return Err(plane_is_null(name, i));
        }
        // SAFETY: the caller guarantees the plane's bytes are readable.
        let data = unsafe { args::bytes(p.data, p.len, name) }?;
        planes[i] = Plane::new(data, stride(format, i, img.width, img.height, p.stride));
        spans.push(Span::of(data, name));
    }
    let n = format.plane_count();
    Ok((
        ImageView::from_planes(format, img.width, img.height, &planes[..n])?,
        spans,
    ))
}

/// A writable view of a C image. Its planes must not overlap each other.
///
/// # Safety
///
/// Each used plane's `data` must be valid for writes of `len` bytes for `'a`,
/// and nothing else may access them meanwhile (checked against `others`).
pub(crate) unsafe fn view_mut<'a>(
    img: &tp_image_mut,
    name: &'static str,
    others: &[Span],
) -> Result<ImageViewMut<'a>> {
    let format = lookup(&PIXEL_FORMATS, img.format, "format")?;
    let used = &img.planes[..format.plane_count()];
    // Overlaps first: two `&mut` slices over the same bytes may not even exist.
    let mut spans = Spans::default();
    for p in used {
        spans.push(Span::raw(p.data, p.len, name));
    }
    args::no_overlap(spans.as_slice(), others)?;
    let mut planes: [PlaneMut<'a>; 3] = Default::default();
    for (i, p) in used.iter().enumerate() {
        if p.data.is_null() && p.len != 0 {
            return Err(plane_is_null(name, i));
        }
        // SAFETY: the caller guarantees the bytes are writable; they overlap
        // no other plane or input (checked above).
        let data = unsafe { args::bytes_mut(p.data, p.len, name) }?;
        planes[i] = PlaneMut::new(data, stride(format, i, img.width, img.height, p.stride));
    }
    Ok(ImageViewMut::from_planes(
        format, img.width, img.height, planes,
    )?)
}

/// A plane's stride: as given, or the tight row length for 0.
/// A used plane whose `data` is NULL, named by its index (the message is
/// made only on this error path).
fn plane_is_null(image: &str, plane: usize) -> Failure {
    Failure::null(&format!("{image}.planes[{plane}].data"))
}

fn stride(format: PixelFormat, plane: usize, width: u32, height: u32, given: usize) -> usize {
    match (given, format.plane_geometry(plane, width, height)) {
        (0, Some(g)) => g.row_bytes(),
        _ => given,
    }
}
