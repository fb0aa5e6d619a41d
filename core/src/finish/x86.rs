//! The float32 finish with AVX2 and FMA: 8 RGB or RGBA pixels (16 gray) per step,
//! split into their colours, each lane computed with the fused operations of
//! [`super::arith::Channel::apply`] (so each equals the table).

use core::arch::x86_64::*;

use super::arith::Channel;

/// `vpshufb` masks putting source byte `k` (0-2) of 8 packed 3-byte pixels
/// into the low byte of 32-bit lane `i` (the other bytes zero), from their 24
/// bytes loaded as two overlapping 16-byte lanes: bytes 0-15 (pixels 0-3 at
/// 0-11) and bytes 8-23 (pixels 4-7 at 4-15). One in-lane shuffle per colour
/// then replaces a gather, a byte split and two widenings.
const fn gather_masks() -> [[i8; 32]; 3] {
    let mut m = [[-128i8; 32]; 3];
    let mut k = 0;
    while k < 3 {
        let mut i = 0;
        while i < 4 {
            m[k][4 * i] = (k + 3 * i) as i8;
            m[k][16 + 4 * i] = (4 + k + 3 * i) as i8;
            i += 1;
        }
        k += 1;
    }
    m
}
const GATHER: [[i8; 32]; 3] = gather_masks();

/// `vpshufb` masks for the interleaved output with red and blue swapped:
/// float `8g + i` (`g` 0-5, `i` 0-7) of 16 pixels is byte `j = 8g + i` of
/// their 48 with its pixel's bytes reversed, source byte `3 (j / 3) + 2 -
/// j % 3`. Group `g` loads 16 bytes at [`REVERSE_AT`]`[g].0` into the low
/// lane (floats 0-3) and at `.1` into the high lane (floats 4-7); each
/// float's source byte lies within its lane's 16 (it is at most 2 bytes from
/// `j`, and `j` is 4 to 7 bytes past its lane's start, less at the ends).
const fn reverse_masks() -> [[i8; 32]; 6] {
    let mut m = [[-128i8; 32]; 6];
    let mut g = 0;
    while g < 6 {
        let mut i = 0;
        while i < 8 {
            let j = 8 * g + i;
            let from = j / 3 * 3 + 2 - j % 3;
            let start = if i < 4 {
                REVERSE_AT[g].0
            } else {
                REVERSE_AT[g].1
            };
            m[g][4 * i] = (from - start) as i8;
            i += 1;
        }
        g += 1;
    }
    m
}
/// Where group `g`'s two 16-byte lanes start within the 48 bytes.
const REVERSE_AT: [(usize, usize); 6] = [(0, 0), (4, 8), (12, 16), (20, 24), (28, 32), (32, 32)];
const REVERSE: [[i8; 32]; 6] = reverse_masks();

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
    ///
    /// Built with `_mm256_setr_ps` rather than loaded from arrays: a vector
    /// load from eight scalar stores just made cannot be forwarded and
    /// stalls, once per row.
    #[inline(always)]
    unsafe fn of(c: [&Channel; 8]) -> Lanes {
        /// # Safety
        ///
        /// The CPU must have AVX.
        #[inline(always)]
        unsafe fn set(v: [f32; 8]) -> __m256 {
            // SAFETY: the caller runs with AVX enabled.
            unsafe { _mm256_setr_ps(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]) }
        }
        // SAFETY: the caller runs with AVX enabled.
        unsafe {
            Lanes {
                divisor_hi: set(c.map(|c| c.divisor.hi)),
                divisor_lo: set(c.map(|c| c.divisor.lo)),
                mean: set(c.map(|c| c.mean)),
                std_hi: set(c.map(|c| c.std.hi)),
                std_lo: set(c.map(|c| c.std.lo)),
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

/// A 32-byte shuffle mask.
#[inline(always)]
unsafe fn load32(m: &[i8; 32]) -> __m256i {
    // SAFETY: `m` is 32 readable bytes; the caller runs with AVX enabled.
    unsafe { _mm256_loadu_si256(m.as_ptr().cast()) }
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
    // No closures here or below: a closure is compiled without this
    // function's features, so the intrinsics in it are calls, once per row.
    let lanes = unsafe {
        [
            Lanes::new(channels[0]),
            Lanes::new(channels[1]),
            Lanes::new(channels[2]),
        ]
    };
    let mut x = 0;
    if bpp == 3 {
        // SAFETY: each mask is 32 bytes.
        let masks = unsafe { [load32(&GATHER[0]), load32(&GATHER[1]), load32(&GATHER[2])] };
        while x + 8 <= w {
            let bytes = &row[3 * x..3 * x + 24];
            // SAFETY: `bytes` is 24 readable bytes: the two 16-byte loads are
            // its bytes 0-15 and 8-23.
            unsafe {
                let v = _mm256_loadu2_m128i(bytes[8..].as_ptr().cast(), bytes.as_ptr().cast());
                for (k, out) in [&mut *o0, &mut *o1, &mut *o2].into_iter().enumerate() {
                    store8(out, x, lanes[k].apply(_mm256_shuffle_epi8(v, masks[k])));
                }
            }
            x += 8;
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
    let from = |s: usize| -> [&Channel; 8] { core::array::from_fn(|i| channels[(s + i) % 3]) };
    // No closures calling intrinsics (see `planes`).
    // SAFETY: AVX is enabled (this function's features).
    let patterns = unsafe { [Lanes::of(from(0)), Lanes::of(from(2)), Lanes::of(from(1))] };
    // SAFETY: as above; each mask is 32 bytes.
    let masks = unsafe {
        [
            load32(&REVERSE[0]),
            load32(&REVERSE[1]),
            load32(&REVERSE[2]),
            load32(&REVERSE[3]),
            load32(&REVERSE[4]),
            load32(&REVERSE[5]),
        ]
    };
    let mut x = 0;
    while x + 16 <= w {
        let bytes = &row[3 * x..3 * x + 48];
        let out = &mut out[3 * x..3 * x + 48];
        for g in 0..6 {
            // SAFETY: `bytes` is 48 readable bytes and `out` 48 writable
            // floats; every load below lies within the 48 bytes.
            unsafe {
                let v = if reverse {
                    let (low, high) = REVERSE_AT[g];
                    let v = _mm256_loadu2_m128i(
                        bytes[high..].as_ptr().cast(),
                        bytes[low..].as_ptr().cast(),
                    );
                    _mm256_shuffle_epi8(v, masks[g])
                } else {
                    _mm256_cvtepu8_epi32(_mm_loadl_epi64(bytes[8 * g..].as_ptr().cast()))
                };
                store8(out, 8 * g, patterns[g % 3].apply(v));
            }
        }
        x += 16;
    }
    x
}
