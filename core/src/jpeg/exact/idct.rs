//! The inverse DCTs of libjpeg-turbo as Pillow runs them (`JDCT_ISLOW`,
//! the accurate integer one, and the reduced ones of DCT-scaled decoding):
//! 13-bit fixed-point constants, two passes (columns, then rows) with 2
//! extra bits between them (docs/design/jpeg-exactness.md, §2-3). The
//! arithmetic is that of its x86-64 SIMD code, which Pillow's wheels run:
//! 16-bit lanes that wrap or saturate where its C code would not
//! (docs/design/jpeg-exactness-2.md, §1). On every real 8-bit file the two
//! agree; on coefficients no encoder writes, this gives Pillow's pixels
//! instead of a panic or C's.

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

/// `sat16(x)`: `packssdw`'s signed saturation.
#[inline(always)]
fn sat16(x: i32) -> i16 {
    x.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

/// The SIMD code's output: saturated to a signed byte, plus 128
/// (`packsswb`, `paddb`), where C wraps modulo 1024.
#[inline(always)]
fn sample(x: i32) -> u8 {
    (x.clamp(-128, 127) + 128) as u8
}

/// The 1-D transform of the AVX2/SSE2 ISLOW IDCT (`jidctint-avx2.asm`):
/// C's butterfly with its constants paired for `vpmaddwd`, and four sums
/// in 16-bit lanes that wrap (docs/design/jpeg-exactness-2.md, §1.2).
#[inline(always)]
fn butterfly(v: [i16; 8]) -> [i32; 8] {
    let w = |x: i16| i32::from(x);
    let a = v[0].wrapping_add(v[4]);
    let b = v[0].wrapping_sub(v[4]);
    let tmp0 = w(a) << 13;
    let tmp1 = w(b) << 13;
    let tmp3 = w(v[2]) * 10703 + w(v[6]) * 4433;
    let tmp2 = w(v[2]) * 4433 + w(v[6]) * -10704;
    let t10 = tmp0.wrapping_add(tmp3);
    let t13 = tmp0.wrapping_sub(tmp3);
    let t11 = tmp1.wrapping_add(tmp2);
    let t12 = tmp1.wrapping_sub(tmp2);
    let z3 = v[7].wrapping_add(v[3]);
    let z4 = v[5].wrapping_add(v[1]);
    let z3p = w(z3) * -6436 + w(z4) * 9633;
    let z4p = w(z4) * 6437 + w(z3) * 9633;
    let o0 = (w(v[7]) * -4927 + w(v[1]) * -7373).wrapping_add(z3p);
    let o1 = (w(v[5]) * -4176 + w(v[3]) * -20995).wrapping_add(z4p);
    let o3 = (w(v[7]) * -7373 + w(v[1]) * 4926).wrapping_add(z4p);
    let o2 = (w(v[5]) * -20995 + w(v[3]) * 4177).wrapping_add(z3p);
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

/// The ISLOW IDCT as libjpeg-turbo's AVX2 (and SSE2) code computes it,
/// which Pillow's wheels run on x86-64: dequantization to 16 bits, a
/// whole-block shortcut when rows 1..7 are zero, pass-1 results saturated
/// to 16 bits, the output saturated. On every real file it equals its C
/// code; on coefficients no encoder writes it gives Pillow's pixels
/// (docs/design/jpeg-exactness-2.md, §1.2).
pub(super) fn islow(coef: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let dq: [i16; 64] = core::array::from_fn(|k| coef[k].wrapping_mul(quant[k] as i16));
    let mut ws = [0i16; 64];
    if coef[8..].iter().all(|&c| c == 0) {
        for c in 0..8 {
            let v = dq[c].wrapping_shl(2);
            for r in 0..8 {
                ws[r * 8 + c] = v;
            }
        }
    } else {
        for c in 0..8 {
            let o = butterfly(core::array::from_fn(|r| dq[r * 8 + c]));
            for r in 0..8 {
                ws[r * 8 + c] = sat16(o[r].wrapping_add(1 << 10) >> 11);
            }
        }
    }
    for r in 0..8 {
        let o = butterfly(core::array::from_fn(|c| ws[r * 8 + c]));
        let row = &mut out[r * stride..r * stride + 8];
        for (s, x) in row.iter_mut().zip(o) {
            *s = sample(i32::from(sat16(x.wrapping_add(1 << 17) >> 18)));
        }
    }
}

/// One pass of the SSE2 4x4 reduced IDCT (`jidctred-sse2.asm`) on `v`
/// (entry 4 unused): outputs 0..4 before descaling, sums wrapping at 32
/// bits.
#[inline(always)]
fn reduced4_pass(v: [i16; 8]) -> [i32; 4] {
    let w = |x: i16| i32::from(x);
    let tmp0 = w(v[0]) << 14;
    let tmp2 = w(v[2]) * 15137 + w(v[6]) * -6270;
    let (t10, t12) = (tmp0.wrapping_add(tmp2), tmp0.wrapping_sub(tmp2));
    let b = (w(v[1]) * 20995 + w(v[3]) * 7373).wrapping_add(w(v[5]) * -4926 + w(v[7]) * -4176);
    let a = (w(v[1]) * 8697 + w(v[3]) * -17799).wrapping_add(w(v[5]) * 11893 + w(v[7]) * -1730);
    [
        t10.wrapping_add(b),
        t12.wrapping_add(a),
        t12.wrapping_sub(a),
        t10.wrapping_sub(b),
    ]
}

/// The 4x4 reduced IDCT as libjpeg-turbo's SSE2 code computes it (§1.3).
fn reduced4(coef: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let dq: [i16; 64] = core::array::from_fn(|k| coef[k].wrapping_mul(quant[k] as i16));
    let mut ws = [[0i16; 8]; 4];
    let rows_zero = [1, 2, 3, 5, 6, 7]
        .iter()
        .all(|&r| coef[r * 8..r * 8 + 8].iter().all(|&c| c == 0));
    for c in 0..8 {
        if rows_zero {
            let v = dq[c].wrapping_shl(2);
            for row in &mut ws {
                row[c] = v;
            }
        } else {
            let o = reduced4_pass(core::array::from_fn(|r| dq[r * 8 + c]));
            for (r, x) in o.into_iter().enumerate() {
                ws[r][c] = sat16(x.wrapping_add(1 << 11) >> 12);
            }
        }
    }
    for (r, row) in ws.iter().enumerate() {
        let o = reduced4_pass(*row);
        for (c, x) in o.into_iter().enumerate() {
            out[r * stride + c] = sample(i32::from(sat16(x.wrapping_add(1 << 18) >> 19)));
        }
    }
}

/// The 2x2 reduced IDCT as libjpeg-turbo's SSE2 code computes it (§1.4):
/// no shortcut, pass 1's column 0 kept at 32 bits.
fn reduced2(coef: &[i16; 64], quant: &[u16; 64], out: &mut [u8], stride: usize) {
    let dq: [i32; 64] = core::array::from_fn(|k| i32::from(coef[k].wrapping_mul(quant[k] as i16)));
    let odd = |v1: i32, v3: i32, v5: i32, v7: i32| {
        (v1 * 29692 + v3 * -10426).wrapping_add(v5 * 6967 + v7 * -5906)
    };
    // Pass 1: output rows A (0) and B (1), columns 0, 1, 3, 5, 7.
    let mut ws = [[0i32; 8]; 2];
    for c in [0, 1, 3, 5, 7] {
        let t10 = dq[c] << 15;
        let t0 = odd(dq[8 + c], dq[24 + c], dq[40 + c], dq[56 + c]);
        ws[0][c] = t10.wrapping_add(t0).wrapping_add(1 << 12) >> 13;
        ws[1][c] = t10.wrapping_sub(t0).wrapping_add(1 << 12) >> 13;
    }
    for (r, row) in ws.iter().enumerate() {
        let e = row[0].wrapping_shl(15);
        let s = |k: usize| i32::from(sat16(row[k]));
        let o = odd(s(1), s(3), s(5), s(7));
        out[r * stride] = sample(i32::from(sat16(
            e.wrapping_add(o).wrapping_add(1 << 19) >> 20,
        )));
        out[r * stride + 1] = sample(i32::from(sat16(
            e.wrapping_sub(o).wrapping_add(1 << 19) >> 20,
        )));
    }
}

/// A block to `size` x `size` samples: [`islow`] for 8; for 4, 2 and 1 the
/// reduced IDCTs of DCT-scaled decoding (`jidctred.c`), which read only the
/// coefficients they need, as libjpeg-turbo's SSE2 code computes 4 and 2
/// and its C code 1 (there is no SIMD one: C's range limit, which wraps).
pub(super) fn scaled(
    size: usize,
    coef: &[i16; 64],
    quant: &[u16; 64],
    out: &mut [u8],
    stride: usize,
) {
    match size {
        8 => islow(coef, quant, out, stride),
        4 => reduced4(coef, quant, out, stride),
        2 => reduced2(coef, quant, out, stride),
        _ => {
            let dq = i32::from(coef[0]).wrapping_mul(i32::from(quant[0] as i16));
            out[0] = range_limit(descale(dq, 3));
        }
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
