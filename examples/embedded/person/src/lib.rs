//! What the embedded example computes, shared by the firmware and the host:
//! one QVGA RGB565 camera frame (made from a photo at build time, kept in
//! flash) and two pipelines turning it into 96x96 int8 NHWC tensors with a
//! TensorFlow Lite Micro model's quantization:
//!
//! - RGB, as a MobileNet-style int8 model takes it: centre crop 240x240,
//!   Pillow bilinear to 96x96, `x / 127.5 - 1`, quantized with scale 1/127.5
//!   and zero point -1;
//! - gray, the person-detection input: the same crop and resize of the luma,
//!   `x / 255`, quantized with scale 1/255 and zero point -128.
//!
//! The checksum is FNV-1a (64 bits) over the RGB tensor's bytes, then the gray one's.
#![no_std]

use tensorprep::finish::{ChannelOrder, Normalize};
use tensorprep::pipeline::{CenterCrop, CropRounding, InputDesc, Op, Pipeline, Resize};
use tensorprep::resize::{Filter, Resample};
use tensorprep::size::SizeRule;
use tensorprep::{DType, Layout, PixelFormat, Quantization, Result};

/// Frame width and height (QVGA).
pub const WIDTH: u32 = 320;
/// Frame height.
pub const HEIGHT: u32 = 240;
/// The frame's pixel format: RGB565, high byte first, as SPI camera modules send it.
pub const FORMAT: PixelFormat = PixelFormat::Rgb565Be;
/// What the plans are compiled for.
pub const INPUT: InputDesc = InputDesc::pixels(FORMAT, WIDTH, HEIGHT);
/// Elements of each output tensor: 96x96x3 (RGB) and 96x96 (gray).
pub const OUTPUT_LEN: [usize; 2] = [96 * 96 * 3, 96 * 96];

/// The frame, in flash.
pub static FRAME: [u8; (WIDTH * HEIGHT * 2) as usize] =
    *include_bytes!(concat!(env!("OUT_DIR"), "/frame.rgb565"));

/// The two pipelines: RGB (MobileNet-style) and gray (person detection).
pub fn pipelines() -> Result<[Pipeline; 2]> {
    let prefix = |to| {
        [
            Op::ConvertColor {
                to,
                range: Default::default(),
            },
            Op::CenterCrop(CenterCrop {
                width: 240,
                height: 240,
                rounding: CropRounding::HalfEven,
            }),
            Op::Resize(Resize {
                size: SizeRule::Exact {
                    width: 96,
                    height: 96,
                },
                resample: Resample::Pillow(Filter::Bilinear),
            }),
        ]
    };
    let rgb = Pipeline::from_ops(&prefix(PixelFormat::Rgb8))?
        .then(Op::Normalize(Normalize {
            mean: [0.5; 3],
            std: [0.5; 3],
            divisor: 255.0,
            std_reciprocal: false,
            second_std: [1.0; 3],
        }))?
        .then(Op::Layout {
            layout: Layout::Hwc,
            order: ChannelOrder::Rgb,
        })?
        .then(Op::Cast {
            dtype: DType::I8,
            quantization: Quantization {
                scale: 1.0 / 127.5,
                zero_point: -1,
            },
        })?;
    let gray = Pipeline::from_ops(&prefix(PixelFormat::Gray8))?
        .then(Op::Normalize(Normalize::UNIT))?
        .then(Op::Layout {
            layout: Layout::Hwc,
            order: ChannelOrder::Gray,
        })?
        .then(Op::Cast {
            dtype: DType::I8,
            quantization: Quantization {
                scale: 1.0 / 255.0,
                zero_point: -128,
            },
        })?;
    Ok([rgb, gray])
}

/// FNV-1a (64 bits) over the tensors' bytes, one after the other.
pub fn checksum(tensors: [&[i8]; 2]) -> u64 {
    let mut h = tensorprep::Fnv1a64::new();
    for t in tensors {
        t.iter().for_each(|v| h.update(&v.to_le_bytes()));
    }
    h.finish()
}
