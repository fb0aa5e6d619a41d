//! The slot writer: the batches being filled, each sample decoded straight
//! into its own slot of its batch's buffer by whichever decode thread has
//! it (no copy), the buffer handed to collate when its last slot is done.

use alloc::vec::Vec;

use super::batch::{BatchBuffer, resize};
use super::queue::lock;
use super::{LoadError, Shared};
use crate::targets::Target;
use crate::{Tensor, TensorMut};
use alloc::boxed::Box;

/// The start of a batch buffer's tensor, for writing samples into their
/// slots from the decode threads.
#[derive(Clone, Copy)]
pub(super) enum Base {
    F32(*mut f32),
    F16(*mut half::f16),
    U8(*mut u8),
    I8(*mut i8),
}

// SAFETY: a `Base` is only dereferenced through `Base::slice`, whose
// callers hold the open batch's exclusive claim on the slot (see there).
unsafe impl Send for Base {}

impl Base {
    pub(super) fn of(t: &mut Tensor) -> Base {
        match t {
            Tensor::F32(v) => Base::F32(v.as_mut_ptr()),
            Tensor::F16(v) => Base::F16(v.as_mut_ptr()),
            Tensor::U8(v) => Base::U8(v.as_mut_ptr()),
            Tensor::I8(v) => Base::I8(v.as_mut_ptr()),
        }
    }

    /// Elements `at..at + len` of the tensor.
    ///
    /// # Safety
    /// The tensor `self` came from is alive and not reallocated while the
    /// slice lives, `at + len` is within it, and no other reference to those
    /// elements exists meanwhile.
    pub(super) unsafe fn slice<'a>(self, at: usize, len: usize) -> TensorMut<'a> {
        use core::slice::from_raw_parts_mut as part;
        // SAFETY: as the caller guarantees.
        unsafe {
            match self {
                Base::F32(p) => TensorMut::F32(part(p.add(at), len)),
                Base::F16(p) => TensorMut::F16(part(p.add(at), len)),
                Base::U8(p) => TensorMut::U8(part(p.add(at), len)),
                Base::I8(p) => TensorMut::I8(part(p.add(at), len)),
            }
        }
    }
}

/// The batches being filled, and the next stream batch to open.
pub(super) struct OpenBatches {
    pub(super) list: Vec<Open>,
    pub(super) next: u64,
    /// A thread is waiting for a buffer to open `next`.
    pub(super) opening: bool,
}

/// A batch whose samples are being decoded into its buffer.
pub(super) struct Open {
    /// The stream batch number.
    batch: u64,
    pub(super) epoch: u32,
    pub(super) number: u64,
    /// Samples (slots) in the batch.
    pub(super) len: usize,
    /// Slots not finished yet.
    remaining: usize,
    pub(super) buffers: BatchBuffer,
    base: Base,
    /// The error of the failed sample in the lowest slot, with that slot:
    /// the first failure in the batch's order, whichever thread finished
    /// first (so the error reported does not depend on timing).
    pub(super) failed: Option<(usize, LoadError)>,
}

