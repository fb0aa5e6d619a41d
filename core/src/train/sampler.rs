//! Which samples an epoch visits, in which order, on which shard.
//!
//! - [`Order`]: sequential, or one seeded permutation per (seed, epoch),
//!   drawn by the same keyed generator as the augmentations (so an epoch's
//!   order needs no saved state: resume recomputes it).
//! - [`Shard`]: this process's part when several train together, with
//!   PyTorch's `DistributedSampler` semantics: the epoch's order is padded
//!   (by repeating its start) to a multiple of the shard count, or cut to
//!   one (`drop_last`), and shard `r` takes positions `r, r + n, r + 2n, ...`.
//!   [`Shard::from_env`] reads the rank and world size that torchrun, MPI and
//!   Horovod launchers set.

#![forbid(unsafe_code)]

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{Draws, SampleKey};

/// The op position the permutation draws from (augmentations use 0 up to
/// `MAX_AUGMENTS`).
const PERMUTATION: u16 = u16::MAX;

/// An epoch's order of the dataset's indices. The seed is the run's (the
/// loader's [`LoaderConfig::seed`](crate::train::LoaderConfig), which the
/// augmentations draw from too).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Order {
    /// 0, 1, 2, ...
    Sequential,
    /// A permutation per (seed, epoch).
    Shuffled,
    /// Indices drawn by weight per (seed, epoch): PyTorch's
    /// `WeightedRandomSampler`.
    Weighted(Weighted),
}

impl Order {
    /// Indices per epoch (before sharding) over a dataset of `len`.
    pub fn epoch_len(&self, len: usize) -> usize {
        match self {
            Order::Weighted(w) => w.samples,
            _ => len,
        }
    }
}

/// PyTorch's `WeightedRandomSampler(weights, num_samples, replacement)`:
/// each epoch draws `samples` indices, index `i` with probability
/// `weights[i] / sum(weights)`; without replacement, each index at most
/// once (in the order drawn: Efraimidis and Spirakis' keys `u^(1/w)`,
/// largest first).
///
/// ```
/// use tensorprep::train::{Order, Shard, Weighted, epoch_indices};
///
/// // Class-balanced sampling: the rare sample 2 weighs as much as the rest.
/// let order = Order::Weighted(Weighted::new(vec![1.0, 1.0, 2.0], 1000, true)?);
/// let mut drawn = Vec::new();
/// epoch_indices(&order, 7, Shard::ALL, 0, 3, &mut drawn);
/// let twos = drawn.iter().filter(|&&i| i == 2).count();
/// assert!((400..600).contains(&twos), "{twos}");
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Weighted {
    /// One weight per dataset index: finite, not negative, some positive.
    pub weights: Arc<[f64]>,
    /// Indices drawn per epoch.
    pub samples: usize,
    /// Draw with replacement (an index may come several times per epoch).
    pub replacement: bool,
}

impl Weighted {
    /// Checked weights: finite, not negative, some positive, and without
    /// replacement at least `samples` of them positive.
    pub fn new(
        weights: impl Into<Arc<[f64]>>,
        samples: usize,
        replacement: bool,
    ) -> Result<Weighted, crate::Error> {
        let weights = weights.into();
        let bad = |name, reason| Err(crate::Error::InvalidParameter { name, reason });
        if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return bad("weighted sampler", "a weight is negative or not finite");
        }
        let positive = weights.iter().filter(|w| **w > 0.0).count();
        if positive == 0 {
            return bad("weighted sampler", "every weight is zero");
        }
        if !replacement && samples > positive {
            return bad(
                "weighted sampler",
                "more samples than positive weights, without replacement",
            );
        }
        if weights.iter().sum::<f64>().is_infinite() {
            return bad("weighted sampler", "the weights' sum overflows");
        }
        Ok(Weighted {
            weights,
            samples,
            replacement,
        })
    }

    /// The running sums of the weights, for draws with replacement (as
    /// long as the weights, which are held already).
    fn sums(&self) -> Vec<f64> {
        let mut total = 0.0;
        self.weights
            .iter()
            .map(|x| {
                total += x;
                total
            })
            .collect()
    }

    /// Without replacement: the epoch's draws, in order (at most one per
    /// positive weight). Keys ln(u) / w, largest first: the order of
    /// drawing without replacement by weight.
    fn draw_without_replacement(&self, seed: u64, epoch: u32) -> Vec<u64> {
        let mut keys: Vec<(f64, u64)> = self
            .weights
            .iter()
            .enumerate()
            .filter(|(_, x)| **x > 0.0)
            .map(|(i, x)| {
                let u = weight_key(seed, epoch, i).unit_f64().max(f64::MIN_POSITIVE);
                (u.ln() / x, i as u64)
            })
            .collect();
        keys.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        keys.truncate(self.samples);
        keys.into_iter().map(|(_, i)| i).collect()
    }
}

