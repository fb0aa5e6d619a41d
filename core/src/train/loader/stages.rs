//! The three stages' thread bodies (read, decode + augment, collate) and
//! what passes between them; a panic in a stage is caught and becomes a
//! typed error.

use alloc::string::String;
use alloc::sync::Arc;
use std::sync::atomic::Ordering;

use super::super::data::{Content, ReadEpoch, Sample};
use super::super::sampler::EpochOrder;
use super::super::{SampleKey, TrainState};
use super::batch::{BatchBuffer, BatchMut};
use super::queue::lock;
use super::slots::Open;
use super::{LoadError, OnError, PerBatch, Shared};
use crate::{Error, Tensor};

/// A stage's thread body.
pub(super) type Stage = fn(&Shared);

/// A read sample on its way to the decoders.
pub(super) struct Read {
    pub(super) epoch: u32,
    pub(super) index: u64,
    pub(super) sample: Result<Sample, LoadError>,
}

/// A collated batch on its way to the consumer.
pub(super) struct Collated {
    pub(super) epoch: u32,
    pub(super) number: u64,
    pub(super) buffers: Result<BatchBuffer, (LoadError, BatchBuffer)>,
}

/// The message of a caught panic.
pub(super) fn panic_message(panic: &(dyn core::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| String::from(*s))
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Runs `f`, turning a panic into [`LoadError::Panic`] for `index`.
fn guard<T>(
    s: &Shared,
    index: u64,
    f: impl FnOnce() -> Result<T, LoadError>,
) -> Result<T, LoadError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic_message(&*panic);
        let sample = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.dataset.describe(index as usize)
        }))
        .unwrap_or_else(|_| alloc::format!("sample {index}"));
        Err(LoadError::Panic {
            index,
            sample,
            message,
        })
    })
}

/// Runs a stage's body on its thread. A panic outside the per-sample
/// guards (the plumbing, a dataset's `len`) stops the stream and reaches
/// the consumer as [`LoadError::Worker`] instead of leaving it waiting.
pub(super) fn run_stage(s: &Shared, stage: Stage, thread: String) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stage(s))) {
        let message = panic_message(&*panic);
        lock(&s.fatal).get_or_insert(LoadError::Worker { thread, message });
        s.shut_down();
    }
}

/// Read: stream items in turn, each sample's bytes and labels; each
/// item's sample is hinted to the dataset [`LoaderConfig::fetch_ahead`]
/// items before (the run's first items by the thread reading item 0), at
/// most into the next epoch (whose order the loader keeps with this one's).
///
/// [`LoaderConfig::fetch_ahead`]: super::LoaderConfig::fetch_ahead
pub(super) fn read_stage(s: &Shared) {
    let mut order: Option<(u32, Arc<EpochOrder>, ReadEpoch)> = None;
    let mut ahead: Option<(u32, Arc<EpochOrder>)> = None;
    let mut hint = |n: u64, now: u32| {
        if let Some((epoch, position)) = s.stream.item(n)
            && epoch <= now.saturating_add(1)
        {
            if ahead.as_ref().is_none_or(|(e, _)| *e != epoch) {
                ahead = Some((epoch, s.order(epoch)));
            }
            let (_, order) = ahead.as_ref().expect("fetched above");
            s.dataset
                .fetch_ahead(order.index(position as usize) as usize);
        }
    };
    let far = s.config.fetch_ahead as u64;
    while !s.stopped() {
        let n = s.next_read.fetch_add(1, Ordering::SeqCst);
        let Some((epoch, position)) = s.stream.item(n) else {
            return;
        };
        if far > 0 {
            if n == 0 {
                (0..far).for_each(|k| hint(k, epoch));
            }
            hint(n + far, epoch);
        }
        if order.as_ref().is_none_or(|(e, ..)| *e != epoch) {
            order = Some((epoch, s.order(epoch), s.pass(epoch)));
        }
        let (_, order, pass) = order.as_ref().expect("fetched above");
        let index = order.index(position as usize);
        let mut sample = s.samples.try_take().unwrap_or_default();
        // A recycled sample may hold another dataset's pixels or target (a
        // concat of kinds): what a dataset does not set is an encoded file
        // without a target.
        sample.content = Content::Encoded;
        sample.target = None;
        let sample = match guard(s, index, || {
            s.dataset
                .read_in(pass, index as usize, &mut sample)
                .map_err(|error| LoadError::Read { index, error })
        }) {
            Ok(()) => Ok(sample),
            Err(e) => {
                s.samples.put(sample);
                Err(e)
            }
        };
        if !s.read.put(
            n,
            Read {
                epoch,
                index,
                sample,
            },
        ) {
            return;
        }
    }
}

