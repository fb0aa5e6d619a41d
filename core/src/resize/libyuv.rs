//! libyuv's `ARGBScale(..., kFilterBilinear)`, bit for bit: the scaler the
//! TFLite Task Library and MediaPipe resize camera frames and RGB images with
//! on Android (RGB is scaled as ARGB; every byte is filtered on its own, so
//! any packed format of 1 to 4 bytes per pixel follows the same arithmetic).
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

/// The routine `ScaleARGB` dispatches to, with its start and step values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Routine {
    /// `ScaleARGBDown2` / `ScaleARGBDownEven`: blocks of `step` pixels.
    DownEven,
    /// `ScalePlaneVertical`: the width unchanged, rows interpolated.
    Vertical,
    /// `ScaleARGBBilinearUp`.
    Up,
    /// `ScaleARGBBilinearDown`.
    Down,
    /// `ScaleARGBSimple` (and the straight copy): point sampling.
    Simple,
}

/// A libyuv bilinear scale of one source size to one destination size, for
/// the outputs in a window of it. No tables: positions are 16.16 fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LibyuvPlan {
    src: (u32, u32),
    window: Rect,
    filter: Filter,
    routine: Routine,
    x: i32,
    dx: i32,
    y: i32,
    dy: i32,
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
                name: "resize: libyuv scales images of at most 32768 pixels a side",
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
        // ScaleSlope.
        let (dw1, dh1) = (
            if dw == 1 && sw >= 32768 { sw } else { dw },
            if dh == 1 && sh >= 32768 { sh } else { dh },
        );
        let (mut x, mut y, mut dx, mut dy) = (0, 0, 0, 0);
        let horizontal = |x: &mut i32, dx: &mut i32| {
            if dw1 <= sw {
                *dx = fixed_div(sw, dw1);
                *x = center_start(*dx, -32768);
            } else if sw > 1 && dw1 > 1 {
                *dx = fixed_div1(sw, dw1);
                *x = 0;
            }
        };
        match filter {
            Filter::Bilinear => {
                horizontal(&mut x, &mut dx);
                if dh1 <= sh {
                    dy = fixed_div(sh, dh1);
                    y = center_start(dy, -32768);
                } else if sh > 1 && dh1 > 1 {
                    dy = fixed_div1(sh, dh1);
                    y = 0;
                }
            }
            Filter::Linear => {
                horizontal(&mut x, &mut dx);
                dy = fixed_div(sh, dh1);
                y = dy >> 1;
            }
            Filter::None => {
                dx = fixed_div(sw, dw1);
                dy = fixed_div(sh, dh1);
                x = center_start(dx, 0);
                y = center_start(dy, 0);
            }
        }
        // ScaleARGB's dispatch.
        let mut routine = None;
        if (dx | dy) & 0xffff == 0 {
            if dx == 0 || dy == 0 {
                filter = Filter::None;
            } else if dx & 0x10000 == 0 && dy & 0x10000 == 0 {
                // Even factors (2x, 4x, 6x...): 2x2 boxes (or points).
                routine = Some(Routine::DownEven);
            } else if dx & 0x10000 != 0 && dy & 0x10000 != 0 {
                // Odd factors: points (the 1x case is a straight copy).
                filter = Filter::None;
            }
        }
        let routine = routine.unwrap_or(if dx == 0x10000 && x & 0xffff == 0 {
            Routine::Vertical
        } else if filter != Filter::None && dy < 65536 {
            Routine::Up
        } else if filter != Filter::None {
            Routine::Down
        } else {
            Routine::Simple
        });
        Ok(LibyuvPlan {
            src: (sw as u32, sh as u32),
            window,
            filter,
            routine,
            x,
            dx,
            y,
            dy,
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

    /// Scales the source read through `src` into `dst` (the window).
    pub(super) fn run(
        &self,
        rows: &mut impl Scratch,
        buf: &mut impl Scratch,
        src: &RowReader<'_>,
        dst: &mut ImageViewMut<'_>,
    ) {
        let bpp = src.bpp();
        let w = self.window;
        let (sw, sh) = (self.src.0 as usize, self.src.1 as usize);
        // Position of output column `i` of the window (16.16).
        let xs = |i: u32| i64::from(self.x) + i64::from(w.x + i) * i64::from(self.dx);
        let width = w.width as usize * bpp;
        match self.routine {
            Routine::DownEven => {
                let (step_x, step_y) = ((self.dx >> 16) as usize, (self.dy >> 16) as usize);
                let (x0, y0) = ((self.x >> 16) as usize, (self.y >> 16) as usize);
                // Down2 without bilinear filtering starts one column left.
                let x0 = if step_x == 2 && self.filter != Filter::Bilinear {
                    x0.wrapping_sub(1)
                } else {
                    x0
                };
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let sy = y0 + (w.y as usize + oy) * step_y;
                    let two = self.filter == Filter::Bilinear;
                    let r = src.rows(sy, if two { 2 } else { 1 }, false, rows);
                    let (a, b) = (r.row(0), if two { r.row(1) } else { r.row(0) });
                    for (i, o) in d.chunks_exact_mut(bpp).enumerate() {
                        let sx = x0.wrapping_add((w.x as usize + i) * step_x);
                        for (c, o) in o.iter_mut().enumerate() {
                            let p = |row: &[u8], k: usize| u32::from(row[(sx + k) * bpp + c]);
                            *o = match (self.filter, step_x) {
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
                let x0 = (self.x >> 16) as usize + w.x as usize;
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let y = (i64::from(self.y) + i64::from(w.y + oy as u32) * i64::from(self.dy))
                        .min(max_y);
                    let (yi, yf) = (
                        (y >> 16) as usize,
                        if self.filter == Filter::None {
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
                    let y0 = i64::from(self.y).min(max_y);
                    let y = (y0 + i64::from(w.y + oy as u32) * i64::from(self.dy)).min(max_y);
                    let yi = (y >> 16) as usize;
                    if self.filter == Filter::Linear {
                        filter_cols(src.rows(yi, 1, false, rows).row(0), bpp, &xs, d);
                    } else {
                        let yf = ((y >> 8) & 255) as u32;
                        let n = if yf == 0 { 1 } else { 2 };
                        let r = src.rows(yi, n, false, rows);
                        let b = if n == 2 { r.row(1) } else { r.row(0) };
                        interpolate_row(r.row(0), b, yf, mid);
                        filter_cols(mid, bpp, &xs, d);
                    }
                }
            }
            Routine::Up => {
                // ScaleARGBBilinearUp keeps the columns of two source rows
                // and walks them down as `y` passes each source row.
                let max_y = (sh as i64 - 1) << 16;
                let (a, b) = buf.grow(2 * width).split_at_mut(width);
                let bufs = [a, b];
                let mut y = i64::from(self.y).min(max_y);
                let mut yi = (y >> 16) as usize;
                let mut next = yi;
                filter_cols(src.rows(next, 1, false, rows).row(0), bpp, &xs, bufs[0]);
                if sh > 1 {
                    next += 1;
                }
                filter_cols(src.rows(next, 1, false, rows).row(0), bpp, &xs, bufs[1]);
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
                            filter_cols(src.rows(next, 1, false, rows).row(0), bpp, &xs, bufs[cur]);
                            cur ^= 1;
                            last = yi;
                            if y + 65536 < max_y {
                                next += 1;
                            }
                        }
                    }
                    if j >= w.y as usize {
                        let d = dst.plane_row_mut(0, j - w.y as usize);
                        let yf = if self.filter == Filter::Linear {
                            0
                        } else {
                            ((y >> 8) & 255) as u32
                        };
                        interpolate_row(bufs[cur], bufs[cur ^ 1], yf, d);
                    }
                    y += i64::from(self.dy);
                }
            }
            Routine::Simple => {
                for (oy, d) in dst.plane_rows_mut(0).enumerate() {
                    let y = i64::from(self.y) + i64::from(w.y + oy as u32) * i64::from(self.dy);
                    let row = src.rows((y >> 16) as usize, 1, false, rows).row(0);
                    for (i, o) in d.chunks_exact_mut(bpp).enumerate() {
                        let sx = (xs(i as u32) >> 16) as usize;
                        o.copy_from_slice(&row[sx * bpp..][..bpp]);
                    }
                }
            }
        }
    }
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

/// `ScaleARGBFilterCols_C`: output column `i` blends source pixels `x >> 16`
/// and the next with the 7-bit fraction `(x >> 9) & 127`. The next pixel is
/// only read when its weight is not zero.
fn filter_cols(row: &[u8], bpp: usize, xs: &impl Fn(u32) -> i64, out: &mut [u8]) {
    let last = row.len() / bpp - 1;
    for (i, o) in out.chunks_exact_mut(bpp).enumerate() {
        let x = xs(i as u32);
        let (xi, f) = ((x >> 16) as usize, ((x >> 9) & 0x7f) as u32);
        let (a, b) = (
            &row[xi * bpp..][..bpp],
            &row[(xi + 1).min(last) * bpp..][..bpp],
        );
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            *o = ((u32::from(a) * (0x7f ^ f) + u32::from(b) * f) >> 7) as u8;
        }
    }
}
