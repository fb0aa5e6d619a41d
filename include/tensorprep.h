/*
 * tensorprep: images to model-ready tensors (C API).
 *
 * Conventions
 * - Handles (tp_graph, tp_plan, tp_run_state) are opaque; each is made by a
 *   constructor and released with its _free function. Freeing NULL is a no-op.
 * - Every fallible function returns a tp_result: TP_RESULT_OK (0) or an
 *   error code. tp_last_error_message() copies the calling thread's last
 *   error message; tp_result_name() names a code.
 * - Outputs (handles, structs, counts) are written only on success. Caller
 *   buffers are (pointer, length) pairs; lengths are checked, and a buffer a
 *   call writes must not overlap one it reads.
 * - Enum-typed values are passed as uint32_t and checked: an unknown value is
 *   TP_RESULT_INVALID_PARAMETER. In option structs, 0 means the default.
 * - No call aborts the process: panics inside the library are caught and
 *   returned as TP_RESULT_PANIC.
 *
 * Threads
 * - A tp_graph and a tp_plan are immutable once made: any number of threads
 *   may use one at the same time (compile, run, verify).
 * - A tp_run_state belongs to one thread at a time; give each thread its own
 *   (it may serve several plans in turn). A call made while another is using
 *   the same state returns TP_RESULT_STATE_BUSY instead of racing.
 * - The last-error message is kept per thread.
 *
 * Generated from ffi/ by tools/headergen (cbindgen 0.29.4); do not edit.
 */

#ifndef TENSORPREP_H
#define TENSORPREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * The major version of the header (compile time; `tp_version()` gives the library's).
 */
#define TP_VERSION_MAJOR 0

/**
 * The minor version of the header. Before 1.0 each minor version is its own ABI.
 */
#define TP_VERSION_MINOR 1

/**
 * The patch version of the header.
 */
#define TP_VERSION_PATCH 0

/**
 * `MAJOR * 10000 + MINOR * 100 + PATCH`, for `#if TP_VERSION_NUMBER >= 100`.
 */
#define TP_VERSION_NUMBER (((TP_VERSION_MAJOR * 10000) + (TP_VERSION_MINOR * 100)) + TP_VERSION_PATCH)

/**
 * `tp_decode_options.flags`: apply the EXIF orientation tag (Pillow's
 * `ImageOps.exif_transpose`); without it pixels come as stored, as
 * torchvision's loader reads them.
 */
#define TP_DECODE_APPLY_EXIF_ORIENTATION 1

/**
 * `tp_decode_options.flags`: decode damaged files as far as possible
 * (missing parts gray) instead of failing.
 */
#define TP_DECODE_LENIENT 2

/**
 * `tp_plan_options_ex.flags`: apply the EXIF orientation tag of encoded
 * images (Pillow's `ImageOps.exif_transpose`) instead of the graph's choice.
 */
#define TP_PLAN_APPLY_EXIF_ORIENTATION 1

/**
 * `tp_plan_options_ex.flags`: ignore the EXIF orientation tag (pixels as
 * stored, as torchvision's loader reads them) instead of the graph's choice.
 */
#define TP_PLAN_IGNORE_EXIF_ORIENTATION 2

/**
 * `tp_plan_options_ex.flags`: decode damaged files as far as possible
 * (missing parts filled) instead of failing.
 */
#define TP_PLAN_LENIENT 4

/**
 * What a call did. `TP_RESULT_OK` is 0; every other value is an error whose
 * message `tp_last_error_message` returns.
 *
 * Values are grouped by hundreds (the API itself, images and tensors, JPEG,
 * graphs, other image formats) and are never reused: a code removed in a later version leaves a
 * hole.
 */
enum tp_result
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Success.
     */
    TP_RESULT_OK = 0,
    /**
     * A bug in tensorprep panicked; the call was abandoned and its outputs
     * left unwritten. The library stays usable.
     */
    TP_RESULT_PANIC = 1,
    /**
     * A required pointer was NULL.
     */
    TP_RESULT_NULL_PARAMETER = 2,
    /**
     * An argument is out of range: an unknown enum value or flag bit, a
     * misaligned or overlapping buffer, a value the op refuses.
     */
    TP_RESULT_INVALID_PARAMETER = 3,
    /**
     * This build of the library leaves out the feature the call needs
     * (the message names the Cargo feature).
     */
    TP_RESULT_NOT_BUILT = 4,
    /**
     * A string argument is not valid UTF-8.
     */
    TP_RESULT_INVALID_UTF8 = 5,
    /**
     * Reading a file failed.
     */
    TP_RESULT_IO = 6,
    /**
     * A graph's self-test produced a different tensor than the one recorded.
     */
    TP_RESULT_SELF_TEST_FAILED = 7,
    /**
     * A `tp_run_state` was used by two calls at once (two threads): the
     * second is refused. Give each thread its own state.
     */
    TP_RESULT_STATE_BUSY = 8,
    /**
     * An error this version of the C API has no code for; the message says what.
     */
    TP_RESULT_OTHER = 99,
    /**
     * Width or height is zero or above 262 144.
     */
    TP_RESULT_INVALID_DIMENSIONS = 100,
    /**
     * The image has more pixels than the limit allows.
     */
    TP_RESULT_TOO_MANY_PIXELS = 101,
    /**
     * An allocation would exceed the limit.
     */
    TP_RESULT_ALLOCATION_TOO_LARGE = 102,
    /**
     * A row stride is smaller than one row of pixels.
     */
    TP_RESULT_STRIDE_TOO_SMALL = 103,
    /**
     * A pixel buffer, tensor buffer or message buffer is shorter than needed.
     */
    TP_RESULT_BUFFER_TOO_SMALL = 104,
    /**
     * A tensor buffer does not hold the number of elements the output needs.
     */
    TP_RESULT_TENSOR_SIZE = 105,
    /**
     * The number of planes does not match the pixel format.
     */
    TP_RESULT_WRONG_PLANE_COUNT = 106,
    /**
     * The op does not accept this pixel format.
     */
    TP_RESULT_UNSUPPORTED_FORMAT = 107,
    /**
     * Source and destination formats must agree (or the plan was compiled
     * for another format).
     */
    TP_RESULT_FORMAT_MISMATCH = 108,
    /**
     * The destination (or the plan's input) has another size.
     */
    TP_RESULT_SIZE_MISMATCH = 109,
    /**
     * A rectangle does not lie inside the image.
     */
    TP_RESULT_RECT_OUT_OF_BOUNDS = 110,
    /**
     * A crop of a chroma-subsampled image must start on a chroma sample
     * (even x and y for YUV 4:2:0, even x for YUV 4:2:2).
     */
    TP_RESULT_UNALIGNED_CROP = 111,
    /**
     * The system could not provide memory the limits allow; nothing was aborted.
     */
    TP_RESULT_OUT_OF_MEMORY = 112,
    /**
     * The buffers a plan needs for one input total more than the limit.
     */
    TP_RESULT_PLAN_TOO_LARGE = 113,
    /**
     * The memory given for a plan built without an allocator is too small.
     */
    TP_RESULT_ARENA_TOO_SMALL = 114,
    /**
     * The data ends before the image does.
     */
    TP_RESULT_JPEG_TRUNCATED = 200,
    /**
     * Not a JPEG, or its headers or entropy-coded data are corrupt.
     */
    TP_RESULT_JPEG_CORRUPT = 201,
    /**
     * A valid JPEG using a feature the decoder lacks (arithmetic coding, 12-bit...).
     */
    TP_RESULT_JPEG_UNSUPPORTED = 202,
    /**
     * A colour space that cannot be turned into the requested format.
     */
    TP_RESULT_JPEG_UNSUPPORTED_COLOR_SPACE = 203,
    /**
     * A JPEG with more scans than the decoders accept (256): a likely
     * decompression bomb.
     */
    TP_RESULT_JPEG_TOO_MANY_SCANS = 204,
    /**
     * The bytes are not a tensorprep graph (no magic bytes).
     */
    TP_RESULT_GRAPH_NOT_A_GRAPH = 300,
    /**
     * The graph file is larger than 4 MiB.
     */
    TP_RESULT_GRAPH_TOO_LARGE = 301,
    /**
     * The graph's encoding is broken (truncated, bad checksum, bad lengths).
     */
    TP_RESULT_GRAPH_MALFORMED = 302,
    /**
     * The graph needs a newer tensorprep.
     */
    TP_RESULT_GRAPH_NEEDS_NEWER_READER = 303,
    /**
     * The graph uses features this tensorprep does not implement.
     */
    TP_RESULT_GRAPH_MISSING_FEATURES = 304,
    /**
     * The graph has an op this tensorprep does not know.
     */
    TP_RESULT_GRAPH_UNKNOWN_OP = 305,
    /**
     * A parameter of the graph is missing, out of range or inconsistent.
     */
    TP_RESULT_GRAPH_INVALID = 306,
    /**
     * An importer could not read its configuration.
     */
    TP_RESULT_GRAPH_IMPORT = 307,
    /**
     * No preset has this name.
     */
    TP_RESULT_UNKNOWN_PRESET = 308,
    /**
     * The model holds no graph (no sidecar file, no embedded entry): apps
     * fall back to a preset on this code.
     */
    TP_RESULT_GRAPH_NOT_FOUND = 309,
    /**
     * The graph's output does not fit the model's input (shape or type).
     */
    TP_RESULT_GRAPH_DOES_NOT_FIT = 310,
    /**
     * The bytes are in no image format this build decodes (the message
     * names the format found, if any, and the formats supported).
     */
    TP_RESULT_UNSUPPORTED_IMAGE_FORMAT = 400,
    /**
     * A PNG or WebP file ends before the image does (the message names the format).
     */
    TP_RESULT_IMAGE_TRUNCATED = 401,
    /**
     * A PNG or WebP file is corrupt.
     */
    TP_RESULT_IMAGE_CORRUPT = 402,
    /**
     * A PNG or WebP file uses a feature the decoder lacks.
     */
    TP_RESULT_IMAGE_UNSUPPORTED = 403,
    /**
     * The header claims more pixels than the file's data can describe (a
     * truncated or crafted file), refused before allocating.
     */
    TP_RESULT_IMPLAUSIBLE_SIZE = 404,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_result tp_result;
