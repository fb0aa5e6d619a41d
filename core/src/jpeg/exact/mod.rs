//! tensorprep's own JPEG decoder, written to give libjpeg-turbo's pixels
//! as Pillow drives it (`JDCT_ISLOW`, fancy upsampling, its colour tables
//! and colour-space rules), byte for byte, in safe Rust that needs only
//! `alloc` (issue 37; docs/design/jpeg-exactness.md holds the rules it
//! follows, each checked against Pillow).
//!
//! Built so far: sequential and progressive Huffman files (the standard's
//! tables where a file defines none), 8 bits, any number of scans, every
//! integer chroma subsampling, restart intervals with libjpeg-turbo's
//! resynchronisation, its handling of damaged entropy data (zero bits after
//! a marker, the rest of the interval left gray), at full size and at 1/2,
//! 1/4 and 1/8 in the DCT domain, as Pillow's mode for the component count:
//! `L`, `RGB`, or `CMYK` stored inverted as Pillow stores it. Refused by
//! name ([`JpegErrorKind::Unsupported`]) until they are built: arithmetic
//! coding. Progressive files that stop short of their last bits are
//! smoothed as libjpeg-turbo smooths them. Not yet: regions, speed, the SIMD code's
//! saturation on coefficients no real file has, and the backend that makes
//! it the decoder of a build.

mod color;
mod huffman;
mod idct;
mod smooth;
mod upsample;

use alloc::vec::Vec;

use self::huffman::{Bits, Table, extend, next_marker};
use self::upsample::{Method, Plane};
use crate::{Error, JpegErrorKind, Result};

fn fail(kind: JpegErrorKind) -> Error {
    Error::Jpeg { kind }
}

fn corrupt() -> Error {
    fail(JpegErrorKind::Corrupt)
}

/// `jpeg_natural_order` with libjpeg's 16 extra entries of 63: a damaged
/// run that carries the position past 63 stores into position 63.
const NATURAL: [u8; 80] = {
    let zigzag: [u8; 64] = [
        0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27,
        20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
        58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
    ];
    let mut t = [63u8; 80];
    let mut i = 0;
    while i < 64 {
        t[i] = zigzag[i];
        i += 1;
    }
    t
};

/// A decoded image in Pillow's mode for its component count: 1 channel
/// (`L`), 3 (`RGB`) or 4 (`CMYK`, each sample inverted as Pillow stores an
/// Adobe CMYK JPEG).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) channels: usize,
    pub(crate) pixels: Vec<u8>,
}

/// A frame component and its coefficients.
struct Component {
    id: u8,
    h: usize,
    v: usize,
    /// Its quantization table's slot, and the table latched at its first
    /// scan (natural order).
    tq: usize,
    quant: Option<[u16; 64]>,
    /// Blocks across and down, whole MCUs.
    blocks_w: usize,
    blocks_h: usize,
    coefs: Vec<[i16; 64]>,
    /// The DC predictor.
    pred: i32,
    /// The bit each coefficient (zigzag order) has reached in a progressive
    /// file's scans so far (-1: none yet), for block smoothing.
    coef_bits: [i8; 64],
}

/// What the headers have set so far.
#[derive(Default)]
struct Tables {
    quant: [Option<[u16; 64]>; 4],
    dc: [Option<Table>; 4],
    ac: [Option<Table>; 4],
    restart: usize,
    jfif: bool,
    adobe: Option<u8>,
}

struct Frame {
    width: usize,
    height: usize,
    components: Vec<Component>,
    hmax: usize,
    vmax: usize,
    mcus_x: usize,
    mcus_y: usize,
    /// Whether a scan has been read.
    scanned: bool,
    /// Whether the one scan read so far is a sequential scan of every
    /// component (the file needs no other).
    single_scan: bool,
    /// A progressive frame (SOF2).
    progressive: bool,
}

/// Decodes `jpeg` (see the [module](self) for what it reads), refusing a
/// frame of more than `max_pixels` pixels before allocating for it.
pub(crate) fn decode(jpeg: &[u8], max_pixels: u64) -> Result<Decoded> {
    decode_scaled(jpeg, max_pixels, 1)
}

