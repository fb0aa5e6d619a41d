//! Progressive JPEGs decoded at 1/8: leaving out the scans such a decode
//! never reads.
//!
//! At 1/8 libjpeg-turbo computes each output sample of a component whose
//! sampling factors are the frame's largest (the luma, every component of a
//! 4:4:4, 4:2:2 or gray file) from its blocks' DC coefficients alone (a 1x1
//! inverse DCT); only components subsampled in both directions (4:2:0 chroma)
//! get a 2x2 one. A progressive file still makes the decoder entropy-decode
//! every AC scan, usually four fifths of the file. [`dc_only_stream`] writes a
//! copy of the file without the AC scans of the DC-only components, and, in
//! their place, one scan per such component that sets all its AC coefficients
//! to zero at full precision (a run of end-of-band codes). The coefficients the
//! 1/8 decode reads are the same, and so is everything that decides how it
//! reads them: libjpeg-turbo's block smoothing, which guesses coefficients a
//! file has not sent yet, stays off as it does for the whole file, since both
//! streams leave no coefficient with bits still to come. The pixels are the
//! same, byte for byte (checked against Pillow's `draft()` in the parity
//! tests); the decode takes a third of the time on photos.
//!
//! Anything unusual (another coding process, a frame without a height, a
//! file without an end-of-image marker, a scan that stops early, a
//! coefficient left unrefined, too many scans) leaves the file as it is: the
//! decoder then reads the original and reports what it finds. What the skipped
//! scans hold is not read, so damage confined to them goes unreported in this
//! mode, as it does in Pillow, which ignores libjpeg's corrupt-data warnings.

use alloc::vec::Vec;

use super::MAX_SCANS;
use super::markers::{FrameComponents, coded_data_end};

/// The AC Huffman table slot the added scans use (they come last, so
/// redefining it changes no other scan).
const TABLE: u8 = 3;

/// The longest end-of-band run one code carries (`EOB14` plus 14 bits).
const MAX_RUN: u64 = (1 << 15) - 1;

/// What the walk learns of one frame component.
#[derive(Clone, Copy, Default)]
struct Coefficients {
    id: u8,
    /// Read only from its DC coefficient at 1/8.
    dc_only: bool,
    /// Blocks in one of its (non-interleaved) scans.
    blocks: u64,
    /// AC coefficients some scan has sent (bit k for zig-zag index k).
    sent: u64,
    /// AC coefficients whose last scan left low bits to refine.
    unrefined: u64,
}

