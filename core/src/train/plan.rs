//! A training pipeline: decode, the augment list (drawn per sample), the
//! finish pass. Compiled once; each sample draws its ops from its
//! [`SampleKey`] and runs them through the inference plan's machinery.

#![forbid(unsafe_code)]

use alloc::vec::Vec;

use super::SampleKey;
use super::augment::{self, Augment, Drawn};
use crate::finish::{ChannelOrder, Normalize};
use crate::jpeg::Backend;
use crate::pipeline::{
    Decode, DecodeScaling, Geometry, Input, InputDesc, Op, Pipeline, Plan, PlanState,
};
use crate::targets::Target;
use crate::{
    DType, Error, ImageView, ImageViewMut, Layout, Limits, PixelFormat, Quantization, Result,
    TensorMut,
};

/// The most positions (ops, nested ones counted) an augment list holds.
pub const MAX_AUGMENTS: u32 = 1024;

/// What a training pipeline does: decode, augment, finish.
///
/// ```
/// use tensorprep::train::{SampleKey, TrainPipeline, TrainState};
/// use tensorprep::TensorMut;
///
/// // torchvision's ImageNet training transform.
/// let plan = TrainPipeline::imagenet_train().compile()?;
/// assert_eq!(plan.output_shape(), Some([3, 224, 224]));
/// let jpeg = std::fs::read("../tests/fixtures/sample.jpg").unwrap();
/// let mut state = TrainState::new();
/// let mut tensor = vec![0f32; 3 * 224 * 224];
/// plan.run(&mut state, SampleKey::new(7, 0, 0), &jpeg, TensorMut::F32(&mut tensor))?;
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TrainPipeline {
    /// How files are decoded.
    pub decode: Decode,
    /// The image ops, fixed and random, in order.
    pub augments: Vec<Augment>,
    /// The finish pass: normalize, layout and cast.
    pub finish: [Op; 3],
    /// `RandomErasing` on the finished tensor, in order (torchvision's
    /// recipes erase after `Normalize`).
    pub erasing: Vec<super::RandomErasing>,
}

impl TrainPipeline {
    /// A pipeline of `augments` between `decode` and `finish`
    /// ([`Op::finish`]).
    pub fn new(decode: Decode, augments: Vec<Augment>, finish: [Op; 3]) -> TrainPipeline {
        TrainPipeline {
            decode,
            augments,
            finish,
            erasing: Vec::new(),
        }
    }

    /// torchvision's ImageNet training transform: `RandomResizedCrop(224)`
    /// (Pillow bilinear), `RandomHorizontalFlip(0.5)`, `ToTensor`,
    /// `Normalize(ImageNet)`, CHW float32.
    pub fn imagenet_train() -> TrainPipeline {
        // The eval preset's decode and finish: one definition of each.
        let eval = Pipeline::imagenet_eval();
        let ops = eval.ops();
        let decode = match ops[0] {
            Op::Decode(d) => d,
            _ => unreachable!("the eval preset starts with its decode"),
        };
        let finish = [ops[ops.len() - 3], ops[ops.len() - 2], ops[ops.len() - 1]];
        TrainPipeline::new(
            decode,
            alloc::vec![
                Augment::RandomResizedCrop(super::RandomResizedCrop::new(224, 224)),
                Augment::RandomFlip(super::RandomFlip::new(
                    crate::geometry::Flip::Horizontal,
                    0.5
                )),
            ],
            finish,
        )
    }