impl Shared {
    /// The slot base of stream batch `batch`, opening the batches up to it
    /// if they are not open yet; `None` once stopped.
    ///
    /// Batches are opened in order, each with a free batch buffer, by one
    /// thread at a time (the others wait for their batch to open): so the
    /// earliest batch always gets the next free buffer. (A later batch
    /// taking the last buffer while an earlier one waits would stall the
    /// ordered collate for good; so would a thread waiting for a buffer
    /// for a batch another thread has opened meanwhile.)
    pub(super) fn open_batch(&self, batch: u64) -> Option<Base> {
        let mut open = lock(&self.open);
        loop {
            if self.stopped() {
                return None;
            }
            if batch < open.next {
                // Open until its last sample is finished, and this thread
                // holds one of its samples.
                return open.list.iter().find(|o| o.batch == batch).map(|o| o.base);
            }
            if open.opening {
                open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // This thread opens the next batch: it waits for a buffer
            // outside the lock (the open batches finish meanwhile, and the
            // consumer frees their buffers).
            open.opening = true;
            drop(open);
            let buffers = self.buffers.take();
            open = lock(&self.open);
            open.opening = false;
            self.opened.notify_all();
            let mut buffers = buffers?;
            let next = open.next;
            let Some((epoch, number, len)) = self.stream.batch(next) else {
                self.buffers.put(buffers);
                return None;
            };
            buffers.labels.clear();
            buffers.labels.resize(len * buffers.label_width, f32::NAN);
            buffers.indices.clear();
            buffers.indices.resize(len, u64::MAX);
            buffers.shapes.clear();
            buffers.shapes.resize(len, [0; 3]);
            buffers.targets.clear();
            buffers.targets.resize_with(len, || None);
            // The buffer holds this batch's slots: grown (and zeroed) only
            // where it never held as many.
            if !resize(&mut buffers.tensor, len * self.sample_len) {
                self.buffers.put(buffers);
                lock(&self.fatal).get_or_insert(LoadError::OutOfMemory(
                    "a batch buffer (lower depth or batch_size)",
                ));
                drop(open);
                self.shut_down();
                return None;
            }
            let base = Base::of(&mut buffers.tensor);
            open.list.push(Open {
                batch: next,
                epoch,
                number,
                len,
                remaining: len,
                buffers,
                base,
                failed: None,
            });
            open.next += 1;
        }
    }

    /// Records slot `slot` of stream batch `batch` as finished (its
    /// `labels`, checked to be the loader's label width); the last sample
    /// of a batch sends it on to collate. `false` once stopped.
    pub(super) fn finish_sample(
        &self,
        batch: u64,
        slot: usize,
        index: u64,
        labels: &[f32],
        target: Option<Box<Target>>,
        done: Result<[usize; 3], LoadError>,
    ) -> bool {
        let finished = {
            let mut open = lock(&self.open);
            let at = open
                .list
                .iter()
                .position(|o| o.batch == batch)
                .expect("a batch stays open until its last sample finishes");
            let o = &mut open.list[at];
            match done {
                Ok(shape) => {
                    let width = o.buffers.label_width;
                    o.buffers.labels[slot * width..(slot + 1) * width].copy_from_slice(labels);
                    o.buffers.indices[slot] = index;
                    o.buffers.shapes[slot] = shape;
                    o.buffers.targets[slot] = target;
                }
                Err(e) => {
                    if o.failed.as_ref().is_none_or(|(first, _)| slot < *first) {
                        o.failed = Some((slot, e));
                    }
                }
            }
            o.remaining -= 1;
            (o.remaining == 0).then(|| open.list.swap_remove(at))
        };
        finished.is_none_or(|o| self.assembled.put(batch, o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot writer: decode threads write their samples' disjoint slots
    /// of one batch buffer through [`Base`] at once, the buffer then read
    /// whole. Run under Miri (`cargo +nightly miri test -p tensorprep
    /// --features train --lib train::`): no data race, no access outside
    /// the buffer.
    #[test]
    fn threads_write_their_own_slots_of_one_buffer() {
        let (slots, len) = (4usize, 6usize);
        let mut tensor = Tensor::try_zeros(crate::DType::F32, 0).unwrap();
        assert!(resize(&mut tensor, slots * len));
        let base = Base::of(&mut tensor);
        std::thread::scope(|scope| {
            for slot in 0..slots {
                scope.spawn(move || {
                    // SAFETY: each thread writes its own slot `slot` of the
                    // tensor, which outlives the scope and is not resized
                    // or read meanwhile.
                    let out = unsafe { base.slice(slot * len, len) };
                    let TensorMut::F32(v) = out else {
                        unreachable!("a float tensor")
                    };
                    for (i, x) in v.iter_mut().enumerate() {
                        *x = (slot * 10 + i) as f32;
                    }
                });
            }
        });
        let Tensor::F32(v) = &tensor else {
            unreachable!("a float tensor")
        };
        for (k, x) in v.iter().enumerate() {
            assert_eq!(*x, ((k / len) * 10 + k % len) as f32);
        }
        // A short batch keeps its room and drops the rest.
        assert!(resize(&mut tensor, len));
        assert_eq!(tensor.len(), len);
    }
}