/// [`decode`] at `1 / denom` of the size (1, 2, 4 or 8), in the DCT domain
/// as libjpeg-turbo does it (Pillow's `draft()`): `ceil(side / denom)` a
/// side, with its reduced inverse DCTs, and chroma taken through a larger
/// one instead of upsampled where both directions allow it.
pub(crate) fn decode_scaled(jpeg: &[u8], max_pixels: u64, denom: usize) -> Result<Decoded> {
    if !matches!(denom, 1 | 2 | 4 | 8) {
        return Err(fail(JpegErrorKind::Unsupported));
    }
    if !jpeg.starts_with(&[0xFF, 0xD8]) {
        return Err(corrupt());
    }
    let mut tables = Tables::default();
    // Slots 0 and 1 hold the standard's tables until the file defines its own.
    for slot in 0..2 {
        tables.dc[slot] = huffman::standard(false, slot);
        tables.ac[slot] = huffman::standard(true, slot);
    }
    let mut frame: Option<Frame> = None;
    let mut at = 2;
    loop {
        let Some((marker, next)) = next_marker(jpeg, at) else {
            // The data ends without an end-of-image marker: whole for a
            // file of one scan of every component without restarts, whose
            // rows libjpeg-turbo has all written by then (Pillow 13 gives
            // sample.jpg so); any other waits for more data, as Pillow's
            // strict mode reports (sample_progressive.jpg and
            // sample_restart.jpg without their last 2 bytes).
            return match frame {
                Some(f) if f.single_scan && tables.restart == 0 => finish(&f, &tables, denom),
                _ => Err(fail(JpegErrorKind::Truncated)),
            };
        };
        at = next;
        match marker {
            0xD9 => {
                return match frame {
                    Some(f) if f.scanned => finish(&f, &tables, denom),
                    _ => Err(corrupt()),
                };
            }
            // Parameterless: a restart marker outside a scan, TEM.
            0xD0..=0xD7 | 0x01 => continue,
            0xD8 => return Err(corrupt()),
            _ => {}
        }
        let body = segment(jpeg, at)?;
        at += 2 + body.len();
        match marker {
            0xC0..=0xC2 => {
                if frame.is_some() {
                    return Err(corrupt());
                }
                let mut f = read_frame(body, jpeg.len(), max_pixels)?;
                f.progressive = marker == 0xC2;
                frame = Some(f);
            }
            // Lossless, hierarchical, arithmetic: not yet.
            0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                return Err(fail(JpegErrorKind::Unsupported));
            }
            0xC4 => read_huffman(body, &mut tables)?,
            0xDB => read_quant(body, &mut tables)?,
            0xDD => {
                let [a, b] = *body else { return Err(corrupt()) };
                tables.restart = usize::from(u16::from_be_bytes([a, b]));
            }
            0xDA => {
                let f = frame.as_mut().ok_or_else(corrupt)?;
                at = scan(jpeg, at, body, f, &tables)?;
            }
            0xE0 => tables.jfif |= body.len() >= 14 && body.starts_with(b"JFIF\0"),
            0xEE => {
                if body.len() >= 12 && body.starts_with(b"Adobe") {
                    tables.adobe = Some(body[11]);
                }
            }
            // APPn, COM, DNL, DAC: nothing the pixels need.
            0xE1..=0xED | 0xEF | 0xFE | 0xDC | 0xCC => {}
            _ => return Err(corrupt()),
        }
    }
}

/// The body of the segment whose length field is at `at`.
fn segment(jpeg: &[u8], at: usize) -> Result<&[u8]> {
    let len = jpeg
        .get(at..at + 2)
        .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        .ok_or_else(|| fail(JpegErrorKind::Truncated))?;
    if len < 2 {
        return Err(corrupt());
    }
    jpeg.get(at + 2..at + len)
        .ok_or_else(|| fail(JpegErrorKind::Truncated))
}

fn read_frame(body: &[u8], data_bytes: usize, max_pixels: u64) -> Result<Frame> {
    let [precision, h0, h1, w0, w1, n, ..] = *body else {
        return Err(corrupt());
    };
    if precision != 8 {
        return Err(fail(JpegErrorKind::Unsupported)); // 12-bit
    }
    let (height, width) = (
        usize::from(u16::from_be_bytes([h0, h1])),
        usize::from(u16::from_be_bytes([w0, w1])),
    );
    if height == 0 {
        return Err(fail(JpegErrorKind::Unsupported)); // a DNL marker's height
    }
    if width == 0 || width > 65500 || height > 65500 {
        return Err(corrupt());
    }
    if !matches!(n, 1 | 3 | 4) {
        return Err(fail(JpegErrorKind::UnsupportedColorSpace));
    }
    let specs = body.get(6..6 + 3 * usize::from(n)).ok_or_else(corrupt)?;
    let mut components = Vec::new();
    for c in specs.chunks_exact(3) {
        let (h, v, tq) = (
            usize::from(c[1] >> 4),
            usize::from(c[1] & 15),
            usize::from(c[2]),
        );
        if !(1..=4).contains(&h) || !(1..=4).contains(&v) || tq > 3 {
            return Err(corrupt());
        }
        components.push(Component {
            id: c[0],
            h,
            v,
            tq,
            quant: None,
            blocks_w: 0,
            blocks_h: 0,
            coefs: Vec::new(),
            pred: 0,
            coef_bits: [-1; 64],
        });
    }
    let hmax = components.iter().map(|c| c.h).max().unwrap_or(1);
    let vmax = components.iter().map(|c| c.v).max().unwrap_or(1);
    // libjpeg-turbo upsamples by integer ratios only.
    if components
        .iter()
        .any(|c| hmax % c.h != 0 || vmax % c.v != 0)
    {
        return Err(fail(JpegErrorKind::Unsupported));
    }
    let pixels = (width as u64) * (height as u64);
    if pixels > max_pixels {
        return Err(Error::TooManyPixels {
            pixels,
            limit: max_pixels,
        });
    }
    let (mcus_x, mcus_y) = (width.div_ceil(8 * hmax), height.div_ceil(8 * vmax));
    // Every block costs at least one bit per coefficient band it codes: a
    // file cannot describe more blocks than it has bits (the plausibility
    // bound the header check uses).
    let blocks: usize = components.iter().map(|c| c.h * c.v).sum::<usize>() * mcus_x * mcus_y;
    if blocks as u64 > (data_bytes as u64).saturating_mul(8) {
        return Err(fail(JpegErrorKind::Truncated));
    }
    for c in &mut components {
        c.blocks_w = mcus_x * c.h;
        c.blocks_h = mcus_y * c.v;
        let n = c.blocks_w * c.blocks_h;
        crate::buffer::reserve(&mut c.coefs, n)?;
        c.coefs.resize(n, [0; 64]);
    }
    Ok(Frame {
        width,
        height,
        components,
        hmax,
        vmax,
        mcus_x,
        mcus_y,
        scanned: false,
        single_scan: false,
        progressive: false,
    })
}

