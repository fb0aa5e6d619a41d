//! libyuv's bilinear scaling, bit for bit: the scaler the TFLite Task Library
//! and MediaPipe resize camera frames and images with on Android.
//! `ARGBScale(..., kFilterBilinear)` for RGB (scaled as ARGB; every byte is
//! filtered on its own, so packed formats of 2 to 4 bytes per pixel follow
//! the same arithmetic), and `ScalePlane(..., kFilterBilinear)` for gray
//! (one byte per pixel), which dispatches differently (`plane_routine`).
//!
//! libyuv first simplifies the filter from the sizes (`ScaleFilterReduce`),
//! computes 16.16 fixed-point start positions and steps (`ScaleSlope`), then
//! picks a routine: 2x and even integer downscales average 2x2 blocks, odd
//! integer downscales sample points, an unchanged width interpolates rows
//! only, and the general cases interpolate two rows with an 8-bit fraction
//! (`InterpolateRow`, rounded; a half is `(a + b + 1) >> 1`) and two columns
//! with a 7-bit one (`(a * (127 ^ f) + b * f) >> 7`): rows then columns when
//! shrinking, columns then rows when enlarging vertically. Each of those
//! branches is reproduced here; checked against libyuv itself
//! (`tests/fixtures/make_libyuv_fixtures.py`) and against the Task Library.
//!
//! `ScalePlane` has no integer-factor shortcuts but its own routines for
//! exact 3/4, 1/2 and 3/8 reductions and for doublings, and blends columns
//! with a 16-bit fraction in libyuv's ARM build (`(b - a) * f + 0x8000 >>
//! 16`; its x86 build uses 7 bits). Its NEON 3/4 and 3/8 rows round
//! differently from its C rows, and Android's build runs NEON on the first
//! multiple of 24 (3/4) or 12 (3/8) outputs of a row and C on the rest;
//! both are reproduced, checked against libyuv's arm64 build under qemu.

use crate::arena::Scratch;
use crate::rows::RowReader;
use crate::{Error, ImageViewMut, Rect, Result};

/// libyuv's `FilterMode`, as far as bilinear scaling reduces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Filter {
    None,
    Linear,
    Bilinear,
}

/// The routine `ScaleARGB` or `ScalePlane` dispatches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Routine {
    /// `ScaleARGBDown2` / `ScaleARGBDownEven` / `ScalePlaneDown2`: blocks of
    /// `step` pixels.
    DownEven,
    /// `ScalePlaneVertical`: the width unchanged, rows interpolated.
    Vertical,
    /// `ScaleARGBBilinearUp` / `ScalePlaneBilinearUp`.
    Up,
    /// `ScaleARGBBilinearDown` / `ScalePlaneBilinearDown`.
    Down,
    /// `ScaleARGBSimple` / `ScalePlaneSimple` (and the straight copy):
    /// point sampling.
    Simple,
    /// `ScalePlaneDown34`: 4x4 blocks to 3x3 with fixed weights.
    Down34,
    /// `ScalePlaneDown38`: 8x8 blocks to 3x3 box averages.
    Down38,
    /// `ScalePlaneUp2_Linear`: twice the width, rows sampled.
    Up2Linear,
    /// `ScalePlaneUp2_Bilinear`: twice both sides, 9:3:3:1 weights.
    Up2Bilinear,
}

/// The routine one of libyuv's two entry points picks, with its start and
/// step values (16.16 fixed point).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Steps {
    filter: Filter,
    routine: Routine,
    x: i32,
    dx: i32,
    y: i32,
    dy: i32,
}

/// A libyuv bilinear scale of one source size to one destination size, for
/// the outputs in a window of it. No tables: positions are 16.16 fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LibyuvPlan {
    src: (u32, u32),
    dst: (u32, u32),
    window: Rect,
    /// `ScaleARGB`'s choice, for pixels of 2 to 4 bytes.
    argb: Steps,
    /// `ScalePlane`'s choice, for one-byte pixels.
    plane: Steps,
}

fn fixed_div(num: i64, div: i64) -> i32 {
    ((num << 16) / div) as i32
}

fn fixed_div1(num: i64, div: i64) -> i32 {
    (((num << 16) - 0x0001_0001) / (div - 1)) as i32
}

fn center_start(d: i32, s: i32) -> i32 {
    if d < 0 {
        -((-d >> 1) + s)
    } else {
        (d >> 1) + s
    }
}

