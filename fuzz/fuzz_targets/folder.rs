//! The image-folder walker on trees the input builds: folders, image files
//! and symbolic links (to folders above, beside and below, to themselves,
//! to nothing), nested at will. Every outcome is a dataset listing each
//! image file once, or a typed error (a link cycle, a folder reached twice,
//! an empty class); nothing panics or hangs.
//!
//! The input is a script of 2-byte steps: the first byte's low 2 bits pick
//! mkdir / file / link / move up, the rest of the bytes pick names and
//! targets among the folders made so far.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use tensorprep::train::data::folder::FolderDataset;
use tensorprep::train::data::{Dataset, Sample};

fuzz_target!(|data: &[u8]| {
    let root = std::env::temp_dir().join(format!("tp-fuzz-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let names = ["a", "b", "c", "d.jpg", "e.png", "f"];
    let mut dirs: Vec<PathBuf> = vec![root.clone()];
    let mut at = 0usize;
    let mut files = 0usize;
    for step in data.chunks_exact(2).take(64) {
        let (op, arg) = (step[0], step[1] as usize);
        let name = names[(op as usize >> 2) % names.len()];
        let here = dirs[at].join(name);
        match op & 3 {
            0 => {
                if std::fs::create_dir(&here).is_ok() {
                    dirs.push(here);
                    at = dirs.len() - 1;
                }
            }
            1 => {
                if std::fs::write(&here, [0xff, 0xd8, 0xff, arg as u8]).is_ok() {
                    files += 1;
                }
            }
            2 => {
                let target = &dirs[arg % dirs.len()];
                #[cfg(unix)]
                let _ = std::os::unix::fs::symlink(target, &here);
            }
            _ => at = arg % dirs.len(),
        }
    }
    if let Ok(d) = FolderDataset::open(&root) {
        // Each image listed once: no link repeats a folder.
        let mut paths: Vec<_> = d
            .files()
            .iter()
            .map(|(p, _)| p.canonicalize().ok())
            .collect();
        let listed = paths.len();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), listed, "an image listed twice");
        assert!(listed <= files);
        assert!(d.classes().len() <= listed);
        let _ = d.fingerprint();
        let mut s = Sample::default();
        for i in 0..d.len() {
            let _ = d.read(i, &mut s);
        }
    }
});