fn read_huffman(mut body: &[u8], tables: &mut Tables) -> Result<()> {
    while !body.is_empty() {
        let [class_slot, ref counts @ ..] = *body else {
            return Err(corrupt());
        };
        let counts: &[u8; 16] = counts
            .get(..16)
            .and_then(|c| c.try_into().ok())
            .ok_or_else(corrupt)?;
        let n: usize = counts.iter().map(|&c| usize::from(c)).sum();
        let symbols = body.get(17..17 + n).ok_or_else(corrupt)?;
        let (class, slot) = (class_slot >> 4, usize::from(class_slot & 15));
        if slot > 3 || class > 1 {
            return Err(corrupt());
        }
        let table = Table::new(counts, symbols)?;
        if class == 0 {
            tables.dc[slot] = Some(table);
        } else {
            tables.ac[slot] = Some(table);
        }
        body = &body[17 + n..];
    }
    Ok(())
}

fn read_quant(mut body: &[u8], tables: &mut Tables) -> Result<()> {
    while let [pq_tq, ref rest @ ..] = *body {
        let (wide, slot) = (pq_tq >> 4, usize::from(pq_tq & 15));
        if slot > 3 || wide > 1 {
            return Err(corrupt());
        }
        let size = if wide == 1 { 128 } else { 64 };
        let values = rest.get(..size).ok_or_else(corrupt)?;
        let mut q = [0u16; 64];
        for k in 0..64 {
            let v = if wide == 1 {
                u16::from_be_bytes([values[2 * k], values[2 * k + 1]])
            } else {
                u16::from(values[k])
            };
            q[usize::from(NATURAL[k])] = v;
        }
        tables.quant[slot] = Some(q);
        body = &rest[size..];
    }
    Ok(())
}

/// What a scan codes (the progressive kinds: G.1.2 of the standard,
/// libjpeg-turbo's `jdphuff.c`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Every coefficient of each block (sequential files).
    Sequential,
    /// The DC coefficients' high bits.
    DcFirst,
    /// One more bit of each DC coefficient.
    DcRefine,
    /// The high bits of coefficients `Ss..=Se` of one component.
    AcFirst,
    /// One more bit of coefficients `Ss..=Se`.
    AcRefine,
}

/// A scan's band and bit position.
#[derive(Clone, Copy)]
struct Band {
    kind: Kind,
    ss: usize,
    se: usize,
    al: u32,
}

