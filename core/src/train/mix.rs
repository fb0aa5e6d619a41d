//! Mixup and CutMix on a collated batch with timm's semantics (`Mixup`:
//! modes batch, pair and elem, `switch_prob`, `prob`, `correct_lam`,
//! `cutmix_minmax`, label smoothing), producing soft targets. Each sample
//! `i` mixes with sample `n - 1 - i`, in timm's float32 arithmetic; the
//! draws come from [`MixDraws`]: the loader's keyed generator (per batch,
//! so independent of worker count and resumable), or any replay.

#![forbid(unsafe_code)]

use alloc::vec::Vec;

use super::{Draws, SampleKey};
use crate::{Error, Layout, Result};

/// How the mixing parameters are shared across a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MixMode {
    /// One draw for the whole batch.
    Batch,
    /// One draw per pair `(i, n - 1 - i)`, applied to both.
    Pair,
    /// One draw per sample.
    Elem,
}

/// timm's `Mixup(mixup_alpha, cutmix_alpha, cutmix_minmax, prob,
/// switch_prob, mode, correct_lam, label_smoothing, num_classes)`.
///
/// ```
/// use tensorprep::train::{MixMode, Mixup};
///
/// // DeiT's recipe: mixup 0.8, cutmix 1.0, smoothing 0.1.
/// let mut m = Mixup::new(0.8, 1.0, 1000);
/// m.mode = MixMode::Batch;
/// assert_eq!(m.label_smoothing, 0.1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Mixup {
    /// Mixup's Beta parameter; 0 turns mixup off.
    pub mixup_alpha: f64,
    /// CutMix's Beta parameter; 0 turns CutMix off.
    pub cutmix_alpha: f64,
    /// CutMix boxes drawn by side fractions instead of from lambda.
    pub cutmix_minmax: Option<(f64, f64)>,
    /// The probability of mixing at all (per batch, pair or sample).
    pub prob: f64,
    /// With both on, the probability of CutMix rather than mixup.
    pub switch_prob: f64,
    /// How draws are shared.
    pub mode: MixMode,
    /// Lambda from the box's area after clipping (timm's default).
    pub correct_lam: bool,
    /// Label smoothing of the targets.
    pub label_smoothing: f64,
    /// Classes in the targets.
    pub num_classes: usize,
}

/// The random draws mixing makes, in timm's order (numpy's `rand`,
/// `beta` and `randint`, one value at a time).
pub trait MixDraws {
    /// A uniform in `[0, 1)`.
    fn rand(&mut self) -> f64;
    /// A `Beta(alpha, alpha)` value.
    fn beta(&mut self, alpha: f64) -> f64;
    /// An integer uniform in `lo..hi` (`hi` excluded; `lo` when empty).
    fn randint(&mut self, lo: i64, hi: i64) -> i64;
}

impl MixDraws for Draws {
    fn rand(&mut self) -> f64 {
        self.unit_f64()
    }

    fn beta(&mut self, alpha: f64) -> f64 {
        beta_pair(self, alpha).0
    }

    fn randint(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo + i64::from(self.below((hi - lo).min(i64::from(u32::MAX)) as u32))
    }
}

/// `Dirichlet([alpha, alpha])` from two gammas: `(x / (x + y), y / (x +
/// y))`, the first a `Beta(alpha, alpha)` value (halves when both are 0).
pub(crate) fn beta_pair(d: &mut Draws, alpha: f64) -> (f64, f64) {
    let x = gamma(d, alpha);
    let y = gamma(d, alpha);
    let total = x + y;
    if total > 0.0 {
        (x / total, y / total)
    } else {
        (0.5, 0.5)
    }
}

/// A standard normal value from 53-bit uniforms.
fn normal(d: &mut Draws) -> f64 {
    let u1 = 1.0 - d.unit_f64();
    crate::train::rng::box_muller(u1, d.unit_f64())
}

