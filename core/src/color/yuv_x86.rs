//! The 4:2:0 to RGB kernel with AVX2: 16 pixels per step, the same 32-bit
//! fixed-point arithmetic as the scalar code (`vpmulld`), the clamp done by the
//! saturating packs, so every byte equals the scalar result. Sums stay below
//! 2^30 for both matrices (20-bit limited range: 239 * 1.16 + 127 * 2.02 < 600
//! in units of 2^20), so nothing overflows.

use core::arch::x86_64::*;

use super::{I420, NV12, PER_PIXEL, YuvMatrix};

/// `pshufb` indices duplicating each of the first 8 bytes (`0 0 1 1 ... 7 7`),
/// and picking, then duplicating, the even or odd bytes of 8 pairs.
const DUP: [i8; 16] = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7];
const EVEN: [i8; 16] = [0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14];
const ODD: [i8; 16] = [1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15];

/// `pshufb` masks interleaving three 16-byte planes into 48 bytes: for output
/// block `k` and plane `p`, the source index of each byte or -128 (zero).
const fn rgb_masks() -> [[[i8; 16]; 3]; 3] {
    let mut m = [[[-128i8; 16]; 3]; 3];
    let mut k = 0;
    while k < 3 {
        let mut j = 0;
        while j < 16 {
            let index = k * 16 + j;
            m[k][index % 3][j] = (index / 3) as i8;
            j += 1;
        }
        k += 1;
    }
    m
}
const RGB_MASKS: [[[i8; 16]; 3]; 3] = rgb_masks();

/// Loads 16 bytes from `s` (at least 16 long).
#[inline(always)]
unsafe fn load16(s: &[u8]) -> __m128i {
    let s = &s[..16];
    // SAFETY: `s` is 16 readable bytes; unaligned load.
    unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
}

/// Loads 8 bytes from `s` (at least 8 long) into the low half.
#[inline(always)]
unsafe fn load8(s: &[u8]) -> __m128i {
    let s = &s[..8];
    // SAFETY: `s` is 8 readable bytes; the load reads 8.
    unsafe { _mm_loadl_epi64(s.as_ptr().cast()) }
}

#[inline(always)]
unsafe fn mask(m: &[i8; 16]) -> __m128i {
    // SAFETY: `m` is 16 bytes.
    unsafe { _mm_loadu_si128(m.as_ptr().cast()) }
}

/// Per-pixel U and V (each duplicated for its pair of pixels, unless already
/// one per pixel), minus 128,
/// as two 8-lane halves each: `(u_lo, u_hi, v_lo, v_hi)`.
#[inline(always)]
unsafe fn chroma<const CHROMA: u8>(c1: &[u8], c2: &[u8]) -> [__m256i; 4] {
    // SAFETY: AVX2 is enabled by the caller; `c1` (and `c2` for I420) hold the
    // block's chroma: 16 bytes of pairs, 8 bytes per plane, or 16 per plane;
    // the loads are bounds-checked.
    unsafe {
        let (u, v) = match CHROMA {
            PER_PIXEL => (load16(c1), load16(c2)),
            I420 => {
                let d = mask(&DUP);
                (
                    _mm_shuffle_epi8(load8(c1), d),
                    _mm_shuffle_epi8(load8(c2), d),
                )
            }
            NV12 => {
                let pairs = load16(c1);
                (
                    _mm_shuffle_epi8(pairs, mask(&EVEN)),
                    _mm_shuffle_epi8(pairs, mask(&ODD)),
                )
            }
            _ => {
                let pairs = load16(c1);
                (
                    _mm_shuffle_epi8(pairs, mask(&ODD)),
                    _mm_shuffle_epi8(pairs, mask(&EVEN)),
                )
            }
        };
        let k128 = _mm256_set1_epi32(128);
        let widen = |x: __m128i| {
            (
                _mm256_sub_epi32(_mm256_cvtepu8_epi32(x), k128),
                _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128::<8>(x)), k128),
            )
        };
        let (u0, u1) = widen(u);
        let (v0, v1) = widen(v);
        [u0, u1, v0, v1]
    }
}

/// `(l + c) >> shift` for two 8-lane halves, clamped to 0..=255 and packed to 16 bytes.
#[inline(always)]
unsafe fn channel(l0: __m256i, l1: __m256i, c0: __m256i, c1: __m256i, shift: __m128i) -> __m128i {
    // SAFETY: AVX2 is enabled by the caller.
    unsafe {
        let a = _mm256_sra_epi32(_mm256_add_epi32(l0, c0), shift);
        let b = _mm256_sra_epi32(_mm256_add_epi32(l1, c1), shift);
        // Saturating packs: i32 -> i16 (the values fit), then i16 -> u8 clamps to 0..=255.
        let w = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(a, b));
        _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w))
    }
}

