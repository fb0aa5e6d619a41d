//! torchvision v2's detection transforms: `RandomIoUCrop`, `RandomZoomOut`,
//! `ScaleJitter`, `RandomShortestSize` and `FixedSizeCrop`, each drawn as
//! its `make_params` draws (float32 where torch draws float32, Python's
//! float64 where it computes in Python) and made of plan ops (crop, pad,
//! resize) and the box filters torchvision applies.

use alloc::vec::Vec;
use core::fmt;

use super::unit::{At, Augmentation, Nested, Targets};
use super::{Drawing, Drawn, invalid, probability};
use crate::pipeline::{Op, Pad, PadTo, Resize};
use crate::resize::{Filter, Resample};
use crate::size::SizeRule;
use crate::targets::{BoxFormat, TargetOp};
use crate::{Rect, Result};

/// `int(x)` of a float32 tensor: truncated toward zero.
fn int(x: f32) -> i64 {
    x as i64
}

/// `lo + torch.rand(1) * (hi - lo)` in float32, as torch computes it with
/// Python floats `lo` and `hi`.
fn rand_between(u: f32, lo: f64, hi: f64) -> f32 {
    lo as f32 + u * (hi - lo) as f32
}

/// A resize of the image to exactly `width` x `height`.
fn resize_to(width: i64, height: i64, resample: Resample, op: &'static str) -> Result<Drawn> {
    let side = |v: i64| {
        u32::try_from(v)
            .ok()
            .filter(|v| *v > 0)
            .ok_or(invalid(op, "the resized image would be empty or too large"))
    };
    Ok(Drawn::Op(Op::Resize(Resize {
        size: SizeRule::Exact {
            width: side(width)?,
            height: side(height)?,
        },
        resample,
    })))
}

/// torchvision's `RandomIoUCrop(min_scale, max_scale, min_aspect_ratio,
/// max_aspect_ratio, sampler_options, trials)`, SSD's crop.
///
/// Each round draws a minimum IoU from `sampler_options` (1 or more: the
/// sample stays as it is), then up to `trials` crops of a random scale and
/// place; the first whose aspect ratio is in range, that holds the centre of
/// a box and whose best IoU with those boxes reaches the minimum is taken,
/// and the boxes whose centre it does not hold become zeros (a later
/// `SanitizeBoundingBoxes` drops them). torchvision draws rounds until one
/// succeeds, without end when no crop can (no boxes and no option of 1);
/// here at most `max_rounds`, then the sample stays as it is.
///
/// Needs the sample's boxes: a sample without them is an error.
///
/// ```
/// use tensorprep::train::RandomIoUCrop;
///
/// let crop = RandomIoUCrop::new();
/// assert_eq!(crop.sampler_options, [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]);
/// assert_eq!((crop.trials, crop.max_rounds), (40, 100));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomIoUCrop {
    /// The smallest side scale (0.3).
    pub min_scale: f64,
    /// The largest side scale (1).
    pub max_scale: f64,
    /// The smallest aspect ratio w/h of the crop (0.5).
    pub min_aspect_ratio: f64,
    /// The largest (2).
    pub max_aspect_ratio: f64,
    /// The minimum IoUs drawn from; 1 or more leaves the sample as it is.
    pub sampler_options: Vec<f64>,
    /// Crops tried per round (40).
    pub trials: u32,
    /// Rounds before giving up and leaving the sample (100; torchvision:
    /// no limit).
    pub max_rounds: u32,
}

impl RandomIoUCrop {
    /// torchvision's defaults, at most 100 rounds.
    pub fn new() -> RandomIoUCrop {
        RandomIoUCrop {
            min_scale: 0.3,
            max_scale: 1.0,
            min_aspect_ratio: 0.5,
            max_aspect_ratio: 2.0,
            sampler_options: alloc::vec![0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0],
            trials: 40,
            max_rounds: 100,
        }
    }
}

impl Default for RandomIoUCrop {
    fn default() -> RandomIoUCrop {
        RandomIoUCrop::new()
    }
}