    /// An inference pipeline as a training pipeline without random ops (a
    /// validation loader's): its Decode, its image ops as fixed steps and its
    /// finish. It must start with a Decode and end with Normalize, Layout,
    /// Cast, as every graph that decodes does.
    ///
    /// ```
    /// use tensorprep::pipeline::Pipeline;
    /// use tensorprep::train::TrainPipeline;
    ///
    /// let eval = TrainPipeline::from_pipeline(&Pipeline::imagenet_eval())?;
    /// assert_eq!(eval.compile()?.output_shape(), Some([3, 224, 224]));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn from_pipeline(pipeline: &Pipeline) -> Result<TrainPipeline> {
        let refuse = |name, reason| Err(Error::InvalidParameter { name, reason });
        let ops = pipeline.ops();
        let Some(Op::Decode(decode)) = ops.first() else {
            return refuse(
                "training pipeline from a pipeline",
                "it must start with a Decode",
            );
        };
        let finish = match ops.get(ops.len().saturating_sub(3)..) {
            Some(
                &[
                    n @ Op::Normalize(_),
                    l @ Op::Layout { .. },
                    c @ Op::Cast { .. },
                ],
            ) if ops.len() >= 4 => [n, l, c],
            _ => {
                return refuse(
                    "training pipeline from a pipeline",
                    "it must end with Normalize, Layout, Cast",
                );
            }
        };
        let augments = ops[1..ops.len() - 3]
            .iter()
            .map(|&op| Augment::Op(op))
            .collect();
        Ok(TrainPipeline::new(*decode, augments, finish))
    }

    /// The training presets' names, for [`TrainPipeline::preset`].
    pub const PRESETS: [&'static str; 10] = [
        "imagenet-train",
        "imagenet-autoaugment",
        "imagenet-randaugment",
        "imagenet-trivialaugment",
        "imagenet-augmix",
        "detection-hflip",
        "detection-lsj",
        "detection-multiscale",
        "detection-ssd",
        "detection-ssdlite",
    ];

    /// A training preset by name: `imagenet-train` ([`Self::imagenet_train`]),
    /// or torchvision's classification reference recipe
    /// (`ClassificationPresetTrain`) with its `--auto-augment` choice:
    /// `imagenet-autoaugment` (AutoAugment, ImageNet policy),
    /// `imagenet-randaugment` (RandAugment, magnitude 9),
    /// `imagenet-trivialaugment` (TrivialAugmentWide) or `imagenet-augmix`
    /// (AugMix, severity 3), each after the crop and flip, with the
    /// reference's bilinear interpolation.
    ///
    /// ```
    /// use tensorprep::train::TrainPipeline;
    ///
    /// let p = TrainPipeline::preset("imagenet-trivialaugment").unwrap();
    /// assert_eq!(p.augments.len(), 3);
    /// assert_eq!(p.compile()?.output_shape(), Some([3, 224, 224]));
    /// assert!(TrainPipeline::preset("nope").is_none());
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn preset(name: &str) -> Option<TrainPipeline> {
        use crate::warp::Interpolation::Bilinear;
        if let Some(recipe) = name.strip_prefix("detection-") {
            return Self::detection(recipe);
        }
        let policy = match name {
            "imagenet-train" => return Some(Self::imagenet_train()),
            "imagenet-autoaugment" => {
                let mut a = super::AutoAugment::new(super::AutoAugmentPolicy::ImageNet);
                a.interpolation = Bilinear;
                Augment::AutoAugment(a)
            }
            "imagenet-randaugment" => {
                let mut a = super::RandAugment::new(2, 9);
                a.interpolation = Bilinear;
                Augment::RandAugment(a)
            }
            "imagenet-trivialaugment" => {
                let mut a = super::TrivialAugmentWide::new();
                a.interpolation = Bilinear;
                Augment::TrivialAugmentWide(a)
            }
            "imagenet-augmix" => Augment::AugMix(super::AugMix::new()),
            _ => return None,
        };
        let mut p = Self::imagenet_train();
        p.augments.push(policy);
        Some(p)
    }

    /// torchvision's detection reference recipes (`DetectionPresetTrain`
    /// with `use_v2`, as `detection-<recipe>` presets): `hflip`, `lsj`
    /// (`ScaleJitter` to 1024 x 1024, the references' `FixedSizeCrop` with
    /// the mean as fill, flip), `multiscale` (`RandomShortestSize` 480 to
    /// 800 by 32, at most 1333, flip), `ssd` (`RandomPhotometricDistort`,
    /// `RandomZoomOut` with the mean as fill, `RandomIoUCrop`, flip) and
    /// `ssdlite` (`RandomIoUCrop`, flip); then `ToDtype(float32, scale)`
    /// (CHW, 0 to 1, [`Normalize::TO_DTYPE_SCALE`]), boxes converted to
    /// XYXY and sanitized. Two places follow what the recipe means where
    /// torchvision 0.29's v2 run of it does otherwise: `ssd` pads with the
    /// mean (v2's `_get_fill` misses the recipe's `defaultdict` and pads PIL
    /// images with 0), and `lsj`'s crop moves the boxes and masks onto its
    /// output canvas (the references' `FixedSizeCrop` returns plain tensors
    /// on the old one). The photo is
    /// decoded as stored (no EXIF rotation: COCO's boxes are on the stored
    /// pixels, as PIL opens them). Output sizes vary but for `lsj`'s.
    ///
    /// ```
    /// use tensorprep::train::TrainPipeline;
    ///
    /// let ssd = TrainPipeline::preset("detection-ssd").unwrap();
    /// assert_eq!(ssd.augments.len(), 6);
    /// assert!(ssd.check_targets().is_ok());
    /// assert_eq!(TrainPipeline::preset("detection-lsj").unwrap().compile()?.output_shape(), Some([3, 1024, 1024]));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    fn detection(recipe: &str) -> Option<TrainPipeline> {
        use super::{
            FixedSizeCrop, RandomFlip, RandomIoUCrop, RandomPhotometricDistort, RandomShortestSize,
            RandomZoomOut, ScaleJitter,
        };
        use crate::targets::{BoxFormat, TargetOp};
        // The references' mean, (123.0, 117.0, 104.0), as the fill.
        const MEAN: [u8; 3] = [123, 117, 104];
        let flip = Augment::RandomFlip(RandomFlip::new(crate::geometry::Flip::Horizontal, 0.5));
        let mut augments = match recipe {
            "hflip" => alloc::vec![flip],
            "lsj" => {
                let mut crop = FixedSizeCrop::new(1024, 1024);
                crop.fill = MEAN;
                alloc::vec![
                    Augment::ScaleJitter(ScaleJitter::new(1024, 1024)),
                    Augment::FixedSizeCrop(crop),
                    flip,
                ]
            }
            "multiscale" => alloc::vec![
                Augment::RandomShortestSize(RandomShortestSize::new(
                    (480..=800).step_by(32).collect(),
                    Some(1333),
                )),
                flip,
            ],
            "ssd" => alloc::vec![
                Augment::RandomPhotometricDistort(RandomPhotometricDistort::new()),
                Augment::RandomZoomOut(RandomZoomOut::new(MEAN)),
                Augment::RandomIoUCrop(RandomIoUCrop::new()),
                flip,
            ],
            "ssdlite" => alloc::vec![Augment::RandomIoUCrop(RandomIoUCrop::new()), flip],
            _ => return None,
        };
        augments.push(Augment::Target(TargetOp::ConvertFormat(BoxFormat::Xyxy)));
        augments.push(Augment::Target(TargetOp::Sanitize {
            min_size: 1.0,
            min_area: 1.0,
        }));
        let finish = Op::finish(
            Normalize::TO_DTYPE_SCALE,
            crate::Layout::Chw,
            ChannelOrder::Rgb,
            crate::DType::F32,
            crate::Quantization::IDENTITY,
        );
        let decode = Decode::exact(crate::jpeg::Backend::default());
        Some(TrainPipeline::new(decode, augments, finish))
    }

    /// The custom ops ([`Augment::Custom`]) of the pipeline, nested ones
    /// too, in order.
    pub fn custom_ops(&self) -> Vec<&augment::CustomOp> {
        let mut found = Vec::new();
        augment::customs(&self.augments, &mut found);
        found
    }

    /// Whether the pipeline can be saved (a graph, a loader's state): not
    /// when it holds a custom op, whose function is code; the error names
    /// the first. Anything that serialises a pipeline calls this first.
    ///
    /// ```
    /// use tensorprep::train::{Augment, CustomOp, RandomApply, TrainPipeline};
    ///
    /// let mut p = TrainPipeline::imagenet_train();
    /// assert!(p.check_saveable().is_ok());
    /// let same = CustomOp::new("same", |image, _key, out| {
    ///     out.clear();
    ///     (0..image.height()).for_each(|y| out.extend_from_slice(image.row(y)));
    ///     Ok((image.width(), image.height()))
    /// });
    /// p.augments.push(Augment::RandomApply(RandomApply::new(0.5, vec![Augment::Custom(same)])));
    /// assert_eq!(&*p.check_saveable().unwrap_err().op, "same");
    /// ```
    pub fn check_saveable(&self) -> core::result::Result<(), augment::NotSaveable> {
        match self.custom_ops().first() {
            Some(op) => Err(augment::NotSaveable {
                op: alloc::sync::Arc::from(op.name()),
            }),
            None => Ok(()),
        }
    }

    /// Whether the pipeline can carry targets (boxes, masks, key points):
    /// every geometric op moves them, colour ops leave them; AugMix and
    /// custom ops cannot, and the error says which.
    ///
    /// ```
    /// use tensorprep::train::{AugMix, Augment, TrainPipeline};
    ///
    /// let mut p = TrainPipeline::imagenet_train();
    /// assert!(p.check_targets().is_ok());
    /// p.augments.push(Augment::AugMix(AugMix::default()));
    /// assert!(p.check_targets().unwrap_err().to_string().contains("AugMix"));
    /// ```
    pub fn check_targets(&self) -> Result<()> {
        augment::check_targets(&self.augments)
    }

    /// Compiles with the default [`Limits`].
    pub fn compile(&self) -> Result<TrainPlan> {
        self.compile_with_limits(&Limits::DEFAULT)
    }

    /// Checks every op and builds the finish pass once.
    pub fn compile_with_limits(&self, limits: &Limits) -> Result<TrainPlan> {
        self.augments.iter().try_for_each(Augment::check)?;
        self.erasing
            .iter()
            .try_for_each(super::RandomErasing::check)?;
        let positions: u32 = self.augments.iter().map(Augment::positions).sum();
        if positions.saturating_add(self.erasing.len().min(MAX_AUGMENTS as usize) as u32)
            > MAX_AUGMENTS
        {
            return Err(Error::InvalidParameter {
                name: "training pipeline",
                reason: "more than MAX_AUGMENTS ops",
            });
        }
        let fast = self.decode.scaling != DecodeScaling::Exact;
        if fast {
            if self.decode.backend != Backend::LibjpegTurbo {
                return Err(Error::InvalidParameter {
                    name: "training pipeline",
                    reason: "reduced-size (fast or draft, DCT-scaled) decoding needs the libjpeg-turbo backend",
                });
            }
            // The decode's scale follows the first drawn crop and resize.
            let resizes_first = self.augments.first().is_some_and(Augment::sizes_first);
            if !resizes_first {
                return Err(Error::InvalidParameter {
                    name: "training pipeline",
                    reason: "reduced-size (fast or draft) decoding needs the augments to start with RandomResizedCrop, a crop or a Resize",
                });
            }
        }
        let exact = Decode {
            scaling: DecodeScaling::Exact,
            ..self.decode
        };
        let compile = |finish: &[Op]| -> Result<Plan> {
            let mut ops = alloc::vec![Op::Decode(exact)];
            ops.extend_from_slice(finish);
            Ok(Pipeline::from_ops(&ops)?
                .compile_with_limits(InputDesc::Encoded, limits)?
                .decode_scaling(self.decode.scaling))
        };
        let base = compile(&self.finish)?;
        // Adjustments and warps run on the decoded 8-bit image, in the
        // decode's own format: a finish pass that writes it as it is.
        let image = if self.augments.iter().any(Augment::draws_image_ops) {
            let order = match self.decode.format {
                PixelFormat::Rgb8 => ChannelOrder::Rgb,
                PixelFormat::Bgr8 => ChannelOrder::Bgr,
                PixelFormat::Gray8 => ChannelOrder::Gray,
                _ => {
                    return Err(Error::InvalidParameter {
                        name: "training pipeline",
                        reason: "colour adjustments and warps need Decode to Rgb8, Bgr8 or Gray8",
                    });
                }
            };
            let raw = Op::finish(
                Normalize::RAW,
                Layout::Hwc,
                order,
                DType::U8,
                Quantization::IDENTITY,
            );
            Some(compile(&raw)?)
        } else {
            None
        };
        Ok(TrainPlan {
            base,
            image,
            erasing: self.erasing.clone(),
            erase_position: positions,
            augments: self.augments.clone(),
            output: augment::fixed_size(&self.augments, None),
        })
    }
}