impl LibyuvPlan {
    /// The plan for outputs `window` of a `(sw, sh)` to `(dw, dh)` scale.
    pub(super) fn new((sw, sh): (u32, u32), (dw, dh): (u32, u32), window: Rect) -> Result<Self> {
        // ARGBScale refuses sources over 32768 (its 32-bit positions).
        if sw > 32768 || sh > 32768 || dw > 32768 || dh > 32768 {
            return Err(Error::InvalidParameter {
                name: "resize",
                reason: "libyuv scales images of at most 32768 pixels a side",
            });
        }
        let (sw, sh, dw, dh) = (i64::from(sw), i64::from(sh), i64::from(dw), i64::from(dh));
        // ScaleFilterReduce, starting from kFilterBilinear.
        let mut filter = Filter::Bilinear;
        if sh == 1 || dh == sh || dh * 3 == sh {
            filter = Filter::Linear;
        }
        if sw == 1 {
            filter = Filter::None;
        }
        if filter == Filter::Linear && (dw == sw || dw * 3 == sw) {
            filter = Filter::None;
        }
        let slope = slope((sw, sh), (dw, dh), filter);
        Ok(LibyuvPlan {
            src: (sw as u32, sh as u32),
            dst: (dw as u32, dh as u32),
            window,
            argb: argb_routine(slope),
            plane: plane_routine((sw, sh), (dw, dh), slope),
        })
    }

    /// The source region the plan reads: all of it (libyuv's steps run
    /// from the first pixel).
    pub(super) fn region(&self) -> Rect {
        Rect::new(0, 0, self.src.0, self.src.1)
    }

    /// The scratch bytes a run with `bpp`-byte pixels needs: two rows of
    /// the wider of the source and the window.
    pub(super) fn scratch(&self, bpp: usize) -> usize {
        2 * (self.src.0.max(self.window.width) as usize) * bpp
    }

    /// The most source rows a run with `bpp`-byte pixels reads at once.
    pub(super) fn rows_at_once(&self, bpp: usize) -> usize {
        if self.steps(bpp).routine == Routine::Down38 {
            3
        } else {
            2
        }
    }

    /// The routine for `bpp`-byte pixels: `ScalePlane`'s for one byte,
    /// `ScaleARGB`'s otherwise.
    fn steps(&self, bpp: usize) -> Steps {
        if bpp == 1 { self.plane } else { self.argb }
    }

