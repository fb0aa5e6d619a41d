//! The float32 finish with NEON: 16 RGB or RGBA pixels per step, split into
//! their colours by `vld3q_u8` / `vld4q_u8`, each lane computed with the
//! fused operations of [`super::arith::Channel::apply`] (so each equals the
//! table).

use core::arch::aarch64::*;

use super::arith::Channel;

/// One colour's constants in every lane.
#[derive(Clone, Copy)]
struct Lanes {
    divisor_hi: float32x4_t,
    divisor_lo: float32x4_t,
    mean: float32x4_t,
    std_hi: float32x4_t,
    std_lo: float32x4_t,
}

impl Lanes {
    #[inline(always)]
    unsafe fn new(c: &Channel) -> Lanes {
        // SAFETY: NEON is enabled on aarch64.
        unsafe {
            Lanes {
                divisor_hi: vdupq_n_f32(c.divisor.hi),
                divisor_lo: vdupq_n_f32(c.divisor.lo),
                mean: vdupq_n_f32(c.mean),
                std_hi: vdupq_n_f32(c.std.hi),
                std_lo: vdupq_n_f32(c.std.lo),
            }
        }
    }

    /// [`Channel::apply`] on 4 byte values (as `u32` lanes).
    #[inline(always)]
    unsafe fn apply(&self, v: uint32x4_t) -> float32x4_t {
        // SAFETY: NEON is enabled on aarch64; `vfmaq` is fused.
        unsafe {
            let x = vcvtq_f32_u32(v);
            let q = vfmaq_f32(vmulq_f32(x, self.divisor_lo), x, self.divisor_hi);
            let d = vsubq_f32(q, self.mean);
            vfmaq_f32(vmulq_f32(d, self.std_lo), d, self.std_hi)
        }
    }

    /// 16 bytes of this colour as 4 vectors of 4 floats.
    #[inline(always)]
    unsafe fn quarters(&self, v: uint8x16_t) -> [float32x4_t; 4] {
        // SAFETY: NEON is enabled.
        unsafe {
            let lo = vmovl_u8(vget_low_u8(v));
            let hi = vmovl_high_u8(v);
            [
                self.apply(vmovl_u16(vget_low_u16(lo))),
                self.apply(vmovl_high_u16(lo)),
                self.apply(vmovl_u16(vget_low_u16(hi))),
                self.apply(vmovl_high_u16(hi)),
            ]
        }
    }

    /// 16 bytes of this colour into `out[x..x + 16]`.
    #[inline(always)]
    unsafe fn store16(&self, v: uint8x16_t, out: &mut [f32], x: usize) {
        let out = &mut out[x..x + 16];
        // SAFETY: `out` is 16 writable floats; NEON is enabled.
        unsafe {
            for (i, q) in self.quarters(v).into_iter().enumerate() {
                vst1q_f32(out[4 * i..].as_mut_ptr(), q);
            }
        }
    }
}

/// Finishes the first pixels of `row` (`bpp` 1, 3 or 4 bytes each): source
/// byte `k` of each (byte 0 for gray) into `outs[k]` with `channels[k]`.
/// Stops before the last partial step and returns the pixels done.
///
/// # Safety
///
/// None beyond running on aarch64 (NEON is part of the target). Every
/// `outs[k]` is as long as the row has pixels.
pub(super) unsafe fn planes(
    row: &[u8],
    bpp: usize,
    outs: [&mut [f32]; 3],
    channels: [&Channel; 3],
) -> usize {
    let [o0, o1, o2] = outs;
    let w = o0.len().min(o1.len()).min(o2.len()).min(row.len() / bpp);
    // SAFETY: NEON is enabled on aarch64.
    let lanes = channels.map(|c| unsafe { Lanes::new(c) });
    let mut x = 0;
    while x + 16 <= w {
        let bytes = &row[bpp * x..bpp * (x + 16)];
        // SAFETY: `bytes` is 16 pixels of `bpp` readable bytes.
        unsafe {
            let [a, b, c] = if bpp == 1 {
                let v = vld1q_u8(bytes.as_ptr());
                [v, v, v]
            } else if bpp == 3 {
                let v = vld3q_u8(bytes.as_ptr());
                [v.0, v.1, v.2]
            } else {
                let v = vld4q_u8(bytes.as_ptr());
                [v.0, v.1, v.2]
            };
            lanes[0].store16(a, o0, x);
            lanes[1].store16(b, o1, x);
            lanes[2].store16(c, o2, x);
        }
        x += 16;
    }
    x
}

/// Finishes the first bytes of a gray `row` into `out` with `channel`;
/// returns the pixels done.
///
/// # Safety
///
/// None beyond running on aarch64. `out` is as long as the row.
pub(super) unsafe fn plane(row: &[u8], out: &mut [f32], channel: &Channel) -> usize {
    let w = out.len().min(row.len());
    // SAFETY: NEON is enabled on aarch64.
    let lanes = unsafe { Lanes::new(channel) };
    let mut x = 0;
    while x + 16 <= w {
        // SAFETY: 16 readable bytes at `row[x..]`; `store16` writes 16 floats.
        unsafe { lanes.store16(vld1q_u8(row[x..x + 16].as_ptr()), out, x) };
        x += 16;
    }
    x
}

/// Finishes the first pixels of `row` (`bpp` 3 or 4 bytes each) into `out`,
/// 3 floats per pixel: output channel `j` from source byte `sources[j]` with
/// `channels[j]`. Returns the pixels done.
///
/// # Safety
///
/// None beyond running on aarch64. `out` holds 3 floats per pixel of the row.
pub(super) unsafe fn interleaved(
    row: &[u8],
    bpp: usize,
    out: &mut [f32],
    sources: [usize; 3],
    channels: [&Channel; 3],
) -> usize {
    let w = (out.len() / 3).min(row.len() / bpp);
    // SAFETY: NEON is enabled on aarch64.
    let lanes = channels.map(|c| unsafe { Lanes::new(c) });
    let mut x = 0;
    while x + 16 <= w {
        let bytes = &row[bpp * x..bpp * (x + 16)];
        let out = &mut out[3 * x..3 * x + 48];
        // SAFETY: `bytes` is 16 pixels of `bpp` readable bytes, `out` 48
        // writable floats; `vst3q_f32` writes 12 floats at `12 * i`.
        unsafe {
            let split = if bpp == 3 {
                let v = vld3q_u8(bytes.as_ptr());
                [v.0, v.1, v.2]
            } else {
                let v = vld4q_u8(bytes.as_ptr());
                [v.0, v.1, v.2]
            };
            let [a, b, c] = [0, 1, 2].map(|j| lanes[j].quarters(split[sources[j]]));
            for i in 0..4 {
                vst3q_f32(out[12 * i..].as_mut_ptr(), float32x4x3_t(a[i], b[i], c[i]));
            }
        }
        x += 16;
    }
    x
}