/// A compiled training pipeline. Immutable and `Send + Sync`: each worker
/// runs it with its own [`TrainState`].
#[derive(Clone, Debug)]
pub struct TrainPlan {
    /// Decode and finish; the drawn plan ops run through it.
    base: Plan,
    /// Decode to the 8-bit image, when adjustments or warps may be drawn.
    image: Option<Plan>,
    erasing: Vec<super::RandomErasing>,
    /// The op position of the first erasing (after every augment's).
    erase_position: u32,
    augments: Vec<Augment>,
    /// The output size when every draw gives the same.
    output: Option<(u32, u32)>,
}

/// One worker's scratch: the plan state (decoder, buffers, resolved plans),
/// the drawn op list, and the images adjustments run between, reused from
/// sample to sample.
#[derive(Debug, Default)]
pub struct TrainState {
    plan: PlanState,
    drawn: Vec<Drawn>,
    /// One run of plan ops, taken from `drawn`.
    ops: Vec<Op>,
    images: [Vec<u8>; 2],
    scratch: Vec<f32>,
    /// AugMix's original image and float mixture.
    mixing: augment::Mixing,
    /// The most bytes one sample may need ([`TrainState::with_decode_budget`]).
    budget: Option<u64>,
    /// Why the last custom op failed ([`TrainState::take_custom_error`]).
    custom_error: Option<augment::CustomOpError>,
}