    /// Scales the source read through `src` into `dst` (the window).
    pub(super) fn run(
        &self,
        rows: &mut impl Scratch,
        buf: &mut impl Scratch,
        src: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
    ) {
        let bpp = src.bpp();
        let st = self.steps(bpp);
        let w = self.window;
        let (sw, sh) = (self.src.0 as usize, self.src.1 as usize);
        // Position of output column `i` of the window (16.16).
        let xs = |i: u32| i64::from(st.x) + i64::from(w.x + i) * i64::from(st.dx);
        // The window's columns of one row, blended as this entry point does.
        let cols = |row: &[u8], out: &mut [u8]| filter_cols(bpp == 1, row, bpp, &xs, out);
        let width = w.width as usize * bpp;
        match st.routine {
            Routine::DownEven => {
                let (step_x, step_y) = ((st.dx >> 16) as usize, (st.dy >> 16) as usize);
                let (x0, y0) = ((st.x >> 16) as usize, (st.y >> 16) as usize);
                // Down2 without bilinear filtering starts one column left.
                let x0 = if step_x == 2 && st.filter != Filter::Bilinear {
                    x0.wrapping_sub(1)
                } else {
                    x0
                };
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let sy = y0 + (w.y as usize + oy) * step_y;
                    let two = st.filter == Filter::Bilinear;
                    let r = src.rows(sy, if two { 2 } else { 1 }, false, rows);
                    let (a, b) = (r.row(0), if two { r.row(1) } else { r.row(0) });
                    for (i, o) in d.chunks_exact_mut(bpp).enumerate() {
                        let sx = x0.wrapping_add((w.x as usize + i) * step_x);
                        for (c, o) in o.iter_mut().enumerate() {
                            let p = |row: &[u8], k: usize| u32::from(row[(sx + k) * bpp + c]);
                            *o = match (st.filter, step_x) {
                                (Filter::None, 2) => p(a, 1) as u8,
                                (Filter::None, _) => p(a, 0) as u8,
                                (Filter::Linear, 2) => ((p(a, 0) + p(a, 1) + 1) >> 1) as u8,
                                _ => ((p(a, 0) + p(a, 1) + p(b, 0) + p(b, 1) + 2) >> 2) as u8,
                            };
                        }
                    }
                }
            }
            Routine::Vertical => {
                let max_y = if sh > 1 {
                    ((sh as i64 - 1) << 16) - 1
                } else {
                    0
                };
                let x0 = (st.x >> 16) as usize + w.x as usize;
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let y = (i64::from(st.y) + i64::from(w.y + oy as u32) * i64::from(st.dy))
                        .min(max_y);
                    let (yi, yf) = (
                        (y >> 16) as usize,
                        if st.filter == Filter::None {
                            0
                        } else {
                            ((y >> 8) & 255) as u32
                        },
                    );
                    let n = if yf == 0 { 1 } else { 2 };
                    let r = src.rows(yi, n, false, rows);
                    let a = &r.row(0)[x0 * bpp..][..width];
                    let b = if n == 2 {
                        &r.row(1)[x0 * bpp..][..width]
                    } else {
                        a
                    };
                    interpolate_row(a, b, yf, d);
                }
            }
            Routine::Down => {
                let max_y = (sh as i64 - 1) << 16;
                let row_len = sw * bpp;
                let mid = &mut buf.grow(row_len)[..row_len];
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let y0 = i64::from(st.y).min(max_y);
                    let y = (y0 + i64::from(w.y + oy as u32) * i64::from(st.dy)).min(max_y);
                    let yi = (y >> 16) as usize;
                    if st.filter == Filter::Linear {
                        cols(src.rows(yi, 1, false, rows).row(0), d);
                    } else {
                        let yf = ((y >> 8) & 255) as u32;
                        let n = if yf == 0 { 1 } else { 2 };
                        let r = src.rows(yi, n, false, rows);
                        let b = if n == 2 { r.row(1) } else { r.row(0) };
                        interpolate_row(r.row(0), b, yf, mid);
                        cols(mid, d);
                    }
                }
            }
            Routine::Up => {
                // ScaleARGBBilinearUp keeps the columns of two source rows
                // and walks them down as `y` passes each source row.
                let max_y = (sh as i64 - 1) << 16;
                let (a, b) = buf.grow(2 * width).split_at_mut(width);
                let bufs = [a, b];
                let mut y = i64::from(st.y).min(max_y);
                let mut yi = (y >> 16) as usize;
                let mut next = yi;
                cols(src.rows(next, 1, false, rows).row(0), bufs[0]);
                if sh > 1 {
                    next += 1;
                }
                cols(src.rows(next, 1, false, rows).row(0), bufs[1]);
                if sh > 2 {
                    next += 1;
                }
                // `bufs[cur]` is the upper row, the other the lower.
                let mut cur = 0;
                let mut last = yi;
                let last_row = w.y as usize + dst.height() as usize;
                for j in 0..last_row {
                    yi = (y >> 16) as usize;
                    if yi != last {
                        if y > max_y {
                            y = max_y;
                            yi = (y >> 16) as usize;
                            next = yi;
                        }
                        if yi != last {
                            cols(src.rows(next, 1, false, rows).row(0), bufs[cur]);
                            cur ^= 1;
                            last = yi;
                            if y + 65536 < max_y {
                                next += 1;
                            }
                        }
                    }
                    if j >= w.y as usize {
                        let d = dst.plane_row_mut(0, j - w.y as usize);
                        let yf = if st.filter == Filter::Linear {
                            0
                        } else {
                            ((y >> 8) & 255) as u32
                        };
                        interpolate_row(bufs[cur], bufs[cur ^ 1], yf, d);
                    }
                    y += i64::from(st.dy);
                }
            }
            Routine::Simple => {
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let y = i64::from(st.y) + i64::from(w.y + oy as u32) * i64::from(st.dy);
                    let row = src.rows((y >> 16) as usize, 1, false, rows).row(0);
                    for (i, o) in d.chunks_exact_mut(bpp).enumerate() {
                        let sx = (xs(i as u32) >> 16) as usize;
                        o.copy_from_slice(&row[sx * bpp..][..bpp]);
                    }
                }
            }
            Routine::Down34 => {
                // Android's arm64 build runs the NEON rows on the first
                // multiple of 24 outputs and the C rows on the rest.
                let neon = self.dst.0 as usize / 24 * 24;
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let i = w.y as usize + oy;
                    let (k, q) = (i / 3, i % 3);
                    // Rows `s` and `t` (adjacent) and whether `s` weighs 3:1.
                    let (s, t, weighted) = match q {
                        0 => (4 * k, 4 * k + 1, true),
                        1 => (4 * k + 1, 4 * k + 2, false),
                        _ => (4 * k + 3, 4 * k + 2, true),
                    };
                    let r = src.rows(s.min(t), 2, false, rows);
                    let (s, t) = if s < t {
                        (r.row(0), r.row(1))
                    } else {
                        (r.row(1), r.row(0))
                    };
                    for (ox, o) in d.iter_mut().enumerate() {
                        let j = w.x as usize + ox;
                        let c = 4 * (j / 3);
                        let (s, t) = (&s[c..c + 4], &t[c..c + 4]);
                        *o = down34(s, t, j % 3, weighted, j < neon);
                    }
                }
            }
            Routine::Down38 => {
                // NEON on the first multiple of 12 outputs, C on the rest.
                let neon = self.dst.0 as usize / 12 * 12;
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let i = w.y as usize + oy;
                    let (first, n) = (8 * (i / 3) + 3 * (i % 3), if i % 3 == 2 { 2 } else { 3 });
                    let r = src.rows(first, n, false, rows);
                    for (ox, o) in d.iter_mut().enumerate() {
                        let j = w.x as usize + ox;
                        let (c, m) = (8 * (j / 3) + 3 * (j % 3), if j % 3 == 2 { 2 } else { 3 });
                        let sum: u32 = (0..n)
                            .map(|k| {
                                r.row(k)[c..c + m]
                                    .iter()
                                    .map(|&v| u32::from(v))
                                    .sum::<u32>()
                            })
                            .sum();
                        *o = box_average(sum, n * m, j < neon);
                    }
                }
            }
            Routine::Up2Linear => {
                let (dw, dh) = (self.dst.0 as usize, self.dst.1 as usize);
                let dy = if dh > 1 {
                    fixed_div(sh as i64 - 1, dh as i64 - 1)
                } else {
                    0
                };
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let i = w.y as usize + oy;
                    let y = if dh == 1 {
                        (sh - 1) / 2
                    } else {
                        ((32767 + i as i64 * i64::from(dy)) >> 16) as usize
                    };
                    let row = src.rows(y, 1, false, rows).row(0);
                    for (ox, o) in d.iter_mut().enumerate() {
                        *o = up2(row, row, w.x as usize + ox, dw, false);
                    }
                }
            }
            Routine::Up2Bilinear => {
                let (dw, dh) = (self.dst.0 as usize, self.dst.1 as usize);
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let i = w.y as usize + oy;
                    // The first row, and the last of an even height, from one
                    // source row; the others from rows `(i - 1) / 2` and the
                    // next, the nearer one weighing 3.
                    let alone = i == 0 || (i == dh - 1 && dh % 2 == 0);
                    let top = if i == 0 { 0 } else { (i - 1) / 2 };
                    let r = src.rows(top, if alone { 1 } else { 2 }, false, rows);
                    let (s, t) = if alone {
                        (r.row(0), r.row(0))
                    } else if i % 2 == 1 {
                        (r.row(0), r.row(1))
                    } else {
                        (r.row(1), r.row(0))
                    };
                    for (ox, o) in d.iter_mut().enumerate() {
                        *o = up2(s, t, w.x as usize + ox, dw, true);
                    }
                }
            }
        }
    }
}