/// The draws of position `i` of a weighted epoch.
fn weight_key(seed: u64, epoch: u32, i: usize) -> Draws {
    Draws::new(SampleKey::new(seed, epoch, i as u64), PERMUTATION)
}

/// One shard's part of one epoch, answered position by position: nothing
/// as long as the epoch is held beyond what its order needs (a permutation
/// of the dataset, the weights' running sums), so an epoch of 10^12 weighted
/// draws costs what its weights cost.
#[derive(Debug)]
pub(crate) struct EpochOrder {
    kind: Kind,
    /// Entries of the whole epoch's order, before padding.
    whole: usize,
    shard: Shard,
    /// Positions this shard visits.
    per: usize,
}

#[derive(Debug)]
enum Kind {
    Sequential,
    /// Position `p` is `perm[p]`.
    Permutation(Vec<u64>),
    /// Position `p` is drawn by weight from its own key.
    Replacement {
        sums: Vec<f64>,
        total: f64,
        last: usize,
        seed: u64,
        epoch: u32,
    },
    /// Position `p` is `drawn[p]`.
    Drawn(Vec<u64>),
}

impl EpochOrder {
    /// Shard `shard`'s part of `epoch` of a dataset of `len`, drawn by
    /// `order` from `seed`.
    pub(crate) fn new(
        order: &Order,
        seed: u64,
        shard: Shard,
        epoch: u32,
        len: usize,
    ) -> EpochOrder {
        let kind = match order {
            Order::Sequential => Kind::Sequential,
            Order::Shuffled => Kind::Permutation(permutation(seed, epoch, len)),
            Order::Weighted(w) if w.replacement => {
                let sums = w.sums();
                Kind::Replacement {
                    total: sums.last().copied().unwrap_or(0.0),
                    // The last index that can be drawn (rounding may reach the top).
                    last: w.weights.iter().rposition(|x| *x > 0.0).unwrap_or(0),
                    sums,
                    seed,
                    epoch,
                }
            }
            Order::Weighted(w) => Kind::Drawn(w.draw_without_replacement(seed, epoch)),
        };
        let len = order.epoch_len(len);
        EpochOrder {
            kind,
            whole: len,
            shard,
            per: if len == 0 { 0 } else { shard.samples(len) },
        }
    }

    /// Positions this shard visits in the epoch.
    pub(crate) fn len(&self) -> usize {
        self.per
    }

    /// The dataset index at this shard's position `k` (below
    /// [`EpochOrder::len`]). Position p of the padded epoch is position
    /// p % len of its order: padding repeats the order from its start.
    pub(crate) fn index(&self, k: usize) -> u64 {
        let n = self.shard.count as usize;
        let p = ((self.shard.index as usize) + k * n) % self.whole;
        match &self.kind {
            Kind::Sequential => p as u64,
            Kind::Permutation(perm) => perm[p],
            Kind::Drawn(drawn) => drawn[p],
            Kind::Replacement {
                sums,
                total,
                last,
                seed,
                epoch,
            } => {
                let u = weight_key(*seed, *epoch, p).unit_f64() * total;
                sums.partition_point(|&c| c <= u).min(*last) as u64
            }
        }
    }
}

/// One process's part of each epoch: shard `index` of `count`, made only
/// by [`Shard::new`] (or [`Shard::from_env`]), which refuse an index not
/// below the count, so no loader ever reads another rank's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    count: u32,
    index: u32,
    drop_last: bool,
}

impl Shard {
    /// The whole dataset in one shard.
    pub const ALL: Shard = Shard {
        count: 1,
        index: 0,
        drop_last: false,
    };

    /// Shard `index` of `count` (`0 <= index < count`); `drop_last` cuts
    /// each epoch to a multiple of `count` instead of padding it.
    ///
    /// ```
    /// use tensorprep::train::Shard;
    ///
    /// assert_eq!(Shard::new(4, 3, false)?.index(), 3);
    /// assert!(Shard::new(2, 2, false).is_err()); // rank 2 of a world of 2
    /// assert!(Shard::new(0, 0, false).is_err());
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn new(count: u32, index: u32, drop_last: bool) -> Result<Shard, crate::Error> {
        if count == 0 || index >= count {
            return Err(crate::Error::InvalidParameter {
                name: "shard",
                reason: "the rank must be at least 0 and below the world size",
            });
        }
        Ok(Shard {
            count,
            index,
            drop_last,
        })
    }

