//! COCO's masks: run-length encodings (RLE) and polygons, decoded into
//! row-major `[H, W]` masks of 0 and 1 exactly as pycocotools 2.0.11 makes
//! them (`COCO.annToMask`), written from the format's description.
//!
//! An RLE lists the lengths of alternating runs of 0 and 1 (starting with
//! 0) down the columns (column-major, Fortran order), summing to `H * W`.
//! In a file it is either a list of integers ("uncompressed") or a string
//! ("compressed"): each count, less the count two before it from the fourth
//! on, written as little-endian groups of 5 bits plus a continuation bit, one
//! character (`'0' + group`) per group, the last group's top bit its sign.
//!
//! A polygon (`[x0, y0, x1, y1, ...]`) is rasterised as pycocotools'
//! `frPyObjects` does: its vertices scaled by 5 and rounded (`(int)(5x +
//! .5)`, truncating toward zero), every edge walked one step at a time in
//! the upsampled grid (the walk's direction and rounding as pycocotools'),
//! and a pixel's column toggled at the row where the boundary crosses that
//! column's centre. A polygon in several parts is the union of its parts
//! (`merge`).
//!
//! Refused, where pycocotools would read garbage, overflow or hang: counts
//! that do not sum to `H * W`, a string with characters outside `'0'..='o'`
//! or ending inside a count, a polygon with an odd number of coordinates or
//! fewer than three points, a coordinate that is not finite or so large that
//! its upsampled value leaves `i32` (pycocotools' `int`), and a polygon
//! whose walk is longer than [`MAX_POLYGON_STEPS`].
//!
//! ```
//! use tensorprep::targets::{Canvas, Rle};
//!
//! let canvas = Canvas::new(3, 4)?; // height 3, width 4
//! // pycocotools: frPyObjects([[0.5, 0.5, 2.5, 0.5, 2.5, 1.5, 0.5, 1.5]], 3, 4)
//! let square = Rle::from_polygon(&[0.5, 0.5, 2.5, 0.5, 2.5, 1.5, 0.5, 1.5], canvas)?;
//! assert_eq!(square.decode()?, [
//!     0, 0, 0, 0,
//!     0, 1, 1, 0,
//!     0, 0, 0, 0,
//! ]);
//! // The same mask from its compressed and uncompressed forms.
//! let text = square.to_compressed();
//! assert_eq!(Rle::from_compressed(text.as_bytes(), canvas)?, square);
//! assert_eq!(Rle::from_counts(&[4, 1, 2, 1, 4], canvas)?, square);
//! # Ok::<(), tensorprep::Error>(())
//! ```

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::Canvas;
use crate::{Error, Limits, Result};

/// The longest walk along a polygon's upsampled boundary (steps of a fifth
/// of a pixel, summed over its edges, and over every part and annotation
/// one call rasterises): 2^26, a perimeter of about 13 million pixels,
/// walked in well under a second. A longer one is refused, not walked.
pub const MAX_POLYGON_STEPS: u64 = 1 << 26;

/// pycocotools' upsampling of polygon vertices.
const SCALE: f64 = 5.0;

/// The largest upsampled coordinate accepted: pycocotools converts each to a
/// C `int` and subtracts them, so beyond this its arithmetic overflows.
const MAX_UPSAMPLED: f64 = (1u64 << 30) as f64;

fn bad(name: &'static str, reason: &'static str) -> Error {
    Error::InvalidParameter { name, reason }
}

/// A run-length encoded mask of one canvas (pycocotools' `RLE`): the runs'
/// lengths, column-major, alternating 0 and 1 from 0, summing to `H * W`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rle {
    canvas: Canvas,
    counts: Vec<u32>,
}

impl Rle {
    /// The pixels of `canvas`, as a `u32` count (pycocotools' `uint`).
    fn pixels(canvas: Canvas) -> Result<u32> {
        canvas.height.checked_mul(canvas.width).ok_or(bad(
            "rle",
            "an RLE's canvas has more pixels than a 32-bit count holds",
        ))
    }

    fn checked(counts: Vec<u32>, canvas: Canvas) -> Result<Rle> {
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total != u64::from(Self::pixels(canvas)?) {
            return Err(bad(
                "rle",
                "the RLE counts do not sum to the mask's height * width",
            ));
        }
        Ok(Rle { canvas, counts })
    }

    /// An uncompressed RLE (COCO's `"counts": [...]` list): each count at
    /// most `H * W`, their sum exactly `H * W`.
    pub fn from_counts(counts: &[u64], canvas: Canvas) -> Result<Rle> {
        let pixels = u64::from(Self::pixels(canvas)?);
        let mut out = Vec::new();
        out.try_reserve_exact(counts.len())
            .map_err(|_| bad("rle", "no memory for the RLE counts"))?;
        for &c in counts {
            if c > pixels {
                return Err(bad("rle", "an RLE count larger than the mask"));
            }
            out.push(c as u32);
        }
        Self::checked(out, canvas)
    }