#else
typedef uint32_t tp_result;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Pixel formats. The YUV 4:2:0 formats have chroma at half width and height
 * (rounded up): NV12 is a Y plane then interleaved U,V; NV21 a Y plane then
 * interleaved V,U (Android's camera default); I420 three planes Y, U, V.
 * YUYV, UYVY (YUV 4:2:2) and RGB565 are one plane each. The camera formats
 * (YUV, RGB565) are inputs: they are converted when the plan first reads them.
 */
enum tp_pixel_format
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * One 8-bit luminance channel.
     */
    TP_PIXEL_FORMAT_GRAY8 = 1,
    /**
     * Red, green, blue; 3 bytes per pixel.
     */
    TP_PIXEL_FORMAT_RGB8 = 2,
    /**
     * Blue, green, red; 3 bytes per pixel (OpenCV's default).
     */
    TP_PIXEL_FORMAT_BGR8 = 3,
    /**
     * Red, green, blue, alpha; 4 bytes per pixel.
     */
    TP_PIXEL_FORMAT_RGBA8 = 4,
    /**
     * Blue, green, red, alpha; 4 bytes per pixel (Android `Bitmap`, iOS `BGRA`).
     */
    TP_PIXEL_FORMAT_BGRA8 = 5,
    /**
     * YUV 4:2:0: a Y plane, then one interleaved U,V plane. For a W x H
     * frame: plane 0 is H rows of W bytes (Y); plane 1 is (H + 1) / 2 rows
     * of 2 * ((W + 1) / 2) bytes (U, V pairs). Each row may be padded to its
     * plane's stride; a plane's length must be at least
     * stride * (rows - 1) + the bytes of one row.
     */
    TP_PIXEL_FORMAT_NV12 = 6,
    /**
     * YUV 4:2:0: a Y plane, then one interleaved V,U plane (Android's camera
     * default). Plane sizes as for NV12, with V before U in each pair.
     */
    TP_PIXEL_FORMAT_NV21 = 7,
    /**
     * YUV 4:2:0: three planes. For a W x H frame: plane 0 is H rows of W
     * bytes (Y); planes 1 (U) and 2 (V) are (H + 1) / 2 rows of (W + 1) / 2
     * bytes each. Strides and lengths as for NV12.
     */
    TP_PIXEL_FORMAT_I420 = 8,
    /**
     * YUV 4:2:2 in one plane (YUY2, Linux webcams): each pair of pixels is 4
     * bytes Y0 U Y1 V sharing one U,V pair. Plane 0 is H rows of
     * 4 * ((W + 1) / 2) bytes (an odd width uses the first pixel of the last pair).
     */
    TP_PIXEL_FORMAT_YUYV = 9,
    /**
     * YUV 4:2:2 in one plane: each pair of pixels is 4 bytes U Y0 V Y1.
     * Sizes as for YUYV.
     */
    TP_PIXEL_FORMAT_UYVY = 10,
    /**
     * RGB565, 16 bits per pixel (red in the top 5 bits, green 6, blue the low
     * 5), each pixel's word stored low byte first (Android `RGB_565`, V4L2
     * `RGBP`, OpenCV's BGR565). Plane 0 is H rows of 2 * W bytes.
     */
    TP_PIXEL_FORMAT_RGB565_LE = 11,
    /**
     * RGB565 with each pixel's word stored high byte first (most SPI camera
     * modules and displays). Sizes as for RGB565_LE.
     */
    TP_PIXEL_FORMAT_RGB565_BE = 12,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_pixel_format tp_pixel_format;
#else
typedef uint32_t tp_pixel_format;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Tensor element types.
 */
enum tp_dtype
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * 32-bit float (`float`).
     */
    TP_DTYPE_F32 = 1,
    /**
     * IEEE half precision, stored as `uint16_t`.
     */
    TP_DTYPE_F16 = 2,
    /**
     * Unsigned 8-bit, quantized.
     */
    TP_DTYPE_U8 = 3,
    /**
     * Signed 8-bit, quantized.
     */
    TP_DTYPE_I8 = 4,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_dtype tp_dtype;
#else
typedef uint32_t tp_dtype;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Tensor layouts (the batch dimension excluded).
 */
enum tp_layout
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Planar: channel, row, column (PyTorch, ONNX).
     */
    TP_LAYOUT_CHW = 1,
    /**
     * Interleaved: row, column, channel (TFLite, most NHWC engines).
     */
    TP_LAYOUT_HWC = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_layout tp_layout;
#else
typedef uint32_t tp_layout;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Channel order of a tensor.
 */
enum tp_channel_order
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Red, green, blue.
     */
    TP_CHANNEL_ORDER_RGB = 1,
    /**
     * Blue, green, red (Caffe- and OpenCV-trained models).
     */
    TP_CHANNEL_ORDER_BGR = 2,
    /**
     * One gray channel.
     */
    TP_CHANNEL_ORDER_GRAY = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_channel_order tp_channel_order;
#else
typedef uint32_t tp_channel_order;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Range of YUV samples (BT.601 matrix in both).
 */
enum tp_yuv_range
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * 0-255 (JFIF, Android camera frames).
     */
    TP_YUV_RANGE_FULL = 1,
    /**
     * Y 16-235, U and V 16-240 (video).
     */
    TP_YUV_RANGE_LIMITED = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_yuv_range tp_yuv_range;
#else
typedef uint32_t tp_yuv_range;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Resampling methods: Pillow's filters (antialiased when shrinking,
 * bit-exact with `Image.resize`), OpenCV's `cv::resize` modes and PyTorch's
 * antialiased `interpolate` (torchvision's `Resize` on tensors).
 */
enum tp_resample
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Pillow `NEAREST`.
     */
    TP_RESAMPLE_PILLOW_NEAREST = 1,
    /**
     * Pillow `BOX`.
     */
    TP_RESAMPLE_PILLOW_BOX = 2,
    /**
     * Pillow `BILINEAR` (torchvision's default).
     */
    TP_RESAMPLE_PILLOW_BILINEAR = 3,
    /**
     * Pillow `HAMMING`.
     */
    TP_RESAMPLE_PILLOW_HAMMING = 4,
    /**
     * Pillow `BICUBIC`.
     */
    TP_RESAMPLE_PILLOW_BICUBIC = 5,
    /**
     * Pillow `LANCZOS`.
     */
    TP_RESAMPLE_PILLOW_LANCZOS = 6,
    /**
     * OpenCV `INTER_LINEAR`.
     */
    TP_RESAMPLE_OPENCV_LINEAR = 7,
    /**
     * OpenCV `INTER_AREA`.
     */
    TP_RESAMPLE_OPENCV_AREA = 8,
    /**
     * PyTorch `interpolate(mode="bilinear", antialias=True)` on uint8
     * (torchvision's `Resize` on tensors).
     */
    TP_RESAMPLE_TORCH_BILINEAR = 9,
    /**
     * PyTorch `interpolate(mode="bicubic", antialias=True)` on uint8.
     */
    TP_RESAMPLE_TORCH_BICUBIC = 10,
    /**
     * PyTorch `interpolate(mode="bilinear", antialias=True)` on float32,
     * clamped and rounded (torchvision on CPUs without PyTorch's AVX2 kernel).
     */
    TP_RESAMPLE_TORCH_FLOAT_BILINEAR = 11,
    /**
     * PyTorch `interpolate(mode="bicubic", antialias=True)` on float32, clamped and rounded.
     */
    TP_RESAMPLE_TORCH_FLOAT_BICUBIC = 12,
    /**
     * libyuv `ARGBScale(..., kFilterBilinear)`, `ScalePlane` for gray (TFLite
     * Task Library, MediaPipe).
     */
    TP_RESAMPLE_LIBYUV_BILINEAR = 13,
    /**
     * PyTorch `interpolate(mode="nearest")` on uint8 (torchvision's
     * `Resize(interpolation=NEAREST)` on tensors).
     */
    TP_RESAMPLE_TORCH_NEAREST = 14,
    /**
     * PyTorch `interpolate(mode="nearest-exact")` on uint8 (what the Hugging
     * Face processors' torchvision backend runs for NEAREST).
     */
    TP_RESAMPLE_TORCH_NEAREST_EXACT = 15,
    /**
     * The `fast_image_resize` crate's nearest sampling: not exact to any
     * Python library, chosen for speed (as are the five below).
     */
    TP_RESAMPLE_FAST_IMAGE_RESIZE_NEAREST = 16,
    /**
     * `fast_image_resize`'s box convolution.
     */
    TP_RESAMPLE_FAST_IMAGE_RESIZE_BOX = 17,
    /**
     * `fast_image_resize`'s bilinear convolution (antialiased when shrinking).
     */
    TP_RESAMPLE_FAST_IMAGE_RESIZE_BILINEAR = 18,
    /**
     * `fast_image_resize`'s Hamming convolution.
     */
    TP_RESAMPLE_FAST_IMAGE_RESIZE_HAMMING = 19,
    /**
     * `fast_image_resize`'s Catmull-Rom convolution (Pillow's bicubic kernel).
     */
    TP_RESAMPLE_FAST_IMAGE_RESIZE_BICUBIC = 20,
    /**
     * `fast_image_resize`'s Lanczos-3 convolution.
     */
    TP_RESAMPLE_FAST_IMAGE_RESIZE_LANCZOS = 21,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_resample tp_resample;
#else
typedef uint32_t tp_resample;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Mirror axes.
 */
enum tp_flip_axis
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Left-right.
     */
    TP_FLIP_AXIS_HORIZONTAL = 1,
    /**
     * Top-bottom.
     */
    TP_FLIP_AXIS_VERTICAL = 2,
    /**
     * Both (a half turn).
     */
    TP_FLIP_AXIS_BOTH = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_flip_axis tp_flip_axis;
#else
typedef uint32_t tp_flip_axis;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Clockwise rotations.
 */
enum tp_rotation
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * 90 degrees clockwise.
     */
    TP_ROTATION_CW90 = 1,
    /**
     * 180 degrees.
     */
    TP_ROTATION_CW180 = 2,
    /**
     * 270 degrees clockwise (90 counter-clockwise).
     */
    TP_ROTATION_CW270 = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_rotation tp_rotation;
#else
typedef uint32_t tp_rotation;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Where an image goes on a larger canvas.
 */
enum tp_placement
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Centred; an odd leftover pixel goes right or bottom.
     */
    TP_PLACEMENT_CENTER = 1,
    /**
     * Top-left corner; all padding right and bottom.
     */
    TP_PLACEMENT_TOP_LEFT = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_placement tp_placement;
#else
typedef uint32_t tp_placement;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * JPEG decoders.
 */
enum tp_decoder
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * The graph's own decoder if this build has it, otherwise zune-jpeg (for
     * eager decoding: the best this build has, libjpeg-turbo first).
     */
    TP_DECODER_AUTO = 0,
    /**
     * zune-jpeg (pure Rust, always built in).
     */
    TP_DECODER_ZUNE = 1,
    /**
     * libjpeg-turbo, Pillow's decoder (the `turbojpeg` Cargo feature).
     */
    TP_DECODER_LIBJPEG_TURBO = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_decoder tp_decoder;