/// Output `p` (0-2) of a 3/4 reduction of the 4 columns `s` and `t` of two
/// rows; `weighted`: `s` weighs 3 and `t` 1 (`ScaleRowDown34_0_Box`), else
/// both 1 (`_1_Box`). The C rows filter each row across, then the two rows;
/// the NEON rows filter down, then across, each step rounded.
fn down34(s: &[u8], t: &[u8], p: usize, weighted: bool, neon: bool) -> u8 {
    let three = |a: u32, b: u32| (3 * a + b + 2) >> 2;
    let half = |a: u32, b: u32| (a + b + 1) >> 1;
    let across = |r: [u32; 4]| match p {
        0 => three(r[0], r[1]),
        1 => half(r[1], r[2]),
        _ => three(r[3], r[2]),
    };
    let down = |a: u32, b: u32| if weighted { three(a, b) } else { half(a, b) };
    let (s, t) = (
        [0, 1, 2, 3].map(|k| u32::from(s[k])),
        [0, 1, 2, 3].map(|k| u32::from(t[k])),
    );
    let v = if neon {
        across([0, 1, 2, 3].map(|k| down(s[k], t[k])))
    } else {
        down(across(s), across(t))
    };
    v as u8
}

/// A 3/8 reduction's box average of `n` (4, 6 or 9) pixels summing to
/// `sum`. The C rows multiply by `65536 / n` and truncate; the NEON rows
/// take `sqrdmulh` by `65536 / 2n` (doubling, rounded) and round a 4-pixel
/// box with a shift.
fn box_average(sum: u32, n: usize, neon: bool) -> u8 {
    let v = match (neon, n) {
        (false, _) => (sum * (65536 / n as u32)) >> 16,
        (true, 4) => (sum + 2) >> 2,
        (true, _) => (2 * sum * (65536 / (2 * n as u32)) + 0x8000) >> 16,
    };
    v as u8
}