/// Converts the first `16 * (luma.len() / 16)` pixels of a row into `out`
/// (`BPP` bytes per pixel, colours at `offsets`, alpha at 3 when `BPP == 4`).
/// Returns how many pixels it converted; the caller finishes the row.
///
/// # Safety
/// AVX2 must be available. `c1`/`c2` must hold the row's chroma as the scalar
/// code reads it, `out` at least `luma.len() * BPP` bytes.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn row<const BPP: usize, const CHROMA: u8>(
    luma: &[u8],
    c1: &[u8],
    c2: &[u8],
    out: &mut [u8],
    offsets: [usize; 3],
    m: &YuvMatrix,
) -> usize {
    let blocks = luma.len() / 16;
    let half = _mm256_set1_epi32(1 << (m.shift - 1));
    let shift = _mm_cvtsi32_si128(m.shift as i32);
    let zero = _mm256_setzero_si256();
    let y_off = _mm256_set1_epi32(m.y_off);
    let y_mul = _mm256_set1_epi32(m.y_mul);
    let r_v = _mm256_set1_epi32(m.r_v);
    let g_u = _mm256_set1_epi32(-m.g_u);
    let g_v = _mm256_set1_epi32(-m.g_v);
    let b_u = _mm256_set1_epi32(m.b_u);
    // Chroma bytes per block of 16 pixels: 8 pairs, 8 per plane, or 16 per plane.
    let cstep = if CHROMA == I420 { 8 } else { 16 };
    let planar = CHROMA == I420 || CHROMA == PER_PIXEL;
    for j in 0..blocks {
        // SAFETY: block `j` covers luma[16j..16j+16], chroma c1[cstep*j..][..cstep]
        // (and c2 likewise), out[16j*BPP..][..16*BPP], all in bounds by the
        // caller's contract and `blocks`.
        unsafe {
            let y = load16(&luma[16 * j..]);
            let luma_of = |x: __m128i| {
                // max(0, Y - y_off), as the scalar code.
                let d = _mm256_max_epi32(_mm256_sub_epi32(_mm256_cvtepu8_epi32(x), y_off), zero);
                _mm256_add_epi32(_mm256_mullo_epi32(d, y_mul), half)
            };
            let (l0, l1) = (luma_of(y), luma_of(_mm_srli_si128::<8>(y)));
            let c2 = if planar { &c2[cstep * j..] } else { c2 };
            let [u0, u1, v0, v1] = chroma::<CHROMA>(&c1[cstep * j..], c2);
            let mul = |a: __m256i, b: __m256i| _mm256_mullo_epi32(a, b);
            let r = channel(l0, l1, mul(r_v, v0), mul(r_v, v1), shift);
            let g = channel(
                l0,
                l1,
                _mm256_add_epi32(mul(g_u, u0), mul(g_v, v0)),
                _mm256_add_epi32(mul(g_u, u1), mul(g_v, v1)),
                shift,
            );
            let b = channel(l0, l1, mul(b_u, u0), mul(b_u, u1), shift);
            // The planes in the order their bytes come in a pixel.
            let mut planes = [r; 3];
            planes[offsets[0]] = r;
            planes[offsets[1]] = g;
            planes[offsets[2]] = b;
            let dst = out[16 * j * BPP..][..16 * BPP].as_mut_ptr();
            if BPP == 4 {
                let a = _mm_set1_epi8(-1);
                let (p01l, p01h) = (
                    _mm_unpacklo_epi8(planes[0], planes[1]),
                    _mm_unpackhi_epi8(planes[0], planes[1]),
                );
                let (p23l, p23h) = (
                    _mm_unpacklo_epi8(planes[2], a),
                    _mm_unpackhi_epi8(planes[2], a),
                );
                let quads = [
                    _mm_unpacklo_epi16(p01l, p23l),
                    _mm_unpackhi_epi16(p01l, p23l),
                    _mm_unpacklo_epi16(p01h, p23h),
                    _mm_unpackhi_epi16(p01h, p23h),
                ];
                for (k, q) in quads.iter().enumerate() {
                    _mm_storeu_si128(dst.add(16 * k).cast(), *q);
                }
            } else {
                for (k, masks) in RGB_MASKS.iter().enumerate() {
                    let v = _mm_or_si128(
                        _mm_or_si128(
                            _mm_shuffle_epi8(planes[0], mask(&masks[0])),
                            _mm_shuffle_epi8(planes[1], mask(&masks[1])),
                        ),
                        _mm_shuffle_epi8(planes[2], mask(&masks[2])),
                    );
                    _mm_storeu_si128(dst.add(16 * k).cast(), v);
                }
            }
        }
    }
    blocks * 16
}
