//! Where a loader is ([`LoaderState`]): the small value a checkpoint keeps
//! to resume exactly, and whether a loader can continue from it.

use super::{LoadError, LoaderConfig};

/// Where a loader is: enough to continue exactly (small, `Copy`; store it
/// with the model's checkpoint, as [`LoaderState::to_bytes`] or its fields).
///
/// Besides the position it pins what a resume must not change: the
/// pipeline changes the callbacks made (their count and a hash of them:
/// the changes themselves are kept beside it,
/// [`Loader::pipeline_changes`](super::Loader::pipeline_changes)) and the
/// labels per sample the loader ran with.
///
/// ```
/// use tensorprep::train::LoaderState;
///
/// let mut state = LoaderState::new(7, 3, 120, 256, 1_281_167, 0x1234);
/// state.label_width = Some(1);
/// let saved = state.to_bytes();
/// assert_eq!(LoaderState::from_bytes(&saved), Some(state));
/// assert_eq!(LoaderState::from_bytes(&saved[..10]), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// How many pipeline changes the callbacks had made
    /// ([`Loader::pipeline_changes`](super::Loader::pipeline_changes)): a
    /// resume must be given the same ones.
    pub changes: u32,
    /// A hash of those changes ([`PipelineChange::hash_all`](super::PipelineChange::hash_all);
    /// 0 when there are none).
    pub changes_hash: u64,
    /// The labels per sample the loader ran with (`None`: not pinned, a
    /// state of an older version): a resume runs with these, never probes
    /// again, and refuses a configured
    /// [`LoaderConfig::label_width`] that differs.
    pub label_width: Option<u32>,
}

impl LoaderState {
    /// The bytes [`LoaderState::to_bytes`] writes.
    pub const BYTES: usize = 64;
    /// The first version's tag and length: its states have no pipeline
    /// change and no pinned label width.
    const MAGIC_V1: [u8; 4] = *b"TPL1";
    const BYTES_V1: usize = 48;
    const MAGIC: [u8; 4] = *b"TPL2";
    /// `label_width` of `None` in the bytes.
    const UNPINNED: u32 = u32::MAX;

    /// A state at `batches` into `epoch`, without pipeline changes and
    /// without a pinned label width.
    pub fn new(
        seed: u64,
        epoch: u32,
        batches: u64,
        global_batch: u64,
        dataset_len: u64,
        fingerprint: u64,
    ) -> LoaderState {
        LoaderState {
            seed,
            epoch,
            batches,
            global_batch,
            dataset_len,
            fingerprint,
            changes: 0,
            changes_hash: 0,
            label_width: None,
        }
    }

    /// A fixed little-endian layout: a 4-byte tag (`TPL2`), the epoch, the
    /// five 64-bit fields, the change count, the label width (`u32::MAX`:
    /// not pinned) and the changes' hash. [`LoaderState::from_bytes`] also
    /// reads the first version's 48 bytes (`TPL1`: no changes).
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
        b[48..52].copy_from_slice(&self.changes.to_le_bytes());
        let width = self.label_width.unwrap_or(LoaderState::UNPINNED);
        b[52..56].copy_from_slice(&width.to_le_bytes());
        b[56..64].copy_from_slice(&self.changes_hash.to_le_bytes());
        b
    }

    /// Reads what [`LoaderState::to_bytes`] wrote, or the first version's
    /// bytes (`None` for anything else).
    pub fn from_bytes(b: &[u8]) -> Option<LoaderState> {
        let v1 = b.len() == LoaderState::BYTES_V1 && b[..4] == LoaderState::MAGIC_V1;
        let v2 = b.len() == LoaderState::BYTES && b[..4] == LoaderState::MAGIC;
        if !(v1 || v2) {
            return None;
        }
        let u64_at = |at: usize| Some(u64::from_le_bytes(b[at..at + 8].try_into().ok()?));
        let u32_at = |at: usize| Some(u32::from_le_bytes(b[at..at + 4].try_into().ok()?));
        let mut state = LoaderState::new(
            u64_at(8)?,
            u32_at(4)?,
            u64_at(16)?,
            u64_at(24)?,
            u64_at(32)?,
            u64_at(40)?,
        );
        if v2 {
            state.changes = u32_at(48)?;
            state.label_width = Some(u32_at(52)?).filter(|&w| w != LoaderState::UNPINNED);
            state.changes_hash = u64_at(56)?;
        }
        Some(state)
    }

    /// Whether a loader over a dataset of `len` samples and `fingerprint`,
    /// configured by `config`, with pipeline changes of `changes` (count,
    /// hash), can continue at this state.
    pub(super) fn fits(
        &self,
        len: u64,
        fingerprint: u64,
        config: &LoaderConfig,
        changes: (u32, u64),
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
        if (self.changes, self.changes_hash) != changes {
            return Err(LoadError::Resume(
                "the state's pipeline changes are not the ones given (resume with the loader's \
                 pipeline_changes saved beside the state)",
            ));
        }
        if let (Some(pinned), Some(configured)) = (self.label_width, config.label_width)
            && usize::try_from(pinned).ok() != Some(configured)
        {
            return Err(LoadError::Resume(
                "the state is for another label width (labels per sample)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_version_reads_as_a_state_without_changes() {
        let mut state = LoaderState::new(7, 3, 120, 256, 1000, 0x1234);
        let mut v1 = [0u8; LoaderState::BYTES_V1];
        v1.copy_from_slice(&state.to_bytes()[..LoaderState::BYTES_V1]);
        v1[..4].copy_from_slice(b"TPL1");
        assert_eq!(LoaderState::from_bytes(&v1), Some(state));
        // Its tag with the new length, or the new tag with its length: not
        // a state.
        assert_eq!(LoaderState::from_bytes(&v1[..47]), None);
        let mut long = state.to_bytes();
        long[..4].copy_from_slice(b"TPL1");
        assert_eq!(LoaderState::from_bytes(&long), None);
        state.changes = 2;
        state.changes_hash = 0xfeed_beef;
        state.label_width = Some(0);
        assert_eq!(LoaderState::from_bytes(&state.to_bytes()), Some(state));
        state.label_width = None;
        assert_eq!(LoaderState::from_bytes(&state.to_bytes()), Some(state));
    }
}