impl Augmentation for RandomIoUCrop {
    fn check(&self) -> Result<()> {
        let ok = self.min_scale > 0.0
            && self.min_scale <= self.max_scale
            && self.max_scale <= 1.0
            && self.min_aspect_ratio > 0.0
            && self.min_aspect_ratio <= self.max_aspect_ratio
            && self.max_aspect_ratio.is_finite()
            && !self.sampler_options.is_empty()
            && self.sampler_options.len() <= u32::MAX as usize
            && self.sampler_options.iter().all(|o| o.is_finite())
            && self.trials > 0
            && self.max_rounds > 0;
        if ok {
            Ok(())
        } else {
            Err(invalid(
                "RandomIoUCrop",
                "0 < min_scale <= max_scale <= 1, 0 < min_aspect_ratio <= max_aspect_ratio, finite sampler options, trials and max_rounds positive",
            ))
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let boxes = ops.target().and_then(|t| t.boxes.as_ref()).ok_or(invalid(
            "RandomIoUCrop",
            "the sample has no boxes to crop around",
        ))?;
        let d = &mut at.draws();
        let (w, h) = (i64::from(size.0), i64::from(size.1));
        let mut crop = None;
        'rounds: for _ in 0..self.max_rounds {
            let option = self.sampler_options[d.below(self.sampler_options.len() as u32) as usize];
            if option >= 1.0 {
                break;
            }
            for _ in 0..self.trials {
                let r = [d.unit_f32(), d.unit_f32()]
                    .map(|u| rand_between(u, self.min_scale, self.max_scale));
                let (new_w, new_h) = (int(w as f32 * r[0]), int(h as f32 * r[1]));
                // torchvision divides by zero here; a zero height is no crop.
                if new_h == 0 {
                    continue;
                }
                let aspect = new_w as f64 / new_h as f64;
                if !(self.min_aspect_ratio <= aspect && aspect <= self.max_aspect_ratio) {
                    continue;
                }
                let r = [d.unit_f32(), d.unit_f32()];
                let left = int((w - new_w) as f32 * r[0]);
                let top = int((h - new_h) as f32 * r[1]);
                let (right, bottom) = (left + new_w, top + new_h);
                if left == right || top == bottom {
                    continue;
                }
                let window = [left, top, right, bottom].map(|v| v as f32);
                if best_iou(boxes.boxes(), boxes.format(), window)
                    .is_some_and(|best| best.is_nan() || best >= option as f32)
                {
                    crop = Some((left, top, right, bottom));
                    break 'rounds;
                }
            }
        }
        let Some((left, top, right, bottom)) = crop else {
            return Ok(size);
        };
        ops.push(Drawn::Target(TargetOp::ZeroUncentred {
            left,
            top,
            right,
            bottom,
        }))?;
        let rect = Rect::new(
            left as u32,
            top as u32,
            (right - left) as u32,
            (bottom - top) as u32,
        );
        ops.push(Drawn::Op(Op::Crop(rect)))?;
        Ok((rect.width, rect.height))
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        None
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

/// The largest IoU (float32, `torchvision.ops.box_iou`'s arithmetic)
/// between `window` (x1, y1, x2, y2) and the boxes whose centre lies
/// strictly inside it; `None` when no centre does. A NaN IoU (a box and
/// window of no area) makes the largest NaN, as torch's `max` does.
fn best_iou(boxes: &[[f32; 4]], format: BoxFormat, window: [f32; 4]) -> Option<f32> {
    let [l, t, r, b] = window;
    let window_area = (r - l) * (b - t);
    let mut best: Option<f32> = None;
    for bx in boxes {
        let [x1, y1, x2, y2] = format.convert(*bx, BoxFormat::Xyxy);
        let (cx, cy) = (0.5 * (x1 + x2), 0.5 * (y1 + y2));
        if !(l < cx && cx < r && t < cy && cy < b) {
            continue;
        }
        let area = (x2 - x1) * (y2 - y1);
        let iw = (x2.min(r) - x1.max(l)).max(0.0);
        let ih = (y2.min(b) - y1.max(t)).max(0.0);
        let inter = iw * ih;
        let iou = inter / (area + window_area - inter);
        best = Some(match best {
            Some(m) if m.is_nan() || m >= iou => m,
            _ => iou,
        });
    }
    best
}

impl fmt::Display for RandomIoUCrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomIoUCrop scale {}..{} aspect {}..{} options {:?} trials {} rounds {}",
            self.min_scale,
            self.max_scale,
            self.min_aspect_ratio,
            self.max_aspect_ratio,
            self.sampler_options,
            self.trials,
            self.max_rounds
        )
    }
}

/// torchvision's `RandomZoomOut(fill, side_range, p)`: with probability
/// `p`, the image placed at a random spot of a canvas `r` times its size
/// (`r` uniform in `side_range`), the rest filled.
///
/// ```
/// use tensorprep::train::RandomZoomOut;
///
/// let z = RandomZoomOut::new([123, 117, 104]);
/// assert_eq!((z.side_range, z.p), ((1.0, 4.0), 0.5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomZoomOut {
    /// The canvas's fill (R, G, B).
    pub fill: [u8; 3],
    /// The range of the canvas's scale (at least 1).
    pub side_range: (f64, f64),
    /// The probability of zooming out.
    pub p: f64,
}

