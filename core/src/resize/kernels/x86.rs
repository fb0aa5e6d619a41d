//! SSE4.1 and AVX2 kernels: exact integer multiply-adds, several taps or pixels
//! per instruction.
//!
//! Pixels are widened from u8 and multiplied by the full 22-bit weights (as one
//! `pmulld`, or as the `256 * hi + lo` halves of `pmaddwd`), so the sums equal
//! the scalar ones; the final `>> 22` and the two saturating packs are the
//! scalar clamp to 0..=255.

use core::arch::x86_64::*;

use super::{Rows, v_row_scalar};
use crate::resize::coeffs::{HALF, PRECISION_BITS, Taps};

/// [`v_row_avx2`] for 16-bit weights of precision `p` (see
/// [`Taps::narrow`]): one `vpmaddwd` per pair of rows instead of two, 64
/// bytes a step, the rows addressed once per call.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn v_row_avx2_narrow(
    rows: &Rows<'_>,
    start: usize,
    k: &[i32],
    p: u32,
    out: &mut [u8],
) {
    let n = out.len();
    // Every row read exists and is at least `n` bytes long (the slicing
    // panics otherwise, as the safe kernels' would).
    let first = rows.from(start);
    if let Some(last) = k.len().checked_sub(1) {
        let _ = &first.row(last)[..n];
    } else {
        let _ = &first.data[..0];
    }
    let (base, stride) = (first.data.as_ptr(), rows.stride);
    let widen = PRECISION_BITS - p;
    let word = |a: i32, b: i32| ((a >> widen) & 0xffff) | ((b >> widen) << 16);
    let zero = _mm256_setzero_si256();
    let half = _mm256_set1_epi32(1 << (p - 1));
    let shift = _mm_cvtsi32_si128(p as i32);
    let mut x = 0;
    while x + 64 <= n {
        // acc[4h + i]: pixels 4i..4i+4 of each 16-pixel lane half of bytes 32h..32h+32.
        let mut acc = [half; 8];
        for (j, w) in k.chunks(2).enumerate() {
            let wq = _mm256_set1_epi32(word(w[0], w.get(1).copied().unwrap_or(0)));
            // SAFETY: rows `2j` and `2j + 1` (a lone last row pairs with
            // itself under a zero weight) are below `k.len()`, so they start
            // inside `first.data` with `n >= x + 64` bytes after them (checked above).
            let (r0, r1) = unsafe {
                let r0 = base.add(2 * j * stride + x);
                (r0, if w.len() == 2 { r0.add(stride) } else { r0 })
            };
            for h in 0..2 {
                // SAFETY: bytes `x + 32h .. x + 32h + 32` of both rows, in bounds as above.
                let (a, b) = unsafe {
                    (
                        _mm256_loadu_si256(r0.add(32 * h).cast()),
                        _mm256_loadu_si256(r1.add(32 * h).cast()),
                    )
                };
                let (l, hi) = (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b));
                let acc = &mut acc[4 * h..4 * h + 4];
                acc[0] =
                    _mm256_add_epi32(acc[0], _mm256_madd_epi16(_mm256_unpacklo_epi8(l, zero), wq));
                acc[1] =
                    _mm256_add_epi32(acc[1], _mm256_madd_epi16(_mm256_unpackhi_epi8(l, zero), wq));
                acc[2] = _mm256_add_epi32(
                    acc[2],
                    _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), wq),
                );
                acc[3] = _mm256_add_epi32(
                    acc[3],
                    _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), wq),
                );
            }
        }
        for h in 0..2 {
            let s0 = _mm256_sra_epi32(acc[4 * h], shift);
            let s1 = _mm256_sra_epi32(acc[4 * h + 1], shift);
            let s2 = _mm256_sra_epi32(acc[4 * h + 2], shift);
            let s3 = _mm256_sra_epi32(acc[4 * h + 3], shift);
            // Per lane: (0-3, 4-7) and (8-11, 12-15), then bytes 0-15: in order.
            let bytes = _mm256_packus_epi16(_mm256_packs_epi32(s0, s1), _mm256_packs_epi32(s2, s3));
            let dst = &mut out[x + 32 * h..x + 32 * h + 32];
            // SAFETY: `dst` is exactly 32 bytes long.
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), bytes) };
        }
        x += 64;
    }
    // SAFETY: AVX2 implies SSE4.1.
    unsafe { v_row_sse41_from(rows, start, k, out, x) };
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn v_row_avx2(rows: &Rows<'_>, start: usize, k: &[i32], out: &mut [u8]) {
    // Two rows per `vpmaddwd`: the (row t, row t + 1) pixel pairs times the weights
    // split as w = 256 * hi + lo (hi fits i16, lo is 0..=255), both sums exact in
    // i32. All shuffles stay inside 128-bit lanes, and so does the final packing.
    let word = |a: i32, b: i32| (a & 0xffff) | (b << 16);
    let zero = _mm256_setzero_si256();
    let n = out.len();
    let mut x = 0;
    while x + 32 <= n {
        // acc[i]: pixels 4i..4i+4 of each 16-pixel lane half.
        let mut hi = [zero; 4];
        let mut lo = [zero; 4];
        for (j, w) in k.chunks(2).enumerate() {
            let (w0, w1) = (w[0], w.get(1).copied().unwrap_or(0));
            let whi = _mm256_set1_epi32(word(w0 >> 8, w1 >> 8));
            let wlo = _mm256_set1_epi32(word(w0 & 0xff, w1 & 0xff));
            let r0 = &rows.row(start + 2 * j)[x..x + 32];
            // A lone last row pairs with itself under a zero weight.
            let r1 = &rows.row(start + 2 * j + usize::from(w.len() == 2))[x..x + 32];
            // SAFETY: `r0` and `r1` are exactly 32 bytes long.
            let (a, b) = unsafe {
                (
                    _mm256_loadu_si256(r0.as_ptr().cast()),
                    _mm256_loadu_si256(r1.as_ptr().cast()),
                )
            };
            let (l, h) = (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b));
            let pairs = [
                _mm256_unpacklo_epi8(l, zero),
                _mm256_unpackhi_epi8(l, zero),
                _mm256_unpacklo_epi8(h, zero),
                _mm256_unpackhi_epi8(h, zero),
            ];
            for (i, v) in pairs.into_iter().enumerate() {
                hi[i] = _mm256_add_epi32(hi[i], _mm256_madd_epi16(v, whi));
                lo[i] = _mm256_add_epi32(lo[i], _mm256_madd_epi16(v, wlo));
            }
        }
        let s: [__m256i; 4] = core::array::from_fn(|i| {
            let sum = _mm256_add_epi32(_mm256_slli_epi32::<8>(hi[i]), lo[i]);
            _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(_mm256_add_epi32(
                sum,
                _mm256_set1_epi32(HALF),
            ))
        });
        // Per lane: (0-3, 4-7) and (8-11, 12-15), then bytes 0-15: in order.
        let bytes = _mm256_packus_epi16(
            _mm256_packs_epi32(s[0], s[1]),
            _mm256_packs_epi32(s[2], s[3]),
        );
        let dst = &mut out[x..x + 32];
        // SAFETY: `dst` is exactly 32 bytes long.
        unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), bytes) };
        x += 32;
    }
    // SAFETY: AVX2 implies SSE4.1.
    unsafe { v_row_sse41_from(rows, start, k, out, x) };
}

