//! Runs every Rust block of README.md and docs/*.md, each compiled as the
//! body of a function returning `Result<(), Box<dyn Error>>` (what the README
//! tells users to paste them into). Run it from the repository root, where
//! the blocks' file paths (`tests/fixtures/...`) resolve:
//! `cargo run -p tensorprep-doc-snippets`.

use std::path::Path;
use std::process::ExitCode;

/// A block, compiled.
type Snippet = fn() -> Result<(), Box<dyn std::error::Error>>;

include!(concat!(env!("OUT_DIR"), "/snippets.rs"));

fn main() -> ExitCode {
    if !Path::new("tests/fixtures").is_dir() {
        eprintln!("run from the repository root: the snippets read tests/fixtures/");
        return ExitCode::FAILURE;
    }
    let mut failed = 0;
    for (place, snippet) in SNIPPETS {
        match snippet() {
            Ok(()) => println!("ok      {place}"),
            Err(error) => {
                println!("FAILED  {place}: {}", tensorprep::error::report(&*error));
                failed += 1;
            }
        }
    }
    println!("{} Rust snippets, {failed} failed", SNIPPETS.len());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