/// Writes into `into` the stream a 1/8 decode of the progressive `jpeg` reads
/// (see the module documentation) and returns true; returns false, leaving
/// `into` unspecified, when the file is not one it applies to or would not
/// get shorter. `into` keeps its capacity from call to call.
pub(super) fn dc_only_stream(jpeg: &[u8], into: &mut Vec<u8>) -> bool {
    into.clear();
    if !jpeg.starts_with(&[0xFF, 0xD8]) || into.try_reserve(jpeg.len()).is_err() {
        return false;
    }
    into.extend_from_slice(&jpeg[..2]);
    let mut components = [Coefficients::default(); 4];
    let mut count = 0usize;
    let (mut restart_interval, mut scans, mut skipped, mut at) = (0u64, 0u32, 0u32, 2usize);
    loop {
        let Some(&[ff, marker]) = jpeg.get(at..at.saturating_add(2)) else {
            return false; // no end-of-image marker
        };
        if ff != 0xFF {
            return false;
        }
        match marker {
            0xFF => {
                at += 1; // a fill byte
                continue;
            }
            0xD9 => break,
            // Standalone markers outside a scan: unusual, leave the file alone.
            0xD0..=0xD8 | 0x01 => return false,
            _ => {}
        }
        let Some(len) = jpeg.get(at + 2..at + 4) else {
            return false;
        };
        let end = at + 2 + usize::from(u16::from_be_bytes([len[0], len[1]]));
        let Some(payload) = jpeg.get(at + 4..end) else {
            return false;
        };
        match marker {
            // Progressive, Huffman-coded: the only frame this applies to
            // (any other SOF, or a second frame, leaves the file alone).
            0xC2 if count == 0 => {
                let Some(frame) = FrameComponents::parse(payload) else {
                    return false;
                };
                let n = usize::from(payload.get(5).copied().unwrap_or(0));
                if !(1..=4).contains(&n) || payload.get(1..3) == Some(&[0, 0]) {
                    return false; // too many components, or a height set later (DNL)
                }
                let list = frame.list();
                let hmax = list.iter().map(|c| c.h).max().unwrap_or(1);
                let vmax = list.iter().map(|c| c.v).max().unwrap_or(1);
                for (slot, c) in components.iter_mut().zip(list) {
                    *slot = Coefficients {
                        id: c.id,
                        // libjpeg-turbo's choice of each component's IDCT
                        // size (`jpeg_core_output_dimensions`): at 1/8 it
                        // doubles from 1x1 only when the component is
                        // subsampled 2x (or more) in both directions.
                        dc_only: hmax % (2 * c.h) != 0 || vmax % (2 * c.v) != 0,
                        blocks: frame.mcus(&[c.id]).unwrap_or(0),
                        sent: 0,
                        unrefined: 0,
                    };
                }
                count = n;
            }
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => return false,
            0xDD if payload.len() >= 2 => {
                restart_interval = u64::from(u16::from_be_bytes([payload[0], payload[1]]));
            }
            _ => {}
        }
        if marker != 0xDA {
            into.extend_from_slice(&jpeg[at..end]);
            at = end;
            continue;
        }
        // A scan: its header, then coded data up to the next marker that
        // is not a restart.
        scans += 1;
        if count == 0 || scans > MAX_SCANS {
            return false;
        }
        let n = usize::from(payload.first().copied().unwrap_or(0));
        let Some(&[ss, se, a]) = payload.get(1 + 2 * n..4 + 2 * n) else {
            return false;
        };
        let (ss, se, al) = (u32::from(ss), u32::from(se), a & 15);
        if n == 0 || se > 63 || ss > se {
            return false;
        }
        let (data_end, _) = coded_data_end(jpeg, end);
        if data_end >= jpeg.len() {
            return false; // coded data running to the end of the file: cut short
        }
        let mut keep = true;
        for i in 0..n {
            let id = payload.get(1 + 2 * i).copied();
            let Some(c) = components[..count].iter_mut().find(|c| Some(c.id) == id) else {
                return false;
            };
            // AC coefficients ss..=se (bit 0, the DC, is not tracked).
            let band = (u64::MAX >> (63 - se)) & !((1u64 << ss) - 1) & !1;
            c.sent |= band;
            if al == 0 {
                c.unrefined &= !band;
            } else {
                c.unrefined |= band;
            }
            keep &= !(ss > 0 && c.dc_only);
        }
        if keep {
            into.extend_from_slice(&jpeg[at..data_end]);
        } else {
            skipped += 1;
        }
        at = data_end;
    }
    let frame = &components[..count];
    // Every AC coefficient sent and refined to its last bit in the file
    // (otherwise its decode smooths blocks, and the copy must too), and at
    // least one scan to leave out.
    if skipped == 0 || frame.iter().any(|c| c.sent != !1 || c.unrefined != 0) {
        return false;
    }
    let added = frame.iter().filter(|c| c.dc_only).map(|c| {
        let interval = if restart_interval == 0 {
            c.blocks.max(1)
        } else {
            restart_interval
        };
        // Per interval: its runs (at most 18 bits each, stuffed: 5 bytes),
        // a padded byte and a restart marker.
        let intervals = c.blocks.div_ceil(interval);
        intervals.saturating_mul(interval.div_ceil(MAX_RUN) * 5 + 3) + 10
    });
    let bound = added.fold(into.len() as u64 + 2 + 21, u64::saturating_add);
    if bound > jpeg.len() as u64 {
        return false;
    }
    // The table: 15 codes of 4 bits, code r for the run symbol r << 4.
    into.extend_from_slice(&[0xFF, 0xC4, 0, 2 + 1 + 16 + 15, 0x10 | TABLE]);
    into.extend_from_slice(&[0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    into.extend((0..15u8).map(|r| r << 4));
    for c in frame.iter().filter(|c| c.dc_only) {
        // One component, coefficients 1-63, first scan, full precision.
        into.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, c.id, TABLE, 1, 63, 0]);
        end_of_bands(into, c.blocks, restart_interval);
    }
    into.extend_from_slice(&[0xFF, 0xD9]);
    true
}

/// The coded data of an AC first scan in which every one of `blocks` blocks
/// ends its band at once: end-of-band runs, restarted every `interval`
/// blocks (0: never).
fn end_of_bands(into: &mut Vec<u8>, blocks: u64, interval: u64) {
    let interval = if interval == 0 { blocks } else { interval };
    let mut left = blocks;
    let mut restart = 0u8;
    while left > 0 {
        let mut bits = Bits::default();
        let mut run_left = left.min(interval);
        left -= run_left;
        while run_left > 0 {
            let run = run_left.min(MAX_RUN);
            run_left -= run;
            let r = 63 - run.leading_zeros(); // run = 2^r + extra
            bits.put(into, u64::from(r), 4);
            bits.put(into, run - (1 << r), r);
        }
        bits.flush(into);
        if left > 0 {
            into.extend_from_slice(&[0xFF, 0xD0 + restart]);
            restart = (restart + 1) % 8;
        }
    }
}

