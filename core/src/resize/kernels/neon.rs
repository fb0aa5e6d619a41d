//! NEON kernels (aarch64, where NEON is part of the base instruction set):
//! u8 widened to i32 and multiplied by the full weights with `vmlaq_n_s32`, so
//! the sums equal the scalar ones; 16-bit weights multiply u8 widened to i16
//! with `vmlal_n_s16` and shift by their own precision, the same pixels.

use core::arch::aarch64::*;

use super::{Rows, v_row_scalar};
use crate::resize::coeffs::{HALF, PRECISION_BITS, Taps};

/// Sixteen shifted sums clamped to 0..=255 into `dst` (16 bytes): saturating
/// narrows, negative to 0 (i32 -> u16), above 255 to 255 (u16 -> u8).
#[inline(always)]
fn store16(s: [int32x4_t; 4], dst: &mut [u8]) {
    // SAFETY: register arithmetic, and a 16-byte store into the 16-byte `dst`
    // (the slice index panics before it otherwise).
    unsafe {
        let lo = vcombine_u16(vqmovun_s32(s[0]), vqmovun_s32(s[1]));
        let hi = vcombine_u16(vqmovun_s32(s[2]), vqmovun_s32(s[3]));
        vst1q_u8(
            dst[..16].as_mut_ptr(),
            vcombine_u8(vqmovn_u16(lo), vqmovn_u16(hi)),
        );
    }
}

/// [`v_row`] for 16-bit weights of precision `p` (see [`Taps::narrow`]):
/// pixels widened to 16 bits and multiplied by the weight with one
/// `vmlal` per four lanes, no second widening.
pub(super) fn v_row_narrow(rows: &Rows<'_>, start: usize, k: &[i32], p: u32, out: &mut [u8]) {
    let widen = PRECISION_BITS - p;
    let n = out.len();
    let mut x = 0;
    while x + 16 <= n {
        // SAFETY: register arithmetic and loads/stores of exactly 16 bytes from
        // slices of 16 bytes.
        unsafe {
            let mut acc = [vdupq_n_s32(1 << (p - 1)); 4];
            for (t, &kt) in k.iter().enumerate() {
                let q = (kt >> widen) as i16;
                let row = &rows.row(start + t)[x..x + 16];
                let v = vld1q_u8(row.as_ptr());
                let lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v)));
                let hi = vreinterpretq_s16_u16(vmovl_high_u8(v));
                acc[0] = vmlal_n_s16(acc[0], vget_low_s16(lo), q);
                acc[1] = vmlal_high_n_s16(acc[1], lo, q);
                acc[2] = vmlal_n_s16(acc[2], vget_low_s16(hi), q);
                acc[3] = vmlal_high_n_s16(acc[3], hi, q);
            }
            let shift = vdupq_n_s32(-(p as i32));
            store16(acc.map(|a| vshlq_s32(a, shift)), &mut out[x..x + 16]);
        }
        x += 16;
    }
    v_row_scalar(rows, start, k, out, x);
}

pub(super) fn v_row(rows: &Rows<'_>, start: usize, k: &[i32], out: &mut [u8]) {
    let n = out.len();
    let mut x = 0;
    while x + 16 <= n {
        // SAFETY: register arithmetic and loads/stores of exactly 16 bytes from
        // slices of 16 bytes.
        unsafe {
            let mut acc = [vdupq_n_s32(HALF); 4];
            for (t, &kt) in k.iter().enumerate() {
                let row = &rows.row(start + t)[x..x + 16];
                let v = vld1q_u8(row.as_ptr());
                let lo = vmovl_u8(vget_low_u8(v));
                let hi = vmovl_u8(vget_high_u8(v));
                let q = [
                    vmovl_u16(vget_low_u16(lo)),
                    vmovl_u16(vget_high_u16(lo)),
                    vmovl_u16(vget_low_u16(hi)),
                    vmovl_u16(vget_high_u16(hi)),
                ];
                for (a, q) in acc.iter_mut().zip(q) {
                    *a = vmlaq_n_s32(*a, vreinterpretq_s32_u32(q), kt);
                }
            }
            let s = acc.map(|a| vshrq_n_s32::<{ PRECISION_BITS as i32 }>(a));
            store16(s, &mut out[x..x + 16]);
        }
        x += 16;
    }
    v_row_scalar(rows, start, k, out, x);
}

/// One butterfly round on eight 16-byte vectors: vector `2j` / `2j + 1` take the
/// low / high interleave of vectors `j` and `j + 4` (see the x86 version).
#[inline(always)]
fn butterfly(v: [uint8x16_t; 8]) -> [uint8x16_t; 8] {
    // SAFETY: register shuffles only; NEON is part of aarch64.
    unsafe {
        [
            vzip1q_u8(v[0], v[4]),
            vzip2q_u8(v[0], v[4]),
            vzip1q_u8(v[1], v[5]),
            vzip2q_u8(v[1], v[5]),
            vzip1q_u8(v[2], v[6]),
            vzip2q_u8(v[2], v[6]),
            vzip1q_u8(v[3], v[7]),
            vzip2q_u8(v[3], v[7]),
        ]
    }
}

