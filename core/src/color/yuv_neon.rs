//! The 4:2:0 to RGB kernel with NEON: 16 pixels per step, the same 32-bit
//! fixed-point arithmetic as the scalar code (`vmulq_s32`), the clamp done by
//! the saturating narrows, the interleaving by `vst3q_u8` / `vst4q_u8`; every
//! byte equals the scalar result.

use core::arch::aarch64::*;

use super::{I420, NV12, PER_PIXEL, YuvMatrix};

/// Each of 8 bytes twice, as 16 bytes: `x0 x0 x1 x1 ... x7 x7`.
#[inline(always)]
fn dup(x: uint8x8_t) -> uint8x16_t {
    // SAFETY: NEON is part of every aarch64 target.
    unsafe {
        let z = vzip_u8(x, x);
        vcombine_u8(z.0, z.1)
    }
}

/// The four 4-lane groups of 16 bytes, as i32 minus `sub`.
#[inline(always)]
fn widen(x: uint8x16_t, sub: int32x4_t) -> [int32x4_t; 4] {
    // SAFETY: NEON is part of every aarch64 target.
    unsafe {
        let lo = vmovl_u8(vget_low_u8(x));
        let hi = vmovl_u8(vget_high_u8(x));
        let w = |h: uint16x4_t| vsubq_s32(vreinterpretq_s32_u32(vmovl_u16(h)), sub);
        [
            w(vget_low_u16(lo)),
            w(vget_high_u16(lo)),
            w(vget_low_u16(hi)),
            w(vget_high_u16(hi)),
        ]
    }
}

/// `(l + c) >> shift` for 16 lanes, clamped to 0..=255 and narrowed to 16 bytes.
#[inline(always)]
fn channel(l: &[int32x4_t; 4], c: [int32x4_t; 4], shift: int32x4_t) -> uint8x16_t {
    // SAFETY: NEON is part of every aarch64 target.
    unsafe {
        // A negative count makes `vshlq_s32` an arithmetic shift right.
        let s = |i: usize| vshlq_s32(vaddq_s32(l[i], c[i]), shift);
        // Saturating narrows: i32 -> i16 (the values fit), then i16 -> u8 clamps to 0..=255.
        let a = vcombine_s16(vqmovn_s32(s(0)), vqmovn_s32(s(1)));
        let b = vcombine_s16(vqmovn_s32(s(2)), vqmovn_s32(s(3)));
        vcombine_u8(vqmovun_s16(a), vqmovun_s16(b))
    }
}

/// Converts the first `16 * (luma.len() / 16)` pixels of a row into `out`
/// (`BPP` 3 or 4 bytes per pixel, colours at `offsets`, alpha at 3); returns
/// how many it converted, the caller finishes the row.
pub(super) fn row<const BPP: usize, const CHROMA: u8>(
    luma: &[u8],
    c1: &[u8],
    c2: &[u8],
    out: &mut [u8],
    offsets: [usize; 3],
    m: &YuvMatrix,
) -> usize {
    let blocks = luma.len() / 16;
    let cstep = if CHROMA == I420 { 8 } else { 16 };
    // SAFETY: NEON is part of every aarch64 target; every load and store below
    // goes through a slice of exactly the length it touches (bounds-checked).
    unsafe {
        let half = vdupq_n_s32(1 << (m.shift - 1));
        let shift = vdupq_n_s32(-(m.shift as i32));
        let (y_off, zero, k128) = (vdupq_n_s32(m.y_off), vdupq_n_s32(0), vdupq_n_s32(128));
        let y_mul = vdupq_n_s32(m.y_mul);
        let (r_v, g_u, g_v, b_u) = (
            vdupq_n_s32(m.r_v),
            vdupq_n_s32(-m.g_u),
            vdupq_n_s32(-m.g_v),
            vdupq_n_s32(m.b_u),
        );
        for j in 0..blocks {
            let y = vld1q_u8(luma[16 * j..][..16].as_ptr());
            let l = widen(y, y_off).map(|d| vaddq_s32(vmulq_s32(vmaxq_s32(d, zero), y_mul), half));
            let (u, v) = match CHROMA {
                PER_PIXEL => (
                    vld1q_u8(c1[16 * j..][..16].as_ptr()),
                    vld1q_u8(c2[16 * j..][..16].as_ptr()),
                ),
                I420 => (
                    dup(vld1_u8(c1[8 * j..][..8].as_ptr())),
                    dup(vld1_u8(c2[8 * j..][..8].as_ptr())),
                ),
                _ => {
                    let pairs = vld2_u8(c1[cstep * j..][..16].as_ptr());
                    if CHROMA == NV12 {
                        (dup(pairs.0), dup(pairs.1))
                    } else {
                        (dup(pairs.1), dup(pairs.0))
                    }
                }
            };
            let (u, v) = (widen(u, k128), widen(v, k128));
            let mix = |a: int32x4_t, x: &[int32x4_t; 4], b: int32x4_t, y: &[int32x4_t; 4]| {
                [0, 1, 2, 3].map(|i| vaddq_s32(vmulq_s32(a, x[i]), vmulq_s32(b, y[i])))
            };
            let r = channel(&l, [0, 1, 2, 3].map(|i| vmulq_s32(r_v, v[i])), shift);
            let g = channel(&l, mix(g_u, &u, g_v, &v), shift);
            let b = channel(&l, [0, 1, 2, 3].map(|i| vmulq_s32(b_u, u[i])), shift);
            // The planes in the order their bytes come in a pixel.
            let mut planes = [r; 3];
            planes[offsets[0]] = r;
            planes[offsets[1]] = g;
            planes[offsets[2]] = b;
            let dst = out[16 * j * BPP..][..16 * BPP].as_mut_ptr();
            if BPP == 4 {
                vst4q_u8(
                    dst,
                    uint8x16x4_t(planes[0], planes[1], planes[2], vdupq_n_u8(255)),
                );
            } else {
                vst3q_u8(dst, uint8x16x3_t(planes[0], planes[1], planes[2]));
            }
        }
    }
    blocks * 16
}
