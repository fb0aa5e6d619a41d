//! Callbacks at the loader's epoch and step boundaries (MindSpore's
//! `DSCallback`: `ds_epoch_begin`, `ds_epoch_end`, `ds_step_begin`,
//! `ds_step_end`), and the pipeline changes they make
//! ([`PipelineChange`]), part of the loader's state.
//!
//! Where they run: on the consumer's thread, inside [`Loader`]'s `next()`
//! (and [`Loader::next_epoch`]), as batches are handed out: what the
//! training loop sees, in its order, whatever the worker count. For an
//! epoch of `n` batches the sequence is `epoch_begin`, then for each step
//! `step_begin` (just before its batch is handed out) and `step_end` (when
//! the consumer comes back for the next batch, the step's training done),
//! and `epoch_end` when the consumer finds the epoch over.
//!
//! [`Loader`]: super::Loader
//! [`Loader::next_epoch`]: super::Loader::next_epoch

#![forbid(unsafe_code)]

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use super::super::{TrainPipeline, TrainPlan};
use super::LoadError;

/// Code run at the loader's epoch and step boundaries; every method does
/// nothing unless implemented. An `Err` (or a panic) ends the epoch with
/// [`LoadError::Callback`].
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tensorprep::train::data::recordio::RecordIoDataset;
/// use tensorprep::train::{Callback, Loader, LoaderConfig, RunContext, TrainPipeline};
///
/// /// Logs every point, with its epoch and step in the epoch.
/// struct Log(Mutex<Vec<String>>);
/// impl Callback for Log {
///     fn epoch_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
///         self.0.lock().unwrap().push(format!("begin {}", ctx.epoch));
///         Ok(())
///     }
///     fn step_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
///         self.0.lock().unwrap().push(format!("step {}", ctx.step_in_epoch));
///         Ok(())
///     }
/// }
///
/// let data = Arc::new(RecordIoDataset::open("../tests/fixtures/records/folder.rec")?);
/// let plan = Arc::new(TrainPipeline::imagenet_train().compile()?);
/// let log = Arc::new(Log(Mutex::new(Vec::new())));
/// let mut config = LoaderConfig::new(4, 2, 7);
/// config.callbacks.push(log.clone());
/// let loader = Loader::new(data, plan, config)?;
/// assert_eq!(loader.count(), 2); // six images in batches of four
/// assert_eq!(*log.0.lock().unwrap(), ["begin 0", "step 0", "step 1"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Callback: Send + Sync {
    /// Before the epoch's first batch is handed out.
    fn epoch_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        let _ = ctx;
        Ok(())
    }
    /// When the consumer finds the epoch over (after its last `step_end`).
    fn epoch_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        let _ = ctx;
        Ok(())
    }
    /// Just before a step's batch is handed out.
    fn step_begin(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        let _ = ctx;
        Ok(())
    }
    /// When the consumer comes back after a step (for the next batch, or to
    /// find the epoch over).
    fn step_end(&self, ctx: &mut RunContext<'_>) -> Result<(), String> {
        let _ = ctx;
        Ok(())
    }
}

/// The callbacks of a loader ([`LoaderConfig::callbacks`](super::LoaderConfig::callbacks)),
/// called in the order they were pushed.
#[derive(Clone, Default)]
pub struct Callbacks(pub(super) Vec<Arc<dyn Callback>>);

impl Callbacks {
    /// Adds `callback` after the others.
    pub fn push(&mut self, callback: Arc<dyn Callback>) {
        self.0.push(callback);
    }

    /// No callback.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Callbacks({})", self.0.len())
    }
}

impl PartialEq for Callbacks {
    /// The same callbacks (not merely equal ones), in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| core::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)))
    }
}

/// Which boundary a callback is called at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallbackPoint {
    /// [`Callback::epoch_begin`].
    EpochBegin,
    /// [`Callback::epoch_end`].
    EpochEnd,
    /// [`Callback::step_begin`].
    StepBegin,
    /// [`Callback::step_end`].
    StepEnd,
}

