//! The two convolution kernels of the exact resampler, one horizontal row and one
//! vertical row at a time, with a scalar reference and SIMD versions chosen once
//! at run time ([`Simd::detect`]).
//!
//! Every version computes the same integer sums as Pillow (`u8` pixel times
//! 22-bit weight, accumulated in `i32` from a rounding half), only more of them at
//! once, so the vector paths are bit-identical to the scalar one by construction;
//! the tests below check that on random rows and weights anyway.

use super::coeffs::{Axis, HALF, clip8};

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Which instruction set the resampler's inner loops use.
///
/// [`Simd::detect`] picks the best one the CPU has; a plan can be pinned to
/// another ([`crate::resize::ResizePlan::with_simd`]) to compare them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Simd {
    /// Portable Rust, the reference every other path is tested against.
    Scalar,
    /// x86_64 SSE4.1 (128-bit integer multiply).
    Sse41,
    /// x86_64 AVX2 (256-bit).
    Avx2,
    /// aarch64 NEON (128-bit).
    Neon,
}

impl Simd {
    /// The fastest path this CPU supports (detected at run time with `std`, from
    /// the compile-time target features without it).
    pub fn detect() -> Simd {
        [Simd::Avx2, Simd::Sse41, Simd::Neon]
            .into_iter()
            .find(|s| s.is_available())
            .unwrap_or(Simd::Scalar)
    }

    /// Whether this CPU can run the path.
    pub fn is_available(self) -> bool {
        match self {
            Simd::Scalar => true,
            #[cfg(all(target_arch = "x86_64", feature = "std"))]
            Simd::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(all(target_arch = "x86_64", feature = "std"))]
            Simd::Sse41 => std::arch::is_x86_feature_detected!("sse4.1"),
            #[cfg(all(target_arch = "x86_64", not(feature = "std")))]
            Simd::Avx2 => cfg!(target_feature = "avx2"),
            #[cfg(all(target_arch = "x86_64", not(feature = "std")))]
            Simd::Sse41 => cfg!(target_feature = "sse4.1"),
            #[cfg(target_arch = "aarch64")]
            Simd::Neon => cfg!(target_feature = "neon"),
            _ => false,
        }
    }
}

/// Rows of a plane: row `i` is `data[i * stride..][..len]`.
#[derive(Clone, Copy)]
pub(super) struct Rows<'a> {
    pub(super) data: &'a [u8],
    pub(super) stride: usize,
    pub(super) len: usize,
}

impl<'a> Rows<'a> {
    /// The rows from `y` on.
    #[inline(always)]
    pub(super) fn from(&self, y: usize) -> Rows<'a> {
        Rows {
            data: &self.data[y * self.stride..],
            ..*self
        }
    }

    #[inline(always)]
    pub(super) fn row(&self, i: usize) -> &'a [u8] {
        &self.data[i * self.stride..][..self.len]
    }
}

