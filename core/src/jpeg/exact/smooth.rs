//! Block smoothing of progressive files (libjpeg-turbo's
//! `decompress_smooth_data`): when a file's scans stop short of some
//! low-frequency coefficient's last bits (a file cut at a scan boundary, a
//! scan script that never refines), the first nine AC coefficients of each
//! block that are still zero are estimated from the DC coefficients of the
//! 5 x 5 blocks around it, and the DC too when no AC scan came at all
//! (docs/design/jpeg-exactness.md, §6.4). The estimates go to the inverse
//! DCT only; the coefficients stay as decoded.

use alloc::vec::Vec;

use crate::Result;

/// The natural position of each zigzag index 1..=9 smoothing fills.
const POSITION: [usize; 10] = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24];

/// The weights of the 25 DCs (rows -2..=2, columns -2..=2, row-major) for
/// zigzag coefficients 1..=5 when the DC is estimated too, and when it is
/// not; then for coefficients 6..=9 and the DC (DC estimated only).
type Weights = [i64; 25];

#[rustfmt::skip]
const WITH_DC: [Weights; 5] = [
    [
         -1,  -1,   0,   1,   1,
         -3,  13,   0, -13,   3,
         -3,  38,   0, -38,   3,
         -3,  13,   0, -13,   3,
         -1,  -1,   0,   1,   1,
    ],
    [
         -1,  -3,  -3,  -3,  -1,
         -1,  13,  38,  13,  -1,
          0,   0,   0,   0,   0,
          1, -13, -38, -13,   1,
          1,   3,   3,   3,   1,
    ],
    [
          0,   0,   1,   0,   0,
          0,   2,   7,   2,   0,
          0,  -5, -14,  -5,   0,
          0,   2,   7,   2,   0,
          0,   0,   1,   0,   0,
    ],
    [
         -1,   0,   0,   0,   1,
          0,   9,   0,  -9,   0,
          0,   0,   0,   0,   0,
          0,  -9,   0,   9,   0,
          1,   0,   0,   0,  -1,
    ],
    [
          0,   0,   0,   0,   0,
          0,   2,  -5,   2,   0,
          1,   7, -14,   7,   1,
          0,   2,  -5,   2,   0,
          0,   0,   0,   0,   0,
    ],
];

#[rustfmt::skip]
const WITHOUT_DC: [Weights; 5] = [
    [
          0,   0,   0,   0,   0,
          0,   0,   0,   0,   0,
         -7,  50,   0, -50,   7,
          0,   0,   0,   0,   0,
          0,   0,   0,   0,   0,
    ],
    [
          0,   0,  -7,   0,   0,
          0,   0,  50,   0,   0,
          0,   0,   0,   0,   0,
          0,   0, -50,   0,   0,
          0,   0,   7,   0,   0,
    ],
    [
          0,   0,  -1,   0,   0,
          0,   0,  13,   0,   0,
          0,   0, -24,   0,   0,
          0,   0,  13,   0,   0,
          0,   0,  -1,   0,   0,
    ],
    [
          0,  -1,   0,   1,   0,
         -1,  10,   0, -10,   1,
          0,   0,   0,   0,   0,
          1, -10,   0,  10,  -1,
          0,   1,   0,  -1,   0,
    ],
    [
          0,   0,   0,   0,   0,
          0,   0,   0,   0,   0,
         -1,  13, -24,  13,  -1,
          0,   0,   0,   0,   0,
          0,   0,   0,   0,   0,
    ],
];

#[rustfmt::skip]
const HIGH: [Weights; 4] = [
    [
          0,   0,   0,   0,   0,
          0,   1,   0,  -1,   0,
          0,   2,   0,  -2,   0,
          0,   1,   0,  -1,   0,
          0,   0,   0,   0,   0,
    ],
    [
          0,   0,   0,   0,   0,
          0,   1,  -3,   1,   0,
          0,   0,   0,   0,   0,
          0,  -1,   3,  -1,   0,
          0,   0,   0,   0,   0,
    ],
    [
          0,   0,   0,   0,   0,
          0,   1,   0,  -1,   0,
          0,  -3,   0,   3,   0,
          0,   1,   0,  -1,   0,
          0,   0,   0,   0,   0,
    ],
    [
          0,   0,   0,   0,   0,
          0,   1,   2,   1,   0,
          0,   0,   0,   0,   0,
          0,  -1,  -2,  -1,   0,
          0,   0,   0,   0,   0,
    ],
];

#[rustfmt::skip]
const DC: Weights = [
     -2,  -6,  -8,  -6,  -2,
     -6,   6,  42,   6,  -6,
     -8,  42, 152,  42,  -8,
     -6,   6,  42,   6,  -6,
     -2,  -6,  -8,  -6,  -2,
];

/// The estimate `num / (q * 2^8)` rounded, at most `2^al - 1` in magnitude
/// when `al > 0`, with `num`'s sign.
fn estimate(num: i64, q: i64, al: i8) -> i16 {
    let mut p = ((q << 7) + num.abs()) / (q << 8);
    if al > 0 && p >= 1 << al {
        p = (1 << al) - 1;
    }
    (if num < 0 { -p } else { p }) as i16
}

/// `coefs` (rows of `stride` blocks) smoothed, for a component whose real
/// blocks are `grid` = (across, down), with quantization `quant` and the
/// bit each zigzag coefficient reached `bits` (-1: none).
pub(super) fn smooth(
    coefs: &[[i16; 64]],
    stride: usize,
    grid: (usize, usize),
    quant: &[u16; 64],
    bits: &[i8; 64],
) -> Result<Vec<[i16; 64]>> {
    let mut out = Vec::new();
    crate::buffer::reserve(&mut out, coefs.len())?;
    out.extend_from_slice(coefs);
    let (across, down) = grid;
    let change_dc = bits[1..10].iter().all(|&b| b == -1);
    let q = |k: usize| i64::from(quant[k]);
    for by in 0..down {
        for bx in 0..across {
            // The 25 DCs around, rows and columns clamped to the grid.
            let dcs: [i64; 25] = core::array::from_fn(|i| {
                let y = (by as isize + i as isize / 5 - 2).clamp(0, down as isize - 1) as usize;
                let x = (bx as isize + i as isize % 5 - 2).clamp(0, across as isize - 1) as usize;
                i64::from(coefs[y * stride + x][0])
            });
            let sum = |w: &Weights| w.iter().zip(&dcs).map(|(a, b)| a * b).sum::<i64>();
            let block = &mut out[by * stride + bx];
            for k in 1..=9 {
                let (pos, al) = (POSITION[k], bits[k]);
                if k > 5 && !change_dc {
                    break;
                }
                if al == 0 || block[pos] != 0 {
                    continue;
                }
                let weights = match k {
                    1..=5 if change_dc => &WITH_DC[k - 1],
                    1..=5 => &WITHOUT_DC[k - 1],
                    _ => &HIGH[k - 6],
                };
                block[pos] = estimate(q(0) * sum(weights), q(pos), al);
            }
            if change_dc {
                block[0] = estimate(q(0) * sum(&DC), q(0), 0);
            }
        }
    }
    Ok(out)
}