    /// A compressed RLE (COCO's `"counts": "..."` string, pycocotools'
    /// `rleFrString`).
    pub fn from_compressed(text: &[u8], canvas: Canvas) -> Result<Rle> {
        let pixels = i64::from(Self::pixels(canvas)?);
        let mut counts: Vec<u32> = Vec::new();
        let mut p = 0;
        while p < text.len() {
            let mut x: i64 = 0;
            let mut k = 0;
            loop {
                let Some(&ch) = text.get(p) else {
                    return Err(bad("rle", "the RLE string ends inside a count"));
                };
                if !(b'0'..=b'o').contains(&ch) {
                    return Err(bad(
                        "rle",
                        "a character outside '0'..='o' in the RLE string",
                    ));
                }
                if k >= 7 {
                    return Err(bad("rle", "an RLE count longer than 7 characters"));
                }
                let c = i64::from(ch - b'0');
                x |= (c & 0x1f) << (5 * k);
                p += 1;
                k += 1;
                if c & 0x20 == 0 {
                    if c & 0x10 != 0 {
                        x |= -1i64 << (5 * k);
                    }
                    break;
                }
            }
            let m = counts.len();
            if m > 2 {
                x += i64::from(counts[m - 2]);
            }
            if !(0..=pixels).contains(&x) {
                return Err(bad("rle", "an RLE count outside 0..=height*width"));
            }
            counts.push(x as u32);
        }
        Self::checked(counts, canvas)
    }

    /// Encodes a row-major mask of `canvas` (nonzero is 1), as
    /// pycocotools' `encode` encodes the same mask in Fortran order.
    pub fn from_mask(mask: &[u8], canvas: Canvas) -> Result<Rle> {
        let (h, w) = (canvas.height as usize, canvas.width as usize);
        if mask.len() != h * w {
            return Err(Error::TensorSize {
                len: mask.len(),
                needed: h * w,
            });
        }
        Self::pixels(canvas)?;
        let mut counts = Vec::new();
        let (mut value, mut run) = (false, 0u32);
        for x in 0..w {
            for y in 0..h {
                let v = mask[y * w + x] != 0;
                if v != value {
                    counts.push(run);
                    run = 0;
                    value = v;
                }
                run += 1;
            }
        }
        counts.push(run);
        Ok(Rle { canvas, counts })
    }

    /// One polygon part (`[x0, y0, x1, y1, ...]`, at least three points) as
    /// pycocotools' `frPyObjects([polygon], H, W)` rasterises it.
    pub fn from_polygon(xy: &[f64], canvas: Canvas) -> Result<Rle> {
        let mut budget = MAX_POLYGON_STEPS;
        polygon(xy, canvas, &mut budget)
    }

    /// The compressed string (pycocotools' `rleToString`, what `encode`
    /// returns as `counts`).
    pub fn to_compressed(&self) -> String {
        let mut s = String::new();
        for (i, &c) in self.counts.iter().enumerate() {
            let mut x = i64::from(c);
            if i > 2 {
                x -= i64::from(self.counts[i - 2]);
            }
            loop {
                let mut c = (x & 0x1f) as u8;
                x >>= 5;
                let more = if c & 0x10 != 0 { x != -1 } else { x != 0 };
                if more {
                    c |= 0x20;
                }
                s.push(char::from(c + b'0'));
                if !more {
                    break;
                }
            }
        }
        s
    }

    /// The run lengths.
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// The canvas.
    pub fn canvas(&self) -> Canvas {
        self.canvas
    }

    /// The number of 1 pixels (pycocotools' `area`).
    pub fn area(&self) -> u64 {
        self.counts
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&c| u64::from(c))
            .sum()
    }

    /// Sets to 1 the pixels of `mask` (row-major `[H, W]` of this canvas)
    /// that are 1 here, leaving the others: the union of masks.
    pub fn paint(&self, mask: &mut [u8]) -> Result<()> {
        let (h, w) = (self.canvas.height as usize, self.canvas.width as usize);
        if mask.len() != h * w {
            return Err(Error::TensorSize {
                len: mask.len(),
                needed: h * w,
            });
        }
        let mut at = 0usize;
        for (i, &c) in self.counts.iter().enumerate() {
            let end = at + c as usize;
            if i % 2 == 1 {
                for p in at..end {
                    mask[(p % h) * w + p / h] = 1;
                }
            }
            at = end;
        }
        Ok(())
    }

    /// The mask, row-major `[H, W]`, 0 and 1 (pycocotools' `decode`, in C
    /// order).
    pub fn decode(&self) -> Result<Vec<u8>> {
        let bytes = u64::from(self.canvas.height) * u64::from(self.canvas.width);
        let mut mask = vec![0; Limits::default().check_alloc(bytes)?];
        self.paint(&mut mask)?;
        Ok(mask)
    }
}

