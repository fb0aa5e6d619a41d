//! Built-in pipelines for the common models, and look-up by name.

use super::Pipeline;
use super::op::{CenterCrop, CropRounding, Decode, Op, Pad, PadTo, Resize};
use crate::finish::{ChannelOrder, Normalize};
use crate::geometry::Placement;
use crate::jpeg::Backend;
use crate::resize::{Filter, Resample};
use crate::size::{Rounding, SizeRule};
use crate::{DType, Layout, Quantization};

/// torchvision's ImageNet eval geometry: shorter side 256 (Pillow bilinear,
/// antialiased, long side truncated), centre crop 224 (offsets rounded half to even).
const EVAL_GEOMETRY: [Op; 3] = [
    Op::Decode(Decode::exact(Backend::Zune)),
    Op::Resize(Resize {
        size: SizeRule::ShorterSide {
            size: 256,
            max_size: None,
            rounding: Rounding::Truncate,
        },
        resample: Resample::Pillow(Filter::Bilinear),
    }),
    Op::CenterCrop(CenterCrop {
        width: 224,
        height: 224,
        rounding: CropRounding::HalfEven,
    }),
];

/// `ToTensor()` + `Normalize(ImageNet)`: RGB, CHW, float32.
const IMAGENET_F32_CHW: [Op; 3] = Op::finish(
    Normalize::IMAGENET,
    Layout::Chw,
    ChannelOrder::Rgb,
    DType::F32,
    Quantization::IDENTITY,
);

impl Pipeline {
    /// The names [`Pipeline::preset`] knows.
    pub const PRESETS: [&'static str; 3] = [
        "imagenet-eval",
        "imagenet-eval-nhwc-u8",
        "yolo-letterbox-640",
    ];

    /// A built-in pipeline by name (see [`Pipeline::PRESETS`]).
    ///
    /// ```
    /// use tensorprep::pipeline::Pipeline;
    /// assert_eq!(Pipeline::preset("imagenet-eval"), Some(Pipeline::imagenet_eval()));
    /// assert!(Pipeline::preset("no-such-preset").is_none());
    /// ```
    pub fn preset(name: &str) -> Option<Pipeline> {
        match name {
            "imagenet-eval" => Some(Self::imagenet_eval()),
            "imagenet-eval-nhwc-u8" => Some(Self::imagenet_eval_nhwc_u8()),
            "yolo-letterbox-640" => Some(Self::yolo_letterbox(640, 640)),
            _ => None,
        }
    }

    /// torchvision's ImageNet eval transform: `Resize(256)`, `CenterCrop(224)`,
    /// `ToTensor()`, `Normalize(ImageNet mean, std)`; RGB, CHW, float32.
    pub fn imagenet_eval() -> Pipeline {
        Self::build(&EVAL_GEOMETRY, &IMAGENET_F32_CHW)
    }

    /// The same geometry, output as RGB HWC bytes without normalization
    /// (for engines that take uint8 NHWC input, as many TFLite models do).
    pub fn imagenet_eval_nhwc_u8() -> Pipeline {
        Self::build(
            &EVAL_GEOMETRY,
            &[
                Op::Layout {
                    layout: Layout::Hwc,
                    order: ChannelOrder::Rgb,
                },
                Op::Cast {
                    dtype: DType::U8,
                    quantization: Quantization::IDENTITY,
                },
            ],
        )
    }

    /// Ultralytics' letterbox to `width` x `height`: fit keeping the aspect
    /// ratio (sides rounded half to even, OpenCV `INTER_LINEAR`), centred on a
    /// canvas filled with 114, RGB, CHW, values / 255 as float32.
    pub fn yolo_letterbox(width: u32, height: u32) -> Pipeline {
        Self::build(
            &[
                Op::Decode(Decode::exact(Backend::Zune)),
                Op::Resize(Resize {
                    size: SizeRule::Fit {
                        width,
                        height,
                        upscale: true,
                    },
                    resample: Resample::OpenCvLinear,
                }),
                Op::Pad(Pad {
                    to: PadTo::Canvas {
                        width,
                        height,
                        placement: Placement::Center,
                    },
                    fill: [114; 3],
                }),
            ],
            &Op::finish(
                Normalize::UNIT,
                Layout::Chw,
                ChannelOrder::Rgb,
                DType::F32,
                Quantization::IDENTITY,
            ),
        )
    }

    fn build(pixels: &[Op], finish: &[Op]) -> Pipeline {
        let mut p = Pipeline::new();
        for op in pixels.iter().chain(finish) {
            // Presets hold far fewer than MAX_OPS ops.
            let _ = p.push(*op);
        }
        p
    }

    /// The backend its Decode op uses, if it decodes.
    ///
    /// ```
    /// use tensorprep::jpeg::Backend;
    /// use tensorprep::pipeline::Pipeline;
    /// let p = Pipeline::imagenet_eval().with_decoder(Backend::LibjpegTurbo);
    /// assert_eq!(p.decoder(), Some(Backend::LibjpegTurbo));
    /// assert_eq!(Pipeline::new().decoder(), None);
    /// ```
    pub fn decoder(&self) -> Option<Backend> {
        self.ops.iter().find_map(|op| match op {
            Op::Decode(d) => Some(d.backend),
            _ => None,
        })
    }

    /// The same pipeline decoding with `backend`.
    pub fn with_decoder(mut self, backend: Backend) -> Pipeline {
        self.map_decode(|d| d.backend = backend);
        self
    }

    /// The same pipeline with every Decode op changed by `f`.
    pub fn map_decode(&mut self, mut f: impl FnMut(&mut Decode)) {
        for op in self.ops.iter_mut() {
            if let Op::Decode(d) = op {
                f(d);
            }
        }
    }
}