#[target_feature(enable = "sse4.1")]
pub(super) unsafe fn v_row_sse41(rows: &Rows<'_>, start: usize, k: &[i32], out: &mut [u8]) {
    // SAFETY: the caller guarantees SSE4.1, as this function's contract requires.
    unsafe { v_row_sse41_from(rows, start, k, out, 0) }
}

#[target_feature(enable = "sse4.1")]
unsafe fn v_row_sse41_from(rows: &Rows<'_>, start: usize, k: &[i32], out: &mut [u8], from: usize) {
    let n = out.len();
    let mut x = from;
    while x + 16 <= n {
        let mut acc = [_mm_set1_epi32(HALF); 4];
        for (t, &kt) in k.iter().enumerate() {
            let row = &rows.row(start + t)[x..x + 16];
            // SAFETY: `row` is exactly 16 bytes long.
            let v = unsafe { _mm_loadu_si128(row.as_ptr().cast()) };
            let w = _mm_set1_epi32(kt);
            acc[0] = _mm_add_epi32(acc[0], _mm_mullo_epi32(_mm_cvtepu8_epi32(v), w));
            let v1 = _mm_srli_si128::<4>(v);
            acc[1] = _mm_add_epi32(acc[1], _mm_mullo_epi32(_mm_cvtepu8_epi32(v1), w));
            let v2 = _mm_srli_si128::<8>(v);
            acc[2] = _mm_add_epi32(acc[2], _mm_mullo_epi32(_mm_cvtepu8_epi32(v2), w));
            let v3 = _mm_srli_si128::<12>(v);
            acc[3] = _mm_add_epi32(acc[3], _mm_mullo_epi32(_mm_cvtepu8_epi32(v3), w));
        }
        let s = acc.map(|a| _mm_srai_epi32::<{ PRECISION_BITS as i32 }>(a));
        let bytes = _mm_packus_epi16(_mm_packs_epi32(s[0], s[1]), _mm_packs_epi32(s[2], s[3]));
        let dst = &mut out[x..x + 16];
        // SAFETY: `dst` is exactly 16 bytes long.
        unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), bytes) };
        x += 16;
    }
    v_row_scalar(rows, start, k, out, x);
}

