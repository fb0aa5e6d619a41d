//! The loader's plumbing: bounded queues between its stages, which keep the
//! stream's order, and pools of recycled buffers.
//!
//! A stage's workers take items from their input queue one at a time, in
//! stream order, and put each result under its number. An ordered queue
//! accepts item `n` only when `n` is within its capacity of the next item
//! taken, so it never holds more than its capacity, and since the smallest
//! unfinished item can always be put, ordered stages never deadlock.

#![forbid(unsafe_code)]

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Locks, ignoring poisoning (the data is a queue of owned items: a
/// panicking holder leaves it consistent, and workers catch their panics).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A bounded queue of numbered items, handed out in number order
/// (ordered) or in arrival order.
pub(crate) struct Queue<T> {
    ring: Mutex<Ring<T>>,
    filled: Condvar,
    room: Condvar,
}

struct Ring<T> {
    /// Item `n` sits in slot `n % len` (ordered) or the next free slot.
    slots: Vec<Option<(u64, T)>>,
    /// Slots handed out so far: the next slot taken is `head % len`.
    head: u64,
    /// Arrival order: slots filled so far.
    tail: u64,
    ordered: bool,
    closed: bool,
}

impl<T> Queue<T> {
    /// A queue holding at most `cap` items (at least 1).
    pub(crate) fn new(cap: usize, ordered: bool) -> Queue<T> {
        let mut slots = Vec::new();
        slots.resize_with(cap.max(1), || None);
        Queue {
            ring: Mutex::new(Ring {
                slots,
                head: 0,
                tail: 0,
                ordered,
                closed: false,
            }),
            filled: Condvar::new(),
            room: Condvar::new(),
        }
    }

    /// Puts item number `n` (waiting for room); `false` once closed.
    /// Ordered queues need every number from 0 put exactly once.
    pub(crate) fn put(&self, n: u64, item: T) -> bool {
        let mut r = lock(&self.ring);
        loop {
            if r.closed {
                return false;
            }
            let cap = r.slots.len() as u64;
            let at = if r.ordered { n } else { r.tail };
            if at < r.head + cap {
                let slot = (at % cap) as usize;
                debug_assert!(r.slots[slot].is_none(), "item {n} put twice");
                r.slots[slot] = Some((n, item));
                r.tail += 1;
                self.filled.notify_all();
                return true;
            }
            r = self.room.wait(r).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The next item and its number (waiting for it); `None` once closed.
    pub(crate) fn take(&self) -> Option<(u64, T)> {
        let mut r = lock(&self.ring);
        loop {
            if r.closed {
                return None;
            }
            let slot = (r.head % r.slots.len() as u64) as usize;
            if let Some(item) = r.slots[slot].take() {
                r.head += 1;
                self.room.notify_all();
                return Some(item);
            }
            r = self.filled.wait(r).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Items waiting to be taken.
    pub(crate) fn occupancy(&self) -> usize {
        let r = lock(&self.ring);
        r.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Wakes every waiter; puts and takes fail from now on.
    pub(crate) fn close(&self) {
        lock(&self.ring).closed = true;
        self.filled.notify_all();
        self.room.notify_all();
    }
}

/// Recycled buffers: taken, used, put back, first in first out (so every
/// buffer takes its turn and reaches its working size early).
pub(crate) struct Pool<T> {
    items: Mutex<(VecDeque<T>, bool)>,
    ready: Condvar,
}

impl<T> Pool<T> {
    /// An empty pool with room for `cap` items without growing.
    pub(crate) fn new(cap: usize) -> Pool<T> {
        Pool {
            items: Mutex::new((VecDeque::with_capacity(cap), false)),
            ready: Condvar::new(),
        }
    }

    /// Puts an item back (a closed pool keeps it until dropped).
    pub(crate) fn put(&self, item: T) {
        lock(&self.items).0.push_back(item);
        self.ready.notify_one();
    }

    /// An item, if one is free.
    pub(crate) fn try_take(&self) -> Option<T> {
        lock(&self.items).0.pop_front()
    }

    /// An item, waiting for one; `None` once closed.
    pub(crate) fn take(&self) -> Option<T> {
        let mut g = lock(&self.items);
        loop {
            if g.1 {
                return None;
            }
            if let Some(item) = g.0.pop_front() {
                return Some(item);
            }
            g = self.ready.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Wakes every waiter; waiting takes fail from now on.
    pub(crate) fn close(&self) {
        lock(&self.items).1 = true;
        self.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Items put out of order come out in order, and a queue never holds
    /// more than its capacity.
    #[test]
    fn an_ordered_queue_restores_the_order() {
        let q = Arc::new(Queue::new(4, true));
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for n in (w..300).step_by(3) {
                        assert!(q.put(n, n * 10));
                        assert!(q.occupancy() <= 4);
                    }
                })
            })
            .collect();
        for n in 0..300 {
            assert_eq!(q.take(), Some((n, n * 10)));
        }
        writers.into_iter().for_each(|w| w.join().unwrap());
        q.close();
        assert_eq!(q.take(), None);
        assert!(!q.put(300, 0));
    }

    /// A closed queue wakes a waiting writer and a waiting reader.
    #[test]
    fn closing_wakes_waiters() {
        let q = Arc::new(Queue::<u32>::new(1, true));
        let q2 = Arc::clone(&q);
        let writer = std::thread::spawn(move || q2.put(5, 1)); // waits: 5 is too far
        let pool = Arc::new(Pool::<u32>::new(1));
        let p2 = Arc::clone(&pool);
        let reader = std::thread::spawn(move || p2.take());
        std::thread::sleep(std::time::Duration::from_millis(20));
        q.close();
        pool.close();
        assert!(!writer.join().unwrap());
        assert_eq!(reader.join().unwrap(), None);
    }
}
