//! The stream's epoch arithmetic: the loader's threads run one stream of
//! samples across epochs, numbered from where it started (or resumed);
//! [`Stream`] maps a stream item to its epoch and position, and to its
//! batch and slot, and a stream batch to its epoch and number.

/// Where the stream starts and how epochs divide it.
#[derive(Clone, Copy)]
pub(super) struct Stream {
    /// The epoch of stream item 0.
    pub(super) epoch: u32,
    /// The epoch position of stream item 0.
    pub(super) position: u64,
    /// Positions used per epoch (a dropped last batch's are not).
    pub(super) per_epoch: u64,
    /// Batches per epoch.
    pub(super) batches: u64,
    /// Samples per batch (per shard).
    pub(super) batch_size: u64,
    /// The first epoch not run.
    pub(super) end: Option<u32>,
}

impl Stream {
    /// (epoch, position) of stream item `n`, `None` past the last epoch.
    pub(super) fn item(&self, n: u64) -> Option<(u32, u64)> {
        if self.per_epoch == 0 {
            return None;
        }
        let at = self.position + n;
        let epoch = u64::from(self.epoch) + at / self.per_epoch;
        let epoch = u32::try_from(epoch).ok()?;
        self.end.is_none_or(|end| epoch < end).then_some(())?;
        Some((epoch, at % self.per_epoch))
    }

    /// (stream batch, slot in it) of stream item `n`.
    pub(super) fn slot(&self, n: u64) -> (u64, usize) {
        let at = self.position + n;
        let (epochs, position) = (at / self.per_epoch, at % self.per_epoch);
        let batch = epochs * self.batches + position / self.batch_size;
        (
            batch - self.position / self.batch_size,
            (position % self.batch_size) as usize,
        )
    }

    /// (epoch, number, samples) of stream batch `n`.
    pub(super) fn batch(&self, n: u64) -> Option<(u32, u64, usize)> {
        if self.batches == 0 {
            return None;
        }
        let first = self.position / self.batch_size + n;
        let epoch = u32::try_from(u64::from(self.epoch) + first / self.batches).ok()?;
        self.end.is_none_or(|end| epoch < end).then_some(())?;
        let number = first % self.batches;
        let start = number * self.batch_size;
        let len = self.batch_size.min(self.per_epoch - start);
        Some((epoch, number, len as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stream items and batches map onto epochs, from a resumed position,
    /// up to the last epoch.
    #[test]
    fn the_stream_divides_into_epochs() {
        // 10 samples in batches of 4: 3 batches (4, 4, 2); resumed after
        // batch 1 of epoch 2; 4 epochs in all.
        let l = Stream {
            epoch: 2,
            position: 4,
            per_epoch: 10,
            batches: 3,
            batch_size: 4,
            end: Some(4),
        };
        assert_eq!(l.item(0), Some((2, 4)));
        assert_eq!(l.item(5), Some((2, 9)));
        assert_eq!(l.item(6), Some((3, 0)));
        assert_eq!(l.item(15), Some((3, 9)));
        assert_eq!(l.item(16), None);
        assert_eq!(l.slot(0), (0, 0));
        assert_eq!(l.slot(5), (1, 1));
        assert_eq!(l.slot(6), (2, 0));
        assert_eq!(l.slot(15), (4, 1));
        assert_eq!(l.batch(0), Some((2, 1, 4)));
        assert_eq!(l.batch(1), Some((2, 2, 2)));
        assert_eq!(l.batch(2), Some((3, 0, 4)));
        assert_eq!(l.batch(4), Some((3, 2, 2)));
        assert_eq!(l.batch(5), None);
        let empty = Stream {
            per_epoch: 0,
            batches: 0,
            ..l
        };
        assert_eq!((empty.item(0), empty.batch(0)), (None, None));
    }
}