/// Decode + augment: each read sample through the plan, straight into its
/// slot of its batch's buffer.
pub(super) fn decode_stage(s: &Shared) {
    let budget = s.config.decode_budget;
    let mut state = TrainState::with_decode_budget(budget);
    // The sample's labels, kept past its return to the pool (made once).
    let mut labels = alloc::vec::Vec::with_capacity(s.label_width);
    while let Some((n, read)) = s.read.take() {
        let Read {
            epoch,
            index,
            sample,
        } = read;
        let (batch, slot) = s.stream.slot(n);
        let Some(base) = s.open_batch(batch) else {
            return;
        };
        labels.clear();
        // The sample's target, moved with its image, kept for its batch.
        let mut moved = None;
        let done: Result<[usize; 3], LoadError> = sample.and_then(|mut sample| {
            let checked = super::labels::check(&*s.dataset, index, &sample.labels, s.label_width);
            if let Err(e) = checked {
                s.samples.put(sample);
                return Err(e);
            }
            labels.extend_from_slice(&sample.labels);
            let key = SampleKey::new(s.config.seed, epoch, index);
            // SAFETY: `base` points at the tensor of the open batch `batch`,
            // which stays open (its buffer neither dropped nor reallocated)
            // until this sample is finished below; `slot` is this stream
            // item's alone, and `(slot + 1) * sample_len` is within the
            // tensor (`open_batch` sized it to the batch's slots); nothing else
            // refers to these elements until the batch is finished.
            let out = unsafe { base.slice(slot * s.sample_len, s.run_len) };
            let mut target = sample.target.take();
            let done = guard(s, index, || {
                let input = sample.input();
                let shape = input.and_then(|input| {
                    let target = target.as_deref_mut();
                    if s.variable {
                        let past = Error::InvalidParameter {
                            name: "max_shape",
                            reason: "the sample's output is larger than max_shape allows",
                        };
                        s.plan
                            .run_input_any_size_with_target(&mut state, key, input, target, out)
                            .map_err(|e| match e {
                                // The buffer is the loader's, sized by `max_shape`.
                                Error::BufferTooSmall { .. } => past,
                                e => e,
                            })
                            // Each dimension within max_shape (not merely
                            // the element count), so that the batch padded
                            // to its largest fits its buffer.
                            .and_then(|shape| {
                                let within = shape.iter().zip(&s.shape).all(|(d, m)| d <= m);
                                if within { Ok(shape) } else { Err(past) }
                            })
                    } else {
                        s.plan
                            .run_input_with_target(&mut state, key, input, target, out)
                            .map(|_| s.shape)
                    }
                });
                shape.map_err(|error| {
                    let sample = s.dataset.describe(index as usize);
                    LoadError::decoding(index, sample, error, &mut state)
                })
            });
            s.samples.put(sample);
            moved = target;
            if matches!(done, Err(LoadError::Panic { .. })) {
                state = TrainState::with_decode_budget(budget); // its scratch may be half-written
            }
            done
        });
        if !s.finish_sample(batch, slot, index, &labels, moved, done) {
            return;
        }
    }
}

/// Collate: finished batches in turn, made whole (skipped samples' holes
/// closed) and handed to the consumer.
pub(super) fn collate_stage(s: &Shared) {
    // Padding's scratch: one sample, made on the first padded batch.
    let mut scratch: Option<Tensor> = None;
    while let Some((n, open)) = s.assembled.take() {
        let Open {
            epoch,
            number,
            len,
            mut buffers,
            failed,
            ..
        } = open;
        let buffers = match failed {
            Some((_, e)) if s.config.on_error == OnError::Fail => Err((e, buffers)),
            _ => {
                buffers.close_holes(len, s.sample_len);
                let padded = if s.padded {
                    buffers.pad(s.sample_len, s.config.size_divisible, &mut scratch)
                } else {
                    buffers.shape = [buffers.len, s.shape[0], s.shape[1], s.shape[2]];
                    Ok(())
                };
                let mapped = padded.and_then(|()| match &s.config.per_batch {
                    None => Ok(()),
                    Some(f) => per_batch(f, epoch, number, &mut buffers),
                });
                match mapped {
                    Ok(()) => Ok(buffers),
                    Err(e) => Err((e, buffers)),
                }
            }
        };
        if !s.collated.put(
            n,
            Collated {
                epoch,
                number,
                buffers,
            },
        ) {
            return;
        }
    }
}

/// Runs a batch's [`PerBatch`] function, a panic caught as an error.
fn per_batch(f: &PerBatch, epoch: u32, number: u64, b: &mut BatchBuffer) -> Result<(), LoadError> {
    let failed = |message| LoadError::PerBatch {
        epoch,
        number,
        message,
    };
    let mut view = BatchMut {
        epoch,
        number,
        len: b.len,
        tensor: &mut b.tensor,
        labels: &mut b.labels,
        label_width: b.label_width,
        indices: &b.indices,
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (f.0)(&mut view)))
        .map_err(|panic| failed(panic_message(&*panic)))?
        .map_err(failed)
}