/// The scan whose header is `header` and whose data starts at `at`:
/// decodes its coefficients; returns where the data ends.
fn scan(jpeg: &[u8], at: usize, header: &[u8], f: &mut Frame, tables: &Tables) -> Result<usize> {
    let [n, ref rest @ ..] = *header else {
        return Err(corrupt());
    };
    let n = usize::from(n);
    if !(1..=4).contains(&n) || rest.len() < 2 * n + 3 {
        return Err(corrupt());
    }
    let (ss, se, ah, al) = (
        usize::from(rest[2 * n]),
        usize::from(rest[2 * n + 1]),
        u32::from(rest[2 * n + 2] >> 4),
        u32::from(rest[2 * n + 2] & 15),
    );
    let kind = if !f.progressive {
        Kind::Sequential
    } else {
        // libjpeg-turbo's checks of the progression (JERR_BAD_PROGRESSION).
        let bad = if ss == 0 {
            se != 0
        } else {
            ss > se || se > 63 || n != 1
        } || (ah != 0 && al + 1 != ah)
            || al > 13;
        if bad {
            return Err(corrupt());
        }
        match (ss == 0, ah == 0) {
            (true, true) => Kind::DcFirst,
            (true, false) => Kind::DcRefine,
            (false, true) => Kind::AcFirst,
            (false, false) => Kind::AcRefine,
        }
    };
    let band = Band { kind, ss, se, al };
    // Each component of the scan: its index in the frame and the tables
    // its kind of scan reads.
    let mut members: Vec<(usize, Option<&Table>, Option<&Table>)> = Vec::new();
    for spec in rest[..2 * n].chunks_exact(2) {
        let c = f
            .components
            .iter()
            .position(|c| c.id == spec[0])
            .ok_or_else(corrupt)?;
        if members.iter().any(|m| m.0 == c) {
            return Err(corrupt());
        }
        let dc = tables.dc[usize::from(spec[1] >> 4).min(3)].as_ref();
        let ac = tables.ac[usize::from(spec[1] & 15).min(3)].as_ref();
        let (dc, ac) = match kind {
            Kind::Sequential => (dc, ac),
            Kind::DcFirst => (dc, None),
            Kind::DcRefine => (None, None),
            Kind::AcFirst | Kind::AcRefine => (None, ac),
        };
        // A table the scan needs is missing (slots 2 and 3: slots 0 and 1
        // hold the standard's unless the file replaced them).
        let needs_dc = matches!(kind, Kind::Sequential | Kind::DcFirst);
        let needs_ac = matches!(kind, Kind::Sequential | Kind::AcFirst | Kind::AcRefine);
        if (needs_dc && dc.is_none()) || (needs_ac && ac.is_none()) {
            return Err(corrupt());
        }
        if dc.is_some_and(|t| t.max_symbol > 15) {
            return Err(corrupt());
        }
        let comp = &mut f.components[c];
        if comp.quant.is_none() {
            comp.quant = Some(tables.quant[comp.tq].ok_or_else(corrupt)?);
        }
        comp.pred = 0;
        // The coefficient bits each band has reached (for block smoothing).
        if kind != Kind::Sequential {
            comp.coef_bits[ss..=se].fill(al as i8);
        }
        members.push((c, dc, ac));
    }
    let blocks_per_mcu: usize = members
        .iter()
        .map(|m| f.components[m.0].h * f.components[m.0].v)
        .sum();
    if n > 1 && blocks_per_mcu > 10 {
        return Err(corrupt());
    }
    f.single_scan = !f.scanned && kind == Kind::Sequential && n == f.components.len();
    f.scanned = true;
    let mut bits = Bits::new(jpeg, at);
    // One component alone: its own blocks in raster order, one an MCU.
    let (mcus_x, mcus_y) = if n == 1 {
        let c = &f.components[members[0].0];
        (
            (f.width * c.h).div_ceil(f.hmax).div_ceil(8),
            (f.height * c.v).div_ceil(f.vmax).div_ceil(8),
        )
    } else {
        (f.mcus_x, f.mcus_y)
    };
    let mut next_restart = 0u8;
    let mut eobrun = 0u32;
    for m in 0..mcus_x * mcus_y {
        if tables.restart > 0 && m > 0 && m % tables.restart == 0 {
            restart(&mut bits, next_restart);
            next_restart = (next_restart + 1) & 7;
            eobrun = 0;
            for &(c, ..) in &members {
                f.components[c].pred = 0;
            }
        }
        // After bits past the data were used, the rest of the interval is
        // left as it is.
        if bits.short {
            continue;
        }
        let (mx, my) = (m % mcus_x, m / mcus_x);
        for &(c, dc, ac) in &members {
            let comp = &mut f.components[c];
            let (bw, bh) = if n == 1 { (1, 1) } else { (comp.h, comp.v) };
            for by in 0..bh {
                for bx in 0..bw {
                    let index = (my * bh + by) * comp.blocks_w + mx * bw + bx;
                    let block = &mut comp.coefs[index];
                    match (band.kind, dc, ac) {
                        (Kind::Sequential, Some(dc), Some(ac)) => {
                            decode_block(&mut bits, dc, ac, &mut comp.pred, block);
                        }
                        (Kind::DcFirst, Some(dc), _) => {
                            dc_first(&mut bits, dc, &mut comp.pred, band.al, block)?;
                        }
                        (Kind::DcRefine, ..) => {
                            if bits.bits(1) == 1 {
                                block[0] |= 1 << band.al;
                            }
                        }
                        (Kind::AcFirst, _, Some(ac)) => {
                            ac_first(&mut bits, ac, band, &mut eobrun, block)
                        }
                        (Kind::AcRefine, _, Some(ac)) => {
                            ac_refine(&mut bits, ac, band, &mut eobrun, block)
                        }
                        _ => unreachable!("the tables each kind needs were checked"),
                    }
                }
            }
        }
    }
    if bits.ended && bits.short {
        return Err(fail(JpegErrorKind::Truncated));
    }
    Ok(bits.position())
}