#else
typedef uint32_t tp_decoder;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What a plan is compiled for.
 */
enum tp_input_kind
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * Encoded image files: JPEG, PNG or WebP, the format found from each
     * file's bytes (each image's size is read from its header). The name
     * stays from when JPEG was the only format.
     */
    TP_INPUT_KIND_JPEG = 1,
    /**
     * Raw pixels of one format and size (camera frames, decoded images).
     */
    TP_INPUT_KIND_PIXELS = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_input_kind tp_input_kind;
#else
typedef uint32_t tp_input_kind;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * An image file format, as found from a file's leading bytes. Only
 * JPEG, PNG and WebP are decoded; the others are named in errors.
 */
enum tp_image_format
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * No known signature.
     */
    TP_IMAGE_FORMAT_UNKNOWN = 0,
    /**
     * JPEG.
     */
    TP_IMAGE_FORMAT_JPEG = 1,
    /**
     * PNG (APNG: its first frame).
     */
    TP_IMAGE_FORMAT_PNG = 2,
    /**
     * WebP (lossy, lossless; an animation's first frame).
     */
    TP_IMAGE_FORMAT_WEBP = 3,
    /**
     * GIF (not decoded).
     */
    TP_IMAGE_FORMAT_GIF = 4,
    /**
     * Another recognised format that is not decoded (BMP, TIFF, AVIF, HEIF,
     * JPEG XL, JPEG 2000, ...); the error message names it.
     */
    TP_IMAGE_FORMAT_OTHER = 99,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_image_format tp_image_format;