    /// Number of shards (processes training together).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// This process's shard, `0..count`.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Whether each epoch is cut to a multiple of the count (else padded).
    pub fn drop_last(&self) -> bool {
        self.drop_last
    }

    /// The shard the launcher assigned: `RANK` and `WORLD_SIZE` (torchrun,
    /// `torch.distributed.launch`), else `OMPI_COMM_WORLD_RANK` and
    /// `OMPI_COMM_WORLD_SIZE` (Open MPI), else `PMI_RANK` and `PMI_SIZE`
    /// (MPICH, Intel MPI), else `HOROVOD_RANK` and `HOROVOD_SIZE`; a single
    /// shard when none is set. An inconsistent pair is an error naming it.
    pub fn from_env(drop_last: bool) -> Result<Shard, crate::Error> {
        Shard::from_vars(|name| std::env::var(name).ok(), drop_last)
    }

    /// [`Shard::from_env`] over any variable lookup (for tests and embedding).
    pub fn from_vars(
        var: impl Fn(&str) -> Option<alloc::string::String>,
        drop_last: bool,
    ) -> Result<Shard, crate::Error> {
        const PAIRS: [(&str, &str); 4] = [
            ("RANK", "WORLD_SIZE"),
            ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
            ("PMI_RANK", "PMI_SIZE"),
            ("HOROVOD_RANK", "HOROVOD_SIZE"),
        ];
        for (rank, size) in PAIRS {
            let (Some(r), Some(s)) = (var(rank), var(size)) else {
                continue;
            };
            let (Ok(index), Ok(count)) = (r.trim().parse::<u32>(), s.trim().parse::<u32>()) else {
                return Err(crate::Error::InvalidParameter {
                    name: "shard",
                    reason: "the launcher's rank or world size is not a number",
                });
            };
            return Shard::new(count, index, drop_last).map_err(|_| {
                crate::Error::InvalidParameter {
                    name: "shard",
                    reason: "the launcher's rank is not below its world size",
                }
            });
        }
        Ok(Shard {
            drop_last,
            ..Shard::ALL
        })
    }

    /// Samples this shard visits per epoch of a dataset of `len`.
    pub fn samples(&self, len: usize) -> usize {
        let n = self.count as usize;
        if self.drop_last {
            len / n
        } else {
            len.div_ceil(n)
        }
    }
}

/// The indices shard `shard` visits in `epoch` of a dataset of `len`, in
/// the order `order` draws from `seed`, into `out` (cleared first; reused
/// from epoch to epoch). The
/// epoch's order has [`Order::epoch_len`] entries; it is padded or cut for
/// the shards as PyTorch's `DistributedSampler` does.
///
/// ```
/// use tensorprep::train::{Order, Shard, epoch_indices};
///
/// let mut mine = Vec::new();
/// let shard = Shard::new(3, 1, false)?;
/// epoch_indices(&Order::Sequential, 0, shard, 0, 7, &mut mine);
/// // 7 padded to 9 (0..7 then 0, 1); shard 1 takes positions 1, 4, 7.
/// assert_eq!(mine, [1, 4, 0]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn epoch_indices(
    order: &Order,
    seed: u64,
    shard: Shard,
    epoch: u32,
    len: usize,
    out: &mut Vec<u64>,
) {
    out.clear();
    let order = EpochOrder::new(order, seed, shard, epoch, len);
    out.extend((0..order.len()).map(|k| order.index(k)));
}

/// The permutation of `0..len` for (seed, epoch): Fisher-Yates, each swap
/// drawn from position `i`'s own keyed stream.
pub fn permutation(seed: u64, epoch: u32, len: usize) -> Vec<u64> {
    let mut perm: Vec<u64> = (0..len as u64).collect();
    for i in (1..len).rev() {
        let mut d = Draws::new(SampleKey::new(seed, epoch, i as u64), PERMUTATION);
        let j = below(&mut d, i as u64 + 1);
        perm.swap(i, j as usize);
    }
    perm
}

/// A uniform integer below `n` (up to 2^64) from two words when needed.
fn below(d: &mut Draws, n: u64) -> u64 {
    match u32::try_from(n) {
        Ok(n) => u64::from(d.below(n)),
        Err(_) => {
            // Rejection on 64-bit values.
            let zone = u64::MAX - u64::MAX % n;
            loop {
                let v = u64::from(d.next_u32()) << 32 | u64::from(d.next_u32());
                if v < zone {
                    return v % n;
                }
            }
        }
    }
}