/// A `Gamma(shape, 1)` value (Marsaglia and Tsang; shapes below 1 boosted).
pub(crate) fn gamma(d: &mut Draws, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = 1.0 - d.unit_f64();
        return gamma(d, shape + 1.0) * libm::pow(u, 1.0 / shape);
    }
    let dd = shape - 1.0 / 3.0;
    let c = 1.0 / libm::sqrt(9.0 * dd);
    loop {
        let x = normal(d);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = 1.0 - d.unit_f64();
        if libm::log(u) < 0.5 * x * x + dd - dd * v + dd * libm::log(v) {
            return dd * v;
        }
    }
}

/// Scratch for [`Mixup::apply`], grown once and reused.
#[derive(Clone, Debug, Default)]
pub struct MixScratch {
    /// Per drawn row: lambda (float32, as timm keeps it) and CutMix or not.
    lam: Vec<f32>,
    cut: Vec<bool>,
    /// Beta draws of the two kinds, before `np.where` picks.
    cut_beta: Vec<f64>,
    mix_beta: Vec<f64>,
    /// What each sample becomes.
    rows: Vec<RowOp>,
    /// One sample's original values.
    sample: Vec<f32>,
}

/// A batch tensor's geometry: `n` samples of `channels` x `height` x
/// `width` in `layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchShape {
    /// Samples.
    pub n: usize,
    /// Channels.
    pub channels: usize,
    /// Height.
    pub height: usize,
    /// Width.
    pub width: usize,
    /// CHW or HWC per sample.
    pub layout: Layout,
}

impl BatchShape {
    fn sample_len(&self) -> usize {
        self.channels * self.height * self.width
    }
}

/// A CutMix box: rows `y0..y1`, columns `x0..x1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CutBox {
    y0: usize,
    y1: usize,
    x0: usize,
    x1: usize,
}

/// What one sample becomes, from its partner's original values.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RowOp {
    Keep,
    /// `x * l + partner * m`, in float32.
    Mix(f32, f32),
    /// The partner's values inside the box.
    Cut(CutBox),
}

impl RowOp {
    /// Applies the op to `x` (one sample) from `partner`'s original values.
    fn run(self, x: &mut [f32], partner: &[f32], shape: &BatchShape) {
        match self {
            RowOp::Keep => {}
            RowOp::Mix(l, m) => {
                for (a, &b) in x.iter_mut().zip(partner) {
                    *a = *a * l + b * m;
                }
            }
            RowOp::Cut(b) => {
                let (c, w) = (shape.channels, shape.width);
                match shape.layout {
                    Layout::Chw => {
                        let plane = shape.height * w;
                        for ch in 0..c {
                            for y in b.y0..b.y1 {
                                let r = ch * plane + y * w;
                                x[r + b.x0..r + b.x1].copy_from_slice(&partner[r + b.x0..r + b.x1]);
                            }
                        }
                    }
                    Layout::Hwc => {
                        for y in b.y0..b.y1 {
                            let r = y * w * c;
                            let (s, e) = (r + b.x0 * c, r + b.x1 * c);
                            x[s..e].copy_from_slice(&partner[s..e]);
                        }
                    }
                }
            }
        }
    }
}

impl Mixup {
    /// timm's defaults with these alphas: `prob` 1, `switch_prob` 0.5, mode
    /// batch, corrected lambda, smoothing 0.1.
    pub const fn new(mixup_alpha: f64, cutmix_alpha: f64, num_classes: usize) -> Mixup {
        Mixup {
            mixup_alpha,
            cutmix_alpha,
            cutmix_minmax: None,
            prob: 1.0,
            switch_prob: 0.5,
            mode: MixMode::Batch,
            correct_lam: true,
            label_smoothing: 0.1,
            num_classes,
        }
    }

    /// The most classes [`Mixup::num_classes`] may name (2^24): the soft
    /// targets take `n x num_classes` floats per batch, so a mistyped count
    /// is refused before anything is allocated for it.
    pub const MAX_CLASSES: usize = 1 << 24;

