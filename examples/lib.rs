//! Examples of tensorprep live beside this file; run them with
//! `cargo run --release --example <name>`.
