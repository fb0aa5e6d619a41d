//! Huffman tables and the bit reader of the entropy-coded data, with
//! libjpeg-turbo's behaviour on damaged data: a code that matches nothing
//! in 16 bits gives symbol 0 after 17 bits; a marker inside the data is
//! not read past, and the bits after it are zeros, the reader noting that
//! it used them (the MCU goes on, later ones are left out;
//! docs/design/jpeg-exactness.md, §6).

use crate::{Error, JpegErrorKind, Result};

fn corrupt() -> Error {
    Error::Jpeg {
        kind: JpegErrorKind::Corrupt,
    }
}

/// The tables of the standard's Annex K.3, which libjpeg-turbo uses for
/// slots 0 and 1 when a file defines none there (motion-JPEG frames leave
/// them out). Read from the DHT segments libjpeg writes without
/// optimisation (Pillow's `save(optimize=False)`), which are these.
pub(super) fn standard(ac: bool, slot: usize) -> Option<Table> {
    let (counts, symbols): (&[u8; 16], &[u8]) = match (ac, slot) {
        (false, 0) => (&DC_LUMA.0, &DC_LUMA.1),
        (false, 1) => (&DC_CHROMA.0, &DC_CHROMA.1),
        (true, 0) => (&AC_LUMA.0, &AC_LUMA.1),
        (true, 1) => (&AC_CHROMA.0, &AC_CHROMA.1),
        _ => return None,
    };
    Table::new(counts, symbols).ok()
}

