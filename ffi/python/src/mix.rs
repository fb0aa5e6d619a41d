//! `tensorprep.train.Mixup`: timm's Mixup/CutMix as the loader's batch
//! transform. The collate threads mix each batch in place
//! ([`LoaderConfig::per_batch`]) and leave its soft targets for the
//! consumer, who takes them with the batch.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use tensorprep::train::{BatchMut, BatchShape, MixMode, MixScratch, Mixup, PerBatch};
use tensorprep::{Layout, Tensor};

use crate::errors;

/// timm's `Mixup(mixup_alpha, cutmix_alpha, cutmix_minmax, prob,
/// switch_prob, mode, correct_lam, label_smoothing, num_classes)` with
/// timm's defaults, given to `Loader(mix=...)`.
#[pyclass(frozen, module = "tensorprep.train", name = "Mixup")]
#[derive(Clone)]
pub(crate) struct PyMixup(pub(crate) Mixup);

#[pymethods]
impl PyMixup {
    /// Every parameter is checked here, with the library's message.
    #[new]
    #[pyo3(signature = (mixup_alpha=1.0, cutmix_alpha=0.0, cutmix_minmax=None, prob=1.0,
                        switch_prob=0.5, mode="batch", correct_lam=true, label_smoothing=0.1,
                        num_classes=1000))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mixup_alpha: f64,
        cutmix_alpha: f64,
        cutmix_minmax: Option<(f64, f64)>,
        prob: f64,
        switch_prob: f64,
        mode: &str,
        correct_lam: bool,
        label_smoothing: f64,
        num_classes: usize,
    ) -> PyResult<PyMixup> {
        let mut m = Mixup::new(mixup_alpha, cutmix_alpha, num_classes);
        m.cutmix_minmax = cutmix_minmax;
        m.prob = prob;
        m.switch_prob = switch_prob;
        m.mode = match mode {
            "batch" => MixMode::Batch,
            "pair" => MixMode::Pair,
            "elem" => MixMode::Elem,
            other => {
                return Err(errors::value(format!(
                    "unknown Mixup mode `{other}` (batch, pair, elem)"
                )));
            }
        };
        m.correct_lam = correct_lam;
        m.label_smoothing = label_smoothing;
        // Parameters only: nothing is allocated for `num_classes` here (the
        // library caps it at 2^24; the loader counts the soft targets
        // against its buffer_limit).
        m.validate().map_err(|e| errors::value(e.to_string()))?;
        Ok(PyMixup(m))
    }

    /// Classes in the soft targets.
    #[getter]
    fn num_classes(&self) -> usize {
        self.0.num_classes
    }

    /// Mixup's Beta parameter (0: no mixup).
    #[getter]
    fn mixup_alpha(&self) -> f64 {
        self.0.mixup_alpha
    }

    /// CutMix's Beta parameter (0: no CutMix unless `cutmix_minmax`).
    #[getter]
    fn cutmix_alpha(&self) -> f64 {
        self.0.cutmix_alpha
    }

    /// CutMix's box side fractions, when drawn so.
    #[getter]
    fn cutmix_minmax(&self) -> Option<(f64, f64)> {
        self.0.cutmix_minmax
    }

    /// The probability of mixing a batch (pair, sample) at all.
    #[getter]
    fn prob(&self) -> f64 {
        self.0.prob
    }

    /// With both on: the probability of CutMix rather than mixup.
    #[getter]
    fn switch_prob(&self) -> f64 {
        self.0.switch_prob
    }

    /// `"batch"`, `"pair"` or `"elem"`.
    #[getter]
    fn mode(&self) -> &'static str {
        mode_name(self.0.mode)
    }

    /// Lambda from the CutMix box's clipped area.
    #[getter]
    fn correct_lam(&self) -> bool {
        self.0.correct_lam
    }

    /// The targets' label smoothing.
    #[getter]
    fn label_smoothing(&self) -> f64 {
        self.0.label_smoothing
    }

    fn __eq__(&self, other: &PyMixup) -> bool {
        self.0 == other.0
    }

    fn __repr__(&self) -> String {
        let m = &self.0;
        let mode = mode_name(m.mode);
        let py_bool = |b: bool| if b { "True" } else { "False" };
        format!(
            "Mixup(mixup_alpha={}, cutmix_alpha={}, cutmix_minmax={}, prob={}, switch_prob={}, \
             mode='{mode}', correct_lam={}, label_smoothing={}, num_classes={})",
            m.mixup_alpha,
            m.cutmix_alpha,
            m.cutmix_minmax
                .map_or("None".to_owned(), |(a, b)| format!("({a}, {b})")),
            m.prob,
            m.switch_prob,
            py_bool(m.correct_lam),
            m.label_smoothing,
            m.num_classes
        )
    }
}

