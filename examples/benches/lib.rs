//! The benchmarks' package has no library code: `ops.rs` is its one target
//! (`cargo bench -p tensorprep-benches --bench ops`).