/// One round of the byte-transpose butterfly: vector `2j` / `2j + 1` take the
/// low / high interleave of vectors `j` and `j + 4`. Viewing a byte's place as the
/// 7 bits (vector, byte), each round rotates them left by one.
#[inline(always)]
fn butterfly(v: [__m128i; 8]) -> [__m128i; 8] {
    // SAFETY: register shuffles only; the callers enable AVX2 (which implies SSE2).
    unsafe {
        [
            _mm_unpacklo_epi8(v[0], v[4]),
            _mm_unpackhi_epi8(v[0], v[4]),
            _mm_unpacklo_epi8(v[1], v[5]),
            _mm_unpackhi_epi8(v[1], v[5]),
            _mm_unpacklo_epi8(v[2], v[6]),
            _mm_unpackhi_epi8(v[2], v[6]),
            _mm_unpacklo_epi8(v[3], v[7]),
            _mm_unpackhi_epi8(v[3], v[7]),
        ]
    }
}

/// Interleaves eight rows (byte `i` of row `r` to `t[8 * i + r]`): three
/// butterfly rounds turn (row, byte) into (byte, row). SSE2, part of x86_64.
pub(super) fn interleave8(src: &[&[u8]; 8], t: &mut [u8]) {
    let len = src[0].len();
    let full = len / 16 * 16;
    for i in (0..full).step_by(16) {
        // SAFETY: each row has `len >= i + 16` bytes.
        let v: [__m128i; 8] =
            core::array::from_fn(|r| unsafe { _mm_loadu_si128(src[r][i..i + 16].as_ptr().cast()) });
        let v = butterfly(butterfly(butterfly(v)));
        for (j, v) in v.into_iter().enumerate() {
            let d = &mut t[8 * i + 16 * j..8 * i + 16 * j + 16];
            // SAFETY: `d` is exactly 16 bytes.
            unsafe { _mm_storeu_si128(d.as_mut_ptr().cast(), v) };
        }
    }
    super::interleave8_tail(src, t, full);
}

