//! The inverse DCT of libjpeg-turbo's `JDCT_ISLOW` (the accurate integer
//! one, what Pillow decodes with): 13-bit fixed-point constants, two
//! passes (columns, then rows) with 2 extra bits between them, and its
//! range limit, which keeps the low 10 bits of a sample as a signed value
//! before adding 128 and clamping (docs/design/jpeg-exactness.md, §2).
//!
//! The arithmetic wraps where C's `int` would: a pathological coefficient
//! gives libjpeg-turbo's C result instead of a panic (its SIMD code, which
//! saturates, agrees with both on every real 8-bit JPEG).

/// `FIX(x)`: `x` in 13-bit fixed point.
const F0_298: i32 = 2446;
const F0_390: i32 = 3196;
const F0_541: i32 = 4433;
const F0_765: i32 = 6270;
const F0_899: i32 = 7373;
const F1_175: i32 = 9633;
const F1_501: i32 = 12299;
const F1_847: i32 = 15137;
const F1_961: i32 = 16069;
const F2_053: i32 = 16819;
const F2_562: i32 = 20995;
const F3_072: i32 = 25172;

/// `DESCALE(x, n)`: `x / 2^n` rounded, the shift arithmetic.
#[inline(always)]
fn descale(x: i32, n: u32) -> i32 {
    x.wrapping_add(1 << (n - 1)) >> n
}

/// libjpeg-turbo's post-IDCT range limit: the low 10 bits as a signed
/// value, plus 128, clamped to a byte.
#[inline(always)]
pub(super) fn range_limit(x: i32) -> u8 {
    let low = ((x & 1023) ^ 512) - 512;
    (low + 128).clamp(0, 255) as u8
}

/// The 1-D butterfly of both passes: `v` in, the 8 outputs before descaling.
#[inline(always)]
fn butterfly(v: [i32; 8]) -> [i32; 8] {
    // Even part.
    let z1 = v[2].wrapping_add(v[6]).wrapping_mul(F0_541);
    let tmp2 = z1.wrapping_sub(v[6].wrapping_mul(F1_847));
    let tmp3 = z1.wrapping_add(v[2].wrapping_mul(F0_765));
    let tmp0 = v[0].wrapping_add(v[4]).wrapping_shl(13);
    let tmp1 = v[0].wrapping_sub(v[4]).wrapping_shl(13);
    let t10 = tmp0.wrapping_add(tmp3);
    let t13 = tmp0.wrapping_sub(tmp3);
    let t11 = tmp1.wrapping_add(tmp2);
    let t12 = tmp1.wrapping_sub(tmp2);
    // Odd part.
    let (o0, o1, o2, o3) = (v[7], v[5], v[3], v[1]);
    let z1 = o0.wrapping_add(o3);
    let z2 = o1.wrapping_add(o2);
    let z3 = o0.wrapping_add(o2);
    let z4 = o1.wrapping_add(o3);
    let z5 = z3.wrapping_add(z4).wrapping_mul(F1_175);
    let o0 = o0.wrapping_mul(F0_298);
    let o1 = o1.wrapping_mul(F2_053);
    let o2 = o2.wrapping_mul(F3_072);
    let o3 = o3.wrapping_mul(F1_501);
    let z1 = z1.wrapping_mul(-F0_899);
    let z2 = z2.wrapping_mul(-F2_562);
    let z3 = z3.wrapping_mul(-F1_961).wrapping_add(z5);
    let z4 = z4.wrapping_mul(-F0_390).wrapping_add(z5);
    let o0 = o0.wrapping_add(z1).wrapping_add(z3);
    let o1 = o1.wrapping_add(z2).wrapping_add(z4);
    let o2 = o2.wrapping_add(z2).wrapping_add(z3);
    let o3 = o3.wrapping_add(z1).wrapping_add(z4);
    [
        t10.wrapping_add(o3),
        t11.wrapping_add(o2),
        t12.wrapping_add(o1),
        t13.wrapping_add(o0),
        t13.wrapping_sub(o0),
        t12.wrapping_sub(o1),
        t11.wrapping_sub(o2),
        t10.wrapping_sub(o3),
    ]
}

/// One 8x8 block: `coef` in natural order, `quant` its quantization
/// table (natural order), the samples written to `out` rows of `stride`.
pub(super) fn islow(coef: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let mut ws = [0i32; 64];
    // Pass 1: columns, dequantized, to 2 more bits than the output.
    for c in 0..8 {
        let v: [i32; 8] = core::array::from_fn(|r| {
            i32::from(coef[r * 8 + c]).wrapping_mul(i32::from(quant[r * 8 + c] as i16))
        });
        let o = butterfly(v);
        for r in 0..8 {
            ws[r * 8 + c] = descale(o[r], 13 - 2);
        }
    }
    // Pass 2: rows, to samples.
    for r in 0..8 {
        let v: [i32; 8] = core::array::from_fn(|c| ws[r * 8 + c]);
        let o = butterfly(v);
        let row = &mut out[r * stride..r * stride + 8];
        for (s, x) in row.iter_mut().zip(o) {
            *s = range_limit(descale(x, 13 + 2 + 3));
        }
    }
}