#else
typedef uint32_t tp_image_format;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Which of transformers' implementations of an image processor a Hugging
 * Face graph reproduces (`tp_graph_from_hugging_face_backend`).
 */
enum tp_hf_backend
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    /**
     * The torchvision backend, transformers' default, as current PyTorch
     * runs it on AVX2, AVX-512 and ARM CPUs: BILINEAR and BICUBIC on uint8.
     */
    TP_HF_BACKEND_TORCHVISION = 1,
    /**
     * The old name of `TP_HF_BACKEND_TORCHVISION` (the uint8 resize, from
     * when the default was the float32 one): the same graph.
     */
    TP_HF_BACKEND_TORCHVISION_AVX2 = 2,
    /**
     * The PIL backend (`...ImageProcessorPil`): Pillow's resize.
     */
    TP_HF_BACKEND_PIL = 3,
    /**
     * The torchvision backend where torchvision resizes BILINEAR through
     * float32: AVX-512 CPUs up to torch 2.8 (torchvision 0.23), ARM up to
     * torch 2.11 (0.26), x86 CPUs without AVX2. BICUBIC stays on uint8.
     */
    TP_HF_BACKEND_TORCHVISION_FLOAT32 = 4,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum tp_hf_backend tp_hf_backend;
#else
typedef uint32_t tp_hf_backend;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * A loaded preprocessing graph. Immutable: one graph may be read by any
 * number of threads at once (compiling plans, verifying).
 */
typedef struct tp_graph tp_graph;

/**
 * A compiled plan: every op checked, shapes known, tables built. Immutable:
 * any number of threads may run one plan at once, each with its own
 * `tp_run_state`.
 */
typedef struct tp_plan tp_plan;

/**
 * The scratch of one thread running plans: the decoder, intermediate
 * buffers and resampler rows, grown on the first run and reused after (no
 * allocation per image in steady state). Used by one thread at a time; may
 * serve several plans in turn.
 */
typedef struct tp_run_state tp_run_state;

/**
 * How a run moved and scaled the image: the side outputs needed to map a
 * detection back to the input. Coordinates are continuous: pixel (i, j)
 * covers [i, i+1) x [j, j+1).
 */
typedef struct tp_geometry {
    /**
     * Input width (after decoding and EXIF orientation).
     */
    uint32_t input_width;
    /**
     * Input height.
     */
    uint32_t input_height;
    /**
     * The output tensor's width.
     */
    uint32_t output_width;
    /**
     * The output tensor's height.
     */
    uint32_t output_height;
    /**
     * Input to output coordinates, row-major `{a, b, c, d, e, f}`:
     * `x' = a x + b y + c`, `y' = d x + e y + f`.
     */
    double to_output[6];
    /**
     * Output pixels per input pixel along the output's x.
     */
    double scale_x;
    /**
     * Output pixels per input pixel along the output's y.
     */
    double scale_y;
    /**
     * Where the input's origin lands in the output (a letterbox's left padding).
     */
    double offset_x;
    /**
     * Where the input's origin lands in the output (a letterbox's top padding).
     */
    double offset_y;
} tp_geometry;

/**
 * What a plan's output tensor is.
 */
typedef struct tp_tensor_info {
    /**
     * A `tp_dtype`.
     */
    uint32_t dtype;
    /**
     * A `tp_layout`.
     */
    uint32_t layout;
    /**
     * A `tp_channel_order`.
     */
    uint32_t channel_order;
    /**
     * `{C, H, W}` or `{H, W, C}` without the batch dimension; all 0 when the
     * size depends on the input (a JPEG plan without a final crop or canvas:
     * ask `tp_plan_output_info_for_jpeg`).
     */
    size_t shape[3];
    /**
     * Elements of one image's tensor (0 when unknown).
     */
    size_t elements;
    /**
     * Bytes of one image's tensor (0 when unknown).
     */
    size_t bytes;
} tp_tensor_info;

/**
 * What a graph accepts and produces.
 */
typedef struct tp_graph_info {
    /**
     * 1 when the graph decodes encoded images (JPEG, PNG, WebP;
     * `TP_INPUT_KIND_JPEG` plans), else 0.
     */
    uint32_t accepts_encoded;
    /**
     * The raw pixel formats it accepts (`TP_INPUT_KIND_PIXELS` plans): bit
     * `1 << f` for each `tp_pixel_format` `f`.
     */
    uint32_t pixel_formats;
    /**
     * The `tp_yuv_range` YUV frames are read with.
     */
    uint32_t yuv_range;
    /**
     * Number of ops.
     */
    uint32_t ops;
    /**
     * Number of self-tests `tp_graph_verify` runs.
     */
    uint32_t self_tests;
    /**
     * The tensor it produces (shape all 0 when it depends on the image).
     */
    struct tp_tensor_info output;
} tp_graph_info;

/**
 * Options of `tp_image_read_info`, `tp_image_decode`, `tp_jpeg_read_info` and
 * `tp_jpeg_decode`. All zero (or a NULL pointer) means the defaults.
 */
typedef struct tp_decode_options {
    /**
     * Output `tp_pixel_format`: 0 for RGB8; a packed format (GRAY8, RGB8,
     * BGR8, RGBA8, BGRA8).
     */
    uint32_t format;
    /**
     * A `tp_decoder`; `TP_DECODER_AUTO` (0) picks libjpeg-turbo when built in.
     */
    uint32_t decoder;
    /**
     * `TP_DECODE_*` bits.
     */
    uint32_t flags;
    /**
     * Largest image accepted, in pixels; 0 for the default (128 Mpixel).
     */
    uint64_t max_pixels;
    /**
     * Largest single allocation, in bytes; 0 for the default (1 GiB).
     */
    uint64_t max_alloc_bytes;
} tp_decode_options;

/**
 * What a JPEG's headers say.
 */
typedef struct tp_jpeg_info {
    /**
     * Width of the decoded image (after EXIF orientation, if applied).
     */
    uint32_t width;
    /**
     * Height of the decoded image.
     */
    uint32_t height;
    /**
     * Width as stored.
     */
    uint32_t stored_width;
    /**
     * Height as stored.
     */
    uint32_t stored_height;
    /**
     * Colour components in the file: 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK.
     */
    uint32_t components;
    /**
     * The EXIF orientation tag, 1-8 (1 when absent).
     */
    uint32_t exif_orientation;
} tp_jpeg_info;