/// A DC difference: its size category from `dc`, then that many bits.
#[inline]
fn dc_difference(bits: &mut Bits<'_>, dc: &Table) -> i32 {
    let s = u32::from(bits.decode(dc));
    if s == 0 { 0 } else { extend(bits.bits(s), s) }
}

/// One block of a sequential scan (`decode_mcu`).
#[inline]
fn decode_block(
    bits: &mut Bits<'_>,
    dc: &Table,
    ac: &Table,
    pred: &mut i32,
    block: &mut [i16; 64],
) {
    let diff = dc_difference(bits, dc);
    *pred = pred.wrapping_add(diff);
    block[0] = *pred as i16;
    let mut k = 1;
    while k < 64 {
        let rs = bits.decode(ac);
        let (r, s) = (usize::from(rs >> 4), u32::from(rs & 15));
        if s != 0 {
            k += r;
            block[usize::from(NATURAL[k])] = extend(bits.bits(s), s) as i16;
        } else if r == 15 {
            k += 15;
        } else {
            break;
        }
        k += 1;
    }
}

/// A block's DC in a first DC scan (`decode_mcu_DC_first`): a predictor
/// that overflows is an error, as in libjpeg-turbo.
fn dc_first(
    bits: &mut Bits<'_>,
    dc: &Table,
    pred: &mut i32,
    al: u32,
    block: &mut [i16; 64],
) -> Result<()> {
    let diff = dc_difference(bits, dc);
    *pred = pred.checked_add(diff).ok_or_else(corrupt)?;
    block[0] = (*pred << al) as i16;
    Ok(())
}

/// A block's band in a first AC scan (`decode_mcu_AC_first`).
fn ac_first(bits: &mut Bits<'_>, ac: &Table, band: Band, eobrun: &mut u32, block: &mut [i16; 64]) {
    if *eobrun > 0 {
        *eobrun -= 1;
        return;
    }
    let mut k = band.ss;
    while k <= band.se {
        let rs = bits.decode(ac);
        let (r, s) = (u32::from(rs >> 4), u32::from(rs & 15));
        if s != 0 {
            k += r as usize;
            block[usize::from(NATURAL[k])] = (extend(bits.bits(s), s) << band.al) as i16;
        } else if r == 15 {
            k += 15;
        } else {
            *eobrun = 1 << r;
            if r > 0 {
                *eobrun += bits.bits(r);
            }
            *eobrun -= 1;
            break;
        }
        k += 1;
    }
}

/// A block's band in an AC refinement scan (`decode_mcu_AC_refine`).
fn ac_refine(bits: &mut Bits<'_>, ac: &Table, band: Band, eobrun: &mut u32, block: &mut [i16; 64]) {
    let p1: i16 = 1 << band.al;
    let m1: i16 = (-1i16).wrapping_shl(band.al);
    // A correction bit of an already nonzero coefficient.
    let correct = |bits: &mut Bits<'_>, coef: &mut i16| {
        if bits.bits(1) == 1 && *coef & p1 == 0 {
            *coef = coef.wrapping_add(if *coef >= 0 { p1 } else { m1 });
        }
    };
    let mut k = band.ss;
    if *eobrun == 0 {
        while k <= band.se {
            let rs = bits.decode(ac);
            let (mut r, s) = (i32::from(rs >> 4), rs & 15);
            let mut new = 0i16;
            if s != 0 {
                // s is 1 in a valid file (libjpeg-turbo warns otherwise).
                new = if bits.bits(1) == 1 { p1 } else { m1 };
            } else if r != 15 {
                *eobrun = 1 << r;
                if r > 0 {
                    *eobrun += bits.bits(r as u32);
                }
                break;
            }
            // Past already nonzero coefficients (their correction bits)
            // and r zero ones.
            loop {
                let coef = &mut block[usize::from(NATURAL[k])];
                if *coef != 0 {
                    correct(bits, coef);
                } else {
                    r -= 1;
                    if r < 0 {
                        break;
                    }
                }
                k += 1;
                if k > band.se {
                    break;
                }
            }
            if new != 0 {
                block[usize::from(NATURAL[k])] = new;
            }
            k += 1;
        }
    }
    if *eobrun > 0 {
        // The end-of-band run: the rest of the band's nonzero coefficients
        // still take their correction bits.
        while k <= band.se {
            let coef = &mut block[usize::from(NATURAL[k])];
            if *coef != 0 {
                correct(bits, coef);
            }
            k += 1;
        }
        *eobrun -= 1;
    }
}