/// The `pass`-th pass of the 4x4 reduced IDCT (`jpeg_idct_4x4`) on one
/// column or row `v` (entry 4 unused): outputs 0..4 before descaling by
/// `shift`.
#[inline(always)]
fn reduced4(v: [i32; 8], shift: u32) -> [i32; 4] {
    let tmp0 = v[0].wrapping_shl(13 + 1);
    let tmp2 = v[2]
        .wrapping_mul(15137)
        .wrapping_sub(v[6].wrapping_mul(6270));
    let (t10, t12) = (tmp0.wrapping_add(tmp2), tmp0.wrapping_sub(tmp2));
    let (z1, z2, z3, z4) = (v[7], v[5], v[3], v[1]);
    let a = z1
        .wrapping_mul(-1730)
        .wrapping_add(z2.wrapping_mul(11893))
        .wrapping_sub(z3.wrapping_mul(17799))
        .wrapping_add(z4.wrapping_mul(8697));
    let b = z1
        .wrapping_mul(-4176)
        .wrapping_sub(z2.wrapping_mul(4926))
        .wrapping_add(z3.wrapping_mul(7373))
        .wrapping_add(z4.wrapping_mul(20995));
    [
        descale(t10.wrapping_add(b), shift),
        descale(t12.wrapping_add(a), shift),
        descale(t12.wrapping_sub(a), shift),
        descale(t10.wrapping_sub(b), shift),
    ]
}

/// One pass of the 2x2 reduced IDCT (`jpeg_idct_2x2`).
#[inline(always)]
fn reduced2(v: [i32; 8], shift: u32) -> [i32; 2] {
    let t10 = v[0].wrapping_shl(13 + 2);
    let a = v[7]
        .wrapping_mul(-5906)
        .wrapping_add(v[5].wrapping_mul(6967))
        .wrapping_sub(v[3].wrapping_mul(10426))
        .wrapping_add(v[1].wrapping_mul(29692));
    [
        descale(t10.wrapping_add(a), shift),
        descale(t10.wrapping_sub(a), shift),
    ]
}

/// A block to `size` x `size` samples (8: [`islow`]; 4, 2, 1: the reduced
/// IDCTs of DCT-scaled decoding, `jidctred.c`, which read only the
/// coefficients they need).
pub(super) fn scaled(
    size: usize,
    coef: &[i16; 64],
    quant: &[u16; 64],
    out: &mut [u8],
    stride: usize,
) {
    let dq = |k: usize| i32::from(coef[k]).wrapping_mul(i32::from(quant[k] as i16));
    match size {
        8 => islow(coef, quant, out, stride),
        4 => {
            let mut ws = [[0i32; 8]; 4];
            for c in [0, 1, 2, 3, 5, 6, 7] {
                let o = reduced4(core::array::from_fn(|r| dq(r * 8 + c)), 13 - 2 + 1);
                for r in 0..4 {
                    ws[r][c] = o[r];
                }
            }
            for (r, row) in ws.iter().enumerate() {
                let o = reduced4(*row, 13 + 2 + 3 + 1);
                for (c, x) in o.into_iter().enumerate() {
                    out[r * stride + c] = range_limit(x);
                }
            }
        }
        2 => {
            let mut ws = [[0i32; 8]; 2];
            for c in [0, 1, 3, 5, 7] {
                let o = reduced2(core::array::from_fn(|r| dq(r * 8 + c)), 13 - 2 + 2);
                ws[0][c] = o[0];
                ws[1][c] = o[1];
            }
            for (r, row) in ws.iter().enumerate() {
                let o = reduced2(*row, 13 + 2 + 3 + 2);
                out[r * stride] = range_limit(o[0]);
                out[r * stride + 1] = range_limit(o[1]);
            }
        }
        _ => out[0] = range_limit(descale(dq(0), 3)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dc_only_block_is_flat_at_its_mean() {
        // DC 80 with quantization 2: 160 / 8 = 20 above the midpoint.
        let mut coef = [0i16; 64];
        coef[0] = 80;
        let mut quant = [1u16; 64];
        quant[0] = 2;
        let mut out = [0u8; 64];
        islow(&coef, &quant, &mut out, 8);
        assert!(out.iter().all(|&s| s == 148), "{out:?}");
    }

    #[test]
    fn the_range_limit_wraps_past_512_as_libjpeg_turbo_does() {
        assert_eq!(range_limit(0), 128);
        assert_eq!(range_limit(-128), 0);
        assert_eq!(range_limit(127), 255);
        assert_eq!(range_limit(300), 255);
        assert_eq!(range_limit(-300), 0);
        // 1024 + 10 keeps its low 10 bits: 10.
        assert_eq!(range_limit(1034), 138);
    }
}
