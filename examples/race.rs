//! Interleaved timing: every contestant runs once per round, in turn, so that
//! the machine's noise (another process, a frequency change) falls on all of
//! them alike and the ratio of their medians stays steady where absolute
//! times do not.

use std::time::Instant;

/// Per-call latencies of one contestant, in nanoseconds.
#[derive(Clone, Debug)]
pub struct Timings {
    /// The contestant's name.
    pub name: String,
    /// One latency per round.
    pub ns: Vec<u64>,
}

impl Timings {
    /// The `p` quantile (0 to 1) of the latencies, in milliseconds.
    ///
    /// ```
    /// let t = tensorprep_examples::race::Timings { name: "x".into(), ns: vec![3_000_000, 1_000_000, 2_000_000] };
    /// assert_eq!(t.percentile(0.5), 2.0);
    /// ```
    pub fn percentile(&self, p: f64) -> f64 {
        let mut v = self.ns.clone();
        v.sort_unstable();
        let i = ((v.len().saturating_sub(1)) as f64 * p).round() as usize;
        v.get(i).map_or(f64::NAN, |&ns| ns as f64 / 1e6)
    }
}

/// A named contestant: one call of the code being timed.
pub type Contestant<'a> = (&'a str, &'a mut dyn FnMut());

/// Runs every contestant once to warm up (first-run allocations, caches),
/// then `rounds` times in turn, timing each call.
///
/// ```
/// use tensorprep_examples::race::race;
/// let (mut a, mut b) = (0u64, 0u64);
/// let t = race(&mut [("a", &mut || a += 1), ("b", &mut || b += 2)], 10);
/// assert_eq!((t.len(), t[0].ns.len(), a, b), (2, 10, 11, 22));
/// ```
pub fn race(contestants: &mut [Contestant<'_>], rounds: usize) -> Vec<Timings> {
    for (_, f) in contestants.iter_mut() {
        f();
    }
    let mut t: Vec<Timings> = contestants
        .iter()
        .map(|(n, _)| Timings {
            name: (*n).to_owned(),
            ns: Vec::with_capacity(rounds),
        })
        .collect();
    for _ in 0..rounds {
        for ((_, f), t) in contestants.iter_mut().zip(&mut t) {
            let start = Instant::now();
            f();
            t.ns.push(start.elapsed().as_nanos() as u64);
        }
    }
    t
}

/// Prints each contestant's p50 and p99 and its p50 as a multiple of the first's.
pub fn report(title: &str, t: &[Timings]) {
    println!("\n{title}");
    let base = t.first().map_or(f64::NAN, |t| t.percentile(0.5));
    for x in t {
        let p50 = x.percentile(0.5);
        println!(
            "  {:<44} p50 {:>7.3} ms  p99 {:>7.3} ms  {:>6.2}x of the first",
            x.name,
            p50,
            x.percentile(0.99),
            p50 / base
        );
    }
}
