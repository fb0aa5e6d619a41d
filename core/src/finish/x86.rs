//! The float32 finish with AVX2 and FMA: 16 RGB or 8 RGBA pixels per step,
//! split into their colours, each lane computed with the fused operations of
//! [`super::arith::Channel::apply`] (so each equals the table).

use core::arch::x86_64::*;

use super::arith::Channel;

/// `pshufb` masks gathering source byte `k` (0-2) of 16 packed 3-byte pixels
/// from the 16-byte block `b` of the 48 bytes (-128: none from this block).
const fn split_masks() -> [[[i8; 16]; 3]; 3] {
    let mut m = [[[-128i8; 16]; 3]; 3];
    let mut k = 0;
    while k < 3 {
        let mut j = 0;
        while j < 16 {
            let at = k + 3 * j;
            m[k][at / 16][j] = (at % 16) as i8;
            j += 1;
        }
        k += 1;
    }
    m
}
const SPLIT: [[[i8; 16]; 3]; 3] = split_masks();

/// `pshufb` masks reversing the 3 bytes of each of 16 packed pixels: output
/// block `b` takes from input block `i` the bytes of `REVERSE[b][i]`.
const fn reverse_masks() -> [[[i8; 16]; 3]; 3] {
    let mut m = [[[-128i8; 16]; 3]; 3];
    let mut at = 0;
    while at < 48 {
        let from = at / 3 * 3 + (2 - at % 3);
        m[at / 16][from / 16][at % 16] = (from % 16) as i8;
        at += 1;
    }
    m
}
const REVERSE: [[[i8; 16]; 3]; 3] = reverse_masks();

/// One colour's constants in every lane.
#[derive(Clone, Copy)]
struct Lanes {
    divisor_hi: __m256,
    divisor_lo: __m256,
    mean: __m256,
    std_hi: __m256,
    std_lo: __m256,
}

impl Lanes {
    #[inline(always)]
    unsafe fn new(c: &Channel) -> Lanes {
        // SAFETY: the caller runs with AVX enabled.
        unsafe { Lanes::of([c; 8]) }
    }

    /// Lane `i` with `c[i]`'s constants.
    #[inline(always)]
    unsafe fn of(c: [&Channel; 8]) -> Lanes {
        let f = |g: fn(&Channel) -> f32| c.map(g);
        // SAFETY: the caller runs with AVX enabled; each array is 8 floats.
        unsafe {
            let load = |v: [f32; 8]| _mm256_loadu_ps(v.as_ptr());
            Lanes {
                divisor_hi: load(f(|c| c.divisor.hi)),
                divisor_lo: load(f(|c| c.divisor.lo)),
                mean: load(f(|c| c.mean)),
                std_hi: load(f(|c| c.std.hi)),
                std_lo: load(f(|c| c.std.lo)),
            }
        }
    }

    /// [`Channel::apply`] on 8 byte values (as `i32` lanes).
    #[inline(always)]
    unsafe fn apply(&self, v: __m256i) -> __m256 {
        // SAFETY: the caller runs with AVX2 and FMA enabled.
        unsafe {
            let x = _mm256_cvtepi32_ps(v);
            let q = _mm256_fmadd_ps(x, self.divisor_hi, _mm256_mul_ps(x, self.divisor_lo));
            let d = _mm256_sub_ps(q, self.mean);
            _mm256_fmadd_ps(d, self.std_hi, _mm256_mul_ps(d, self.std_lo))
        }
    }
}

/// Stores 8 floats at `out[x..x + 8]`.
#[inline(always)]
unsafe fn store8(out: &mut [f32], x: usize, v: __m256) {
    let out = &mut out[x..x + 8];
    // SAFETY: `out` is 8 writable floats; unaligned store.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) }
}

