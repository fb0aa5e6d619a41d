//! Examples of tensorprep live beside this file; run them with
//! `cargo run --release --example <name>`. The library holds what several of
//! them share.

pub mod race;
