//! Making a collated batch whole: the holes of skipped samples closed, and
//! samples of varying shapes padded to the batch's largest.

use super::LoadError;
use super::batch::{BatchBuffer, resize};
use crate::{Layout, Tensor};

impl BatchBuffer {
    /// Pads a batch of samples of varying shapes (each at the start of its
    /// slot of `stride` elements) to its largest, height and width rounded
    /// up to a multiple of `size_divisible`: each sample at the top left of
    /// its place, zeros (the element type's) bottom and right, the samples
    /// then one after the other; sets the batch's shape. `stride` holds the
    /// padded shape (the loader sizes slots by [`divisible`]); nothing is
    /// allocated but `scratch`, once.
    pub(super) fn pad(
        &mut self,
        stride: usize,
        size_divisible: usize,
        scratch: &mut Option<Tensor>,
    ) -> Result<(), LoadError> {
        let mut max = [0usize; 3];
        for s in &self.shapes {
            for (m, d) in max.iter_mut().zip(s) {
                *m = (*m).max(*d);
            }
        }
        let max = divisible(self.layout, max, size_divisible)
            .filter(|m| m.iter().product::<usize>() <= stride)
            .ok_or(LoadError::Config(
                "a batch's samples padded outgrow its buffer (larger than max_shape)",
            ))?;
        self.shape = [self.len, max[0], max[1], max[2]];
        let padded = max.iter().product::<usize>();
        if scratch.is_none() {
            let t = Tensor::try_zeros(self.tensor.dtype(), stride)
                .map_err(|_| LoadError::OutOfMemory("padding"))?;
            *scratch = Some(t);
        }
        let scratch = scratch.as_mut().expect("made above");
        // Sample i moves from slot i to [i * padded, (i + 1) * padded),
        // which ends before slot i + 1 starts: in order, through the
        // scratch, nothing is overwritten before it is read.
        for (i, shape) in self.shapes.iter().enumerate() {
            macro_rules! each {
                ($($v:ident),*) => {
                    match (&mut self.tensor, &mut *scratch) {
                        $((Tensor::$v(t), Tensor::$v(tmp)) => {
                            pad_one(t, tmp, i * stride, i * padded, *shape, max)
                        })*
                        _ => unreachable!("the scratch has the batch's element type"),
                    }
                };
            }
            each!(F32, F16, U8, I8);
        }
        resize(&mut self.tensor, self.len * padded);
        Ok(())
    }

    /// Moves the filled samples of a batch of `len` slots together (their
    /// tensors, labels, indices and shapes), in slot order (a failed
    /// sample's slot keeps the index `u64::MAX`), and counts the holes.
    pub(super) fn close_holes(&mut self, len: usize, sample_len: usize) {
        let mut filled = 0;
        for slot in 0..len {
            if self.indices[slot] == u64::MAX {
                continue;
            }
            if filled != slot {
                let (from, to) = (slot * sample_len, filled * sample_len);
                match &mut self.tensor {
                    Tensor::F32(v) => v.copy_within(from..from + sample_len, to),
                    Tensor::F16(v) => v.copy_within(from..from + sample_len, to),
                    Tensor::U8(v) => v.copy_within(from..from + sample_len, to),
                    Tensor::I8(v) => v.copy_within(from..from + sample_len, to),
                }
                self.indices[filled] = self.indices[slot];
                let width = self.label_width;
                self.labels
                    .copy_within(slot * width..(slot + 1) * width, filled * width);
                self.shapes[filled] = self.shapes[slot];
                self.targets[filled] = self.targets[slot].take();
            }
            filled += 1;
        }
        self.indices.truncate(filled);
        self.labels.truncate(filled * self.label_width);
        self.shapes.truncate(filled);
        self.targets.truncate(filled);
        self.skipped = len - filled;
        self.len = filled;
        resize(&mut self.tensor, filled * sample_len);
    }
}

/// Moves the sample of `shape` at `from` (its elements in a row) to `to`,
/// laid out in `max` with zeros around it, through `tmp`.
fn pad_one<T: Copy + Default>(
    t: &mut [T],
    tmp: &mut [T],
    from: usize,
    to: usize,
    shape: [usize; 3],
    max: [usize; 3],
) {
    let len = shape.iter().product::<usize>();
    tmp[..len].copy_from_slice(&t[from..from + len]);
    let padded = max.iter().product::<usize>();
    t[to..to + padded].fill(T::default());
    let row = shape[2];
    for a in 0..shape[0] {
        for b in 0..shape[1] {
            let src = (a * shape[1] + b) * row;
            let dst = to + (a * max[1] + b) * max[2];
            t[dst..dst + row].copy_from_slice(&tmp[src..src + row]);
        }
    }
}

/// `shape` (laid out as `layout`) with its height and width rounded up to
/// multiples of `k`; `None` past `usize`.
pub(super) fn divisible(layout: Layout, shape: [usize; 3], k: usize) -> Option<[usize; 3]> {
    let up = |d: usize| d.checked_next_multiple_of(k);
    Some(match layout {
        Layout::Chw => [shape[0], up(shape[1])?, up(shape[2])?],
        Layout::Hwc => [up(shape[0])?, up(shape[1])?, shape[2]],
    })
}