/// Finishes the first pixels of `row` (`bpp` 1, 3 or 4 bytes each): source
/// byte `k` of each (byte 0 for gray) into `outs[k]` with `channels[k]`.
/// Stops before the last partial step and returns the pixels done.
///
/// # Safety
///
/// The CPU must have AVX2 and FMA. Every `outs[k]` is as long as the row
/// has pixels.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn planes(
    row: &[u8],
    bpp: usize,
    outs: [&mut [f32]; 3],
    channels: [&Channel; 3],
) -> usize {
    let [o0, o1, o2] = outs;
    let w = o0.len().min(o1.len()).min(o2.len()).min(row.len() / bpp);
    // SAFETY: AVX is enabled (this function's features).
    let lanes = channels.map(|c| unsafe { Lanes::new(c) });
    let mut x = 0;
    if bpp == 3 {
        while x + 16 <= w {
            let bytes = &row[3 * x..3 * x + 48];
            // SAFETY: `bytes` is 48 readable bytes; the masks are 16 bytes.
            unsafe {
                let blocks = [0, 16, 32].map(|at| _mm_loadu_si128(bytes[at..].as_ptr().cast()));
                for (k, out) in [&mut *o0, &mut *o1, &mut *o2].into_iter().enumerate() {
                    let pick = |b: usize| {
                        let m = _mm_loadu_si128(SPLIT[k][b].as_ptr().cast());
                        _mm_shuffle_epi8(blocks[b], m)
                    };
                    let v = _mm_or_si128(_mm_or_si128(pick(0), pick(1)), pick(2));
                    let lo = _mm256_cvtepu8_epi32(v);
                    let hi = _mm256_cvtepu8_epi32(_mm_srli_si128::<8>(v));
                    store8(out, x, lanes[k].apply(lo));
                    store8(out, x + 8, lanes[k].apply(hi));
                }
            }
            x += 16;
        }
    } else if bpp == 1 {
        while x + 16 <= w {
            let bytes = &row[x..x + 16];
            // SAFETY: `bytes` is 16 readable bytes.
            unsafe {
                let v = _mm_loadu_si128(bytes.as_ptr().cast());
                let lo = _mm256_cvtepu8_epi32(v);
                let hi = _mm256_cvtepu8_epi32(_mm_srli_si128::<8>(v));
                for (k, out) in [&mut *o0, &mut *o1, &mut *o2].into_iter().enumerate() {
                    store8(out, x, lanes[k].apply(lo));
                    store8(out, x + 8, lanes[k].apply(hi));
                }
            }
            x += 16;
        }
    } else if bpp == 4 {
        while x + 8 <= w {
            let bytes = &row[4 * x..4 * x + 32];
            // SAFETY: `bytes` is 32 readable bytes.
            unsafe {
                let px = _mm256_loadu_si256(bytes.as_ptr().cast());
                let low = _mm256_set1_epi32(0xff);
                store8(o0, x, lanes[0].apply(_mm256_and_si256(px, low)));
                let g = _mm256_and_si256(_mm256_srli_epi32::<8>(px), low);
                store8(o1, x, lanes[1].apply(g));
                let b = _mm256_and_si256(_mm256_srli_epi32::<16>(px), low);
                store8(o2, x, lanes[2].apply(b));
            }
            x += 8;
        }
    }
    x
}

/// Finishes the first bytes of a gray `row` into `out` with `channel`;
/// returns the pixels done.
///
/// # Safety
///
/// The CPU must have AVX2 and FMA. `out` is as long as the row.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn plane(row: &[u8], out: &mut [f32], channel: &Channel) -> usize {
    let w = out.len().min(row.len());
    // SAFETY: AVX is enabled (this function's features).
    let lanes = unsafe { Lanes::new(channel) };
    let mut x = 0;
    while x + 16 <= w {
        let bytes = &row[x..x + 16];
        // SAFETY: `bytes` is 16 readable bytes.
        unsafe {
            let v = _mm_loadu_si128(bytes.as_ptr().cast());
            store8(out, x, lanes.apply(_mm256_cvtepu8_epi32(v)));
            let hi = _mm256_cvtepu8_epi32(_mm_srli_si128::<8>(v));
            store8(out, x + 8, lanes.apply(hi));
        }
        x += 16;
    }
    x
}

/// Finishes the first pixels of `row` (3 bytes each) into `out`, 3 floats
/// per pixel: output channel `j` from source byte `sources[j]` with
/// `channels[j]` (`sources` is `[0, 1, 2]` or, swapping red and blue,
/// `[2, 1, 0]`). Returns the pixels done (0 for other sources).
///
/// # Safety
///
/// The CPU must have AVX2 and FMA. `out` holds 3 floats per pixel of the row.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn interleaved(
    row: &[u8],
    out: &mut [f32],
    sources: [usize; 3],
    channels: [&Channel; 3],
) -> usize {
    let reverse = match sources {
        [0, 1, 2] => false,
        [2, 1, 0] => true,
        _ => return 0,
    };
    let w = (out.len() / 3).min(row.len() / 3);
    // Lane `i` of an 8-float group starting at channel `s` is channel
    // `(s + i) % 3`; groups start at channels 0, 2, 1, 0, 2, 1.
    // SAFETY: AVX is enabled (this function's features).
    let patterns =
        [0, 2, 1].map(|s| unsafe { Lanes::of(core::array::from_fn(|i| channels[(s + i) % 3])) });
    let mut x = 0;
    while x + 16 <= w {
        let bytes = &row[3 * x..3 * x + 48];
        let out = &mut out[3 * x..3 * x + 48];
        // SAFETY: `bytes` is 48 readable bytes and `out` 48 writable floats;
        // the masks are 16 bytes each.
        unsafe {
            let mut blocks = [0, 16, 32].map(|at| _mm_loadu_si128(bytes[at..].as_ptr().cast()));
            if reverse {
                let input = blocks;
                blocks = core::array::from_fn(|b| {
                    let pick = |i: usize| {
                        let m = _mm_loadu_si128(REVERSE[b][i].as_ptr().cast());
                        _mm_shuffle_epi8(input[i], m)
                    };
                    _mm_or_si128(_mm_or_si128(pick(0), pick(1)), pick(2))
                });
            }
            for (g, half) in blocks
                .iter()
                .flat_map(|&v| [v, _mm_srli_si128::<8>(v)])
                .enumerate()
            {
                let v = patterns[g % 3].apply(_mm256_cvtepu8_epi32(half));
                store8(out, 8 * g, v);
            }
        }
        x += 16;
    }
    x
}
