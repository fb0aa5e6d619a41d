//! Conversions between the 8-bit packed colour layouts that only move bytes
//! (RGB, BGR, RGBA, BGRA, and gray spread into colour), 16 pixels at a time:
//! `pshufb` on x86 (in the AVX2 kernel's detection), `vld`/`vst` with 3 or 4
//! planes on NEON. The scalar [`super::packed_row`] is their twin and does
//! the rest of each row; the tests check the two agree.

/// Where each destination byte of a 16-pixel block comes from: the source
/// byte, or `None` for an alpha of 255.
#[derive(Clone, Copy, Debug)]
pub(super) struct Moves {
    /// Source bytes per pixel (1, 3 or 4) and destination bytes per pixel (3 or 4).
    pub(super) from_bpp: usize,
    pub(super) to_bpp: usize,
    /// Offsets of red, green, blue in a source pixel (0, 0, 0 for gray).
    pub(super) from_rgb: [usize; 3],
    pub(super) from_alpha: Option<usize>,
    /// Offsets of red, green, blue and alpha in a destination pixel.
    pub(super) to_rgb: [usize; 3],
    pub(super) to_alpha: Option<usize>,
}

/// A pair of layouts with its moves (and masks) as constants, so each
/// kernel is compiled for one pair: loop counts fixed, unused shuffles gone.
pub(super) trait Pair {
    const MOVES: Moves;
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    const MASKS: x86::Masks;
}

impl Moves {
    /// The source byte of destination byte `j` of a block (in pixel `j /
    /// to_bpp`), or `None` for an alpha of 255.
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    pub(super) const fn source(&self, j: usize) -> Option<usize> {
        let (p, o) = (j / self.to_bpp, j % self.to_bpp);
        let mut c = 0;
        while c < 3 {
            if self.to_rgb[c] == o {
                return Some(p * self.from_bpp + self.from_rgb[c]);
            }
            c += 1;
        }
        match (self.to_alpha, self.from_alpha) {
            (Some(to), Some(from)) if to == o => Some(p * self.from_bpp + from),
            _ => None,
        }
    }
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
pub(super) mod x86 {
    use core::arch::x86_64::*;

    use super::{Moves, Pair};

    /// `pshufb` masks: for destination block `b` (16 bytes) and source block
    /// `i`, the index of each byte in that source block (-128: not from it),
    /// and the alpha bytes (255) each destination block gets.
    pub(in crate::color) struct Masks {
        shuffle: [[[i8; 16]; 4]; 4],
        alpha: [[u8; 16]; 4],
        /// Whether destination block `b` takes bytes from source block `i`.
        uses: [[bool; 4]; 4],
        /// Whether destination block `b` has alpha bytes of 255.
        opaque: [bool; 4],
    }

    impl Masks {
        pub(in crate::color) const fn new(m: &Moves) -> Masks {
            let mut shuffle = [[[-128i8; 16]; 4]; 4];
            let mut alpha = [[0u8; 16]; 4];
            let mut uses = [[false; 4]; 4];
            let mut opaque = [false; 4];
            let mut j = 0;
            while j < 16 * m.to_bpp {
                match m.source(j) {
                    Some(s) => {
                        shuffle[j / 16][s / 16][j % 16] = (s % 16) as i8;
                        uses[j / 16][s / 16] = true;
                    }
                    None => {
                        alpha[j / 16][j % 16] = 255;
                        opaque[j / 16] = true;
                    }
                }
                j += 1;
            }
            Masks {
                shuffle,
                alpha,
                uses,
                opaque,
            }
        }
    }

    /// Moves the bytes of the first whole blocks of 16 pixels of `src` into
    /// `out`; returns the pixels done.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2 (SSSE3's `pshufb` is all this uses).
    #[target_feature(enable = "avx2")]
    pub(in crate::color) unsafe fn row<P: Pair>(src: &[u8], out: &mut [u8]) -> usize {
        let (m, k) = (&P::MOVES, &P::MASKS);
        let w = (src.len() / m.from_bpp).min(out.len() / m.to_bpp);
        let mut x = 0;
        while x + 16 <= w {
            let input = &src[x * m.from_bpp..(x + 16) * m.from_bpp];
            let output = &mut out[x * m.to_bpp..(x + 16) * m.to_bpp];
            let mut blocks = [_mm_setzero_si128(); 4];
            for (i, block) in blocks.iter_mut().enumerate().take(m.from_bpp) {
                let bytes = &input[16 * i..16 * i + 16];
                // SAFETY: `bytes` is 16 readable bytes.
                *block = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
            }
            for b in 0..m.to_bpp {
                let mut acc = _mm_setzero_si128();
                if k.opaque[b] {
                    // SAFETY: the masks are 16 bytes each.
                    acc = unsafe { _mm_loadu_si128(k.alpha[b].as_ptr().cast()) };
                }
                for (i, block) in blocks.iter().enumerate().take(m.from_bpp) {
                    if k.uses[b][i] {
                        // SAFETY: as above.
                        let mask = unsafe { _mm_loadu_si128(k.shuffle[b][i].as_ptr().cast()) };
                        acc = _mm_or_si128(acc, _mm_shuffle_epi8(*block, mask));
                    }
                }
                let dst = &mut output[16 * b..16 * b + 16];
                // SAFETY: `dst` is 16 writable bytes.
                unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), acc) };
            }
            x += 16;
        }
        x
    }
}

#[cfg(target_arch = "aarch64")]
pub(super) mod neon {
    use core::arch::aarch64::*;

    use super::Pair;

    /// Moves the bytes of the first whole blocks of 16 pixels of `src` into
    /// `out`; returns the pixels done.
    pub(in crate::color) fn row<P: Pair>(src: &[u8], out: &mut [u8]) -> usize {
        let m = &P::MOVES;
        let w = (src.len() / m.from_bpp).min(out.len() / m.to_bpp);
        let mut x = 0;
        while x + 16 <= w {
            let input = &src[x * m.from_bpp..(x + 16) * m.from_bpp];
            let output = &mut out[x * m.to_bpp..(x + 16) * m.to_bpp];
            // SAFETY: NEON is part of the aarch64 target; `input` holds 16
            // source pixels and `output` 16 destination pixels, the sizes the
            // 1-, 3- and 4-plane loads and the 3- and 4-plane stores move.
            unsafe {
                let opaque = vdupq_n_u8(255);
                let planes = match m.from_bpp {
                    1 => {
                        let v = vld1q_u8(input.as_ptr());
                        [v, v, v, opaque]
                    }
                    3 => {
                        let v = vld3q_u8(input.as_ptr());
                        [v.0, v.1, v.2, opaque]
                    }
                    _ => {
                        let v = vld4q_u8(input.as_ptr());
                        [v.0, v.1, v.2, v.3]
                    }
                };
                let colour = |c: usize| planes[m.from_rgb[c]];
                let alpha = m.from_alpha.map_or(opaque, |a| planes[a]);
                let mut to = [opaque; 4];
                for c in 0..3 {
                    to[m.to_rgb[c]] = colour(c);
                }
                if let Some(a) = m.to_alpha {
                    to[a] = alpha;
                }
                if m.to_bpp == 3 {
                    vst3q_u8(output.as_mut_ptr(), uint8x16x3_t(to[0], to[1], to[2]));
                } else {
                    vst4q_u8(
                        output.as_mut_ptr(),
                        uint8x16x4_t(to[0], to[1], to[2], to[3]),
                    );
                }
            }
            x += 16;
        }
        x
    }
}