/**
 * One plane of a writable image.
 */
typedef struct tp_plane_mut {
    /**
     * The first byte of the first row.
     */
    uint8_t *data;
    /**
     * Bytes writable from `data`.
     */
    size_t len;
    /**
     * Bytes from one row's start to the next; 0 for tightly packed rows.
     */
    size_t stride;
} tp_plane_mut;

/**
 * A writable image (a destination), laid out as `tp_image`.
 */
typedef struct tp_image_mut {
    /**
     * A `tp_pixel_format`.
     */
    uint32_t format;
    /**
     * Width in pixels.
     */
    uint32_t width;
    /**
     * Height in pixels.
     */
    uint32_t height;
    /**
     * The planes, in the format's order.
     */
    struct tp_plane_mut planes[3];
} tp_image_mut;

/**
 * What an image file's headers say (any supported format).
 */
typedef struct tp_image_info {
    /**
     * A `tp_image_format`.
     */
    uint32_t format;
    /**
     * Width of the decoded image (after EXIF orientation, if applied).
     */
    uint32_t width;
    /**
     * Height of the decoded image.
     */
    uint32_t height;
    /**
     * Width as stored.
     */
    uint32_t stored_width;
    /**
     * Height as stored.
     */
    uint32_t stored_height;
    /**
     * The EXIF orientation tag, 1-8 (1 when absent).
     */
    uint32_t exif_orientation;
    /**
     * 1 when the file carries alpha (an alpha channel, a PNG `tRNS` chunk), else 0.
     */
    uint32_t has_alpha;
} tp_image_info;

/**
 * One plane of an image: its bytes and row stride.
 */
typedef struct tp_plane {
    /**
     * The first byte of the first row.
     */
    const uint8_t *data;
    /**
     * Bytes readable from `data` (at least `stride * (rows - 1) + row bytes`).
     */
    size_t len;
    /**
     * Bytes from one row's start to the next; 0 for tightly packed rows.
     */
    size_t stride;
} tp_plane;

/**
 * A read-only image: format, size and planes (one for packed formats, two
 * for NV12/NV21, three for I420; the rest are ignored). Android's
 * `YUV_420_888` and iOS's `CVPixelBuffer` planes map onto it directly.
 */
typedef struct tp_image {
    /**
     * A `tp_pixel_format`.
     */
    uint32_t format;
    /**
     * Width in pixels.
     */
    uint32_t width;
    /**
     * Height in pixels.
     */
    uint32_t height;
    /**
     * The planes, in the format's order.
     */
    struct tp_plane planes[3];
} tp_image;

/**
 * A read-only float32 image (a depth map, HDR pixels, a model's float
 * output): `channels` interleaved samples per pixel.
 */
typedef struct tp_float_image {
    /**
     * The first sample of the first row (aligned for `float`).
     */
    const float *data;
    /**
     * Samples readable from `data`.
     */
    size_t len;
    /**
     * Width in pixels.
     */
    uint32_t width;
    /**
     * Height in pixels.
     */
    uint32_t height;
    /**
     * Samples per pixel (1 to 16).
     */
    uint32_t channels;
    /**
     * Samples from one row's start to the next; 0 for tightly packed rows.
     */
    size_t stride;
} tp_float_image;

/**
 * A writable float32 image, laid out as `tp_float_image`.
 */
typedef struct tp_float_image_mut {
    /**
     * The first sample of the first row (aligned for `float`).
     */
    float *data;
    /**
     * Samples writable from `data`.
     */
    size_t len;
    /**
     * Width in pixels.
     */
    uint32_t width;
    /**
     * Height in pixels.
     */
    uint32_t height;
    /**
     * Samples per pixel (1 to 16).
     */
    uint32_t channels;
    /**
     * Samples from one row's start to the next; 0 for tightly packed rows.
     */
    size_t stride;
} tp_float_image_mut;

/**
 * A rectangle in pixels.
 */
typedef struct tp_rect {
    /**
     * Left column.
     */
    uint32_t x;
    /**
     * Top row.
     */
    uint32_t y;
    /**
     * Width.
     */
    uint32_t width;
    /**
     * Height.
     */
    uint32_t height;
} tp_rect;

/**
 * What `tp_finish` does: `(v / divisor - mean[c]) / std[c]` per channel,
 * then layout, channel order, element type and quantization.
 */
typedef struct tp_finish_spec {
    /**
     * Mean per output channel (R, G, B order; index 0 for gray).
     */
    float mean[3];
    /**
     * Standard deviation per output channel; finite and non-zero.
     */
    float std[3];
    /**
     * 255 for values in 0-1 (torchvision), 1 for values in 0-255.
     */
    float divisor;
    /**
     * A `tp_layout`.
     */
    uint32_t layout;
    /**
     * A `tp_channel_order`.
     */
    uint32_t channel_order;
    /**
     * A `tp_dtype`.
     */
    uint32_t dtype;
    /**
     * Quantization scale for U8/I8 (1 with zero point 0 stores the values
     * clamped); ignored for float types.
     */
    float quant_scale;
    /**
     * Quantization zero point for U8/I8.
     */
    int32_t quant_zero_point;
} tp_finish_spec;

/**
 * The input a plan is compiled for.
 */
typedef struct tp_input_desc {
    /**
     * A `tp_input_kind`.
     */
    uint32_t kind;
    /**
     * For `TP_INPUT_KIND_PIXELS`: a `tp_pixel_format` the graph accepts.
     */
    uint32_t format;
    /**
     * For `TP_INPUT_KIND_PIXELS`: width in pixels.
     */
    uint32_t width;
    /**
     * For `TP_INPUT_KIND_PIXELS`: height in pixels.
     */
    uint32_t height;
} tp_input_desc;

/**
 * Options of `tp_plan_new`. All zero (or a NULL pointer) means the defaults.
 */
typedef struct tp_plan_options {
    /**
     * A `tp_decoder` for JPEG plans (frames need none); `TP_DECODER_AUTO` (0)
     * keeps the graph's decoder when this build has it and otherwise uses
     * zune-jpeg.
     */
    uint32_t decoder;
    /**
     * Largest image accepted, in pixels; 0 for the default (128 Mpixel).
     */
    uint64_t max_pixels;
    /**
     * Largest single allocation, in bytes; 0 for the default (1 GiB).
     */
    uint64_t max_alloc_bytes;
} tp_plan_options;

/**
 * Options of `tp_plan_new_ex`: those of `tp_plan_options`, plus the EXIF
 * and damage handling of encoded images and the YUV range of frames. Set
 * `struct_size` to `sizeof(tp_plan_options_ex)`: fields added in later
 * versions go at the end, and a caller built with this header keeps
 * working with them (their defaults apply). Other fields 0 mean the defaults.
 */
typedef struct tp_plan_options_ex {
    /**
     * `sizeof(tp_plan_options_ex)`.
     */
    size_t struct_size;
    /**
     * A `tp_decoder` (as in `tp_plan_options`).
     */
    uint32_t decoder;
    /**
     * `TP_PLAN_*` bits.
     */
    uint32_t flags;
    /**
     * A `tp_yuv_range` for YUV frames (NV12/NV21/I420); 0 keeps the graph's.
     */
    uint32_t yuv_range;
    /**
     * Largest image accepted, in pixels; 0 for the default (128 Mpixel).
     */
    uint64_t max_pixels;
    /**
     * Largest single allocation, in bytes; 0 for the default (1 GiB).
     */
    uint64_t max_alloc_bytes;
} tp_plan_options_ex;