/// dc luma: the counts per code length, then the symbols.
const DC_LUMA: ([u8; 16], [u8; 12]) = (
    [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
    [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
    ],
);

/// ac luma: the counts per code length, then the symbols.
const AC_LUMA: ([u8; 16], [u8; 162]) = (
    [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125],
    [
        0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61,
        0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52,
        0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25,
        0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45,
        0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64,
        0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83,
        0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
        0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
        0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3,
        0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8,
        0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
    ],
);

/// dc chroma: the counts per code length, then the symbols.
const DC_CHROMA: ([u8; 16], [u8; 12]) = (
    [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
    [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
    ],
);

/// ac chroma: the counts per code length, then the symbols.
const AC_CHROMA: ([u8; 16], [u8; 162]) = (
    [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 119],
    [
        0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61,
        0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33,
        0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18,
        0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44,
        0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63,
        0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a,
        0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
        0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
        0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca,
        0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7,
        0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
    ],
);

/// Bits of code resolved by one table look-up.
const LOOKAHEAD: u32 = 9;

/// A decoding table (`jpeg_make_d_derived_tbl`).
#[derive(Clone)]
pub(super) struct Table {
    /// For each `LOOKAHEAD`-bit prefix: `length << 8 | symbol`, or 0 when
    /// the code is longer.
    fast: [u16; 1 << LOOKAHEAD],
    /// The largest code of each length (index 1..=16; -1: none).
    maxcode: [i32; 18],
    /// `symbol index - code` of each length.
    offset: [i32; 17],
    symbols: [u8; 256],
    /// The largest symbol (a DC table's must be at most 15).
    pub(super) max_symbol: u8,
}

impl Table {
    /// A table from a DHT's 16 counts and its symbols: refused when the
    /// counts add up to more than 256 or overflow their lengths.
    pub(super) fn new(counts: &[u8; 16], symbols: &[u8]) -> Result<Table> {
        let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
        if total > 256 || symbols.len() != total {
            return Err(corrupt());
        }
        let mut t = Table {
            fast: [0; 1 << LOOKAHEAD],
            maxcode: [-1; 18],
            offset: [0; 17],
            symbols: [0; 256],
            max_symbol: symbols.iter().copied().max().unwrap_or(0),
        };
        t.symbols[..total].copy_from_slice(symbols);
        let mut code: i32 = 0;
        let mut index: i32 = 0;
        for len in 1..=16u32 {
            let n = i32::from(counts[len as usize - 1]);
            if n > 0 {
                t.offset[len as usize] = index - code;
                for k in 0..n {
                    let c = code + k;
                    if len <= LOOKAHEAD {
                        let sym = u16::from(symbols[(index + k) as usize]);
                        let spread = LOOKAHEAD - len;
                        let first = (c as usize) << spread;
                        for e in &mut t.fast[first..first + (1 << spread)] {
                            *e = (len as u16) << 8 | sym;
                        }
                    }
                }
                code += n;
                index += n;
                t.maxcode[len as usize] = code - 1;
            }
            // No code may be all ones: the next code must still fit.
            if code >= 1 << len && (n > 0 || code > 0) {
                return Err(corrupt());
            }
            code <<= 1;
        }
        // The sentinel: any 17-bit code ends the search.
        t.maxcode[17] = i32::MAX;
        Ok(t)
    }
}

/// The entropy-coded data of a scan, read bit by bit.
pub(super) struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to read.
    pos: usize,
    /// Bits, the first at the top.
    acc: u64,
    /// Bits held in `acc`.
    n: u32,
    /// How many of the last bits of `acc` are the zeros that stand in for
    /// data past a marker or past the end.
    fill: u32,
    /// A marker met in the data: its code and where its `FF` is.
    pub(super) marker: Option<(u8, usize)>,
    /// Whether the data ended (no marker) before the bits did.
    pub(super) ended: bool,
    /// Whether bits past the data were used since the last restart
    /// (libjpeg-turbo's `insufficient_data`).
    pub(super) short: bool,
}

impl<'a> Bits<'a> {
    /// Reads `data` from `pos` (the byte after a scan header or a restart
    /// marker).
    pub(super) fn new(data: &'a [u8], pos: usize) -> Bits<'a> {
        Bits {
            data,
            pos,
            acc: 0,
            n: 0,
            fill: 0,
            marker: None,
            ended: false,
            short: false,
        }
    }

    /// Tops `acc` up to at least 57 bits.
    #[inline]
    fn refill(&mut self) {
        while self.n <= 56 {
            let byte = if self.marker.is_some() || self.ended {
                None
            } else {
                self.next_byte()
            };
            match byte {
                Some(b) => self.acc |= u64::from(b) << (56 - self.n),
                None => self.fill += 8,
            }
            self.n += 8;
        }
    }

    /// The next data byte (`FF 00` is `FF`; `FF`s before a marker are
    /// padding), or `None` at a marker or the end.
    #[inline]
    fn next_byte(&mut self) -> Option<u8> {
        let Some(&b) = self.data.get(self.pos) else {
            self.ended = true;
            return None;
        };
        if b != 0xFF {
            self.pos += 1;
            return Some(b);
        }
        let mut at = self.pos + 1;
        while self.data.get(at) == Some(&0xFF) {
            at += 1;
        }
        match self.data.get(at) {
            Some(0) => {
                self.pos = at + 1;
                Some(0xFF)
            }
            Some(&m) => {
                self.marker = Some((m, at - 1));
                None
            }
            None => {
                self.ended = true;
                None
            }
        }
    }

    /// Drops `k` bits (at most what `acc` holds), noting fill bits used.
    #[inline]
    fn consume(&mut self, k: u32) {
        self.acc <<= k;
        self.n -= k;
        if self.n < self.fill {
            self.fill = self.n;
            self.short = true;
        }
    }

    /// `k` bits (1..=16) as a number.
    #[inline]
    pub(super) fn bits(&mut self, k: u32) -> u32 {
        if self.n < k {
            self.refill();
        }
        let v = (self.acc >> (64 - k)) as u32;
        self.consume(k);
        v
    }

    /// The next symbol of `table`.
    #[inline]
    pub(super) fn decode(&mut self, table: &Table) -> u8 {
        if self.n < 17 {
            self.refill();
        }
        let look = (self.acc >> (64 - LOOKAHEAD)) as usize;
        let e = table.fast[look];
        if e != 0 {
            self.consume(u32::from(e >> 8));
            return e as u8;
        }
        for len in 1..=17u32 {
            let code = (self.acc >> (64 - len)) as i32;
            if code <= table.maxcode[len as usize] {
                self.consume(len);
                if len == 17 {
                    return 0; // No code matched: symbol 0, as libjpeg-turbo.
                }
                let at = code + table.offset[len as usize];
                return table.symbols[(at as usize).min(255)];
            }
        }
        unreachable!("maxcode[17] ends the search")
    }

    /// The restart: the bits left are dropped; the reader then stands at
    /// the marker it met, if any.
    pub(super) fn drop_bits(&mut self) {
        self.acc = 0;
        self.n = 0;
        self.fill = 0;
    }

    /// The next marker from where the reader stands, skipping what is not
    /// one (garbage, stuffed bytes): its code and where its `FF` is.
    pub(super) fn find_marker(&mut self) -> Option<(u8, usize)> {
        if self.marker.is_none() {
            self.marker = next_marker(self.data, self.pos).map(|(m, after)| (m, after - 2));
        }
        self.marker
    }

    /// Reads on after the marker met (a restart marker taken).
    pub(super) fn skip_marker(&mut self) {
        if let Some((_, at)) = self.marker.take() {
            // `at` is the `FF` just before the marker's code.
            self.pos = at + 2;
        }
    }

    /// Where reading stopped: at the marker met, or the next byte.
    pub(super) fn position(&self) -> usize {
        self.marker.map_or(self.pos, |(_, at)| at)
    }
}

/// The next marker in `data` from `at` (what is not one skipped: other
/// bytes, stuffed `FF 00`, fill `FF`s): its code and the index after it.
pub(super) fn next_marker(data: &[u8], mut at: usize) -> Option<(u8, usize)> {
    loop {
        while *data.get(at)? != 0xFF {
            at += 1;
        }
        while *data.get(at)? == 0xFF {
            at += 1;
        }
        if data[at] != 0 {
            return Some((data[at], at + 1));
        }
        at += 1;
    }
}

/// `HUFF_EXTEND`: `v` of `s` bits as a signed coefficient.
#[inline(always)]
pub(super) fn extend(v: u32, s: u32) -> i32 {
    let v = v as i32;
    if s == 0 {
        0
    } else if v < 1 << (s - 1) {
        v - (1 << s) + 1
    } else {
        v
    }
}