impl CallbackPoint {
    /// The method's name (`epoch_begin`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CallbackPoint::EpochBegin => "epoch_begin",
            CallbackPoint::EpochEnd => "epoch_end",
            CallbackPoint::StepBegin => "step_begin",
            CallbackPoint::StepEnd => "step_end",
        }
    }
}

/// What a callback is told (MindSpore's `ds_run_context`), and its means of
/// changing the augmentation. Numbers count from 0 (MindSpore's
/// `cur_epoch_num`, `cur_step_num` and `cur_step_num_in_epoch` are each
/// one more).
#[non_exhaustive]
pub struct RunContext<'a> {
    /// The boundary.
    pub point: CallbackPoint,
    /// The epoch ([`Batch::epoch`](super::Batch::epoch)).
    pub epoch: u32,
    /// The step over the whole run: `epoch x batches per epoch +
    /// step_in_epoch` (the same after a resume).
    pub step: u64,
    /// The step in the epoch: the batch's place in its epoch (for
    /// `epoch_begin`, 0; for `epoch_end`, the epoch's batch count).
    pub step_in_epoch: u64,
    /// The loader's plan (its first pipeline's): what a change must match.
    plan: &'a TrainPlan,
    /// A change asked for, applied once the callback returns.
    change: &'a mut Option<PipelineChange>,
}

impl<'a> RunContext<'a> {
    pub(super) fn new(
        point: CallbackPoint,
        epoch: u32,
        (step, step_in_epoch): (u64, u64),
        plan: &'a TrainPlan,
        change: &'a mut Option<PipelineChange>,
    ) -> RunContext<'a> {
        RunContext {
            point,
            epoch,
            step,
            step_in_epoch,
            plan,
            change,
        }
    }

    /// The loader's plan, which a new pipeline's output must match.
    pub fn plan(&self) -> &TrainPlan {
        self.plan
    }

    /// Augments with `pipeline` from the next epoch on (epoch
    /// `self.epoch + 1`): every sample of that epoch and the later ones,
    /// whatever the worker count, and after a resume
    /// ([`Loader::pipeline_changes`](super::Loader::pipeline_changes)). Its
    /// output must have the loader's shape, dtype and layout. A later call
    /// for the same epoch replaces this one.
    pub fn set_pipeline(&mut self, pipeline: TrainPipeline) -> Result<(), LoadError> {
        let from = self
            .epoch
            .checked_add(1)
            .ok_or(LoadError::NoMoreEpochs { epochs: None })?;
        let change = PipelineChange::new(from, pipeline)?;
        change.fits(self.plan)?;
        *self.change = Some(change);
        Ok(())
    }
}

/// A training pipeline the loader augments with from epoch `from_epoch`
/// on: what [`RunContext::set_pipeline`] records, and what a resume
/// re-applies ([`Loader::pipeline_changes`](super::Loader::pipeline_changes),
/// [`Loader::resume_with_changes`](super::Loader::resume_with_changes)).
#[derive(Clone)]
pub struct PipelineChange {
    from_epoch: u32,
    pipeline: TrainPipeline,
    plan: Arc<TrainPlan>,
}

impl fmt::Debug for PipelineChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineChange")
            .field("from_epoch", &self.from_epoch)
            .field("pipeline", &self.pipeline)
            .finish()
    }
}

impl PartialEq for PipelineChange {
    fn eq(&self, other: &Self) -> bool {
        self.from_epoch == other.from_epoch && self.pipeline == other.pipeline
    }
}

impl PipelineChange {
    /// `pipeline` from epoch `from_epoch` on, compiled here (a pipeline that
    /// does not compile is [`LoadError::Pipeline`]).
    pub fn new(from_epoch: u32, pipeline: TrainPipeline) -> Result<PipelineChange, LoadError> {
        let plan = pipeline.compile().map_err(|error| LoadError::Pipeline {
            from_epoch,
            message: String::from("the pipeline does not compile"),
            error: Some(error),
        })?;
        Ok(PipelineChange {
            from_epoch,
            pipeline,
            plan: Arc::new(plan),
        })
    }