impl RandomZoomOut {
    /// torchvision's defaults (side range 1 to 4, p 0.5) with `fill`.
    pub const fn new(fill: [u8; 3]) -> RandomZoomOut {
        RandomZoomOut {
            fill,
            side_range: (1.0, 4.0),
            p: 0.5,
        }
    }
}

impl Augmentation for RandomZoomOut {
    fn check(&self) -> Result<()> {
        probability(self.p, "RandomZoomOut", "p must be in 0..=1")?;
        let (a, b) = self.side_range;
        if a >= 1.0 && a <= b && b.is_finite() {
            Ok(())
        } else {
            Err(invalid(
                "RandomZoomOut",
                "side_range must be finite, 1 <= min <= max",
            ))
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        // torch.rand(1) >= p: p compared in float32.
        if d.unit_f32() >= self.p as f32 {
            return Ok(size);
        }
        let r = rand_between(d.unit_f32(), self.side_range.0, self.side_range.1);
        let (w, h) = (i64::from(size.0), i64::from(size.1));
        let (cw, ch) = (int(w as f32 * r), int(h as f32 * r));
        let u = [d.unit_f32(), d.unit_f32()];
        let left = int((cw - w) as f32 * u[0]);
        let top = int((ch - h) as f32 * u[1]);
        let (right, bottom) = (cw - (left + w), ch - (top + h));
        let side = |v: i64| {
            u32::try_from(v).map_err(|_| invalid("RandomZoomOut", "the canvas is out of range"))
        };
        let pad = Op::Pad(Pad {
            to: PadTo::Borders {
                left: side(left)?,
                top: side(top)?,
                right: side(right)?,
                bottom: side(bottom)?,
            },
            fill: self.fill,
        });
        let after = pad.output_size(size)?;
        ops.push(Drawn::Op(pad))?;
        Ok(after)
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        None
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for RandomZoomOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomZoomOut fill {:?} side_range {:?} p {}",
            self.fill, self.side_range, self.p
        )
    }
}

/// torchvision's `ScaleJitter(target_size, scale_range, interpolation)`
/// (large-scale jitter): the image resized by a scale drawn from
/// `scale_range` times the ratio that fits it to the target. torchvision
/// computes that ratio with the target's sides crossed
/// (`min(width / image height, height / image width)`), and so does this:
/// the same as fitting for the square targets of the recipes.
///
/// ```
/// use tensorprep::train::ScaleJitter;
///
/// let lsj = ScaleJitter::new(1024, 1024);
/// assert_eq!(lsj.scale_range, (0.1, 2.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ScaleJitter {
    /// The target width.
    pub width: u32,
    /// The target height.
    pub height: u32,
    /// The range of the scale (0.1 to 2).
    pub scale_range: (f64, f64),
    /// The resampler (Pillow's bilinear, torchvision's default on PIL).
    pub resample: Resample,
}

impl ScaleJitter {
    /// torchvision's defaults for a `width` x `height` target.
    pub const fn new(width: u32, height: u32) -> ScaleJitter {
        ScaleJitter {
            width,
            height,
            scale_range: (0.1, 2.0),
            resample: Resample::Pillow(Filter::Bilinear),
        }
    }
}

impl Augmentation for ScaleJitter {
    fn check(&self) -> Result<()> {
        let (a, b) = self.scale_range;
        if self.width > 0 && self.height > 0 && a > 0.0 && a <= b && b.is_finite() {
            Ok(())
        } else {
            Err(invalid(
                "ScaleJitter",
                "a positive target size; scale_range finite, 0 < min <= max",
            ))
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        let scale = rand_between(d.unit_f32(), self.scale_range.0, self.scale_range.1);
        let (w, h) = (f64::from(size.0), f64::from(size.1));
        // torchvision's formula, `min(target_size[1] / orig_height,
        // target_size[0] / orig_width)` with `target_size` = (height,
        // width): the target's sides crossed (the same for a square target,
        // as in the recipes).
        let fit = (f64::from(self.width) / h).min(f64::from(self.height) / w);
        let r = fit as f32 * scale;
        let (new_w, new_h) = (int(size.0 as f32 * r), int(size.1 as f32 * r));
        ops.push(resize_to(new_w, new_h, self.resample, "ScaleJitter")?)?;
        Ok((new_w as u32, new_h as u32))
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        None
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        true
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for ScaleJitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ScaleJitter {}x{} scale_range {:?} with {:?}",
            self.width, self.height, self.scale_range, self.resample
        )
    }
}