impl TrainState {
    /// What a sample is counted to need per pixel of its stored image: the
    /// decoder's output and its own planes or inflated rows, and the
    /// images the augmentations run between (measured: a 8192 x 16384
    /// RGBA PNG through `RandomResizedCrop` peaked at 11 bytes a pixel).
    pub const BYTES_PER_PIXEL: u64 = 12;

    /// Empty scratch, no budget beyond the plan's limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty scratch for a worker that may spend at most `bytes` on one
    /// sample: an image whose stored width x height x
    /// [`TrainState::BYTES_PER_PIXEL`] exceeds it is refused from its
    /// header, before anything is decoded (the loader's
    /// [`decode_budget`](crate::train::LoaderConfig::decode_budget)).
    pub fn with_decode_budget(bytes: u64) -> Self {
        TrainState {
            budget: Some(bytes),
            ..Self::default()
        }
    }

    /// Leaves the drawn ops that work on pixels: the target's own ops
    /// (already run as they were drawn) are no pass of the image.
    fn drop_target_ops(&mut self) {
        self.drawn.retain(|d| !matches!(d, Drawn::Target(_)));
    }

    /// Checks an image of `width` x `height` against the budget.
    fn afford(&self, width: u32, height: u32) -> Result<()> {
        afford(self.budget, (width, height))
    }

