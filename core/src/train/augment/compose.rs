//! The ops that hold ops: `RandomApply`, `RandomChoice`, `RandomOrder` and
//! MindSpore's `RandomSelectSubpolicy`. Each nested op keeps its own
//! position (so its draws), whichever ops are drawn around it.

use alloc::vec::Vec;
use core::fmt;

use super::Drawing;
use super::unit::{At, Augmentation, Nested, Targets};
use super::{Augment, fixed_size, invalid, probability};
use crate::Result;

/// The largest `RandomOrder`: its permutation is drawn on the stack.
const MAX_ORDERED: usize = 64;

/// `RandomApply(ops, p)`: all of `ops` with probability `p`, else none.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomApply {
    /// Probability of applying them.
    pub p: f64,
    /// The ops, in order.
    pub ops: Vec<Augment>,
}

impl RandomApply {
    /// `ops` with probability `p`.
    pub const fn new(p: f64, ops: Vec<Augment>) -> RandomApply {
        RandomApply { p, ops }
    }
}

/// `RandomChoice(ops, p)`: one of `ops`, drawn with probability
/// proportional to its weight (equal weights when `weights` is empty).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomChoice {
    /// One weight per op, or none for equal ones.
    pub weights: Vec<f64>,
    /// The choices.
    pub ops: Vec<Augment>,
}

impl RandomChoice {
    /// One of `ops`, by `weights` (empty: equal ones).
    pub const fn new(weights: Vec<f64>, ops: Vec<Augment>) -> RandomChoice {
        RandomChoice { weights, ops }
    }
}

/// `RandomOrder(ops)`: all of the ops, in a random order (at most 64).
#[derive(Clone, Debug, PartialEq)]
pub struct RandomOrder(pub Vec<Augment>);

/// MindSpore's `RandomSelectSubpolicy(policy)`: one sub-policy drawn
/// uniformly, then each of its ops with its own probability.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomSelectSubpolicy(pub Vec<Vec<(Augment, f64)>>);

fn check_all(ops: &[Augment]) -> Result<()> {
    ops.iter().try_for_each(Augment::check)
}

impl Augmentation for RandomApply {
    fn check(&self) -> Result<()> {
        probability(self.p, "RandomApply", "p must be in 0..=1")?;
        check_all(&self.ops)
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        if at.draws().chance(self.p) {
            super::draw(&self.ops, at.key, at.position + 1, size, ops)
        } else {
            Ok(size)
        }
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        let applied = fixed_size(&self.ops, before);
        (applied == before).then_some(before).flatten()
    }

    fn draws_image_ops(&self) -> bool {
        self.ops.iter().any(Augment::draws_image_ops)
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::List(&self.ops)
    }

    fn targets(&self) -> Targets {
        Targets::of(self.nested())
    }
}

impl Augmentation for RandomChoice {
    fn check(&self) -> Result<()> {
        let (weights, ops) = (&self.weights, &self.ops);
        if ops.is_empty() {
            return Err(invalid("RandomChoice", "no ops to choose from"));
        }
        let valid = weights.is_empty()
            || (weights.len() == ops.len()
                && weights.iter().all(|w| w.is_finite() && *w >= 0.0)
                && weights.iter().sum::<f64>() > 0.0);
        if !valid {
            return Err(invalid(
                "RandomChoice",
                "one finite, non-negative weight per op, not all zero",
            ));
        }
        check_all(ops)
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let inner = &self.ops;
        let i = if self.weights.is_empty() {
            at.draws().below(inner.len() as u32) as usize
        } else {
            at.draws().weighted(&self.weights)
        };
        let skipped: u32 = inner[..i].iter().map(Augment::positions).sum();
        super::draw(
            core::slice::from_ref(&inner[i]),
            at.key,
            at.position + 1 + skipped,
            size,
            ops,
        )
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        let first = self.ops.first()?.fixed_size(before);
        self.ops
            .iter()
            .all(|op| op.fixed_size(before) == first)
            .then_some(first)
            .flatten()
    }

    fn draws_image_ops(&self) -> bool {
        self.ops.iter().any(Augment::draws_image_ops)
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::List(&self.ops)
    }

    fn targets(&self) -> Targets {
        Targets::of(self.nested())
    }
}