    /// The first epoch it augments.
    pub fn from_epoch(&self) -> u32 {
        self.from_epoch
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &TrainPipeline {
        &self.pipeline
    }

    /// A hash of `changes` (0 for none), for [`LoaderState::changes_hash`](super::LoaderState::changes_hash):
    /// FNV-1a 64 of each change's first epoch and its pipeline's canonical
    /// description, the pipeline's `Debug` form (every parameter, floats
    /// at full precision: two pipelines that draw differently differ). A
    /// custom op counts by its name and size: its function is code.
    ///
    /// ```
    /// use tensorprep::train::{PipelineChange, TrainPipeline};
    ///
    /// let p = TrainPipeline::imagenet_train();
    /// let mut q = p.clone();
    /// q.augments.truncate(1);
    /// let hash = |e, p: &TrainPipeline| PipelineChange::hash_all(&[PipelineChange::new(e, p.clone()).unwrap()]);
    /// assert_eq!(hash(2, &p), hash(2, &p.clone()));
    /// assert_ne!(hash(2, &p), hash(3, &p));
    /// assert_ne!(hash(2, &p), hash(2, &q));
    /// assert_eq!(PipelineChange::hash_all(&[]), 0);
    /// ```
    pub fn hash_all(changes: &[PipelineChange]) -> u64 {
        /// Feeds what is written to the hash (no text is kept).
        struct Hashing(crate::Fnv1a64);
        impl fmt::Write for Hashing {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0.update(s.as_bytes());
                Ok(())
            }
        }
        if changes.is_empty() {
            return 0;
        }
        let mut h = Hashing(crate::Fnv1a64::new());
        for c in changes {
            h.0.update(&c.from_epoch.to_le_bytes());
            // Writing to the hash cannot fail.
            let _ = fmt::Write::write_fmt(&mut h, format_args!("{:?}", c.pipeline));
            // The end of one description (none holds a NUL).
            h.0.update(&[0]);
        }
        h.0.finish()
    }

    /// Whether it may replace `plan`: the same output shape (or both
    /// varying), dtype and layout, so the batch buffers fit.
    pub fn fits(&self, plan: &TrainPlan) -> Result<(), LoadError> {
        let new = &self.plan;
        let same = |a: &TrainPlan| (a.output_shape(), a.dtype(), a.layout());
        if same(new) == same(plan) {
            return Ok(());
        }
        Err(LoadError::Pipeline {
            from_epoch: self.from_epoch,
            message: alloc::format!(
                "its output ({:?} {:?} {:?}) is not the loader's ({:?} {:?} {:?}): the shape, \
                 dtype and layout must stay",
                new.output_shape(),
                new.dtype(),
                new.layout(),
                plan.output_shape(),
                plan.dtype(),
                plan.layout()
            ),
            error: None,
        })
    }
}

/// The loader's pipelines over the epochs: its first plan, and the changes
/// in epoch order (at most one per epoch).
#[derive(Clone)]
pub(super) struct Schedule {
    pub(super) first: Arc<TrainPlan>,
    pub(super) changes: Vec<PipelineChange>,
}

impl Schedule {
    /// `changes` over `first`, each checked against it.
    pub(super) fn new(
        first: Arc<TrainPlan>,
        changes: Vec<PipelineChange>,
    ) -> Result<Schedule, LoadError> {
        let mut s = Schedule {
            first,
            changes: Vec::with_capacity(changes.len()),
        };
        for c in changes {
            c.fits(&s.first)?;
            s.add(c);
        }
        Ok(s)
    }