/// torchvision's `RandomShortestSize(min_size, max_size, interpolation)`:
/// the shorter side resized to one of `min_size` (drawn), the longer kept
/// within `max_size`.
///
/// ```
/// use tensorprep::train::RandomShortestSize;
///
/// let multiscale = RandomShortestSize::new(vec![480, 512, 544, 576, 608, 640], Some(1333));
/// assert_eq!(multiscale.min_size.len(), 6);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomShortestSize {
    /// The shorter sides drawn from.
    pub min_size: Vec<u32>,
    /// The longest the longer side may become.
    pub max_size: Option<u32>,
    /// The resampler (Pillow's bilinear, torchvision's default on PIL).
    pub resample: Resample,
}

impl RandomShortestSize {
    /// Shorter sides from `min_size`, the longer at most `max_size`.
    pub fn new(min_size: Vec<u32>, max_size: Option<u32>) -> RandomShortestSize {
        RandomShortestSize {
            min_size,
            max_size,
            resample: Resample::Pillow(Filter::Bilinear),
        }
    }
}

impl Augmentation for RandomShortestSize {
    fn check(&self) -> Result<()> {
        let ok = !self.min_size.is_empty()
            && self.min_size.len() <= u32::MAX as usize
            && self.min_size.iter().all(|s| *s > 0)
            && self.max_size != Some(0);
        if ok {
            Ok(())
        } else {
            Err(invalid(
                "RandomShortestSize",
                "at least one positive min_size; a positive max_size",
            ))
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        let shortest = self.min_size[d.below(self.min_size.len() as u32) as usize];
        let (w, h) = (f64::from(size.0), f64::from(size.1));
        let mut r = f64::from(shortest) / w.min(h);
        if let Some(max) = self.max_size {
            r = r.min(f64::from(max) / w.max(h));
        }
        let (new_w, new_h) = ((w * r) as i64, (h * r) as i64);
        ops.push(resize_to(
            new_w,
            new_h,
            self.resample,
            "RandomShortestSize",
        )?)?;
        Ok((new_w as u32, new_h as u32))
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        None
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        true
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for RandomShortestSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomShortestSize {:?} max {:?} with {:?}",
            self.min_size, self.max_size, self.resample
        )
    }
}

/// The `FixedSizeCrop(size, fill)` of torchvision's detection references
/// (its `lsj` recipe; torchvision v2 has none), constant padding: a crop to
/// at most `width` x `height` at a random place (one draw for both axes,
/// drawn only when the image is larger), the instances whose box it
/// empties dropped (every per-instance field, where the reference drops
/// the boxes, labels and masks), then padding at the right and bottom up to
/// the size.
///
/// ```
/// use tensorprep::train::FixedSizeCrop;
///
/// let c = FixedSizeCrop::new(1024, 1024);
/// assert_eq!(c.fill, [0; 3]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct FixedSizeCrop {
    /// The output width.
    pub width: u32,
    /// The output height.
    pub height: u32,
    /// The padding's fill (R, G, B).
    pub fill: [u8; 3],
}

impl FixedSizeCrop {
    /// A `width` x `height` output, black padding.
    pub const fn new(width: u32, height: u32) -> FixedSizeCrop {
        FixedSizeCrop {
            width,
            height,
            fill: [0; 3],
        }
    }
}

impl Augmentation for FixedSizeCrop {
    fn check(&self) -> Result<()> {
        if self.width > 0 && self.height > 0 {
            Ok(())
        } else {
            Err(invalid("FixedSizeCrop", "the size must be positive"))
        }
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let d = &mut at.draws();
        let (w, h) = size;
        let (new_w, new_h) = (w.min(self.width), h.min(self.height));
        if (new_w, new_h) != (w, h) {
            let u = d.unit_f32();
            let top = int(h.saturating_sub(self.height) as f32 * u) as u32;
            let left = int(w.saturating_sub(self.width) as f32 * u) as u32;
            ops.push(Drawn::Op(Op::Crop(Rect::new(left, top, new_w, new_h))))?;
            if ops.target().is_some_and(|t| t.boxes.is_some()) {
                ops.push(Drawn::Target(TargetOp::DropEmpty))?;
            }
        }
        let (right, bottom) = (self.width - new_w, self.height - new_h);
        if right != 0 || bottom != 0 {
            ops.push(Drawn::Op(Op::Pad(Pad {
                to: PadTo::Borders {
                    left: 0,
                    top: 0,
                    right,
                    bottom,
                },
                fill: self.fill,
            })))?;
        }
        Ok((self.width, self.height))
    }

    fn fixed_size(&self, _: Option<(u32, u32)>) -> Option<(u32, u32)> {
        Some((self.width, self.height))
    }

    fn draws_image_ops(&self) -> bool {
        false
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::None
    }

    fn targets(&self) -> Targets {
        Targets::Moved
    }
}

impl fmt::Display for FixedSizeCrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FixedSizeCrop {}x{} fill {:?}",
            self.width, self.height, self.fill
        )
    }
}
