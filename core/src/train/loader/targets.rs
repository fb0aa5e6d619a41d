//! A batch's targets collated: boxes and labels in the three layouts
//! detection trainers take ([`PaddedBoxes`], [`FlatBoxes`],
//! [`RaggedBoxes`]), each as flat vectors with their shapes, ready to hand
//! over without a copy (Python wraps them as arrays; torch takes them through
//! DLPack).

use alloc::vec::Vec;

use super::{Batch, LoadError};
use crate::targets::Target;

/// Boxes and labels padded to one count per sample (DETR-style models'
/// and fixed-shape exports' layout): `boxes` is `[B, room, 4]` (zeros past
/// a sample's count), `labels` `[B, room]` (-1 past it), `counts` `[B]`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct PaddedBoxes {
    /// `[B, room, 4]`, in each sample's box format.
    pub boxes: Vec<f32>,
    /// `[B, room]`, -1 where there is no box.
    pub labels: Vec<i64>,
    /// Each sample's number of boxes.
    pub counts: Vec<i64>,
    /// Boxes per sample in the padded layout.
    pub room: usize,
}

/// Every box of the batch in one list with its sample's index
/// (Ultralytics' `batch_idx`, `cls`, `bboxes`): `batch_index` and `labels`
/// `[M]`, `boxes` `[M, 4]`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FlatBoxes {
    /// `[M]`: the sample each box belongs to.
    pub batch_index: Vec<i64>,
    /// `[M]`.
    pub labels: Vec<i64>,
    /// `[M, 4]`.
    pub boxes: Vec<f32>,
}

/// Every box of the batch in one list, sample `i`'s at
/// `offsets[i]..offsets[i + 1]`: `offsets` `[B + 1]`, `labels` `[M]`,
/// `boxes` `[M, 4]`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RaggedBoxes {
    /// `[B + 1]`, from 0 to M.
    pub offsets: Vec<i64>,
    /// `[M]`.
    pub labels: Vec<i64>,
    /// `[M, 4]`.
    pub boxes: Vec<f32>,
}

/// A target's boxes and their labels (no boxes: none; labels absent: -1
/// each).
fn boxes_of(t: Option<&Target>) -> (&[[f32; 4]], &[i64]) {
    let boxes = t
        .and_then(|t| t.boxes.as_ref())
        .map_or(&[][..], |b| b.boxes());
    let labels = t.map_or(&[][..], |t| &t.labels[..]);
    (boxes, labels)
}

/// The label of box `i` (-1 when the target has no labels).
fn label(labels: &[i64], i: usize) -> i64 {
    labels.get(i).copied().unwrap_or(-1)
}

impl Batch {
    /// Each sample's target as its ops moved it, in sample order (`None` for
    /// a sample without one: a classification dataset's).
    pub fn targets(&self) -> impl ExactSizeIterator<Item = Option<&Target>> {
        self.buffers().targets.iter().map(|t| t.as_deref())
    }

    /// The boxes padded to `room` per sample (`None`: the batch's largest
    /// count). A sample with more boxes than `room` is an error naming it,
    /// never cut short.
    pub fn padded_boxes(&self, room: Option<usize>) -> Result<PaddedBoxes, LoadError> {
        let counts: Vec<i64> = self.targets().map(|t| boxes_of(t).0.len() as i64).collect();
        let largest = counts.iter().copied().max().unwrap_or(0) as usize;
        let room = room.unwrap_or(largest);
        if let Some(i) = counts.iter().position(|&c| c as usize > room) {
            return Err(LoadError::TooManyBoxes {
                index: self.indices()[i],
                count: counts[i] as usize,
                room,
            });
        }
        let n = self.len();
        // The layout's size checked before anything is allocated for it (a
        // caller's room may be anything).
        let slots = n
            .checked_mul(room)
            .filter(|s| {
                crate::Limits::default()
                    .check_alloc((*s as u64).saturating_mul(16))
                    .is_ok()
            })
            .ok_or(LoadError::OutOfMemory(
                "the padded boxes (a room too large for the allocation cap)",
            ))?;
        let mut out = PaddedBoxes {
            boxes: alloc::vec![0.0; slots * 4],
            labels: alloc::vec![-1; slots],
            counts,
            room,
        };
        for (s, t) in self.targets().enumerate() {
            let (boxes, labels) = boxes_of(t);
            for (i, b) in boxes.iter().enumerate() {
                let at = s * room + i;
                out.boxes[at * 4..at * 4 + 4].copy_from_slice(b);
                out.labels[at] = label(labels, i);
            }
        }
        Ok(out)
    }

    /// The boxes in one list with their samples' indices (Ultralytics').
    pub fn flat_boxes(&self) -> FlatBoxes {
        let mut out = FlatBoxes::default();
        for (s, t) in self.targets().enumerate() {
            let (boxes, labels) = boxes_of(t);
            for (i, b) in boxes.iter().enumerate() {
                out.batch_index.push(s as i64);
                out.labels.push(label(labels, i));
                out.boxes.extend_from_slice(b);
            }
        }
        out
    }

    /// The boxes in one list with each sample's offsets.
    pub fn ragged_boxes(&self) -> RaggedBoxes {
        let mut out = RaggedBoxes {
            offsets: alloc::vec![0],
            ..RaggedBoxes::default()
        };
        for t in self.targets() {
            let (boxes, labels) = boxes_of(t);
            for (i, b) in boxes.iter().enumerate() {
                out.labels.push(label(labels, i));
                out.boxes.extend_from_slice(b);
            }
            out.offsets.push(out.labels.len() as i64);
        }
        out
    }
}
