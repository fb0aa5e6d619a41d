//! Which samples an epoch visits, in which order, on which shard.
//!
//! - [`Order`]: sequential, or one seeded permutation per (seed, epoch),
//!   drawn by the same keyed generator as the augmentations (so an epoch's
//!   order needs no saved state: resume recomputes it); or a shard-block
//!   shuffle ([`Blocks`]) that object storage can serve.
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

/// The op position a shard-block shuffle draws its blocks' order from.
const BLOCK_ORDER: u16 = u16::MAX - 1;

/// The op position a shard-block shuffle draws its windows' shuffles from.
const BLOCK_WINDOW: u16 = u16::MAX - 2;

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
    /// The dataset's blocks (its files) in a random order per (seed,
    /// epoch), the samples shuffled within each window of blocks: an order
    /// object storage can serve (see [`Blocks`]).
    Blocks(Blocks),
}

/// A shard-block shuffle: each epoch visits the dataset's blocks (its files,
/// for a dataset of many files: [`Dataset::blocks`](super::data::Dataset::blocks);
/// else runs of [`Blocks::samples`] consecutive indices) in a permutation
/// drawn from (seed, epoch), takes them [`Blocks::window`] at a time, and
/// shuffles the samples of each window together (also drawn from the seed
/// and epoch, at the window's positions).
///
/// Its randomness, beside the global shuffle's ([`Order::Shuffled`]: any
/// sample may follow any other): a sample's neighbours come from the
/// `window` blocks drawn with it, so a reader goes through `window` files
/// at a time, each from start to end in a mixed order, instead of jumping
/// across all of them; with one block per window the files come whole, in
/// a random order of files, each shuffled within. Every sample comes once
/// per epoch, the order is the same for any worker count, a resume
/// recomputes it, and shards (ranks) take every n-th position of it as
/// they do of any order.
///
/// ```
/// use tensorprep::train::{Blocks, Order, Shard, epoch_indices};
///
/// // 4 blocks of 3 samples, 2 blocks per window.
/// let order = Order::Blocks(Blocks::new(3, 2)?);
/// let mut seen = Vec::new();
/// epoch_indices(&order, 7, Shard::ALL, 0, 12, &mut seen);
/// // The first 6 positions hold two whole blocks (shuffled together).
/// let mut first: Vec<u64> = seen[..6].iter().map(|i| i / 3).collect();
/// first.sort();
/// first.dedup();
/// assert_eq!(first.len(), 2);
/// seen.sort();
/// assert_eq!(seen, (0..12).collect::<Vec<u64>>());
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Blocks {
    /// Samples per block for a dataset that does not name its blocks.
    pub samples: usize,
    /// Blocks whose samples are shuffled together.
    pub window: usize,
}

impl Blocks {
    /// [`Blocks::samples`]' default where a caller (the Python `Loader`,
    /// the CLI) does not give it: 1024, a shard's worth of a
    /// dataset without files of its own (WebDataset's shards hold about a
    /// thousand samples).
    pub const DEFAULT_SAMPLES: usize = 1024;
    /// [`Blocks::window`]'s default: 2 files (or blocks) shuffled together,
    /// so that each sample's neighbours come from two shards; the blocks a
    /// remote dataset keeps should hold two windows (the one read, the next
    /// fetched ahead).
    pub const DEFAULT_WINDOW: usize = 2;

    /// Blocks of `samples` consecutive indices (for a dataset without
    /// files of its own), `window` of them shuffled together; both at
    /// least 1.
    pub fn new(samples: usize, window: usize) -> Result<Blocks, crate::Error> {
        if samples == 0 || window == 0 {
            return Err(crate::Error::InvalidParameter {
                name: "block shuffle",
                reason: "at least one sample per block and one block per window",
            });
        }
        Ok(Blocks { samples, window })
    }

    /// The epoch's order of `0..len`, `starts` the first index of each
    /// block (ascending from 0; empty: runs of `samples`).
    fn order(&self, seed: u64, epoch: u32, len: usize, starts: &[usize]) -> Vec<u64> {
        let fixed: Vec<usize>;
        let starts = if starts.first() == Some(&0) && starts.windows(2).all(|w| w[0] <= w[1]) {
            starts
        } else {
            fixed = (0..len).step_by(self.samples.max(1)).collect();
            &fixed
        };
        let end = |b: usize| starts.get(b + 1).copied().unwrap_or(len).min(len);
        let blocks = permutation_at(seed, epoch, starts.len(), BLOCK_ORDER);
        let mut out = Vec::with_capacity(len);
        for group in blocks.chunks(self.window.max(1)) {
            let at = out.len();
            for &b in group {
                let b = b as usize;
                out.extend((starts[b].min(len)..end(b)).map(|i| i as u64));
            }
            shuffle_at(&mut out[at..], seed, epoch, at as u64, BLOCK_WINDOW);
        }
        out
    }
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
    /// `order` from `seed`; `blocks` the first index of each of the
    /// dataset's files (for [`Order::Blocks`]; empty when it names none).
    pub(crate) fn new(
        order: &Order,
        seed: u64,
        shard: Shard,
        epoch: u32,
        len: usize,
        blocks: &[usize],
    ) -> EpochOrder {
        let kind = match order {
            Order::Sequential => Kind::Sequential,
            Order::Shuffled => Kind::Permutation(permutation(seed, epoch, len)),
            Order::Blocks(b) => Kind::Permutation(b.order(seed, epoch, len, blocks)),
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
    let order = EpochOrder::new(order, seed, shard, epoch, len, &[]);
    out.extend((0..order.len()).map(|k| order.index(k)));
}

/// [`epoch_indices`] over `dataset`: what the loader visits. A shard-block
/// shuffle ([`Order::Blocks`]) takes the dataset's files as its blocks
/// ([`Dataset::blocks`](super::data::Dataset::blocks)).
pub fn epoch_indices_of(
    order: &Order,
    seed: u64,
    shard: Shard,
    epoch: u32,
    dataset: &dyn super::data::Dataset,
    out: &mut Vec<u64>,
) {
    out.clear();
    let blocks = match order {
        Order::Blocks(_) => dataset.blocks(),
        _ => Vec::new(),
    };
    let order = EpochOrder::new(order, seed, shard, epoch, dataset.len(), &blocks);
    out.extend((0..order.len()).map(|k| order.index(k)));
}

/// The permutation of `0..len` for (seed, epoch): Fisher-Yates, each swap
/// drawn from position `i`'s own keyed stream.
pub fn permutation(seed: u64, epoch: u32, len: usize) -> Vec<u64> {
    permutation_at(seed, epoch, len, PERMUTATION)
}

/// [`permutation`] drawn at op position `position`.
fn permutation_at(seed: u64, epoch: u32, len: usize, position: u16) -> Vec<u64> {
    let mut perm: Vec<u64> = (0..len as u64).collect();
    shuffle_at(&mut perm, seed, epoch, 0, position);
    perm
}

/// Fisher-Yates over `values`, the swap of its entry `i` drawn from the
/// keyed stream of (seed, epoch, `offset + i`) at op position `position`.
fn shuffle_at(values: &mut [u64], seed: u64, epoch: u32, offset: u64, position: u16) {
    for i in (1..values.len()).rev() {
        let mut d = Draws::new(SampleKey::new(seed, epoch, offset + i as u64), position);
        let j = below(&mut d, i as u64 + 1);
        values.swap(i, j as usize);
    }
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