    /// Why the last run failed with [`Error::CustomOp`]: the custom op's
    /// error (its function's, or a result that does not fit), taken out of
    /// the state.
    pub fn take_custom_error(&mut self) -> Option<augment::CustomOpError> {
        self.custom_error.take()
    }
}

/// Checks an image of `size` against the `budget`.
fn afford(budget: Option<u64>, size: (u32, u32)) -> Result<()> {
    let need = u64::from(size.0) * u64::from(size.1) * TrainState::BYTES_PER_PIXEL;
    match budget {
        Some(limit) if need > limit => Err(Error::OverBudget { bytes: need, limit }),
        _ => Ok(()),
    }
}

impl TrainPlan {
    /// The output tensor's shape when it is the same for every sample (a
    /// pipeline ending in a fixed size, as batches need).
    pub fn output_shape(&self) -> Option<[usize; 3]> {
        self.output.map(|(w, h)| self.base.finish_shape(w, h))
    }

    /// The output element type.
    pub fn dtype(&self) -> DType {
        self.base.dtype()
    }

    /// The output layout (CHW or HWC).
    pub fn layout(&self) -> Layout {
        self.base.layout().0
    }

    /// The output's channel order (RGB, BGR or gray).
    pub fn channel_order(&self) -> ChannelOrder {
        self.base.layout().1
    }

    /// The finish step's normalization ([`Normalize::RAW`] when the pipeline
    /// has none).
    pub fn normalization(&self) -> &Normalize {
        self.base.normalization()
    }

