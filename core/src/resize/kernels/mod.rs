//! The two convolution kernels of the exact resampler, one horizontal row and one
//! vertical row at a time, with a scalar reference and SIMD versions chosen once
//! at run time ([`Simd::detect`], in [`crate::cpu`]).
//!
//! Every version computes the same integer sums as Pillow (`u8` pixel times
//! 22-bit weight, accumulated in `i32` from a rounding half), only more of them at
//! once, so the vector paths are bit-identical to the scalar one by construction;
//! the tests below check that on random rows and weights anyway.

use super::coeffs::{HALF, Taps, clip8};
use crate::arena::Scratch;
use crate::rows::Rows;

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use crate::cpu::Simd;

/// Which build of the float resamplers' loops (PyTorch's float path, OpenCV's
/// `INTER_AREA`) a run takes: chosen once per run from the plan's [`Simd`],
/// so a plan pinned to another path runs the portable loops too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FloatPath {
    /// The loops as written, for any CPU.
    Portable,
    /// Compiled for AVX2 (x86_64).
    Avx2,
    /// Compiled for AVX2 and FMA (x86_64).
    Avx2Fma,
}

impl Simd {
    /// The float loops' build for this path.
    pub(super) fn float_path(self) -> FloatPath {
        match self {
            Simd::Avx2 if self.fma() => FloatPath::Avx2Fma,
            Simd::Avx2 => FloatPath::Avx2,
            _ => FloatPath::Portable,
        }
    }
}

/// The horizontal pass of `m` (1..=8) rows `rows.row(0..m)` into `m` rows of
/// `out`, `out_stride` apart (the last one exactly `axis.bounds.len() * n` bytes).
///
/// On the SIMD paths the rows are first interleaved (byte `i` of row `r` at
/// `8 * i + r`; a partial block repeats its last row), so one 8-byte load holds
/// the same tap of all eight rows: the sums then run with every vector lane
/// useful and no per-pixel horizontal reduction, instead of gathering 3 or 4
/// bytes per tap. The results are interleaved the same way and transposed back.
/// Same integer sums as the scalar kernel.
#[allow(clippy::too_many_arguments)]
pub(super) fn h_block(
    simd: Simd,
    n: usize,
    rows: &Rows<'_>,
    m: usize,
    out: &mut [u8],
    out_stride: usize,
    axis: &Taps<'_>,
    scratch: &mut impl Scratch,
) {
    debug_assert!(simd.is_available() && (1..=8).contains(&m));
    let (in_len, out_len) = (rows.len, axis.outputs() * n);
    if simd == Simd::Scalar || !matches!(n, 1 | 3 | 4) {
        for r in 0..m {
            let o = &mut out[r * out_stride..r * out_stride + out_len];
            match n {
                1 => h_row_scalar::<1>(rows.row(r), o, axis),
                3 => h_row_scalar::<3>(rows.row(r), o, axis),
                _ => h_row_scalar::<4>(rows.row(r), o, axis),
            }
        }
        return;
    }
    // The interleaved rows, then room for the spare tap an odd tap count reads
    // past the row end (multiplied by a zero weight), then the interleaved results.
    let t_len = 8 * in_len + 8 * 4;
    let need = t_len + 8 * out_len;
    let (t, o) = scratch.grow(need).split_at_mut(t_len);
    let src: [&[u8]; 8] = core::array::from_fn(|r| rows.row(r.min(m - 1)));
    #[cfg(target_arch = "x86_64")]
    {
        x86::interleave8(&src, &mut t[..8 * in_len]);
        // SAFETY: plans only hold a `Simd` whose `is_available()` returned true
        // (checked in `ResizePlan::with_simd`); on x86_64 that is SSE4.1 or AVX2.
        unsafe {
            match (simd, n, axis.narrow()) {
                (Simd::Avx2, 1, Some(p)) => x86::sums8_avx2_narrow::<1>(t, o, axis, p),
                (Simd::Avx2, 3, Some(p)) => x86::sums8_avx2_narrow::<3>(t, o, axis, p),
                (Simd::Avx2, _, Some(p)) => x86::sums8_avx2_narrow::<4>(t, o, axis, p),
                (Simd::Avx2, 1, None) => x86::sums8_avx2::<1>(t, o, axis),
                (Simd::Avx2, 3, None) => x86::sums8_avx2::<3>(t, o, axis),
                (Simd::Avx2, _, None) => x86::sums8_avx2::<4>(t, o, axis),
                (_, 1, _) => x86::sums8_sse41::<1>(t, o, axis),
                (_, 3, _) => x86::sums8_sse41::<3>(t, o, axis),
                _ => x86::sums8_sse41::<4>(t, o, axis),
            }
        }
        x86::deinterleave8(o, out, m, out_len, out_stride);
    }
    #[cfg(target_arch = "aarch64")]
    {
        neon::interleave8(&src, &mut t[..8 * in_len]);
        match (n, axis.narrow()) {
            (1, Some(p)) => neon::sums8_narrow::<1>(t, o, axis, p),
            (3, Some(p)) => neon::sums8_narrow::<3>(t, o, axis, p),
            (_, Some(p)) => neon::sums8_narrow::<4>(t, o, axis, p),
            (1, None) => neon::sums8::<1>(t, o, axis),
            (3, None) => neon::sums8::<3>(t, o, axis),
            (_, None) => neon::sums8::<4>(t, o, axis),
        }
        neon::deinterleave8(o, out, m, out_len, out_stride);
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // No SIMD path exists on this architecture, so `simd` is `Scalar` above.
        let _ = (src, t, o);
    }
}

