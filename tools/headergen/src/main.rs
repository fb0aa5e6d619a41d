//! Regenerates `include/tensorprep.h` from the `ffi/` crate with the pinned
//! cbindgen and `ffi/cbindgen.toml`.
//!
//! ```text
//! cargo run --manifest-path tools/headergen/Cargo.toml             # write the header
//! cargo run --manifest-path tools/headergen/Cargo.toml -- --check  # fail if it is stale
//! ```

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().skip(1).any(|a| a == "--check");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ffi = root.join("ffi");
    let header = root.join("include/tensorprep.h");
    let config = match cbindgen::Config::from_file(ffi.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ffi/cbindgen.toml: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bindings = match cbindgen::Builder::new()
        .with_crate(&ffi)
        .with_config(config)
        .generate()
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cbindgen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let current = std::fs::read(&header).unwrap_or_default();
    if current == generated {
        println!("include/tensorprep.h is current");
        return ExitCode::SUCCESS;
    }
    if check {
        eprintln!(
            "include/tensorprep.h differs from what ffi/ generates; run\n  \
             cargo run --manifest-path tools/headergen/Cargo.toml\nand commit the header"
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&header, &generated) {
        eprintln!("{}: {e}", header.display());
        return ExitCode::FAILURE;
    }
    println!("wrote include/tensorprep.h");
    ExitCode::SUCCESS
}
