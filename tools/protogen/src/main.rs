//! Regenerates the committed prost code for `proto/tensorprep.proto`, or with
//! `--check` fails if the committed code is not what the schema generates.
//!
//! ```text
//! cargo run --manifest-path tools/protogen/Cargo.toml            # rewrite the code
//! cargo run --manifest-path tools/protogen/Cargo.toml -- --check # CI: exit 1 on drift
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const GENERATED: &str = "core/src/graph/proto/tensorprep.v1.rs";

fn generate(root: &Path, out: &Path) -> Result<(), String> {
    let descriptors = protox::compile([root.join("proto/tensorprep.proto")], [root.join("proto")])
        .map_err(|e| format!("cannot compile the schema: {e}"))?;
    prost_build::Config::new()
        .out_dir(out)
        .compile_fds(descriptors)
        .map_err(|e| format!("cannot generate code: {e}"))
}

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scratch = std::env::temp_dir().join(format!("tensorprep-protogen-{}", std::process::id()));
    let result = std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))
        .and_then(|()| generate(&root, &scratch))
        .and_then(|()| {
            std::fs::read_to_string(scratch.join("tensorprep.v1.rs"))
                .map_err(|e| format!("cannot read the generated code: {e}"))
        });
    let _ = std::fs::remove_dir_all(&scratch);
    let fresh = match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("protogen: {message}");
            return ExitCode::FAILURE;
        }
    };
    let target = root.join(GENERATED);
    if check {
        let committed = std::fs::read_to_string(&target).unwrap_or_default();
        if committed != fresh {
            eprintln!(
                "protogen: {GENERATED} is out of date with proto/tensorprep.proto; \
                 run `cargo run --manifest-path tools/protogen/Cargo.toml` and commit the result"
            );
            return ExitCode::FAILURE;
        }
        println!("{GENERATED} is current");
    } else if let Err(e) = std::fs::write(&target, fresh) {
        eprintln!("protogen: cannot write {}: {e}", target.display());
        return ExitCode::FAILURE;
    } else {
        println!("wrote {GENERATED}");
    }
    ExitCode::SUCCESS
}
