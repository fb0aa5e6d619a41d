//! Extracts every ```rust block of README.md and docs/*.md into one function
//! each (a body returning `Result<(), Box<dyn Error>>`, as the README tells
//! users to paste them), for `src/main.rs` to compile and run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let docs = root.join("docs");
    println!("cargo::rerun-if-changed={}", docs.display());
    let mut pages = vec![root.join("README.md")];
    let mut listed: Vec<PathBuf> = fs::read_dir(&docs)
        .expect("docs/ is readable")
        .map(|entry| entry.expect("docs/ lists").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    listed.sort();
    pages.extend(listed);

    let mut functions = String::new();
    let mut table = String::from(
        "/// Every snippet: where it is, and its function.\n\
         const SNIPPETS: &[(&str, Snippet)] = &[\n",
    );
    for page in &pages {
        println!("cargo::rerun-if-changed={}", page.display());
        let text = fs::read_to_string(page).expect("the page is UTF-8 text");
        let name = page
            .strip_prefix(&root)
            .expect("under the root")
            .display()
            .to_string();
        for (line, body) in rust_blocks(&text) {
            let index = table.lines().count() - 2;
            let _ = writeln!(functions, "// {name}, the block opening on line {line}");
            let _ = writeln!(
                functions,
                "fn snippet_{index}() -> Result<(), Box<dyn std::error::Error>> {{"
            );
            functions.push_str(&body);
            functions.push_str("    Ok(())\n}\n\n");
            let _ = writeln!(table, "    (\"{name}:{line}\", snippet_{index}),");
        }
    }
    table.push_str("];\n");
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("snippets.rs");
    fs::write(out, functions + &table).expect("OUT_DIR is writable");
}

/// The ```rust blocks of a Markdown page: the line of each opening fence
/// (1-based) and the block's lines.
fn rust_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        match &mut open {
            None if line.trim_end() == "```rust" => open = Some((number + 1, String::new())),
            None => {}
            Some(_) if line.trim_end() == "```" => blocks.extend(open.take()),
            Some((_, body)) => {
                body.push_str("    ");
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a ```rust block is not closed");
    blocks
}
