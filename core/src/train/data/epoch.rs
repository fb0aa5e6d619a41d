//! [`ReadEpoch`]: which pass of a loader a read belongs to, for datasets
//! that order their own samples (a stream read through a shuffle buffer)
//! and so need to know the seed, the epoch and the positions to come.

#![forbid(unsafe_code)]

use crate::train::Shard;

/// One loader's pass over a dataset: the run's seed, the epoch, whether the
/// loader shuffles, and which positions of the epoch it will ask for: this
/// shard's positions `first..end` (shard `r` of `n` reads dataset position
/// `(r + n * k) % len` at its position `k`, as for every dataset).
///
/// A dataset read by index ignores it ([`Dataset::read_in`](super::Dataset::read_in)
/// calls [`Dataset::read`](super::Dataset::read)); a stream keys its
/// shuffle buffer's draws by it and keeps back, of the samples it passes on
/// the way to a later one, exactly those this pass will still ask for.
///
/// ```
/// use tensorprep::train::Shard;
/// use tensorprep::train::data::ReadEpoch;
///
/// // Shard 1 of 3 over 7 samples, resumed at its position 1: it reads 4,
/// // then 0 (its position 2, 7, wraps around: the epoch is padded to 9).
/// let pass = ReadEpoch::new(5, 0, true, Shard::new(3, 1, false)?, 1, 3);
/// let asked: Vec<usize> = (0..7).filter(|&i| pass.reads(i, 7)).collect();
/// assert_eq!(asked, [0, 4]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadEpoch {
    /// The run's seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u32,
    /// Whether the loader shuffles (a stream then draws from its buffer;
    /// otherwise it gives its own order).
    pub shuffle: bool,
    /// The loader's shard.
    pub shard: Shard,
    /// The shard's first position read (above 0 when resumed in the epoch).
    pub first: u64,
    /// The shard's positions read in the epoch end before this one.
    pub end: u64,
    /// Which run of a loader reads (each start or restart takes a new
    /// one): a stream keeps one cursor per run, so two loaders over one
    /// dataset, or a retry after a failed pass, never share a cursor.
    pub run: u64,
    /// Set when the pass reads a part of the dataset the loader reads (a
    /// concatenation's part, a range): the part's position `i` is the
    /// loader's position `i + shift` of an epoch of `total` ([`ReadEpoch::of_part`]).
    pub part: Option<(i64, u64)>,
}

impl ReadEpoch {
    /// A pass of `shard` over positions `first..end` of `epoch`.
    pub fn new(seed: u64, epoch: u32, shuffle: bool, shard: Shard, first: u64, end: u64) -> Self {
        ReadEpoch {
            seed,
            epoch,
            shuffle,
            shard,
            first,
            end,
            run: 0,
            part: None,
        }
    }

    /// The same pass as seen by a part of the dataset read (of `len`
    /// samples): its position `i` is the dataset's `i + shift`.
    pub fn of_part(mut self, shift: i64, len: usize) -> Self {
        self.part = Some(match self.part {
            Some((outer, total)) => (outer.saturating_add(shift), total),
            None => (shift, len as u64),
        });
        self
    }

    /// The positions this pass asks for of a dataset of `len` samples (of
    /// a part: those in it), counted.
    pub fn asks(&self, len: usize) -> u64 {
        let Some((shift, total)) = self.part else {
            return self.reads_count();
        };
        if total == 0 {
            return 0;
        }
        let (r, n) = (
            u128::from(self.shard.index()),
            u128::from(self.shard.count()),
        );
        (self.first..self.end)
            .filter(|&k| {
                let g = ((r + n * u128::from(k)) % u128::from(total)) as i128;
                let i = g - i128::from(shift);
                i >= 0 && i < len as i128
            })
            .count() as u64
    }

    /// The same pass, read by run `run` of a loader.
    pub const fn in_run(mut self, run: u64) -> Self {
        self.run = run;
        self
    }

    /// Reads by index in the dataset's own order (epoch 0, not shuffled,
    /// one shard), open-ended: no position is known to come (nothing is
    /// kept back for one). What [`Dataset::read`](super::Dataset::read)
    /// means for a stream.
    pub const BY_INDEX: ReadEpoch = ReadEpoch {
        seed: 0,
        epoch: 0,
        shuffle: false,
        shard: Shard::ALL,
        first: 0,
        end: 0,
        run: 0,
        part: None,
    };

    /// The positions this pass asks for, counted.
    pub fn reads_count(&self) -> u64 {
        self.end.saturating_sub(self.first)
    }

    /// Whether this pass asks for dataset position `index` of an epoch of
    /// `len` samples.
    pub fn reads(&self, index: usize, len: usize) -> bool {
        if len == 0 || index >= len {
            return false;
        }
        let (index, len) = match self.part {
            Some((shift, total)) => {
                let at = index as i128 + i128::from(shift);
                if at < 0 || at >= i128::from(total) {
                    return false;
                }
                (at as usize, total as usize)
            }
            None => (index, len),
        };
        let (r, n) = (
            u128::from(self.shard.index()),
            u128::from(self.shard.count()),
        );
        let (first, end) = (u128::from(self.first), u128::from(self.end));
        let last = r + n * end; // global positions below this are read
        let mut g = index as u128;
        // Padding repeats the epoch from its start: position `index` is
        // global position `index + w * len` for every wrap `w`.
        while g < last {
            if g >= r && (g - r).is_multiple_of(n) && (g - r) / n >= first {
                return true;
            }
            g += len as u128;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Each shard asks for its positions, padding's wrap included, and
    /// nothing before its first.
    #[test]
    fn a_pass_asks_for_its_shard_s_positions() {
        let asked = |pass: ReadEpoch, len| -> Vec<usize> {
            (0..len).filter(|&i| pass.reads(i, len)).collect()
        };
        let all = ReadEpoch::new(0, 0, false, Shard::ALL, 0, 5);
        assert_eq!(asked(all, 5), [0, 1, 2, 3, 4]);
        assert_eq!(asked(ReadEpoch { first: 3, ..all }, 5), [3, 4]);
        assert_eq!(asked(ReadEpoch { end: 2, ..all }, 5), [0, 1]);
        assert!(asked(ReadEpoch::BY_INDEX, 5).is_empty());
        // 7 over 3 shards: padded to 9, shard 2 reads 2, 5 and 8 % 7 = 1.
        let s = |i| Shard::new(3, i, false).unwrap();
        assert_eq!(asked(ReadEpoch::new(0, 0, true, s(2), 0, 3), 7), [1, 2, 5]);
        assert_eq!(asked(ReadEpoch::new(0, 0, true, s(0), 0, 3), 7), [0, 3, 6]);
        // 2 samples over 3 shards: shard 2 reads position 0 again.
        assert_eq!(asked(ReadEpoch::new(0, 0, true, s(2), 0, 1), 2), [0]);
        assert_eq!(ReadEpoch::new(0, 0, true, s(2), 0, 1).reads_count(), 1);
    }
}