/// Output column `j` of `dw` of a doubling of rows `s` and `t`
/// (`ScaleRowUp2_Linear` / `_Bilinear`): each output between source
/// columns `x` and `x + 1` weighs the nearer 3 and the other 1, and so do
/// the rows (`s` the nearer; with `bilinear` false the row is `s` alone);
/// the first and last columns take their source column alone.
fn up2(s: &[u8], t: &[u8], j: usize, dw: usize, bilinear: bool) -> u8 {
    let at = |r: &[u8], k: usize| u32::from(r[k]);
    let ends = |k: usize| {
        if bilinear {
            ((3 * at(s, k) + at(t, k) + 2) >> 2) as u8
        } else {
            s[k]
        }
    };
    if j == 0 {
        return ends(0);
    }
    if j == dw - 1 {
        return ends((dw - 1) / 2);
    }
    // Column `j` lies between source columns `x` and `x + 1`, nearer `x`
    // when odd.
    let x = (j - 1) / 2;
    let (near, far) = if j % 2 == 1 { (x, x + 1) } else { (x + 1, x) };
    let v = if bilinear {
        (9 * at(s, near) + 3 * at(s, far) + 3 * at(t, near) + at(t, far) + 8) >> 4
    } else {
        (3 * at(s, near) + at(s, far) + 2) >> 2
    };
    v as u8
}

/// `ScaleSlope`: the start positions and steps for `filter`.
fn slope((sw, sh): (i64, i64), (dw, dh): (i64, i64), filter: Filter) -> Steps {
    let (dw1, dh1) = (
        if dw == 1 && sw >= 32768 { sw } else { dw },
        if dh == 1 && sh >= 32768 { sh } else { dh },
    );
    let ((x, dx), (y, dy)) = match filter {
        Filter::Bilinear => (bilinear_axis(sw, dw1), bilinear_axis(sh, dh1)),
        Filter::Linear => {
            let dy = fixed_div(sh, dh1);
            (bilinear_axis(sw, dw1), (dy >> 1, dy))
        }
        Filter::None => {
            let (dx, dy) = (fixed_div(sw, dw1), fixed_div(sh, dh1));
            ((center_start(dx, 0), dx), (center_start(dy, 0), dy))
        }
    };
    Steps {
        filter,
        routine: Routine::Simple,
        x,
        dx,
        y,
        dy,
    }
}

/// The bilinear start and step along an axis of `s` source and `d`
/// output pixels: centred when shrinking, the last pixel rendered once when
/// enlarging.
fn bilinear_axis(s: i64, d: i64) -> (i32, i32) {
    if d <= s {
        let step = fixed_div(s, d);
        (center_start(step, -32768), step)
    } else if s > 1 && d > 1 {
        (0, fixed_div1(s, d))
    } else {
        (0, 0)
    }
}

/// `ScaleARGB`'s dispatch.
fn argb_routine(mut s: Steps) -> Steps {
    let mut routine = None;
    if (s.dx | s.dy) & 0xffff == 0 {
        if s.dx == 0 || s.dy == 0 {
            s.filter = Filter::None;
        } else if s.dx & 0x10000 == 0 && s.dy & 0x10000 == 0 {
            // Even factors (2x, 4x, 6x...): 2x2 boxes (or points).
            routine = Some(Routine::DownEven);
        } else if s.dx & 0x10000 != 0 && s.dy & 0x10000 != 0 {
            // Odd factors: points (the 1x case is a straight copy).
            s.filter = Filter::None;
        }
    }
    s.routine = routine.unwrap_or(if s.dx == 0x10000 && s.x & 0xffff == 0 {
        Routine::Vertical
    } else if s.filter != Filter::None && s.dy < 65536 {
        Routine::Up
    } else if s.filter != Filter::None {
        Routine::Down
    } else {
        Routine::Simple
    });
    s
}