    /// The ops drawn for the sample `key` on the encoded image `bytes`
    /// (its header is read): what [`TrainPlan::run`] runs.
    pub fn draw<'s>(
        &self,
        state: &'s mut TrainState,
        key: SampleKey,
        bytes: &[u8],
    ) -> Result<&'s [Drawn]> {
        self.draw_input(state, key, Input::Encoded(bytes))
    }

    /// [`TrainPlan::draw`] for any input: an encoded file or pixels.
    pub fn draw_input<'s>(
        &self,
        state: &'s mut TrainState,
        key: SampleKey,
        input: Input<'_>,
    ) -> Result<&'s [Drawn]> {
        let source = self.source(state, input)?;
        self.draw_for(state, key, source.size(), None)?;
        Ok(&state.drawn)
    }

    /// [`TrainPlan::draw_input`] for a sample with a target (annotated on
    /// the image as given), moved by the ops as they are drawn.
    pub fn draw_with_target<'s>(
        &self,
        state: &'s mut TrainState,
        key: SampleKey,
        input: Input<'_>,
        target: &mut Target,
    ) -> Result<&'s [Drawn]> {
        let source = self.source(state, input)?;
        self.upright(&source, target)?;
        self.draw_for(state, key, source.size(), Some(target))?;
        Ok(&state.drawn)
    }

    /// The header step: an encoded file's size from its header (read by
    /// the state's decoder), pixels' from their view.
    fn source<'a>(&self, state: &mut TrainState, input: Input<'a>) -> Result<Source<'a>> {
        Ok(match input {
            Input::Encoded(bytes) => {
                Source::Encoded(bytes, self.base.header(&mut state.plan, bytes)?)
            }
            Input::Pixels(view) => Source::Pixels(view),
        })
    }

    /// Moves a target onto the image the decode makes: one annotated on the
    /// stored pixels turns upright with the image when the decode applies
    /// its EXIF orientation; one annotated upright ([`Target::upright`],
    /// YOLO's) turns back when the decode keeps the pixels as stored.
    fn upright(&self, source: &Source<'_>, target: &mut Target) -> Result<()> {
        use crate::targets::Geometry;
        let Source::Encoded(_, info) = source else {
            return Ok(());
        };
        let applies = self.base.applies_orientation();
        let moves = match (applies, target.upright) {
            (true, false) => Geometry::exif(info.exif_orientation),
            (false, true) => Geometry::exif_inverse(info.exif_orientation),
            _ => &[],
        };
        for g in moves {
            target.apply(g)?;
        }
        target.upright = applies;
        Ok(())
    }

    /// Draws the ops for `key` on an image of `size` into the state's list,
    /// moving `target` (if any) as they are drawn, then making its polygons
    /// (if any) its masks on the final canvas
    /// ([`Target::rasterize_polygons`]); returns the size they leave.
    fn draw_for(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        size: (u32, u32),
        target: Option<&mut Target>,
    ) -> Result<(u32, u32)> {
        state.drawn.clear();
        let mut target = target;
        let mut drawing = augment::Drawing::new(&mut state.drawn, target.as_deref_mut(), size)?;
        let size = augment::draw(&self.augments, key, 0, size, &mut drawing)?;
        if let Some(t) = target {
            t.rasterize_polygons()?;
        }
        Ok(size)
    }

    /// Runs the drawn list on `source` into `out`. Plan ops alone are one
    /// fused run. Otherwise the ops before the first adjustment decode (or,
    /// for pixels, convert) into an 8-bit image; each adjustment or warp
    /// maps one image to the next; runs of plan ops between them go through
    /// the image plan, the last run (possibly empty) through the finish
    /// pass. The geometry is then the last pass's.
    ///
    /// Pixels take the path of an image between adjustments: a
    /// `ConvertColor` to the decode's format leads their first run (fused
    /// into the op that reads them, as for camera frames), so a gray sample
    /// becomes RGB as Pillow's `convert("RGB")` makes it, and a sample
    /// already in the decode's format is read as it is.
    fn run_drawn(
        &self,
        state: &mut TrainState,
        source: Source<'_>,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let format = self.image_format();
        let TrainState {
            plan,
            drawn,
            ops,
            images,
            scratch,
            mixing,
            budget,
            custom_error,
        } = state;
        let plan_ops = |ds: &[Drawn], ops: &mut Vec<Op>| {
            ops.clear();
            ops.extend(ds.iter().map_while(|d| match d {
                Drawn::Op(op) => Some(*op),
                _ => None,
            }));
        };
        // The first run of plan ops, led for pixels by their conversion.
        let first_ops = |ds: &[Drawn], ops: &mut Vec<Op>| {
            plan_ops(ds, ops);
            if let Source::Pixels(view) = source
                && view.format() != format
            {
                ops.insert(
                    0,
                    Op::ConvertColor {
                        to: format,
                        range: crate::color::YuvRange::Full,
                    },
                );
            }
        };
        let Some(first) = drawn.iter().position(|d| !matches!(d, Drawn::Op(_))) else {
            first_ops(drawn, ops);
            return match source {
                Source::Encoded(bytes, info) => {
                    self.base.run_encoded_ops(plan, bytes, info, ops, out)
                }
                Source::Pixels(view) => self.base.run_image_ops(plan, view, ops, out),
            };
        };
        let image_plan = self.image.as_ref().ok_or(Error::InvalidParameter {
            name: "training plan",
            reason: "an adjustment was drawn but the plan has no image pass",
        })?;
        let mut size = source.size();
        first_ops(&drawn[..first], ops);
        for op in ops.iter() {
            size = op.output_size(size)?;
        }
        let mut cur = 0;
        let len = image_len(format, size, &self.limits())?;
        crate::buffer::grow(&mut images[cur], len)?;
        let image = TensorMut::U8(&mut images[cur][..len]);
        match source {
            Source::Encoded(bytes, info) => {
                image_plan.run_encoded_ops(plan, bytes, info, ops, image)?
            }
            Source::Pixels(view) => image_plan.run_image_ops(plan, view, ops, image)?,
        };
        let mut i = first;
        loop {
            // The next run of plan ops, then the step that ends it.
            plan_ops(&drawn[i..], ops);
            let next = drawn.get(i + ops.len()).copied();
            if let (true, Some(Drawn::AugMix(step))) = (ops.is_empty(), next) {
                // In place on the current image.
                let len = image_len(format, size, &self.limits())?;
                step.run(&mut images[cur][..len], mixing)?;
                i += 1;
                continue;
            }
            i += ops.len();
            let [a, b] = images;
            let (src, dst) = if cur == 0 { (&*a, b) } else { (&*b, a) };
            let src_len = image_len(format, size, &self.limits())?;
            let view = ImageView::new(format, size.0, size.1, &src[..src_len])?;
            let Some(next) = next else {
                return self.base.run_image_ops(plan, view, ops, out);
            };
            if !ops.is_empty() {
                let mut after = size;
                for op in ops.iter() {
                    after = op.output_size(after)?;
                }
                let len = image_len(format, after, &self.limits())?;
                crate::buffer::grow(dst, len)?;
                image_plan.run_image_ops(plan, view, ops, TensorMut::U8(&mut dst[..len]))?;
                size = after;
                cur = 1 - cur;
                continue;
            }
            if let Drawn::Custom { position, key } = next {
                let op = self.custom_op(position).ok_or(Error::InvalidParameter {
                    name: "training plan",
                    reason: "a custom op was drawn at a position that holds none",
                })?;
                size = match op.run(&view, key, dst) {
                    Ok(after) => after,
                    Err(e) => {
                        *custom_error = Some(e);
                        return Err(Error::CustomOp { position });
                    }
                };
                // The result is an image of the pass: within the limits and
                // the worker's budget.
                image_len(format, size, &self.limits())?;
                afford(*budget, size)?;
                cur = 1 - cur;
                i += 1;
                continue;
            }
            let Drawn::Image(image_op) = next else {
                unreachable!("plan ops, AugMix steps and custom ops are taken above")
            };
            let after = image_op.output_size(size);
            let len = image_len(format, after, &self.limits())?;
            crate::buffer::grow(dst, len)?;
            let mut target = ImageViewMut::new(format, after.0, after.1, &mut dst[..len])?;
            image_op.apply(&view, &mut target, scratch)?;
            size = after;
            cur = 1 - cur;
            i += 1;
        }
    }

    /// The custom op at `position` of the pipeline.
    pub(crate) fn custom_op(&self, position: u32) -> Option<&augment::CustomOp> {
        augment::custom_at(&self.augments, 0, position)
    }

    /// The 8-bit image format adjustments run on: the decode's.
    fn image_format(&self) -> PixelFormat {
        self.base.decode_format().unwrap_or(PixelFormat::Rgb8)
    }

    fn limits(&self) -> Limits {
        self.base.limits()
    }

    /// Decodes, augments and finishes one sample into `out`. The draws come
    /// from `key` alone: the same key gives the same tensor on any thread.
    /// No allocation in steady state beyond the decoder's own.
    pub fn run(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        bytes: &[u8],
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        self.run_input(state, key, Input::Encoded(bytes), out)
    }

    /// [`TrainPlan::run`] for any input: an encoded file, or pixels (a
    /// [`Sample`](super::data::Sample)'s: [`Sample::input`](super::data::Sample::input))
    /// taken through the same ops with no decode, converted to the decode's
    /// format where theirs differs.
    ///
    /// ```
    /// use tensorprep::pipeline::Input;
    /// use tensorprep::train::{SampleKey, TrainPipeline, TrainState};
    /// use tensorprep::{ImageView, PixelFormat, TensorMut};
    ///
    /// let plan = TrainPipeline::imagenet_train().compile()?;
    /// // A 32 x 32 gray image (MNIST's kind), made RGB on the way.
    /// let gray = vec![128u8; 32 * 32];
    /// let view = ImageView::new(PixelFormat::Gray8, 32, 32, &gray)?;
    /// let mut tensor = vec![0f32; 3 * 224 * 224];
    /// plan.run_input(&mut TrainState::new(), SampleKey::new(7, 0, 0), Input::Pixels(view),
    ///                TensorMut::F32(&mut tensor))?;
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn run_input(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        input: Input<'_>,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        self.run_input_with_target(state, key, input, None, out)
    }

    /// [`TrainPlan::run_input`] for a sample that may have a target
    /// (annotated on the image as given): the target moves with the image,
    /// op by op, as torchvision moves it ([`move_target`](super::move_target)).
    pub fn run_input_with_target(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        input: Input<'_>,
        target: Option<&mut Target>,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        let source = self.source(state, input)?;
        let (w, h) = source.size();
        state.afford(w, h)?;
        let mut target = target;
        if let Some(t) = target.as_deref_mut() {
            self.upright(&source, t)?;
        }
        let (w, h) = self.draw_for(state, key, (w, h), target)?;
        state.drop_target_ops();
        let mut out = out;
        let geometry = self.run_drawn(state, source, out.reborrow())?;
        self.erase(key, self.base.finish_shape(w, h), out)?;
        Ok(geometry)
    }

    /// Runs the erasing ops on the finished tensor `out` of `shape`.
    fn erase(&self, key: SampleKey, shape: [usize; 3], mut out: TensorMut<'_>) -> Result<()> {
        let layout = self.base.layout().0;
        for (k, e) in self.erasing.iter().enumerate() {
            let mut d = super::Draws::new(key, (self.erase_position + k as u32) as u16);
            e.apply(&mut d, out.reborrow(), shape, layout)?;
        }
        Ok(())
    }

    /// [`TrainPlan::run`] for a pipeline whose output size varies: writes
    /// the sample's tensor at the start of `out` (at least as long) and
    /// returns its shape.
    ///
    /// ```
    /// use tensorprep::train::{SampleKey, TrainPipeline, TrainState};
    /// use tensorprep::TensorMut;
    ///
    /// // No crop: the tensor is the photo's size.
    /// let mut pipeline = TrainPipeline::imagenet_train();
    /// pipeline.augments.remove(0);
    /// let plan = pipeline.compile()?;
    /// assert_eq!(plan.output_shape(), None);
    /// let jpeg = std::fs::read("../tests/fixtures/sample.jpg").unwrap();
    /// let mut room = vec![0f32; 3 * 512 * 512];
    /// let shape = plan.run_any_size(&mut TrainState::new(), SampleKey::new(1, 0, 0), &jpeg,
    ///                               TensorMut::F32(&mut room))?;
    /// assert_eq!(shape, [3, 300, 451]);
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn run_any_size(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        bytes: &[u8],
        out: TensorMut<'_>,
    ) -> Result<[usize; 3]> {
        self.run_input_any_size(state, key, Input::Encoded(bytes), out)
    }

    /// [`TrainPlan::run_any_size`] for any input (see [`TrainPlan::run_input`]).
    pub fn run_input_any_size(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        input: Input<'_>,
        out: TensorMut<'_>,
    ) -> Result<[usize; 3]> {
        self.run_input_any_size_with_target(state, key, input, None, out)
    }

    /// [`TrainPlan::run_input_any_size`] for a sample that may have a
    /// target (see [`TrainPlan::run_input_with_target`]).
    pub fn run_input_any_size_with_target(
        &self,
        state: &mut TrainState,
        key: SampleKey,
        input: Input<'_>,
        target: Option<&mut Target>,
        out: TensorMut<'_>,
    ) -> Result<[usize; 3]> {
        let source = self.source(state, input)?;
        let (w, h) = source.size();
        state.afford(w, h)?;
        let mut target = target;
        if let Some(t) = target.as_deref_mut() {
            self.upright(&source, t)?;
        }
        let (w, h) = self.draw_for(state, key, (w, h), target)?;
        state.drop_target_ops();
        let shape = self.base.finish_shape(w, h);
        let len = shape.iter().product::<usize>();
        if len > out.len() {
            return Err(Error::BufferTooSmall {
                plane: 0,
                len: out.len(),
                needed: len,
            });
        }
        let mut out = match out {
            TensorMut::F32(v) => TensorMut::F32(&mut v[..len]),
            TensorMut::F16(v) => TensorMut::F16(&mut v[..len]),
            TensorMut::U8(v) => TensorMut::U8(&mut v[..len]),
            TensorMut::I8(v) => TensorMut::I8(&mut v[..len]),
        };
        self.run_drawn(state, source, out.reborrow())?;
        self.erase(key, shape, out)?;
        Ok(shape)
    }
}