/// Interleaves eight rows (byte `i` of row `r` to `t[8 * i + r]`).
pub(super) fn interleave8(src: &[&[u8]; 8], t: &mut [u8]) {
    let len = src[0].len();
    let full = len / 16 * 16;
    for i in (0..full).step_by(16) {
        // SAFETY: each row has `len >= i + 16` bytes; stores write 16-byte slices.
        unsafe {
            let v: [uint8x16_t; 8] = core::array::from_fn(|r| vld1q_u8(src[r][i..i + 16].as_ptr()));
            let v = butterfly(butterfly(butterfly(v)));
            for (j, v) in v.into_iter().enumerate() {
                vst1q_u8(t[8 * i + 16 * j..8 * i + 16 * j + 16].as_mut_ptr(), v);
            }
        }
    }
    super::interleave8_tail(src, t, full);
}

/// The inverse of [`interleave8`] into the first `m` (1..=8) of eight rows of
/// `len` bytes, `stride` apart.
pub(super) fn deinterleave8(o: &[u8], out: &mut [u8], m: usize, len: usize, stride: usize) {
    let full = len / 16 * 16;
    for i in (0..full).step_by(16) {
        let block = &o[8 * i..8 * i + 128];
        // SAFETY: `block` holds 128 bytes; stores write 16-byte slices.
        unsafe {
            let v: [uint8x16_t; 8] =
                core::array::from_fn(|j| vld1q_u8(block[16 * j..16 * j + 16].as_ptr()));
            let v = butterfly(butterfly(butterfly(butterfly(v))));
            for (r, v) in v.into_iter().enumerate().take(m) {
                vst1q_u8(out[r * stride + i..r * stride + i + 16].as_mut_ptr(), v);
            }
        }
    }
    super::deinterleave8_tail(o, out, m, len, stride, full);
}

/// [`sums8`] for 16-bit weights of precision `p` (see [`Taps::narrow`]):
/// each tap one `vmlal` per four rows on pixels widened once.
pub(super) fn sums8_narrow<const N: usize>(t: &[u8], o: &mut [u8], axis: &Taps<'_>, p: u32) {
    let widen = PRECISION_BITS - p;
    for (x, ox) in o.chunks_exact_mut(8 * N).enumerate() {
        let (start, k) = axis.at(x);
        let taps = &t[8 * N * start..8 * N * (start + k.len())];
        // SAFETY: register arithmetic, and 8-byte loads from 8-byte slices.
        unsafe {
            let mut acc = [[vdupq_n_s32(1 << (p - 1)); 2]; N];
            for (tap, &w) in taps.chunks_exact(8 * N).zip(k) {
                let q = (w >> widen) as i16;
                for (c, a) in acc.iter_mut().enumerate() {
                    let px =
                        vreinterpretq_s16_u16(vmovl_u8(vld1_u8(tap[8 * c..8 * c + 8].as_ptr())));
                    a[0] = vmlal_n_s16(a[0], vget_low_s16(px), q);
                    a[1] = vmlal_high_n_s16(a[1], px, q);
                }
            }
            let shift = vdupq_n_s32(-(p as i32));
            for (c, a) in acc.iter().enumerate() {
                let lo = vqmovun_s32(vshlq_s32(a[0], shift));
                let hi = vqmovun_s32(vshlq_s32(a[1], shift));
                vst1_u8(
                    ox[8 * c..8 * c + 8].as_mut_ptr(),
                    vqmovn_u16(vcombine_u16(lo, hi)),
                );
            }
        }
    }
}

/// Eight-row sums: channel c of output x for all eight rows, in two vectors of
/// four i32 lanes, each tap a `vmlaq_n_s32` with the full weight.
pub(super) fn sums8<const N: usize>(t: &[u8], o: &mut [u8], axis: &Taps<'_>) {
    for (x, ox) in o.chunks_exact_mut(8 * N).enumerate() {
        let (start, k) = axis.at(x);
        let taps = &t[8 * N * start..8 * N * (start + k.len())];
        // SAFETY: register arithmetic, and 8-byte loads from 8-byte slices.
        unsafe {
            let mut acc = [[vdupq_n_s32(HALF); 2]; N];
            for (tap, &w) in taps.chunks_exact(8 * N).zip(k) {
                for (c, a) in acc.iter_mut().enumerate() {
                    let p = vmovl_u8(vld1_u8(tap[8 * c..8 * c + 8].as_ptr()));
                    let lo = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(p)));
                    let hi = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(p)));
                    a[0] = vmlaq_n_s32(a[0], lo, w);
                    a[1] = vmlaq_n_s32(a[1], hi, w);
                }
            }
            for (c, a) in acc.iter().enumerate() {
                let lo = vqmovun_s32(vshrq_n_s32::<{ PRECISION_BITS as i32 }>(a[0]));
                let hi = vqmovun_s32(vshrq_n_s32::<{ PRECISION_BITS as i32 }>(a[1]));
                vst1_u8(
                    ox[8 * c..8 * c + 8].as_mut_ptr(),
                    vqmovn_u16(vcombine_u16(lo, hi)),
                );
            }
        }
    }
}