/// The inverse of [`interleave8`] into the first `m` (1..=8) of eight rows of
/// `len` bytes, `stride` apart: four butterfly rounds turn (byte, row) into
/// (row, byte).
pub(super) fn deinterleave8(o: &[u8], out: &mut [u8], m: usize, len: usize, stride: usize) {
    let full = len / 16 * 16;
    for i in (0..full).step_by(16) {
        let block = &o[8 * i..8 * i + 128];
        // SAFETY: `block` holds 128 bytes, eight loads of 16.
        let v: [__m128i; 8] =
            core::array::from_fn(|j| unsafe { _mm_loadu_si128(block[16 * j..].as_ptr().cast()) });
        let v = butterfly(butterfly(butterfly(butterfly(v))));
        for (r, v) in v.into_iter().enumerate().take(m) {
            let d = &mut out[r * stride + i..r * stride + i + 16];
            // SAFETY: `d` is exactly 16 bytes.
            unsafe { _mm_storeu_si128(d.as_mut_ptr().cast(), v) };
        }
    }
    super::deinterleave8_tail(o, out, m, len, stride, full);
}

/// Eight-row sums (see [`super::h_block`]): channel c of output x for all eight
/// rows in one vector. Two taps per `vpmaddwd`: the rows' (tap t, tap t + 1) pixel
/// pairs times the weights split as w = 256 * hi + lo (hi fits i16, lo is
/// 0..=255), both sums exact in i32. A spare tap past an odd count reads a real
/// pixel (or padding at the row end) that its zero weight cancels.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn sums8_avx2<const N: usize>(t: &[u8], o: &mut [u8], axis: &Taps<'_>) {
    for (x, ox) in o.chunks_exact_mut(8 * N).enumerate() {
        let first = 8 * N * axis.bounds[x].0 as usize;
        let mut acc_hi = [_mm256_setzero_si256(); N];
        let mut acc_lo = [_mm256_setzero_si256(); N];
        for (j, &[hi, lo]) in axis.pairs_at(x).iter().enumerate() {
            let whi = _mm256_set1_epi32(hi);
            let wlo = _mm256_set1_epi32(lo);
            let at = first + 16 * N * j;
            // Tap pair j of all channels; `t` has room for the spare tap (see `h_block`).
            let taps = &t[at..at + 16 * N];
            for c in 0..N {
                let ab = tap_pair::<N>(taps, c);
                let v = _mm256_cvtepu8_epi16(ab);
                acc_hi[c] = _mm256_add_epi32(acc_hi[c], _mm256_madd_epi16(v, whi));
                acc_lo[c] = _mm256_add_epi32(acc_lo[c], _mm256_madd_epi16(v, wlo));
            }
        }
        for c in 0..N {
            let sum = _mm256_add_epi32(_mm256_slli_epi32::<8>(acc_hi[c]), acc_lo[c]);
            let s = _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(_mm256_add_epi32(
                sum,
                _mm256_set1_epi32(HALF),
            ));
            let w16 = _mm_packs_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
            let bytes = _mm_cvtsi128_si64(_mm_packus_epi16(w16, w16));
            ox[8 * c..8 * c + 8].copy_from_slice(&bytes.to_le_bytes());
        }
    }
}

/// [`sums8_avx2`] for 16-bit weights of precision `p` (see [`Taps::narrow`]):
/// the pairs hold the weights themselves, one `vpmaddwd` per pair of taps.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn sums8_avx2_narrow<const N: usize>(
    t: &[u8],
    o: &mut [u8],
    axis: &Taps<'_>,
    p: u32,
) {
    let half = _mm256_set1_epi32(1 << (p - 1));
    let shift = _mm_cvtsi32_si128(p as i32);
    for (x, ox) in o.chunks_exact_mut(8 * N).enumerate() {
        let first = 8 * N * axis.bounds[x].0 as usize;
        let mut acc = [half; N];
        for (j, &[q, _]) in axis.pairs_at(x).iter().enumerate() {
            let w = _mm256_set1_epi32(q);
            let at = first + 16 * N * j;
            // Tap pair j of all channels; `t` has room for the spare tap (see `h_block`).
            let taps = &t[at..at + 16 * N];
            for (c, acc) in acc.iter_mut().enumerate() {
                let v = _mm256_cvtepu8_epi16(tap_pair::<N>(taps, c));
                *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(v, w));
            }
        }
        for (c, acc) in acc.into_iter().enumerate() {
            let s = _mm256_sra_epi32(acc, shift);
            let w16 = _mm_packs_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
            let bytes = _mm_cvtsi128_si64(_mm_packus_epi16(w16, w16));
            ox[8 * c..8 * c + 8].copy_from_slice(&bytes.to_le_bytes());
        }
    }
}