/// The boundary steps of polygon `xy`'s walk (after checking it), as
/// pycocotools sums them before walking: `max(|dx|, |dy|) + 1` per edge.
fn vertices(xy: &[f64]) -> Result<(Vec<(i64, i64)>, u64)> {
    if !xy.len().is_multiple_of(2) {
        return Err(bad(
            "polygon",
            "a polygon with an odd number of coordinates",
        ));
    }
    if xy.len() < 6 {
        return Err(bad("polygon", "a polygon with fewer than three points"));
    }
    let mut points = Vec::new();
    points
        .try_reserve_exact(xy.len() / 2 + 1)
        .map_err(|_| bad("polygon", "no memory for the polygon"))?;
    for p in xy.chunks_exact(2) {
        let up = |v: f64| {
            let s = SCALE * v + 0.5;
            if s.is_finite() && s.abs() < MAX_UPSAMPLED {
                Ok(s as i64)
            } else {
                Err(bad(
                    "polygon",
                    "a polygon coordinate that is not finite or beyond +-2^30 / 5",
                ))
            }
        };
        points.push((up(p[0])?, up(p[1])?));
    }
    points.push(points[0]);
    let steps = points
        .windows(2)
        .map(|e| (e[0].0 - e[1].0).abs().max((e[0].1 - e[1].1).abs()) as u64 + 1)
        .sum();
    Ok((points, steps))
}

/// Rasterises one polygon part, charging its walk to `budget`.
fn polygon(xy: &[f64], canvas: Canvas, budget: &mut u64) -> Result<Rle> {
    let pixels = Rle::pixels(canvas)?;
    let (points, steps) = vertices(xy)?;
    *budget = budget.checked_sub(steps).ok_or(bad(
        "polygon",
        "a polygon whose boundary walk is longer than MAX_POLYGON_STEPS",
    ))?;
    let (h, w) = (canvas.height, canvas.width);
    // The boundary's crossings of column centres, as column-major indices.
    let mut cuts: Vec<u32> = Vec::new();
    let mut prev: Option<(i64, i64)> = None;
    let mut visit = |u: i64, v: i64| {
        if let Some((pu, pv)) = prev
            && u != pu
        {
            let xd = (if u < pu { u } else { u - 1 }) as f64;
            let xd = (xd + 0.5) / SCALE - 0.5;
            if libm::floor(xd) == xd && xd >= 0.0 && xd <= f64::from(w - 1) {
                let yd = pv.min(v) as f64;
                let yd = libm::ceil(((yd + 0.5) / SCALE - 0.5).clamp(0.0, f64::from(h)));
                cuts.push((xd as u32) * h + yd as u32);
            }
        }
        prev = Some((u, v));
    };
    for e in points.windows(2) {
        let ((mut xs, mut ys), (mut xe, mut ye)) = (e[0], e[1]);
        let (dx, dy) = ((xe - xs).abs(), (ye - ys).abs());
        let flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
        if flip {
            core::mem::swap(&mut xs, &mut xe);
            core::mem::swap(&mut ys, &mut ye);
        }
        if dx >= dy {
            // dx == dy == 0 gives NaN, as in pycocotools; that point's
            // column is its neighbours', so it is never a crossing.
            let s = (ye - ys) as f64 / dx as f64;
            for d in 0..=dx {
                let t = if flip { dx - d } else { d };
                visit(t + xs, (ys as f64 + s * t as f64 + 0.5) as i64);
            }
        } else {
            let s = (xe - xs) as f64 / dy as f64;
            for d in 0..=dy {
                let t = if flip { dy - d } else { d };
                visit((xs as f64 + s * t as f64 + 0.5) as i64, t + ys);
            }
        }
    }
    cuts.push(pixels);
    cuts.sort_unstable();
    // Differences, then two cuts at one place cancel (pycocotools joins the
    // runs on either side of a zero-length one).
    let mut counts = Vec::with_capacity(cuts.len());
    let mut last = 0;
    let mut diffs = cuts.iter().map(|&c| {
        let d = c - last;
        last = c;
        d
    });
    if let Some(first) = diffs.next() {
        counts.push(first);
    }
    while let Some(d) = diffs.next() {
        if d > 0 {
            counts.push(d);
        } else if let Some(next) = diffs.next()
            && let Some(l) = counts.last_mut()
        {
            *l += next;
        }
    }
    Ok(Rle { canvas, counts })
}

/// A COCO polygon in several parts as one mask: the union (pycocotools'
/// `merge` of `frPyObjects(parts, H, W)`), painted into `mask` (row-major
/// `[H, W]` of `canvas`, left as it is elsewhere). `budget` is what remains
/// of the caller's [`MAX_POLYGON_STEPS`]: each part's walk is charged to it.
pub fn paint_polygons<'a>(
    parts: impl IntoIterator<Item = &'a [f64]>,
    canvas: Canvas,
    mask: &mut [u8],
    budget: &mut u64,
) -> Result<()> {
    for xy in parts {
        polygon(xy, canvas, budget)?.paint(mask)?;
    }
    Ok(())
}