/// `ScalePlane`'s dispatch: exact 3/4, 1/2 and 3/8 reductions and exact
/// doublings have their own routines; an unchanged width interpolates rows
/// from bilinear starts whatever the filter; the rest as `ScaleARGB`
/// without its integer-factor shortcuts.
fn plane_routine((sw, sh): (i64, i64), (dw, dh): (i64, i64), s: Steps) -> Steps {
    let routine = |r: Routine| Steps { routine: r, ..s };
    if dw == sw && dh == sh {
        // A straight copy: point sampling at the same positions.
        return routine(Routine::Simple);
    }
    if dw == sw {
        let (y, dy) = bilinear_axis(sh, dh);
        return Steps {
            x: 0,
            dx: 0x10000,
            y,
            dy,
            ..routine(Routine::Vertical)
        };
    }
    if dw <= sw && dh <= sh {
        // With these sizes the filter stays bilinear: the 2x2 and 3/8 boxes.
        if 4 * dw == 3 * sw && 4 * dh == 3 * sh {
            return routine(Routine::Down34);
        }
        if 2 * dw == sw && 2 * dh == sh {
            return Steps {
                x: 0,
                dx: 2 << 16,
                y: 0,
                dy: 2 << 16,
                ..routine(Routine::DownEven)
            };
        }
        if 8 * dw == 3 * sw && 8 * dh == 3 * sh {
            return routine(Routine::Down38);
        }
    }
    if (dw + 1) / 2 == sw && s.filter == Filter::Linear {
        return routine(Routine::Up2Linear);
    }
    if (dh + 1) / 2 == sh && (dw + 1) / 2 == sw && s.filter == Filter::Bilinear {
        return routine(Routine::Up2Bilinear);
    }
    routine(if s.filter != Filter::None && dh > sh {
        Routine::Up
    } else if s.filter != Filter::None {
        Routine::Down
    } else {
        Routine::Simple
    })
}

/// `InterpolateRow_C`: `b`'s share is `f / 256`, rounded; a half is the
/// rounded average; 0 copies `a`.
fn interpolate_row(a: &[u8], b: &[u8], f: u32, out: &mut [u8]) {
    match f {
        0 => out.copy_from_slice(&a[..out.len()]),
        128 => {
            for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
                *o = ((u32::from(a) + u32::from(b) + 1) >> 1) as u8;
            }
        }
        _ => {
            for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
                *o = ((u32::from(a) * (256 - f) + u32::from(b) * f + 128) >> 8) as u8;
            }
        }
    }
}

/// `ScaleARGBFilterCols_C` (`plane` false): output column `i` blends source
/// pixels `x >> 16` and the next with the 7-bit fraction `(x >> 9) & 127`.
/// `ScaleFilterCols_C` on ARM (`plane` true; its NEON twin computes the
/// same): `a + ((b - a) * (x & 0xffff) + 0x8000) >> 16`, the 16-bit
/// fraction rounded (libyuv's x86 build blends planes with 7 bits instead).
/// The next pixel is only read when its weight is not zero.
fn filter_cols(plane: bool, row: &[u8], bpp: usize, xs: &impl Fn(u32) -> i64, out: &mut [u8]) {
    let last = row.len() / bpp - 1;
    for (i, o) in out.chunks_exact_mut(bpp).enumerate() {
        let x = xs(i as u32);
        let (xi, f) = ((x >> 16) as usize, (x & 0xffff) as i32);
        let (a, b) = (
            &row[xi * bpp..][..bpp],
            &row[(xi + 1).min(last) * bpp..][..bpp],
        );
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            *o = if plane {
                let (a, b) = (i32::from(a), i32::from(b));
                (a + ((f * (b - a) + 0x8000) >> 16)) as u8
            } else {
                let f = (f >> 9) as u32;
                ((u32::from(a) * (0x7f ^ f) + u32::from(b) * f) >> 7) as u8
            };
        }
    }
}