/// Eight rows of equal length interleaved byte by byte (byte `i` of row `r`
/// to `t[8 * i + r]`, `t` at least eight rows long), with the vector
/// transposes of [`h_block`] where the architecture has them. The float
/// resamplers read a tap of eight rows as one eight-byte load.
pub(super) fn interleave8(src: &[&[u8]; 8], t: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    x86::interleave8(src, t);
    #[cfg(target_arch = "aarch64")]
    neon::interleave8(src, t);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    interleave8_tail(src, t, 0);
}

/// Scalar end of [`h_block`]'s interleave, from byte `from` on.
fn interleave8_tail(src: &[&[u8]; 8], t: &mut [u8], from: usize) {
    for i in from..src[0].len() {
        for (r, s) in src.iter().enumerate() {
            t[8 * i + r] = s[i];
        }
    }
}

/// Scalar end of [`h_block`]'s de-interleave into `m` rows, from byte `from` on.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
fn deinterleave8_tail(o: &[u8], out: &mut [u8], m: usize, len: usize, stride: usize, from: usize) {
    for i in from..len {
        for r in 0..m {
            out[r * stride + i] = o[8 * i + r];
        }
    }
}

/// One vertical pass row: `out[x] = clip8(HALF + sum_t rows.row(start + t)[x] * k[t])`,
/// `narrow` the axis's [`Taps::narrow`] (the AVX2 and NEON kernels have
/// 16-bit weight versions).
pub(super) fn v_row(
    simd: Simd,
    rows: &Rows<'_>,
    start: usize,
    k: &[i32],
    narrow: Option<u32>,
    out: &mut [u8],
) {
    debug_assert!(simd.is_available());
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = narrow; // no vector kernel here
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: plans only hold a `Simd` whose `is_available()` returned true.
        Simd::Avx2 => unsafe {
            match narrow {
                Some(p) => x86::v_row_avx2_narrow(rows, start, k, p, out),
                None => x86::v_row_avx2(rows, start, k, out),
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Simd::Sse41 => unsafe { x86::v_row_sse41(rows, start, k, out) },
        #[cfg(target_arch = "aarch64")]
        Simd::Neon => match narrow {
            Some(p) => neon::v_row_narrow(rows, start, k, p, out),
            None => neon::v_row(rows, start, k, out),
        },
        _ => v_row_scalar(rows, start, k, out, 0),
    }
}

/// One horizontal pass row, the reference arithmetic: `src` holds whole source
/// pixels of `N` bytes, `out` receives `axis.bounds.len()` pixels.
fn h_row_scalar<const N: usize>(src: &[u8], out: &mut [u8], axis: &Taps<'_>) {
    for (i, o) in out.chunks_exact_mut(N).enumerate() {
        let (start, k) = axis.at(i);
        let mut ss = [HALF; N];
        for (p, &w) in src[start * N..].chunks_exact(N).zip(k) {
            for (s, &v) in ss.iter_mut().zip(p) {
                *s += i32::from(v) * w;
            }
        }
        for (o, s) in o.iter_mut().zip(ss) {
            *o = clip8(s);
        }
    }
}

/// The vertical pass from byte `from` on, in blocks small enough for the stack.
pub(super) fn v_row_scalar(rows: &Rows<'_>, start: usize, k: &[i32], out: &mut [u8], from: usize) {
    const BLOCK: usize = 256;
    let mut acc = [0i32; BLOCK];
    let mut x0 = from;
    while x0 < out.len() {
        let n = BLOCK.min(out.len() - x0);
        let acc = &mut acc[..n];
        acc.fill(HALF);
        for (t, &w) in k.iter().enumerate() {
            for (a, &p) in acc.iter_mut().zip(&rows.row(start + t)[x0..x0 + n]) {
                *a += i32::from(p) * w;
            }
        }
        for (o, &a) in out[x0..x0 + n].iter_mut().zip(acc.iter()) {
            *o = clip8(a);
        }
        x0 += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::resize::Filter;
    use crate::resize::coeffs::Quantize;
    use alloc::vec;
    use alloc::vec::Vec;

    /// A small xorshift, so the test needs no dependency.
    fn noise(seed: u64, len: usize) -> Vec<u8> {
        let mut s = seed | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                // Mostly extremes, so negative lobes push sums past 0 and 255.
                match s % 4 {
                    0 => 0,
                    1 => 255,
                    _ => (s >> 24) as u8,
                }
            })
            .collect()
    }

    #[test]
    fn every_simd_path_matches_scalar_bit_for_bit() {
        let filters = [
            Filter::Box,
            Filter::Bilinear,
            Filter::Hamming,
            Filter::Bicubic,
            Filter::Lanczos3,
        ];
        let sizes = [
            (1, 1),
            (1, 7),
            (7, 1),
            (5, 3),
            (17, 64),
            (64, 17),
            (97, 31),
            (300, 7),
            (33, 133),
        ];
        let mut cases = 0;
        // Pillow's 22-bit weights and the 16-bit ones of PyTorch and
        // fast_image_resize (their own kernels on AVX2).
        let quantizations = [Quantize::Pillow, Quantize::TorchInt16, Quantize::Fir];
        for simd in Simd::available().filter(|&s| s != Simd::Scalar) {
            for (fi, &f) in filters.iter().enumerate() {
                for (si, &(w_in, w_out)) in sizes.iter().enumerate() {
                    for q in quantizations {
                        let table = crate::resize::coeffs::Axis::new(
                            w_in,
                            (0.0, w_in as f32),
                            w_out,
                            f,
                            q,
                            &Limits::DEFAULT,
                        )
                        .unwrap();
                        assert_eq!(table.taps().narrow().is_some(), q != Quantize::Pillow);
                        let axis = table.taps();
                        // Blocks of eight rows and partial ones, rows `stride` apart.
                        for n in [1usize, 3, 4] {
                            let len = w_in as usize * n;
                            let stride = len + 5;
                            let data = noise((fi * 31 + si * 7 + n) as u64, stride * 11);
                            let rows = Rows {
                                data: &data,
                                stride,
                                len,
                            };
                            let out_len = w_out as usize * n;
                            for m in [1, 3, 7, 8] {
                                let mut a = vec![1u8; 8 * out_len];
                                for (r, o) in a.chunks_exact_mut(out_len).take(m).enumerate() {
                                    h_row_scalar_n(n, rows.row(2 + r), o, &axis);
                                }
                                // Rows past `m` keep their 1s in both: nothing is written there.
                                let mut b = vec![1u8; 8 * out_len];
                                h_block(
                                    simd,
                                    n,
                                    &rows.from(2),
                                    m,
                                    &mut b,
                                    out_len,
                                    &axis,
                                    &mut Vec::new(),
                                );
                                assert_eq!(
                                    a, b,
                                    "h {simd:?} {f:?} {q:?} n={n} m={m} {w_in}->{w_out}"
                                );
                                cases += 1;
                            }
                        }
                        // Vertical: w_in rows of an odd width, sampled by the table.
                        for width in [1usize, 15, 16, 33, 100] {
                            let stride = width + 3;
                            let data = noise((fi * 7 + si + width) as u64, stride * w_in as usize);
                            let rows = Rows {
                                data: &data,
                                stride,
                                len: width,
                            };
                            for y in 0..w_out as usize {
                                let (start, k) = axis.at(y);
                                let mut a = vec![0u8; width];
                                let mut b = vec![1u8; width];
                                v_row_scalar(&rows, start, k, &mut a, 0);
                                v_row(simd, &rows, start, k, axis.narrow(), &mut b);
                                assert_eq!(
                                    a, b,
                                    "v {simd:?} {f:?} {q:?} {w_in}->{w_out} y={y} width={width}"
                                );
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        // On x86_64 with std at least SSE4.1 is present on any CPU this runs on.
        #[cfg(all(target_arch = "x86_64", feature = "std"))]
        assert!(cases > 0, "no SIMD path was available to test");
        let _ = cases;
    }

    fn h_row_scalar_n(n: usize, src: &[u8], out: &mut [u8], axis: &Taps<'_>) {
        match n {
            1 => h_row_scalar::<1>(src, out, axis),
            3 => h_row_scalar::<3>(src, out, axis),
            _ => h_row_scalar::<4>(src, out, axis),
        }
    }
}