/// Channel `c` of a tap pair in the interleaved block: the 8 rows' bytes of the
/// first tap, then of the second, interleaved byte by byte (`a0 b0 a1 b1 ...`).
#[inline(always)]
fn tap_pair<const N: usize>(taps: &[u8], c: usize) -> __m128i {
    let a = i64::from_le_bytes(taps[8 * c..8 * c + 8].try_into().unwrap_or([0; 8]));
    let b = i64::from_le_bytes(
        taps[8 * (N + c)..8 * (N + c) + 8]
            .try_into()
            .unwrap_or([0; 8]),
    );
    // SAFETY: SSE2, part of every x86_64 target.
    unsafe { _mm_unpacklo_epi8(_mm_cvtsi64_si128(a), _mm_cvtsi64_si128(b)) }
}

/// [`sums8_avx2`] in 128-bit registers: rows 0-3 and 4-7 in two halves.
#[target_feature(enable = "sse4.1")]
pub(super) unsafe fn sums8_sse41<const N: usize>(t: &[u8], o: &mut [u8], axis: &Taps<'_>) {
    let zero = _mm_setzero_si128();
    // 16-bit weights come as `[q, 0]` pairs: the high sums are then the
    // sums of `q`, widened to 22 bits by the shift (the low ones stay 0).
    let widen = _mm_cvtsi32_si128(axis.narrow().map_or(8, |p| (PRECISION_BITS - p) as i32));
    for (x, ox) in o.chunks_exact_mut(8 * N).enumerate() {
        let first = 8 * N * axis.bounds[x].0 as usize;
        let mut acc_hi = [[zero; 2]; N];
        let mut acc_lo = [[zero; 2]; N];
        for (j, &[hi, lo]) in axis.pairs_at(x).iter().enumerate() {
            let whi = _mm_set1_epi32(hi);
            let wlo = _mm_set1_epi32(lo);
            let at = first + 16 * N * j;
            // Tap pair j of all channels; `t` has room for the spare tap (see `h_block`).
            let taps = &t[at..at + 16 * N];
            for c in 0..N {
                let ab = tap_pair::<N>(taps, c);
                let halves = [_mm_unpacklo_epi8(ab, zero), _mm_unpackhi_epi8(ab, zero)];
                for (h, v) in halves.into_iter().enumerate() {
                    acc_hi[c][h] = _mm_add_epi32(acc_hi[c][h], _mm_madd_epi16(v, whi));
                    acc_lo[c][h] = _mm_add_epi32(acc_lo[c][h], _mm_madd_epi16(v, wlo));
                }
            }
        }
        for c in 0..N {
            let s = [0, 1].map(|h| {
                let sum = _mm_add_epi32(_mm_sll_epi32(acc_hi[c][h], widen), acc_lo[c][h]);
                _mm_srai_epi32::<{ PRECISION_BITS as i32 }>(_mm_add_epi32(
                    sum,
                    _mm_set1_epi32(HALF),
                ))
            });
            let w16 = _mm_packs_epi32(s[0], s[1]);
            let bytes = _mm_cvtsi128_si64(_mm_packus_epi16(w16, w16));
            ox[8 * c..8 * c + 8].copy_from_slice(&bytes.to_le_bytes());
        }
    }
}