/**
 * A byte buffer (one encoded image of a batch).
 */
typedef struct tp_bytes {
    /**
     * The first byte.
     */
    const uint8_t *data;
    /**
     * Its length.
     */
    size_t len;
} tp_bytes;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The library's version, `"MAJOR.MINOR.PATCH"`.
 *
 * # Safety
 *
 * None: the call takes no arguments. The string is static; the caller must
 * not free or modify it.
 */
const char *tp_version(void);

/**
 * Copies the message of the last call on this thread that failed into
 * `buf` as a NUL-terminated UTF-8 string, cut at a character boundary if it
 * does not fit. `*out_len` (if not NULL) receives the message's full length
 * in bytes without the NUL, so a caller can tell it was cut. The message is
 * empty when no call has failed on this thread; a successful call leaves
 * it as it was.
 *
 * Returns `TP_RESULT_NULL_PARAMETER` if `buf` is NULL and `len` is not 0,
 * `TP_RESULT_BUFFER_TOO_SMALL` if `len` is 0; neither changes the message.
 *
 * # Safety
 *
 * `buf` must be valid for writes of `len` bytes; `out_len` must be NULL or
 * valid for a write. The caller owns both.
 */
tp_result tp_last_error_message(char *buf, size_t len, size_t *out_len);

/**
 * Maps a point from output (model) coordinates back to the input image.
 *
 * # Safety
 *
 * `geometry` must point to a `tp_geometry` a run wrote; `x_out` and `y_out`
 * must be valid for writes. They are written only on success.
 */
tp_result tp_geometry_to_source_point(const struct tp_geometry *geometry,
                                      double x,
                                      double y,
                                      double *x_out,
                                      double *y_out);

/**
 * Maps `n` boxes `{x0, y0, x1, y1}` (4 floats each, a detector's output
 * layout) in place from output coordinates back to the input image,
 * clamped to it: undoes letterbox padding, resizes, crops, flips and
 * quarter turns. Non-finite coordinates are refused before any box is
 * changed.
 *
 * # Safety
 *
 * `geometry` must point to a `tp_geometry`; `boxes` must be valid for
 * reads and writes of `4 * n` floats.
 */
tp_result tp_geometry_to_source_boxes(const struct tp_geometry *geometry, float *boxes, size_t n);

/**
 * Loads a graph file (`.tpp`). The file is checked whole (magic bytes,
 * checksum, every op's parameters, the declared output) before a handle is
 * returned; files over 4 MiB are refused before reading.
 *
 * # Safety
 *
 * `path` must be a NUL-terminated string (any bytes on Unix, UTF-8
 * elsewhere). `out` must be valid for a write; on success it receives a
 * graph the caller owns and frees with `tp_graph_free`.
 */
tp_result tp_graph_load(const char *path, struct tp_graph **out);

/**
 * Reads a graph from the bytes of a graph file (for a graph shipped inside
 * an app's assets). The bytes are copied; the caller may free them after.
 *
 * # Safety
 *
 * `data` must be valid for reads of `len` bytes. `out` must be valid for a
 * write; on success it receives a graph the caller frees with `tp_graph_free`.
 */
tp_result tp_graph_from_bytes(const uint8_t *data, size_t len, struct tp_graph **out);

/**
 * The graph of a model file: its sidecar (`model.tpp` beside `model.onnx`)
 * or the graph embedded in the ONNX model's metadata (the weights are
 * skipped, not read). If both exist they must agree. A `.tpp` path is loaded
 * as it is.
 *
 * # Safety
 *
 * `model_path` must be a NUL-terminated string. `out` must be valid for a
 * write; on success it receives a graph the caller frees with `tp_graph_free`.
 */
tp_result tp_graph_for_model(const char *model_path, struct tp_graph **out);

/**
 * A built-in graph by name: `imagenet-eval` (torchvision's `Resize(256)`,
 * `CenterCrop(224)`, `ToTensor()`, `Normalize(ImageNet)`),
 * `imagenet-eval-nhwc-u8`, `yolo-letterbox-640`, or (with the `import`
 * feature) a torchvision weights name such as
 * `ResNet50_Weights.IMAGENET1K_V2`.
 *
 * # Safety
 *
 * `name` must be a NUL-terminated string. `out` must be valid for a write;
 * on success it receives a graph the caller frees with `tp_graph_free`.
 */
tp_result tp_graph_from_preset(const char *name, struct tp_graph **out);

/**
 * A graph from a Hugging Face `preprocessor_config.json` (ViT, DeiT, BEiT,
 * CLIP, ConvNeXT, BiT, SigLIP image processors), reproducing the processor
 * as transformers runs it by default (its torchvision backend,
 * `TP_HF_BACKEND_TORCHVISION`). The text is not NUL-terminated: `len` bytes
 * are read. Returns `TP_RESULT_NOT_BUILT` without the `import` feature.
 *
 * # Safety
 *
 * `json` must be valid for reads of `len` bytes. `out` must be valid for a
 * write; on success it receives a graph the caller frees with `tp_graph_free`.
 */
tp_result tp_graph_from_hugging_face(const uint8_t *json, size_t len, struct tp_graph **out);

/**
 * [`tp_graph_from_hugging_face`] for a chosen backend (a `tp_hf_backend`:
 * the torchvision one, its float32 variant, or the PIL one). An unknown
 * value is `TP_RESULT_INVALID_PARAMETER`.
 *
 * # Safety
 *
 * As [`tp_graph_from_hugging_face`].
 */
tp_result tp_graph_from_hugging_face_backend(const uint8_t *json,
                                             size_t len,
                                             uint32_t backend,
                                             struct tp_graph **out);

/**
 * A graph from a timm `pretrained_cfg` / `config.json` (`input_size`,
 * `crop_pct`, `crop_mode`, `interpolation`, `mean`, `std`). Returns
 * `TP_RESULT_NOT_BUILT` without the `import` feature.
 *
 * # Safety
 *
 * As for `tp_graph_from_hugging_face`.
 */
tp_result tp_graph_from_timm(const uint8_t *json, size_t len, struct tp_graph **out);

/**
 * Runs the graph's self-tests (a synthetic picture, and for graphs made for
 * files a small JPEG, once per JPEG decoder this build has, and a PNG; each
 * with the tensor recorded when the graph was written) on this build and
 * device. `*passed` and
 * `*total` (either may be NULL) receive the counts. Returns
 * `TP_RESULT_SELF_TEST_FAILED` if any test's tensor differs beyond its
 * tolerance (the message names it); a graph without self-tests passes with
 * a total of 0.
 *
 * # Safety
 *
 * `graph` must be a live graph handle. `passed` and `total` must each be
 * NULL or valid for a write.
 */
tp_result tp_graph_verify(const struct tp_graph *graph, size_t *passed, size_t *total);

/**
 * Describes what `graph` accepts (encoded files, pixel formats, YUV range)
 * and the tensor it produces (element type, layout, channel order, shape);
 * `tp_graph_output_name` gives the model input's name.
 *
 * # Safety
 *
 * `graph` must be a live graph handle; `out` valid for a write.
 */