/// Bits written most significant first into bytes, with JPEG's byte stuffing.
#[derive(Default)]
struct Bits {
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, into: &mut Vec<u8>, value: u64, n: u32) {
        self.acc = (self.acc << n) | (value & ((1 << n) - 1));
        self.n += n;
        while self.n >= 8 {
            self.n -= 8;
            push_byte(into, (self.acc >> self.n) as u8);
        }
    }

    /// Pads the last byte with 1-bits.
    fn flush(&mut self, into: &mut Vec<u8>) {
        if self.n > 0 {
            let pad = 8 - self.n;
            self.put(into, (1 << pad) - 1, pad);
        }
    }
}

fn push_byte(into: &mut Vec<u8>, b: u8) {
    into.push(b);
    if b == 0xFF {
        into.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../tests/fixtures/progressive/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(path).unwrap()
    }

    #[test]
    fn leaves_out_the_ac_scans_of_dc_only_components() {
        let mut into = Vec::new();
        for name in ["p444.jpg", "p420.jpg", "p_gray.jpg", "p420_restart.jpg"] {
            let jpeg = fixture(name);
            assert!(dc_only_stream(&jpeg, &mut into), "{name}");
            assert!(
                into.len() < jpeg.len() / 2,
                "{name}: {} of {}",
                into.len(),
                jpeg.len()
            );
            assert!(into.ends_with(&[0xFF, 0xD9]));
        }
    }

    #[test]
    fn leaves_other_files_alone() {
        let mut into = Vec::new();
        let baseline = std::fs::read(format!(
            "{}/../tests/fixtures/sample.jpg",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert!(!dc_only_stream(&baseline, &mut into));
        let jpeg = fixture("p444.jpg");
        // Cut inside its last scan, with or without an end-of-image marker after.
        let cut = &jpeg[..jpeg.len() - 300];
        assert!(!dc_only_stream(cut, &mut into));
        let mut eoi = cut.to_vec();
        eoi.extend_from_slice(&[0xFF, 0xD9]);
        // The cut scan is kept or left out; either way nothing panics, and
        // a shorter stream ends in a marker.
        if dc_only_stream(&eoi, &mut into) {
            assert!(into.ends_with(&[0xFF, 0xD9]));
        }
        assert!(!dc_only_stream(&[], &mut into));
        assert!(!dc_only_stream(&[0xFF, 0xD8], &mut into));
    }

    #[test]
    fn run_codes_cover_every_block() {
        // Decode the written runs back: code r (4 bits), then r bits.
        for (blocks, interval) in [
            (1u64, 0u64),
            (5, 0),
            (32_767, 0),
            (70_000, 0),
            (23, 5),
            (10, 1),
        ] {
            let mut into = Vec::new();
            end_of_bands(&mut into, blocks, interval);
            let mut covered = 0u64;
            // Walk the bytes, dropping stuffing and checking restart markers.
            let mut stream = Vec::new();
            let mut restarts = 0;
            let mut i = 0;
            while i < into.len() {
                if into[i] == 0xFF {
                    if into[i + 1] == 0 {
                        stream.push((0xFF, restarts));
                    } else {
                        assert_eq!(into[i + 1], 0xD0 + (restarts % 8) as u8);
                        restarts += 1;
                    }
                    i += 2;
                } else {
                    stream.push((into[i], restarts));
                    i += 1;
                }
            }
            let want = if interval == 0 {
                0
            } else {
                blocks.div_ceil(interval) - 1
            };
            assert_eq!(restarts as u64, want, "{blocks} {interval}");
            for part in 0..=restarts {
                let bytes: Vec<u8> = stream.iter().filter(|s| s.1 == part).map(|s| s.0).collect();
                let total = bytes.len() * 8;
                let bit = |k: usize| (bytes[k / 8] >> (7 - k % 8)) & 1;
                let mut k = 0;
                let mut part_blocks = 0;
                while k + 4 <= total {
                    let r = (0..4).fold(0usize, |a, j| a << 1 | usize::from(bit(k + j)));
                    if r == 15 {
                        break; // the 1-bit padding (no code is 1111)
                    }
                    k += 4;
                    let extra = (0..r).fold(0u64, |a, j| a << 1 | u64::from(bit(k + j)));
                    k += r;
                    part_blocks += (1u64 << r) + extra;
                }
                let expect = if interval == 0 {
                    blocks
                } else {
                    interval.min(blocks - part as u64 * interval)
                };
                assert_eq!(part_blocks, expect, "{blocks} {interval} part {part}");
                covered += part_blocks;
            }
            assert_eq!(covered, blocks);
        }
    }

    #[test]
    fn damaged_files_never_panic() {
        let jpeg = fixture("p420_restart.jpg");
        let mut into = Vec::new();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let mut bad = jpeg.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed % bad.len() as u64) as usize;
                bad[at] = (seed >> 32) as u8;
            }
            seed ^= seed << 13;
            let cut = (seed >> 40) as usize % bad.len();
            let _ = dc_only_stream(&bad, &mut into);
            let _ = dc_only_stream(&bad[..cut], &mut into);
        }
    }
}