    /// Checks the parameters alone (no batch, nothing allocated): what
    /// [`Mixup::apply`] would refuse whatever the batch.
    ///
    /// ```
    /// use tensorprep::train::Mixup;
    ///
    /// assert!(Mixup::new(0.8, 1.0, 1000).validate().is_ok());
    /// assert!(Mixup::new(0.8, 1.0, 0).validate().is_err());
    /// assert!(Mixup::new(0.8, 1.0, Mixup::MAX_CLASSES + 1).validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        let bad = |name, reason| Err(Error::InvalidParameter { name, reason });
        let cut = self.cutmix_alpha > 0.0 || self.cutmix_minmax.is_some();
        if !(self.mixup_alpha >= 0.0 && self.cutmix_alpha >= 0.0)
            || !(self.mixup_alpha > 0.0 || cut)
            || !self.mixup_alpha.is_finite()
            || !self.cutmix_alpha.is_finite()
        {
            return bad("Mixup", "an alpha must be positive and both finite");
        }
        if !(0.0..=1.0).contains(&self.prob) || !(0.0..=1.0).contains(&self.switch_prob) {
            return bad("Mixup", "prob and switch_prob must be in 0..=1");
        }
        if !(0.0..=1.0).contains(&self.label_smoothing) || self.num_classes == 0 {
            return bad("Mixup", "smoothing in 0..=1 and at least one class");
        }
        if let Some((a, b)) = self.cutmix_minmax
            && !(0.0 <= a && a < b && b <= 1.0)
        {
            return bad("Mixup", "cutmix_minmax must be 0 <= min < max <= 1");
        }
        if self.num_classes > Mixup::MAX_CLASSES {
            return bad("Mixup", "num_classes must be at most 2^24");
        }
        Ok(())
    }

    fn check(&self, shape: &BatchShape, x: &[f32], labels: &[f32], targets: &[f32]) -> Result<()> {
        let bad = |name, reason| Err(Error::InvalidParameter { name, reason });
        self.validate()?;
        if !shape.n.is_multiple_of(2) {
            return bad("Mixup", "the batch size must be even");
        }
        if x.len() != shape.n * shape.sample_len()
            || labels.len() != shape.n
            || targets.len() != shape.n * self.num_classes
        {
            return bad(
                "Mixup",
                "the batch, labels or targets do not match the shape",
            );
        }
        if labels
            .iter()
            .any(|&l| !(l >= 0.0 && (l as usize) < self.num_classes && l.fract() == 0.0))
        {
            return bad(
                "Mixup",
                "every label must be a class index below num_classes",
            );
        }
        Ok(())
    }

    /// Mixes the batch `x` of `shape` in place and writes the soft targets
    /// (`n` x `num_classes`, from each sample's class index in `labels`),
    /// drawing from `d` in timm's order.
    pub fn apply(
        &self,
        d: &mut dyn MixDraws,
        x: &mut [f32],
        shape: BatchShape,
        labels: &[f32],
        targets: &mut [f32],
        scratch: &mut MixScratch,
    ) -> Result<()> {
        self.check(&shape, x, labels, targets)?;
        let n = shape.n;
        scratch.rows.clear();
        let batch_lam = match self.mode {
            MixMode::Batch => {
                let (mut lam, cut) = self.params_per_batch(d);
                let op = if lam == 1.0 {
                    RowOp::Keep
                } else if cut {
                    let (b, corrected) = self.cutmix_box(d, &shape, lam, false);
                    lam = corrected;
                    RowOp::Cut(b)
                } else {
                    RowOp::Mix(lam as f32, (1.0 - lam) as f32)
                };
                scratch.rows.resize(n, op);
                Some(lam)
            }
            MixMode::Pair | MixMode::Elem => {
                let count = if self.mode == MixMode::Pair { n / 2 } else { n };
                self.params_per_elem(d, count, scratch);
                for i in 0..count {
                    let lam = scratch.lam[i];
                    let op = if lam == 1.0 {
                        RowOp::Keep
                    } else if scratch.cut[i] {
                        let (b, corrected) = self.cutmix_box(d, &shape, f64::from(lam), true);
                        scratch.lam[i] = corrected as f32;
                        RowOp::Cut(b)
                    } else {
                        RowOp::Mix(lam, 1.0 - lam)
                    };
                    scratch.rows.push(op);
                }
                if self.mode == MixMode::Pair {
                    // Both of a pair take the pair's draw.
                    for i in (0..n / 2).rev() {
                        scratch.rows.push(scratch.rows[i]);
                    }
                }
                None
            }
        };
        // Each pair (i, n - 1 - i): i from j's original, j from i's.
        let len = shape.sample_len();
        if scratch.sample.len() < len {
            scratch.sample.resize(len, 0.0);
        }
        for i in 0..n / 2 {
            let j = n - 1 - i;
            let (ri, rj) = (scratch.rows[i], scratch.rows[j]);
            if ri == RowOp::Keep && rj == RowOp::Keep {
                continue;
            }
            let (head, tail) = x.split_at_mut(j * len);
            let (xi, xj) = (&mut head[i * len..(i + 1) * len], &mut tail[..len]);
            let original = &mut scratch.sample[..len];
            original.copy_from_slice(xi);
            ri.run(xi, xj, &shape);
            rj.run(xj, original, &shape);
        }
        let lam = &scratch.lam;
        let half = self.mode == MixMode::Pair;
        self.targets(labels, targets, |row| match batch_lam {
            Some(lam) => (lam as f32, (1.0 - lam) as f32),
            None => {
                let l = if half && row >= n / 2 {
                    lam[n - 1 - row]
                } else {
                    lam[row]
                };
                (l, 1.0 - l)
            }
        });
        Ok(())
    }

    /// Whether CutMix is on, and its Beta parameter (1 with `cutmix_minmax`,
    /// as timm sets it).
    fn cutmix(&self) -> (bool, f64) {
        match self.cutmix_minmax {
            Some(_) => (true, 1.0),
            None => (self.cutmix_alpha > 0.0, self.cutmix_alpha),
        }
    }

    /// `_params_per_batch`: lambda (1 when not mixing) and CutMix or not.
    fn params_per_batch(&self, d: &mut dyn MixDraws) -> (f64, bool) {
        if d.rand() >= self.prob {
            return (1.0, false);
        }
        let (cut_on, cut_alpha) = self.cutmix();
        if self.mixup_alpha > 0.0 && cut_on {
            let cut = d.rand() < self.switch_prob;
            let alpha = if cut { cut_alpha } else { self.mixup_alpha };
            (d.beta(alpha), cut)
        } else if self.mixup_alpha > 0.0 {
            (d.beta(self.mixup_alpha), false)
        } else {
            (d.beta(cut_alpha), true)
        }
    }

    /// `_params_per_elem(count)`: float32 lambdas and CutMix flags.
    fn params_per_elem(&self, d: &mut dyn MixDraws, count: usize, s: &mut MixScratch) {
        s.lam.clear();
        s.cut.clear();
        s.cut_beta.clear();
        s.mix_beta.clear();
        let (cut_on, cut_alpha) = self.cutmix();
        if self.mixup_alpha > 0.0 && cut_on {
            s.cut
                .extend((0..count).map(|_| d.rand() < self.switch_prob));
            // np.where evaluates both arrays: CutMix's first.
            s.cut_beta.extend((0..count).map(|_| d.beta(cut_alpha)));
            s.mix_beta
                .extend((0..count).map(|_| d.beta(self.mixup_alpha)));
        } else if self.mixup_alpha > 0.0 {
            s.cut.resize(count, false);
            s.mix_beta
                .extend((0..count).map(|_| d.beta(self.mixup_alpha)));
            s.cut_beta.resize(count, 0.0);
        } else {
            s.cut.resize(count, true);
            s.cut_beta.extend((0..count).map(|_| d.beta(cut_alpha)));
            s.mix_beta.resize(count, 0.0);
        }
        for k in 0..count {
            let mixed = if s.cut[k] {
                s.cut_beta[k]
            } else {
                s.mix_beta[k]
            };
            let applied = d.rand() < self.prob;
            s.lam.push(if applied { mixed as f32 } else { 1.0 });
        }
    }

    /// `cutmix_bbox_and_lam`: the box for `lam` (by `cutmix_minmax` when
    /// set) and the lambda its clipped area gives (when `correct_lam`).
    /// `single` is lambda as float32 (per-sample modes), where numpy takes
    /// the box's side in float32.
    fn cutmix_box(
        &self,
        d: &mut dyn MixDraws,
        shape: &BatchShape,
        lam: f64,
        single: bool,
    ) -> (CutBox, f64) {
        let (h, w) = (shape.height as i64, shape.width as i64);
        let b = match self.cutmix_minmax {
            Some((lo, hi)) => {
                let mut side = |n: i64| d.randint((n as f64 * lo) as i64, (n as f64 * hi) as i64);
                let ch = side(h);
                let cw = side(w);
                let y0 = d.randint(0, h - ch);
                let x0 = d.randint(0, w - cw);
                CutBox {
                    y0: y0 as usize,
                    y1: (y0 + ch) as usize,
                    x0: x0 as usize,
                    x1: (x0 + cw) as usize,
                }
            }
            None => {
                let (ch, cw) = if single {
                    let ratio = libm::sqrtf(1.0 - lam as f32);
                    ((h as f32 * ratio) as i64, (w as f32 * ratio) as i64)
                } else {
                    let ratio = libm::sqrt(1.0 - lam);
                    ((h as f64 * ratio) as i64, (w as f64 * ratio) as i64)
                };
                let cy = d.randint(0, h);
                let cx = d.randint(0, w);
                let clip = |v: i64, n: i64| v.clamp(0, n) as usize;
                CutBox {
                    y0: clip(cy - ch / 2, h),
                    y1: clip(cy + ch / 2, h),
                    x0: clip(cx - cw / 2, w),
                    x1: clip(cx + cw / 2, w),
                }
            }
        };
        let lam = if self.correct_lam || self.cutmix_minmax.is_some() {
            let area = ((b.y1 - b.y0) * (b.x1 - b.x0)) as f64;
            1.0 - area / (h * w) as f64
        } else {
            lam
        };
        (b, lam)
    }

    /// `mixup_target`: smoothed one-hot rows of each label and of its
    /// partner's, `y1 * l + y2 * m` in float32 with `(l, m)` of each row.
    fn targets(&self, labels: &[f32], targets: &mut [f32], weights: impl Fn(usize) -> (f32, f32)) {
        let nc = self.num_classes;
        let off = self.label_smoothing / nc as f64;
        let on = (1.0 - self.label_smoothing + off) as f32;
        let off = off as f32;
        let n = labels.len();
        for (row, t) in targets.chunks_exact_mut(nc).enumerate() {
            let (l, m) = weights(row);
            let (a, b) = (labels[row] as usize, labels[n - 1 - row] as usize);
            for (k, v) in t.iter_mut().enumerate() {
                let y1 = if k == a { on } else { off };
                let y2 = if k == b { on } else { off };
                *v = y1 * l + y2 * m;
            }
        }
    }

    /// The draws for batch `batch` of `epoch` under `seed`, to pass to
    /// [`Mixup::apply`]: the same batch mixes the same way for any worker
    /// count and after resume.
    pub fn batch_draws(seed: u64, epoch: u32, batch: u64) -> Draws {
        // The batch number in the sample-index slot, under an op position
        // no sample's augments use.
        Draws::new(SampleKey::new(seed, epoch, batch), u16::MAX)
    }
}
