//! Chroma upsampling as libjpeg-turbo does it with fancy upsampling on
//! (Pillow's setting): the triangle filters for 2x horizontal (h2v1), 2x
//! vertical (h1v2) and both (h2v2), box replication for every other integer
//! ratio and for planes 2 samples wide or less; neighbours clamped to the
//! component's own size (docs/design/jpeg-exactness.md, §4).

/// A component's decoded samples: `width x height` of them, rows `stride`
/// apart.
#[derive(Clone, Copy)]
pub(super) struct Plane<'a> {
    pub(super) samples: &'a [u8],
    pub(super) stride: usize,
    pub(super) width: usize,
    pub(super) height: usize,
}

impl<'a> Plane<'a> {
    /// Row `y`, clamped to the plane.
    #[inline]
    fn row(&self, y: isize) -> &'a [u8] {
        let y = y.clamp(0, self.height as isize - 1) as usize;
        &self.samples[y * self.stride..y * self.stride + self.width]
    }
}

/// How a component reaches the output's sampling grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Method {
    /// Already at full size.
    Full,
    /// The triangle filter, 2x horizontally.
    H2V1,
    /// The triangle filter, 2x vertically.
    H1V2,
    /// The triangle filter, 2x both ways.
    H2V2,
    /// Each sample repeated `h` times across and `v` times down.
    Box { h: usize, v: usize },
}

impl Method {
    /// libjpeg-turbo's choice for a component `h` x `v` times smaller than
    /// the output (`fancy`: fancy upsampling on), its plane `width` wide.
    pub(super) fn choose(h: usize, v: usize, fancy: bool, width: usize) -> Method {
        match (h, v) {
            (1, 1) => Method::Full,
            (2, 1) if fancy && width > 2 => Method::H2V1,
            (1, 2) if fancy => Method::H1V2,
            (2, 2) if fancy && width > 2 => Method::H2V2,
            (h, v) => Method::Box { h, v },
        }
    }
}

/// Fills `out` (`out_w` x `out_h`, rows `out_w` apart) from `plane` by
/// `method`.
pub(super) fn upsample(
    plane: Plane<'_>,
    method: Method,
    out: &mut [u8],
    out_w: usize,
    out_h: usize,
) {
    for y in 0..out_h {
        let row = &mut out[y * out_w..(y + 1) * out_w];
        match method {
            Method::Full => row.copy_from_slice(&plane.row(y as isize)[..out_w]),
            Method::Box { h, v } => {
                let src = plane.row((y / v) as isize);
                for (x, s) in row.iter_mut().enumerate() {
                    *s = src[x / h];
                }
            }
            Method::H2V1 => h2v1(plane.row(y as isize), row),
            Method::H1V2 => {
                let (cur, near, bias) = vertical(plane, y);
                for (x, s) in row.iter_mut().enumerate() {
                    let sum = 3 * u32::from(cur[x]) + u32::from(near[x]);
                    *s = ((sum + bias) >> 2) as u8;
                }
            }
            Method::H2V2 => {
                let (cur, near, _) = vertical(plane, y);
                h2v2(cur, near, row);
            }
        }
    }
}

/// Output row `y` of a 2x vertical filter: the nearest input row, the next
/// nearest (above for an even row, below for an odd one) and the bias.
fn vertical<'a>(plane: Plane<'a>, y: usize) -> (&'a [u8], &'a [u8], u32) {
    let at = (y / 2) as isize;
    if y.is_multiple_of(2) {
        (plane.row(at), plane.row(at - 1), 1)
    } else {
        (plane.row(at), plane.row(at + 1), 2)
    }
}

/// `(3 x[i] + x[i -/+ 1] + 1 or 2) >> 2`, neighbours clamped.
fn h2v1(x: &[u8], out: &mut [u8]) {
    let last = x.len() - 1;
    for (o, s) in out.iter_mut().enumerate() {
        let i = o / 2;
        let here = 3 * u32::from(x[i]);
        *s = if o % 2 == 0 {
            ((here + u32::from(x[i.saturating_sub(1)]) + 1) >> 2) as u8
        } else {
            ((here + u32::from(x[(i + 1).min(last)]) + 2) >> 2) as u8
        };
    }
}

/// The column sums `3 cur + near`, then `(3 c[i] + c[i -/+ 1] + 8 or 7) >> 4`.
fn h2v2(cur: &[u8], near: &[u8], out: &mut [u8]) {
    let last = cur.len() - 1;
    let c = |i: usize| 3 * u32::from(cur[i]) + u32::from(near[i]);
    for (o, s) in out.iter_mut().enumerate() {
        let i = o / 2;
        let here = 3 * c(i);
        *s = if o % 2 == 0 {
            ((here + c(i.saturating_sub(1)) + 8) >> 4) as u8
        } else {
            ((here + c((i + 1).min(last)) + 7) >> 4) as u8
        };
    }
}