tp_result tp_graph_describe(const struct tp_graph *graph, struct tp_graph_info *out);

/**
 * Copies the name of the model input the graph's tensor is for
 * (`pixel_values`, `images`, ...; may be empty) into `buf`, NUL-terminated.
 * `*out_len` (may be NULL) receives its length without the NUL. Returns
 * `TP_RESULT_BUFFER_TOO_SMALL` (with `*out_len` set, `buf` untouched) when
 * `len` is not more than that length.
 *
 * # Safety
 *
 * `graph` must be a live graph handle; `buf` valid for writes of `len`
 * bytes; `out_len` NULL or valid for a write.
 */
tp_result tp_graph_output_name(const struct tp_graph *graph,
                               char *buf,
                               size_t len,
                               size_t *out_len);

/**
 * Frees a graph. Plans compiled from it stay valid (they own what they
 * need). NULL is a no-op.
 *
 * # Safety
 *
 * `graph` must be NULL or a handle from a `tp_graph_*` constructor not yet
 * freed; no other thread may be using it, and it must not be used after.
 */
void tp_graph_free(struct tp_graph *graph);

/**
 * Reads a JPEG's headers: the size the decoded image will have with these
 * options (EXIF orientation applied or not), without decoding.
 *
 * # Safety
 *
 * `data` must be valid for reads of `len` bytes; `options` NULL or pointing
 * to a `tp_decode_options`; `out` valid for a write.
 */
tp_result tp_jpeg_read_info(const uint8_t *data,
                            size_t len,
                            const struct tp_decode_options *options,
                            struct tp_jpeg_info *out);

/**
 * Decodes a JPEG into `dst`, whose format must be the options' format and
 * whose size must be the one `tp_jpeg_read_info` reports. `*info` (may be
 * NULL) receives the headers.
 *
 * # Safety
 *
 * `data` must be valid for reads of `len` bytes; `options` NULL or pointing
 * to a `tp_decode_options`; `dst` must point to a `tp_image_mut` whose plane
 * is valid for writes of its `len`; `info` NULL or valid for a write.
 */
tp_result tp_jpeg_decode(const uint8_t *data,
                         size_t len,
                         const struct tp_decode_options *options,
                         const struct tp_image_mut *dst,
                         struct tp_jpeg_info *info);

/**
 * Reads the headers of a JPEG, PNG or WebP file (the format is found from
 * the bytes): format, the size the decoded image will have with these
 * options, without decoding. Other formats give
 * `TP_RESULT_UNSUPPORTED_IMAGE_FORMAT`, whose message names them.
 *
 * # Safety
 *
 * `data` must be valid for reads of `len` bytes; `options` NULL or pointing
 * to a `tp_decode_options`; `out` valid for a write.
 */
tp_result tp_image_read_info(const uint8_t *data,
                             size_t len,
                             const struct tp_decode_options *options,
                             struct tp_image_info *out);

/**
 * Decodes a JPEG, PNG or WebP file into `dst`, whose format must be the
 * options' format and whose size must be the one `tp_image_read_info`
 * reports; the pixels are Pillow's `Image.open(f).convert(mode)`. `*info`
 * (may be NULL) receives the headers.
 *
 * # Safety
 *
 * As for `tp_jpeg_decode`.
 */
tp_result tp_image_decode(const uint8_t *data,
                          size_t len,
                          const struct tp_decode_options *options,
                          const struct tp_image_mut *dst,
                          struct tp_image_info *info);

/**
 * Converts `src` (any format, YUV included) into `dst`'s packed format
 * (GRAY8, RGB8, BGR8, RGBA8, BGRA8) at the same size. `yuv_range` (a
 * `tp_yuv_range`) matters only for YUV sources.
 *
 * # Safety
 *
 * `src` must point to a `tp_image` whose used planes are valid for reads of
 * their `len`; `dst` to a `tp_image_mut` whose used planes are valid for
 * writes of theirs. They must not overlap.
 */
tp_result tp_convert_color(const struct tp_image *src,
                           const struct tp_image_mut *dst,
                           uint32_t yuv_range);

/**
 * Resizes `src` to `dst`'s size (same packed format) with a `tp_resample`
 * method: Pillow's filters are bit-exact with `Image.resize` (antialiased
 * when shrinking), OpenCV's with `cv::resize`.
 *
 * # Safety
 *
 * As for `tp_convert_color`.
 */
tp_result tp_resize(const struct tp_image *src, const struct tp_image_mut *dst, uint32_t resample);

/**
 * Resizes the float32 image `src` to `dst`'s size (same channel count)
 * with a `tp_resample` method: the Pillow filters reproduce Pillow's
 * resize of `F` images channel by channel, `TP_RESAMPLE_TORCH_FLOAT_*`
 * PyTorch's antialiased `interpolate` of float tensors; other methods are
 * refused (`TP_RESULT_INVALID_PARAMETER`). One-shot: it allocates its tables
 * and scratch each call. Returns `TP_RESULT_NOT_BUILT` without the
 * `resize-float` feature.
 *
 * # Safety
 *
 * `src->data` must be valid for reads of `src->len` floats and
 * `dst->data` for writes of `dst->len` floats; they must not overlap.
 */
tp_result tp_resize_f32(const struct tp_float_image *src,
                        const struct tp_float_image_mut *dst,
                        uint32_t resample);

/**
 * Copies the `rect` region of `src` into `dst` (same format, the rect's
 * size). 4:2:0 formats need even coordinates.
 *
 * # Safety
 *
 * As for `tp_convert_color`.
 */
tp_result tp_crop(const struct tp_image *src, struct tp_rect rect, const struct tp_image_mut *dst);

/**
 * Copies `src` onto the larger `dst` (same packed format) at a
 * `tp_placement`, filling the rest with `fill` (one byte per channel of the
 * format: `fill_len` must be its bytes per pixel). `*placed` (may be NULL)
 * receives where the image went. With `tp_resize` first, this is a letterbox.
 *
 * # Safety
 *
 * As for `tp_convert_color`; `fill` must be valid for reads of `fill_len`
 * bytes and `placed` NULL or valid for a write.
 */
tp_result tp_pad(const struct tp_image *src,
                 const struct tp_image_mut *dst,
                 uint32_t placement,
                 const uint8_t *fill,
                 size_t fill_len,
                 struct tp_rect *placed);

/**
 * Mirrors `src` into `dst` (same format and size) along a `tp_flip_axis`.
 *
 * # Safety
 *
 * As for `tp_convert_color`.
 */
tp_result tp_flip(const struct tp_image *src, const struct tp_image_mut *dst, uint32_t axis);

/**
 * Rotates `src` clockwise by a `tp_rotation` into `dst` (same format; sides
 * swapped for quarter turns).
 *
 * # Safety
 *
 * As for `tp_convert_color`.
 */
tp_result tp_rotate(const struct tp_image *src, const struct tp_image_mut *dst, uint32_t rotation);

