//! Where a loader is ([`LoaderState`]): the small value a checkpoint keeps
//! to resume exactly, and whether a loader can continue from it.

use super::{LoadError, LoaderConfig};

/// Where a loader is: enough to continue exactly (small, `Copy`; store it
/// with the model's checkpoint, as [`LoaderState::to_bytes`] or its fields).
///
/// ```
/// use tensorprep::train::LoaderState;
///
/// let state = LoaderState { seed: 7, epoch: 3, batches: 120, global_batch: 256,
///                           dataset_len: 1_281_167, fingerprint: 0x1234 };
/// let saved = state.to_bytes();
/// assert_eq!(LoaderState::from_bytes(&saved), Some(state));
/// assert_eq!(LoaderState::from_bytes(&saved[..10]), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoaderState {
    /// The draws' seed.
    pub seed: u64,
    /// The epoch being delivered.
    pub epoch: u32,
    /// Batches of it already delivered (by each shard: training steps).
    pub batches: u64,
    /// Samples per step over all shards (batch size x shard count). A
    /// resume may change the shard count and the batch size if it keeps
    /// this: each step covers the same stretch of the epoch's order.
    pub global_batch: u64,
    /// The dataset's length (a different dataset is refused on resume).
    pub dataset_len: u64,
    /// The dataset's [`Dataset::fingerprint`](super::super::data::Dataset::fingerprint) (another dataset of the same
    /// length is refused on resume too).
    pub fingerprint: u64,
}

impl LoaderState {
    /// The bytes [`LoaderState::to_bytes`] writes.
    pub const BYTES: usize = 48;
    const MAGIC: [u8; 4] = *b"TPL1";

    /// A fixed little-endian layout: a 4-byte tag, then the fields.
    pub fn to_bytes(&self) -> [u8; LoaderState::BYTES] {
        let mut b = [0u8; LoaderState::BYTES];
        b[..4].copy_from_slice(&LoaderState::MAGIC);
        b[4..8].copy_from_slice(&self.epoch.to_le_bytes());
        for (i, v) in [
            self.seed,
            self.batches,
            self.global_batch,
            self.dataset_len,
            self.fingerprint,
        ]
        .iter()
        .enumerate()
        {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Whether a loader over a dataset of `len` samples and `fingerprint`,
    /// configured by `config`, can continue at this state.
    pub(super) fn fits(
        &self,
        len: u64,
        fingerprint: u64,
        config: &LoaderConfig,
    ) -> Result<(), LoadError> {
        if self.dataset_len != len {
            return Err(LoadError::Resume(
                "the state is for a dataset of another length",
            ));
        }
        if self.fingerprint != fingerprint {
            return Err(LoadError::Resume(
                "the state is for another dataset (its fingerprint differs)",
            ));
        }
        if self.seed != config.seed {
            return Err(LoadError::Resume("the state is for another seed"));
        }
        if self.global_batch != config.global_batch() {
            return Err(LoadError::Resume(
                "the state is for another global batch (batch size x shard count)",
            ));
        }
        Ok(())
    }

    /// Reads what [`LoaderState::to_bytes`] wrote (`None` for anything else).
    pub fn from_bytes(b: &[u8]) -> Option<LoaderState> {
        if b.len() != LoaderState::BYTES || b[..4] != LoaderState::MAGIC {
            return None;
        }
        let word = |i: usize| {
            Some(u64::from_le_bytes(
                b[8 + 8 * i..16 + 8 * i].try_into().ok()?,
            ))
        };
        Some(LoaderState {
            epoch: u32::from_le_bytes(b[4..8].try_into().ok()?),
            seed: word(0)?,
            batches: word(1)?,
            global_batch: word(2)?,
            dataset_len: word(3)?,
            fingerprint: word(4)?,
        })
    }
}