/// A restart (`process_restart`): the bits left dropped, then the marker
/// expected taken, or libjpeg-turbo's resynchronisation
/// (`jpeg_resync_to_restart`) when another is found.
fn restart(bits: &mut Bits<'_>, expected: u8) {
    bits.drop_bits();
    // Past the data's end the rest reads as zero bits.
    while let Some((m, _)) = bits.find_marker() {
        let rst = |n: u8| 0xD0 + (n & 7);
        let next_two = m == rst(expected.wrapping_add(1)) || m == rst(expected.wrapping_add(2));
        let action = if m < 0xC0 {
            2
        } else if !(0xD0..=0xD7).contains(&m) || next_two {
            3
        } else if m == rst(expected.wrapping_sub(1)) || m == rst(expected.wrapping_sub(2)) {
            2
        } else {
            1
        };
        match action {
            // The one expected (or too far off to tell): read on after it.
            1 => {
                bits.skip_marker();
                break;
            }
            // Not a marker, or an earlier restart: look for the next.
            2 => bits.skip_marker(),
            // Left unread: this interval reads as empty.
            _ => break,
        }
    }
    if bits.marker.is_none() {
        bits.short = false;
    }
}

/// The image from the frame's coefficients at `1 / denom` of its size:
/// inverse DCT, upsampling and colour conversion.
fn finish(f: &Frame, tables: &Tables, denom: usize) -> Result<Decoded> {
    let smoothed = smoothing(f);
    // Each block gives k x k samples of the luma grid.
    let k = 8 / denom;
    let (w, h) = ((f.width * k).div_ceil(8), (f.height * k).div_ceil(8));
    let mut planes: Vec<Vec<u8>> = Vec::new();
    for c in &f.components {
        // The component's IDCT size: doubled while that spares an
        // upsampling by 2 in both directions (`jpeg_calc_output_dimensions`).
        let mut size = k;
        while size < 8
            && (f.hmax * k).is_multiple_of(c.h * size * 2)
            && (f.vmax * k).is_multiple_of(c.v * size * 2)
        {
            size *= 2;
        }
        let (across, down) = (f.hmax * k, f.vmax * k);
        if across % (c.h * size) != 0 || down % (c.v * size) != 0 {
            return Err(fail(JpegErrorKind::Unsupported));
        }
        let stride = c.blocks_w * size;
        let mut samples = crate::buffer::zeroed(stride * c.blocks_h * size)?;
        // A component no scan carried has no table latched: it stays 0.
        if let Some(quant) = &c.quant {
            // The coefficients still to come estimated from the DCs around.
            let estimated;
            let coefs = if smoothed {
                let grid = (
                    (f.width * c.h).div_ceil(f.hmax).div_ceil(8),
                    (f.height * c.v).div_ceil(f.vmax).div_ceil(8),
                );
                estimated = smooth::smooth(&c.coefs, c.blocks_w, grid, quant, &c.coef_bits)?;
                &estimated
            } else {
                &c.coefs
            };
            for (i, block) in coefs.iter().enumerate() {
                let (bx, by) = (i % c.blocks_w, i / c.blocks_w);
                let at = by * size * stride + bx * size;
                idct::scaled(size, block, quant, &mut samples[at..], stride);
            }
        }
        let plane = Plane {
            samples: &samples,
            stride,
            width: (f.width * c.h * size).div_ceil(f.hmax * 8),
            height: (f.height * c.v * size).div_ceil(f.vmax * 8),
        };
        // Fancy upsampling needs more than one sample a block.
        let method = Method::choose(
            across / (c.h * size),
            down / (c.v * size),
            k > 1,
            plane.width,
        );
        let mut full = crate::buffer::zeroed(w * h)?;
        upsample::upsample(plane, method, &mut full, w, h);
        planes.push(full);
    }
    let channels = f.components.len();
    let mut pixels = crate::buffer::zeroed(w * h * channels)?;
    let ids: Vec<u8> = f.components.iter().map(|c| c.id).collect();
    match channels {
        1 => pixels.copy_from_slice(&planes[0]),
        3 => {
            let rgb = match tables.adobe {
                _ if tables.jfif => false,
                Some(t) => t == 0,
                None => ids == [b'R', b'G', b'B'],
            };
            for (i, px) in pixels.chunks_exact_mut(3).enumerate() {
                let (a, b, c) = (planes[0][i], planes[1][i], planes[2][i]);
                px.copy_from_slice(&if rgb {
                    [a, b, c]
                } else {
                    color::ycc_to_rgb(a, b, c)
                });
            }
        }
        _ => {
            let ycck = matches!(tables.adobe, Some(t) if t != 0);
            for (i, px) in pixels.chunks_exact_mut(4).enumerate() {
                let k = planes[3][i];
                // Pillow inverts libjpeg-turbo's CMYK: YCCK comes out as
                // (R, G, B, 255 - K), plain CMYK as its inverse.
                px.copy_from_slice(&if ycck {
                    let [r, g, b] = color::ycc_to_rgb(planes[0][i], planes[1][i], planes[2][i]);
                    [r, g, b, 255 - k]
                } else {
                    [
                        255 - planes[0][i],
                        255 - planes[1][i],
                        255 - planes[2][i],
                        255 - k,
                    ]
                });
            }
        }
    }
    Ok(Decoded {
        width: w,
        height: h,
        channels,
        pixels,
    })
}