    /// Records `change` (replacing one from the same epoch); a change to
    /// the pipeline of the change before it is none (a callback setting the
    /// same pipeline at every epoch's end records it once).
    pub(super) fn add(&mut self, change: PipelineChange) {
        let at = self
            .changes
            .partition_point(|c| c.from_epoch < change.from_epoch);
        let same = at
            .checked_sub(1)
            .is_some_and(|before| self.changes[before].pipeline == change.pipeline);
        match self.changes.get_mut(at) {
            Some(c) if c.from_epoch == change.from_epoch && same => {
                self.changes.remove(at);
            }
            // The same again: kept as it is (its plan too, so that the
            // loader's threads need no restart).
            Some(c) if c.from_epoch == change.from_epoch && c.pipeline == change.pipeline => {}
            Some(c) if c.from_epoch == change.from_epoch => *c = change,
            _ if same => {}
            _ => self.changes.insert(at, change),
        }
    }

    /// The first epoch after `epoch` with a change.
    pub(super) fn next_change(&self, epoch: u32) -> Option<u32> {
        self.changes
            .iter()
            .map(|c| c.from_epoch)
            .find(|&e| e > epoch)
    }

    /// The plan that augments `epoch`.
    pub(super) fn plan(&self, epoch: u32) -> &Arc<TrainPlan> {
        self.changes
            .iter()
            .rev()
            .find(|c| c.from_epoch <= epoch)
            .map_or(&self.first, |c| &c.plan)
    }
}

/// Runs `point` of every callback in turn, each change it asks for added
/// to `schedule`; the first failure (an `Err` or a panic) is returned.
pub(super) fn run(
    callbacks: &Callbacks,
    schedule: &mut Schedule,
    point: CallbackPoint,
    epoch: u32,
    steps: (u64, u64),
) -> Result<(), LoadError> {
    for cb in &callbacks.0 {
        let mut change = None;
        let first = Arc::clone(&schedule.first);
        let mut ctx = RunContext::new(point, epoch, steps, &first, &mut change);
        let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match point {
            CallbackPoint::EpochBegin => cb.epoch_begin(&mut ctx),
            CallbackPoint::EpochEnd => cb.epoch_end(&mut ctx),
            CallbackPoint::StepBegin => cb.step_begin(&mut ctx),
            CallbackPoint::StepEnd => cb.step_end(&mut ctx),
        }))
        .unwrap_or_else(|panic| Err(super::stages::panic_message(&*panic)));
        if let Some(c) = change {
            schedule.add(c);
        }
        called.map_err(|message| LoadError::Callback {
            point: point.name(),
            epoch,
            step_in_epoch: steps.1,
            message,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each epoch takes the latest change from it or before; a second
    /// change for one epoch replaces the first; a change of output shape
    /// is refused.
    #[test]
    fn the_schedule_gives_each_epoch_its_pipeline() {
        let first = Arc::new(TrainPipeline::imagenet_train().compile().unwrap());
        let mut flipless = TrainPipeline::imagenet_train();
        flipless.augments.truncate(1);
        let change = |e| PipelineChange::new(e, flipless.clone()).unwrap();
        let mut s = Schedule::new(Arc::clone(&first), alloc::vec![change(3)]).unwrap();
        s.add(change(1));
        s.add(change(2));
        assert_eq!(
            s.changes.iter().map(|c| c.from_epoch).collect::<Vec<_>>(),
            [1, 3],
            "epoch 2's is epoch 1's pipeline: no change"
        );
        assert!(Arc::ptr_eq(s.plan(0), &first));
        assert!(Arc::ptr_eq(s.plan(1), &s.changes[0].plan));
        assert!(Arc::ptr_eq(s.plan(2), &s.changes[0].plan));
        assert!(Arc::ptr_eq(s.plan(9), &s.changes[1].plan));
        // Epoch 3's replaced by epoch 1's pipeline: no change there any more.
        s.add(change(3));
        assert_eq!(s.changes.len(), 1);
        assert!(Arc::ptr_eq(s.plan(9), &s.changes[0].plan));
        let mut small = TrainPipeline::imagenet_train();
        small.augments[0] =
            crate::train::Augment::RandomResizedCrop(crate::train::RandomResizedCrop::new(32, 32));
        let err = PipelineChange::new(1, small)
            .unwrap()
            .fits(&first)
            .unwrap_err();
        assert!(
            matches!(err, LoadError::Pipeline { from_epoch: 1, .. }),
            "{err}"
        );
    }
}