/// A mode's name as `Mixup(mode=...)` takes it.
fn mode_name(mode: MixMode) -> &'static str {
    match mode {
        MixMode::Pair => "pair",
        MixMode::Elem => "elem",
        _ => "batch",
    }
}

/// Soft targets by (epoch, batch number).
type ByBatch = BTreeMap<(u32, u64), Vec<f32>>;

/// Soft targets of mixed batches waiting for the consumer, by (epoch,
/// batch number): at most the batches in circulation.
#[derive(Clone, Default)]
pub(crate) struct Targets(Arc<Mutex<ByBatch>>);

impl Targets {
    /// The targets of batch `number` of `epoch` (and those of batches
    /// before it, never to be delivered now, dropped).
    pub(crate) fn take(&self, epoch: u32, number: u64) -> Option<Vec<f32>> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let found = map.remove(&(epoch, number));
        map.retain(|&k, _| k > (epoch, number));
        found
    }

    /// Drops every waiting target (the loader restarted).
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn put(&self, epoch: u32, number: u64, targets: Vec<f32>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.insert((epoch, number), targets);
    }
}

/// The loader's batch transform: mixes each float32 batch of `sample`
/// shape (in `layout`) and stores its soft targets in `targets`. Batch
/// `number` of shard `index` of `count` draws from the key of its global
/// batch position (`number x count + index`): the same for any number of
/// workers and after a resume, distinct across ranks.
pub(crate) fn per_batch(
    mixup: Mixup,
    seed: u64,
    shard: (u32, u32),
    sample: [usize; 3],
    layout: Layout,
    targets: Targets,
) -> PerBatch {
    let [channels, height, width] = layout.channels_height_width(sample);
    let (index, count) = (u64::from(shard.0), u64::from(shard.1));
    PerBatch::new(move |b: &mut BatchMut<'_>| {
        let n = b.len;
        if b.label_width != 1 {
            // The loader refuses this at construction; a batch says so too.
            return Err(format!(
                "Mixup mixes one class index per sample, not {} labels",
                b.label_width
            ));
        }
        if n % 2 == 1 {
            return Err(format!(
                "Mixup pairs sample i with sample n - 1 - i: batch {} of epoch {} has {n} \
                 samples (odd); use an even batch_size and drop_last=True",
                b.number, b.epoch
            ));
        }
        let Tensor::F32(x) = &mut *b.tensor else {
            return Err("Mixup mixes float32 batches (the pipeline's dtype)".to_owned());
        };
        let shape = BatchShape {
            n,
            channels,
            height,
            width,
            layout,
        };
        let len = n * channels * height * width;
        let x = x
            .get_mut(..len)
            .ok_or("Mixup: the batch is shorter than its shape")?;
        let mut soft = vec![0.0f32; n * mixup.num_classes];
        let slot = b.number.saturating_mul(count).saturating_add(index);
        let mut draws = Mixup::batch_draws(seed, b.epoch, slot);
        mixup
            .apply(
                &mut draws,
                x,
                shape,
                &b.labels[..n],
                &mut soft,
                &mut MixScratch::default(),
            )
            .map_err(|e| e.to_string())?;
        targets.put(b.epoch, b.number, soft);
        Ok(())
    })
}

/// Registers `Mixup`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMixup>()
}