/**
 * Normalizes `src` (GRAY8, RGB8, BGR8, RGBA8 or BGRA8) into a tensor:
 * torchvision's `ToTensor()` + `Normalize()`, HWC to CHW, and the cast or
 * quantization, in one pass. `out_bytes` must be at least
 * `channels * height * width` elements of the dtype; `out` must be aligned
 * for it.
 *
 * # Safety
 *
 * `src` must point to a `tp_image` whose plane is valid for reads of its
 * `len`; `spec` to a `tp_finish_spec`; `out` valid for writes of
 * `out_bytes` bytes, not overlapping `src`.
 */
tp_result tp_finish(const struct tp_image *src,
                    const struct tp_finish_spec *spec,
                    void *out,
                    size_t out_bytes);

/**
 * Compiles `graph` for `input`: checks every op and, for pixel inputs,
 * resolves every shape and builds every table now. For a pixel format other
 * than the one the graph's ops expect, a colour conversion is put first
 * (and fused into the first pass).
 *
 * # Safety
 *
 * `graph` must be a live graph handle; `input` must point to a
 * `tp_input_desc`; `options` must be NULL or point to a `tp_plan_options`.
 * `out` must be valid for a write; on success it receives a plan the caller
 * owns and frees with `tp_plan_free` (the graph may be freed first).
 */
tp_result tp_plan_new(const struct tp_graph *graph,
                      const struct tp_input_desc *input,
                      const struct tp_plan_options *options,
                      struct tp_plan **out);

/**
 * `tp_plan_new` with the options of `tp_plan_options_ex`: EXIF orientation
 * and lenient decoding for encoded images, the YUV range for frames.
 *
 * # Safety
 *
 * As for `tp_plan_new`; `options` must be NULL or point to at least
 * `options->struct_size` readable bytes.
 */
tp_result tp_plan_new_ex(const struct tp_graph *graph,
                         const struct tp_input_desc *input,
                         const struct tp_plan_options_ex *options,
                         struct tp_plan **out);

/**
 * Frees a plan. NULL is a no-op.
 *
 * # Safety
 *
 * `plan` must be NULL or a handle from `tp_plan_new` not yet freed; no
 * thread may be running it, and it must not be used after.
 */
void tp_plan_free(struct tp_plan *plan);

/**
 * Describes the plan's output tensor: element type, layout, channel order
 * and, when it does not depend on the input, shape and size (zeros
 * otherwise).
 *
 * # Safety
 *
 * `plan` must be a live plan handle; `out` valid for a write.
 */
tp_result tp_plan_output_info(const struct tp_plan *plan, struct tp_tensor_info *out);

/**
 * Describes the output tensor the plan makes for one encoded image (JPEG,
 * PNG or WebP), its shape read from the file's header (for plans whose output size depends on the
 * image). The plan resolved for the image's size is kept in `state`, so a
 * `tp_plan_run_jpeg` on the same bytes that follows reuses it.
 *
 * # Safety
 *
 * `plan` and `state` must be live handles, `state` used by no other thread
 * meanwhile; `data` valid for reads of `len` bytes; `out` valid for a write.
 */
tp_result tp_plan_output_info_for_jpeg(const struct tp_plan *plan,
                                       struct tp_run_state *state,
                                       const uint8_t *data,
                                       size_t len,
                                       struct tp_tensor_info *out);

/**
 * Makes an empty run state.
 *
 * # Safety
 *
 * `out` must be valid for a write; on success it receives a state the
 * caller owns and frees with `tp_run_state_free`.
 */
tp_result tp_run_state_new(struct tp_run_state **out);

/**
 * Frees a run state. NULL is a no-op.
 *
 * # Safety
 *
 * `state` must be NULL or a handle from `tp_run_state_new` not yet freed,
 * in use by no thread, and not used after.
 */
void tp_run_state_free(struct tp_run_state *state);

/**
 * Preprocesses one encoded image (JPEG, PNG or WebP: the format is found
 * from the bytes; the name stays from when JPEG was the only one) into the
 * caller's tensor (the inference engine's input buffer): decode, every op of the plan, and the finish pass writing
 * `out` directly. `out_bytes` must be at least the output's size (see
 * `tp_plan_output_info`); only that many bytes are written, and `out` must
 * be aligned for the element type. `*geometry` (may be NULL) receives how
 * the image was scaled and moved, to map detections back.
 *
 * On failure `geometry` is not written and the tensor's contents are
 * unspecified.
 *
 * # Safety
 *
 * `plan` and `state` must be live handles, `state` used by no other thread
 * meanwhile; `data` valid for reads of `len` bytes; `out` valid for writes
 * of `out_bytes` bytes; `geometry` NULL or valid for a write.
 */
tp_result tp_plan_run_jpeg(const struct tp_plan *plan,
                           struct tp_run_state *state,
                           const uint8_t *data,
                           size_t len,
                           void *out,
                           size_t out_bytes,
                           struct tp_geometry *geometry);

/**
 * Preprocesses one frame of raw pixels (the format and size the plan was
 * compiled for; planes with their own strides for NV12/NV21/I420) into the
 * caller's tensor. Otherwise as `tp_plan_run_jpeg`.
 *
 * # Safety
 *
 * `plan` and `state` must be live handles, `state` used by no other thread
 * meanwhile; `image` must point to a `tp_image` whose used planes are valid
 * for reads of their `len`; `out` valid for writes of `out_bytes` bytes;
 * `geometry` NULL or valid for a write.
 */
tp_result tp_plan_run_pixels(const struct tp_plan *plan,
                             struct tp_run_state *state,
                             const struct tp_image *image,
                             void *out,
                             size_t out_bytes,
                             struct tp_geometry *geometry);

/**
 * Preprocesses `n` encoded images (JPEG, PNG or WebP, mixed freely) into one batch tensor (image `i` at byte
 * `i * info.bytes`), in order, on this thread. The plan's output size must
 * be fixed. `geometries` (may be NULL) receives `n` geometries. Stops at the
 * first failure, whose message names the image; the tensor and
 * `geometries` are then unspecified.
 *
 * # Safety
 *
 * `plan` and `state` must be live handles, `state` used by no other thread
 * meanwhile; `inputs` must point to `n` `tp_bytes` each valid for reads;
 * `out` valid for writes of `out_bytes` bytes; `geometries` NULL or valid
 * for writes of `n` `tp_geometry`.
 */
tp_result tp_plan_run_batch_jpeg(const struct tp_plan *plan,
                                 struct tp_run_state *state,
                                 const struct tp_bytes *inputs,
                                 size_t n,
                                 void *out,
                                 size_t out_bytes,
                                 struct tp_geometry *geometries);

/**
 * Preprocesses `n` frames (each of the plan's format and size) into one
 * batch tensor. Otherwise as `tp_plan_run_batch_jpeg`.
 *
 * # Safety
 *
 * As for `tp_plan_run_batch_jpeg`, with `images` pointing to `n` `tp_image`
 * whose used planes are valid for reads.
 */
tp_result tp_plan_run_batch_pixels(const struct tp_plan *plan,
                                   struct tp_run_state *state,
                                   const struct tp_image *images,
                                   size_t n,
                                   void *out,
                                   size_t out_bytes,
                                   struct tp_geometry *geometries);

/**
 * The name of a result code (`"TP_RESULT_JPEG_CORRUPT"`), or
 * `"TP_RESULT_UNKNOWN"` for a value that is not one.
 *
 * # Safety
 *
 * None: any value may be passed. The returned string is static; the caller
 * must not free it.
 */
const char *tp_result_name(uint32_t result);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* TENSORPREP_H */