/// Whether libjpeg-turbo smooths this frame's blocks (`smoothing_ok`): a
/// progressive file whose scans left some low-frequency coefficient short
/// of its last bit (cut short, or a script that stops early), every
/// component having had a DC scan and nonzero quantization for the ten
/// coefficients smoothing reads.
fn smoothing(f: &Frame) -> bool {
    const READ: [usize; 10] = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24];
    f.progressive
        && f.components.iter().all(|c| {
            c.coef_bits[0] >= 0 && c.quant.is_some_and(|q| READ.iter().all(|&k| q[k] != 0))
        })
        && f.components
            .iter()
            .any(|c| c.coef_bits[1..10].iter().any(|&b| b != 0))
}

#[cfg(all(test, feature = "png", feature = "std"))]
mod tests {
    use super::*;
    use crate::decode::ImageDecoder;
    use crate::jpeg::DecodeOptions;
    use alloc::string::String;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures")
                .join(name),
        )
        .unwrap()
    }

    /// Pillow's decode stored as the PNG fixture `png`, as `channels` (1:
    /// `L`, 3: `RGB`) 8-bit samples.
    fn pillow(png: &str, channels: usize) -> crate::Image {
        let format = if channels == 1 {
            crate::PixelFormat::Gray8
        } else {
            crate::PixelFormat::Rgb8
        };
        let options = DecodeOptions {
            format,
            ..DecodeOptions::default()
        };
        ImageDecoder::new(options).decode(&fixture(png)).unwrap()
    }

    /// `ours` is Pillow's decode `png`: the same size, the same samples.
    fn assert_pillows(ours: &Decoded, png: &str) {
        let want = pillow(png, ours.channels);
        let size = (want.width() as usize, want.height() as usize);
        assert_eq!((ours.width, ours.height), size, "{png}");
        let differing = ours
            .pixels
            .iter()
            .zip(want.as_bytes())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            differing, 0,
            "{png}: {differing} samples differ from Pillow's"
        );
    }

    /// Pillow's decodes of the fixture photos (tests/fixtures/refs.txt:
    /// `decode FILE stored MODE X Y W H REF`, made by make_fixtures.py with
    /// Pillow's libjpeg-turbo), compared region by region.
    #[test]
    fn baseline_photos_decode_as_pillow_does() {
        let refs = String::from_utf8(fixture("refs.txt")).unwrap();
        let mut checked = 0;
        for line in refs.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.first() != Some(&"decode") || f[2] != "stored" {
                continue;
            }
            let (file, mode) = (f[1], f[3]);
            let [x, y, w, h]: [usize; 4] = core::array::from_fn(|i| f[4 + i].parse().unwrap());
            let ours = decode(&fixture(file), u64::MAX).unwrap();
            let want_channels = if mode == "L" { 1 } else { 3 };
            let want = pillow(f[8], want_channels);
            if ours.channels != want_channels {
                continue; // Pillow's convert() of another mode: not the decoder's output
            }
            let mut differing = 0;
            for row in 0..h {
                let start = ((y + row) * ours.width + x) * ours.channels;
                let got = &ours.pixels[start..start + w * ours.channels];
                let expected =
                    &want.as_bytes()[row * w * want_channels..(row + 1) * w * want_channels];
                differing += got.iter().zip(expected).filter(|(a, b)| a != b).count();
            }
            assert_eq!(
                differing, 0,
                "{line}: {differing} samples differ from Pillow's"
            );
            checked += 1;
        }
        assert!(checked >= 6, "{checked} references checked");
    }

    /// Pillow's `draft()` decodes (refs.txt: `draft FILE N REF`).
    #[test]
    fn scaled_decodes_are_pillows_draft() {
        let refs = String::from_utf8(fixture("refs.txt")).unwrap();
        let mut checked = 0;
        for line in refs.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.first() != Some(&"draft") {
                continue;
            }
            let n: usize = f[2].parse().unwrap();
            let ours = decode_scaled(&fixture(f[1]), u64::MAX, n).unwrap();
            assert_pillows(&ours, f[3]);
            checked += 1;
        }
        assert_eq!(checked, 4);
    }

    /// Cut short, a file is an error (Pillow's strict mode: "image file is
    /// truncated"), never a gray-filled image.
    #[test]
    fn a_truncated_file_is_an_error() {
        let truncated = |r: Result<Decoded>| {
            matches!(
                r,
                Err(Error::Jpeg {
                    kind: JpegErrorKind::Truncated
                })
            )
        };
        for name in ["sample.jpg", "sample_progressive.jpg", "sample_restart.jpg"] {
            let bytes = fixture(name);
            for cut in [bytes.len() / 3, bytes.len() / 2, bytes.len() - 40] {
                assert!(
                    truncated(decode(&bytes[..cut], u64::MAX)),
                    "{name} cut at {cut}"
                );
            }
            // Every scan whole but the end-of-image marker missing: what
            // Pillow 13 does with each (checked): a file of one scan has all
            // its rows; a progressive one, or one with restarts, is cut short.
            let no_end = decode(&bytes[..bytes.len() - 2], u64::MAX);
            if name == "sample.jpg" {
                assert_eq!(no_end.unwrap(), decode(&bytes, u64::MAX).unwrap(), "{name}");
            } else {
                assert!(truncated(no_end), "{name} without its end");
            }
        }
    }

    /// A file without Huffman tables (as motion-JPEG frames come) decodes
    /// with the standard's, as libjpeg-turbo does (Pillow's decode,
    /// make_jpeg_exact_fixtures.py).
    #[test]
    fn a_file_without_huffman_tables_uses_the_standards() {
        let ours = decode(&fixture("jpeg_exact/no_huffman_tables.jpg"), u64::MAX).unwrap();
        assert_eq!((ours.width, ours.height), (96, 64));
        assert_pillows(&ours, "jpeg_exact/no_huffman_tables.png");
    }

    /// Progressive files whose scans stop early (after the DC scans, and
    /// after 4 and 6 scans): the coefficients still to come estimated as
    /// libjpeg-turbo does (block smoothing; Pillow's decodes,
    /// make_jpeg_exact_fixtures.py).
    #[test]
    fn unfinished_progressive_files_are_smoothed_as_libjpeg_turbo_does() {
        for keep in [2, 4, 6] {
            let jpeg = fixture(&alloc::format!("jpeg_exact/progressive_cut_{keep}.jpg"));
            let ours = decode(&jpeg, u64::MAX).unwrap();
            assert_pillows(
                &ours,
                &alloc::format!("jpeg_exact/progressive_cut_{keep}.png"),
            );
        }
    }

    /// Coefficients no encoder writes (full-range 16-bit values, every
    /// quantization value 255): libjpeg-turbo's SIMD IDCTs, which Pillow runs
    /// on x86-64, saturate where its C code wraps; the decoder gives
    /// Pillow's pixels at every scale (make_jpeg_exact_fixtures.py).
    #[test]
    fn pathological_coefficients_decode_as_pillows_simd_code_does() {
        let bytes = fixture("jpeg_exact/pathological_q255.jpg");
        for n in [1, 2, 4, 8] {
            let ours = decode_scaled(&bytes, u64::MAX, n).unwrap();
            assert_eq!(ours.channels, 1);
            assert_pillows(
                &ours,
                &alloc::format!("jpeg_exact/pathological_q255_{n}.png"),
            );
        }
    }

    #[test]
    fn arithmetic_coded_files_are_refused_by_name_for_now() {
        let err = decode(&fixture("sample_arithmetic.jpg"), u64::MAX).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Jpeg {
                    kind: JpegErrorKind::Unsupported
                }
            ),
            "{err}"
        );
    }

    /// Every `*.jpg` in `TENSORPREP_JPEG_DIR` against the Pillow decodes
    /// beside it (`NAME.jpg.pillow`, and `NAME.jpg.pillowN` of `draft()`
    /// at 1/N: a line `W H MODE`, then Pillow's `tobytes()`), as a script
    /// with Pillow writes them: 0 differing bytes in each decode; those
    /// refused as not yet supported are listed.
    #[test]
    #[ignore = "needs a folder of JPEGs with their Pillow decodes (TENSORPREP_JPEG_DIR)"]
    fn a_folder_of_jpegs_decodes_as_pillow_does() {
        let dir = std::env::var("TENSORPREP_JPEG_DIR").expect("TENSORPREP_JPEG_DIR");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
            .collect();
        names.sort();
        let (mut same, mut refused, mut wrong) = (0, Vec::new(), Vec::new());
        for path in names {
            for denom in [1, 2, 4, 8] {
                let suffix = if denom == 1 {
                    String::from("jpg.pillow")
                } else {
                    alloc::format!("jpg.pillow{denom}")
                };
                let Ok(pillow) = std::fs::read(path.with_extension(suffix)) else {
                    continue;
                };
                let header_end = pillow.iter().position(|&b| b == b'\n').unwrap();
                let want = &pillow[header_end + 1..];
                let what = alloc::format!("{} at 1/{denom}", path.display());
                match decode_scaled(&std::fs::read(&path).unwrap(), u64::MAX, denom) {
                    Ok(d) if d.pixels == want => same += 1,
                    Ok(d) => {
                        let n = d.pixels.iter().zip(want).filter(|(a, b)| a != b).count();
                        wrong.push(alloc::format!("{what}: {n} bytes differ"));
                    }
                    Err(e) => refused.push(alloc::format!("{what}: {e}")),
                }
            }
        }
        std::eprintln!("{same} identical; refused: {refused:#?}");
        assert!(wrong.is_empty(), "{wrong:#?}");
        assert!(same > 0);
    }
}