/// One horizontal pass row: `src` holds whole source pixels of `n` bytes, `out`
/// receives `axis.bounds.len()` pixels.
pub(super) fn h_row(simd: Simd, n: usize, src: &[u8], out: &mut [u8], axis: &Axis) {
    debug_assert!(simd.is_available());
    match (simd, n) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: plans only hold a `Simd` whose `is_available()` returned true
        // (checked in `ResizePlan::with_simd`), so the CPU has AVX2.
        (Simd::Avx2, 1) => unsafe { x86::h_row_avx2::<1>(src, out, axis) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Simd::Avx2, 3) => unsafe { x86::h_row_avx2::<3>(src, out, axis) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Simd::Avx2, 4) => unsafe { x86::h_row_avx2::<4>(src, out, axis) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for SSE4.1.
        (Simd::Sse41, 1) => unsafe { x86::h_row_sse41::<1>(src, out, axis) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for SSE4.1.
        (Simd::Sse41, 3) => unsafe { x86::h_row_sse41::<3>(src, out, axis) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for SSE4.1.
        (Simd::Sse41, 4) => unsafe { x86::h_row_sse41::<4>(src, out, axis) },
        #[cfg(target_arch = "aarch64")]
        (Simd::Neon, 3) => neon::h_row::<3>(src, out, axis),
        #[cfg(target_arch = "aarch64")]
        (Simd::Neon, 4) => neon::h_row::<4>(src, out, axis),
        (_, 1) => h_row_scalar::<1>(src, out, axis),
        (_, 3) => h_row_scalar::<3>(src, out, axis),
        (_, 4) => h_row_scalar::<4>(src, out, axis),
        _ => unreachable!("packed formats have 1, 3 or 4 bytes per pixel"),
    }
}

/// The horizontal pass of eight rows `rows.row(0..8)` into eight rows of
/// `out` (`out_stride` apart), where a path has an eight-row kernel. Returns
/// `false` (and writes nothing) where it has none.
///
/// The rows are first interleaved (byte `i` of row `r` at `8 * i + r`), so one
/// 8-byte load holds the same tap of all eight rows: the sums then run with every
/// vector lane useful and no per-pixel horizontal reduction, instead of gathering
/// 3 or 4 bytes per tap. The results are interleaved the same way and
/// transposed back. Same integer sums as the scalar kernel.
pub(super) fn h_block8(
    simd: Simd,
    n: usize,
    rows: &Rows<'_>,
    out: &mut [u8],
    out_stride: usize,
    axis: &Axis,
    scratch: &mut alloc::vec::Vec<u8>,
) -> bool {
    debug_assert!(simd.is_available());
    if !matches!(n, 1 | 3 | 4) || !matches!(simd, Simd::Avx2 | Simd::Sse41 | Simd::Neon) {
        return false;
    }
    let (in_len, out_len) = (rows.len, axis.bounds.len() * n);
    // The interleaved rows, then room for the spare tap an odd tap count reads
    // past the row end (multiplied by a zero weight), then the interleaved results.
    let t_len = 8 * in_len + 8 * 4;
    let need = t_len + 8 * out_len;
    if scratch.len() < need {
        scratch.resize(need, 0);
    }
    let (t, o) = scratch[..need].split_at_mut(t_len);
    let src: [&[u8]; 8] = core::array::from_fn(|r| rows.row(r));
    #[cfg(target_arch = "x86_64")]
    {
        x86::interleave8(&src, &mut t[..8 * in_len]);
        // SAFETY: plans only hold a `Simd` whose `is_available()` returned true.
        unsafe {
            match (simd, n) {
                (Simd::Avx2, 1) => x86::sums8_avx2::<1>(t, o, axis),
                (Simd::Avx2, 3) => x86::sums8_avx2::<3>(t, o, axis),
                (Simd::Avx2, 4) => x86::sums8_avx2::<4>(t, o, axis),
                (_, 1) => x86::sums8_sse41::<1>(t, o, axis),
                (_, 3) => x86::sums8_sse41::<3>(t, o, axis),
                _ => x86::sums8_sse41::<4>(t, o, axis),
            }
        }
        x86::deinterleave8(o, out, out_len, out_stride);
    }
    #[cfg(target_arch = "aarch64")]
    {
        neon::interleave8(&src, &mut t[..8 * in_len]);
        match n {
            1 => neon::sums8::<1>(t, o, axis),
            3 => neon::sums8::<3>(t, o, axis),
            _ => neon::sums8::<4>(t, o, axis),
        }
        neon::deinterleave8(o, out, out_len, out_stride);
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (src, t, o, out, out_stride);
        return false;
    }
    true
}

/// Scalar end of [`h_block8`]'s interleave, from byte `from` on.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
fn interleave8_tail(src: &[&[u8]; 8], t: &mut [u8], from: usize) {
    for i in from..src[0].len() {
        for (r, s) in src.iter().enumerate() {
            t[8 * i + r] = s[i];
        }
    }
}

/// Scalar end of [`h_block8`]'s de-interleave, from byte `from` on.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
fn deinterleave8_tail(o: &[u8], out: &mut [u8], len: usize, stride: usize, from: usize) {
    for i in from..len {
        for r in 0..8 {
            out[r * stride + i] = o[8 * i + r];
        }
    }
}

/// One vertical pass row: `out[x] = clip8(HALF + sum_t rows.row(start + t)[x] * k[t])`.
pub(super) fn v_row(simd: Simd, rows: &Rows<'_>, start: usize, k: &[i32], out: &mut [u8]) {
    debug_assert!(simd.is_available());
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: plans only hold a `Simd` whose `is_available()` returned true.
        Simd::Avx2 => unsafe { x86::v_row_avx2(rows, start, k, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Simd::Sse41 => unsafe { x86::v_row_sse41(rows, start, k, out) },
        #[cfg(target_arch = "aarch64")]
        Simd::Neon => neon::v_row(rows, start, k, out),
        _ => v_row_scalar(rows, start, k, out, 0),
    }
}

/// One output pixel of the horizontal pass, the reference arithmetic.
#[inline(always)]
pub(super) fn h_pixel_scalar<const N: usize>(src: &[u8], start: usize, k: &[i32], out: &mut [u8]) {
    let mut ss = [HALF; N];
    for (p, &w) in src[start * N..].chunks_exact(N).zip(k) {
        for (s, &v) in ss.iter_mut().zip(p) {
            *s += i32::from(v) * w;
        }
    }
    for (o, s) in out.iter_mut().zip(ss) {
        *o = clip8(s);
    }
}

pub(super) fn h_row_scalar<const N: usize>(src: &[u8], out: &mut [u8], axis: &Axis) {
    for (i, o) in out.chunks_exact_mut(N).enumerate() {
        let (start, k) = axis.taps(i);
        h_pixel_scalar::<N>(src, start, k, o);
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

    fn others() -> Vec<Simd> {
        [Simd::Sse41, Simd::Avx2, Simd::Neon]
            .into_iter()
            .filter(|s| s.is_available())
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
        for simd in others() {
            for (fi, &f) in filters.iter().enumerate() {
                for (si, &(w_in, w_out)) in sizes.iter().enumerate() {
                    let axis =
                        Axis::new(w_in, 0.0, w_in as f32, w_out, f, &Limits::DEFAULT).unwrap();
                    for n in [1usize, 3, 4] {
                        let src = noise((fi * 100 + si * 10 + n) as u64, w_in as usize * n);
                        let mut a = vec![0u8; w_out as usize * n];
                        let mut b = vec![1u8; w_out as usize * n];
                        h_row_scalar_n(n, &src, &mut a, &axis);
                        h_row(simd, n, &src, &mut b, &axis);
                        assert_eq!(a, b, "h {simd:?} {f:?} n={n} {w_in}->{w_out}");
                        cases += 1;
                    }
                    // Eight rows at once, where the path has such a kernel.
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
                        let mut a = vec![0u8; 8 * out_len];
                        for (r, o) in a.chunks_exact_mut(out_len).enumerate() {
                            h_row_scalar_n(n, rows.row(2 + r), o, &axis);
                        }
                        let mut b = vec![1u8; 8 * out_len];
                        if h_block8(
                            simd,
                            n,
                            &rows.from(2),
                            &mut b,
                            out_len,
                            &axis,
                            &mut Vec::new(),
                        ) {
                            assert_eq!(a, b, "h8 {simd:?} {f:?} n={n} {w_in}->{w_out}");
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
                            let (start, k) = axis.taps(y);
                            let mut a = vec![0u8; width];
                            let mut b = vec![1u8; width];
                            v_row_scalar(&rows, start, k, &mut a, 0);
                            v_row(simd, &rows, start, k, &mut b);
                            assert_eq!(
                                a, b,
                                "v {simd:?} {f:?} {w_in}->{w_out} y={y} width={width}"
                            );
                            cases += 1;
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

    fn h_row_scalar_n(n: usize, src: &[u8], out: &mut [u8], axis: &Axis) {
        match n {
            1 => h_row_scalar::<1>(src, out, axis),
            3 => h_row_scalar::<3>(src, out, axis),
            _ => h_row_scalar::<4>(src, out, axis),
        }
    }
}