impl Augmentation for RandomOrder {
    fn check(&self) -> Result<()> {
        if self.0.len() > MAX_ORDERED {
            return Err(invalid("RandomOrder", "at most 64 ops"));
        }
        check_all(&self.0)
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        // torch.randperm's distribution by Fisher-Yates; each op keeps its
        // own position, whatever its turn.
        let inner = &self.0;
        let mut d = at.draws();
        let mut starts = [0u32; MAX_ORDERED];
        let n = inner.len().min(MAX_ORDERED);
        let mut order: [usize; MAX_ORDERED] = core::array::from_fn(|i| i);
        let mut next = at.position + 1;
        for (i, op) in inner[..n].iter().enumerate() {
            starts[i] = next;
            next += op.positions();
        }
        for i in (1..n).rev() {
            order.swap(i, d.below(i as u32 + 1) as usize);
        }
        let mut size = size;
        for &i in &order[..n] {
            size = super::draw(
                core::slice::from_ref(&inner[i]),
                at.key,
                starts[i],
                size,
                ops,
            )?;
        }
        Ok(size)
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        // In any order, each op must keep the size.
        self.0
            .iter()
            .all(|op| op.fixed_size(before) == before)
            .then_some(before)
            .flatten()
    }

    fn draws_image_ops(&self) -> bool {
        self.0.iter().any(Augment::draws_image_ops)
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::List(&self.0)
    }

    fn targets(&self) -> Targets {
        Targets::of(self.nested())
    }
}

impl Augmentation for RandomSelectSubpolicy {
    fn check(&self) -> Result<()> {
        if self.0.is_empty() {
            return Err(invalid("RandomSelectSubpolicy", "no sub-policies"));
        }
        self.0.iter().flatten().try_for_each(|(op, p)| {
            probability(
                *p,
                "RandomSelectSubpolicy",
                "each probability must be in 0..=1",
            )?;
            op.check()
        })
    }

    fn draw(&self, at: At, size: (u32, u32), ops: &mut Drawing<'_>) -> Result<(u32, u32)> {
        let policy = &self.0;
        let mut d = at.draws();
        let chosen = d.below(policy.len() as u32) as usize;
        let mut next = at.position + 1;
        for sub in &policy[..chosen] {
            next += sub.iter().map(|(op, _)| op.positions()).sum::<u32>();
        }
        let mut size = size;
        for (op, p) in &policy[chosen] {
            if d.chance(*p) {
                size = super::draw(core::slice::from_ref(op), at.key, next, size, ops)?;
            }
            next += op.positions();
        }
        Ok(size)
    }

    fn fixed_size(&self, before: Option<(u32, u32)>) -> Option<(u32, u32)> {
        self.0
            .iter()
            .flatten()
            .all(|(op, _)| op.fixed_size(before) == before)
            .then_some(before)
            .flatten()
    }

    fn draws_image_ops(&self) -> bool {
        self.0.iter().flatten().any(|(op, _)| op.draws_image_ops())
    }

    fn sizes_first(&self) -> bool {
        false
    }

    fn nested(&self) -> Nested<'_> {
        Nested::Subpolicies(&self.0)
    }

    fn targets(&self) -> Targets {
        Targets::of(self.nested())
    }
}

fn list(f: &mut fmt::Formatter<'_>, ops: &[Augment]) -> fmt::Result {
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        fmt::Display::fmt(op, f)?;
    }
    Ok(())
}

impl fmt::Display for RandomApply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RandomApply p {} [", self.p)?;
        list(f, &self.ops)?;
        f.write_str("]")
    }
}

impl fmt::Display for RandomChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RandomChoice weights {:?} [", self.weights)?;
        list(f, &self.ops)?;
        f.write_str("]")
    }
}

impl fmt::Display for RandomOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RandomOrder [")?;
        list(f, &self.0)?;
        f.write_str("]")
    }
}

impl fmt::Display for RandomSelectSubpolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RandomSelectSubpolicy [")?;
        for (i, sub) in self.0.iter().enumerate() {
            f.write_str(if i > 0 { "; [" } else { "[" })?;
            for (k, (op, p)) in sub.iter().enumerate() {
                if k > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{op} p {p}")?;
            }
            f.write_str("]")?;
        }
        f.write_str("]")
    }
}