/// What a sample's run starts from: an encoded file with its header, or
/// pixels.
#[derive(Clone, Copy)]
enum Source<'a> {
    Encoded(&'a [u8], crate::decode::ImageInfo),
    Pixels(ImageView<'a>),
}

impl Source<'_> {
    /// The stored image's width and height.
    fn size(&self) -> (u32, u32) {
        match self {
            Source::Encoded(_, info) => (info.width, info.height),
            Source::Pixels(view) => (view.width(), view.height()),
        }
    }
}

impl super::data::Sample {
    /// The sample's image as a plan's input: its bytes as an encoded file,
    /// or as pixels of the size and format its
    /// [`content`](super::data::Sample::content) states, which the bytes
    /// must fill exactly (fewer is [`Error::BufferTooSmall`], more an
    /// [`Error::InvalidParameter`]).
    ///
    /// ```
    /// use tensorprep::pipeline::Input;
    /// use tensorprep::train::data::{Content, Sample};
    /// use tensorprep::PixelFormat;
    ///
    /// let content = Content::Pixels { width: 2, height: 1, format: PixelFormat::Rgb8 };
    /// let sample = Sample { bytes: vec![0; 6], content, ..Sample::default() };
    /// assert!(matches!(sample.input()?, Input::Pixels(v) if v.width() == 2));
    /// let short = Sample { bytes: vec![0; 5], content, ..Sample::default() };
    /// assert!(short.input().is_err());
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn input(&self) -> Result<Input<'_>> {
        match self.content {
            super::data::Content::Pixels {
                width,
                height,
                format,
            } => {
                let view = ImageView::new(format, width, height, &self.bytes)?;
                let needed = crate::image::tight_len(format, width, height).unwrap_or(u64::MAX);
                if self.bytes.len() as u64 != needed {
                    return Err(Error::InvalidParameter {
                        name: "pixel sample",
                        reason: "more bytes than width x height x bytes per pixel",
                    });
                }
                Ok(Input::Pixels(view))
            }
            super::data::Content::Encoded => Ok(Input::Encoded(&self.bytes)),
        }
    }
}

/// Bytes of a packed `format` image of `size`, within the limits.
fn image_len(format: PixelFormat, size: (u32, u32), limits: &Limits) -> Result<usize> {
    limits.check_pixels(u64::from(size.0), u64::from(size.1))?;
    let bpp = format.bytes_per_pixel().unwrap_or(3) as u64;
    let len = u64::from(size.0) * u64::from(size.1) * bpp;
    limits.check_alloc(len)
}

// The compiled plan is shared between worker threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TrainPlan>();
    assert_send_sync::<TrainState>();
};
