//! torchvision's `RandomErasing` on the finished tensor: a box drawn by
//! area share and log-uniform aspect ratio, filled with a constant per
//! channel or with standard normal values, after `Normalize` as in
//! torchvision's recipes.

#![forbid(unsafe_code)]

use core::fmt;

use super::Draws;
use crate::{Error, Layout, Rect, Result, TensorMut};

/// What an erased box is filled with.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum EraseValue {
    /// One value for every channel (torchvision's `value=0`).
    Same(f32),
    /// One value per channel, in the tensor's channel order.
    PerChannel([f32; 3]),
    /// Standard normal values, one per element (`value="random"`).
    Random,
}

/// `RandomErasing(p, scale, ratio, value)`.
///
/// ```
/// use tensorprep::train::RandomErasing;
///
/// // torchvision's reference recipe: RandomErasing(0.25).
/// let e = RandomErasing::new(0.25);
/// assert_eq!(e.scale, (0.02, 0.33));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RandomErasing {
    /// The probability of erasing.
    pub p: f64,
    /// The box's share of the image area, drawn uniformly.
    pub scale: (f64, f64),
    /// The box's aspect ratio h/w, drawn log-uniformly.
    pub ratio: (f64, f64),
    /// The fill.
    pub value: EraseValue,
}

impl RandomErasing {
    /// torchvision's defaults: scale 0.02 to 0.33, ratio 0.3 to 3.3, zeros.
    pub const fn new(p: f64) -> RandomErasing {
        RandomErasing {
            p,
            scale: (0.02, 0.33),
            ratio: (0.3, 3.3),
            value: EraseValue::Same(0.0),
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        let bad = |name, reason| Err(Error::InvalidParameter { name, reason });
        if !(0.0..=1.0).contains(&self.p) {
            return bad("RandomErasing", "p must be in 0..=1");
        }
        let (s0, s1) = self.scale;
        if !(0.0 <= s0 && s0 <= s1 && s1 <= 1.0) {
            return bad("RandomErasing", "scale must be within 0..=1, min <= max");
        }
        let (r0, r1) = self.ratio;
        if !(r0.is_finite() && r1.is_finite() && 0.0 < r0 && r0 <= r1) {
            return bad("RandomErasing", "ratio must be positive, min <= max");
        }
        let finite = match self.value {
            EraseValue::Same(v) => v.is_finite(),
            EraseValue::PerChannel(v) => v.iter().all(|x| x.is_finite()),
            EraseValue::Random => true,
        };
        if !finite {
            return bad("RandomErasing", "the value must be finite");
        }
        Ok(())
    }

    /// `get_params`: the box for a `width` x `height` image, or `None`
    /// when ten tries find none that fits (the image is left as it is).
    pub fn draw_box(&self, d: &mut Draws, width: u32, height: u32) -> Option<Rect> {
        let area = f64::from(width) * f64::from(height);
        let (l0, l1) = (libm::log(self.ratio.0), libm::log(self.ratio.1));
        for _ in 0..10 {
            let erase_area = area * d.uniform(self.scale.0, self.scale.1);
            let aspect = libm::exp(d.uniform(l0, l1));
            // int(round(...)): half to even.
            let h = libm::rint(libm::sqrt(erase_area * aspect));
            let w = libm::rint(libm::sqrt(erase_area / aspect));
            if !(h < f64::from(height) && w < f64::from(width)) {
                continue;
            }
            let (h, w) = (h as u32, w as u32);
            let top = d.below(height - h + 1);
            let left = d.below(width - w + 1);
            return Some(Rect::new(left, top, w, h));
        }
        None
    }

    /// Draws (with probability `p`) and erases a box of `out`, a tensor of
    /// `shape` in `layout`.
    pub(crate) fn apply(
        &self,
        d: &mut Draws,
        out: TensorMut<'_>,
        shape: [usize; 3],
        layout: Layout,
    ) -> Result<()> {
        if !d.chance(self.p) {
            return Ok(());
        }
        let (_, h, w) = chw(shape, layout);
        let Some(rect) = self.draw_box(d, w as u32, h as u32) else {
            return Ok(());
        };
        let mut fill = |ch: usize| match self.value {
            EraseValue::Same(v) => v,
            EraseValue::PerChannel(v) => v[ch.min(2)],
            EraseValue::Random => normal(d),
        };
        erase(out, shape, layout, rect, &mut fill)
    }
}

/// A standard normal value from 24-bit uniforms.
fn normal(d: &mut Draws) -> f32 {
    let u1 = 1.0 - f64::from(d.unit_f32());
    super::rng::box_muller(u1, f64::from(d.unit_f32())) as f32
}

/// Channels, height and width of a tensor of `shape` in `layout`.
fn chw(shape: [usize; 3], layout: Layout) -> (usize, usize, usize) {
    let [c, h, w] = layout.channels_height_width(shape);
    (c, h, w)
}

/// torchvision's `F.erase(img, i, j, h, w, v)` on a tensor of `shape` in
/// `layout`: every element of `rect` set to `fill(channel)` (called once
/// per element, channel-major for CHW, pixel-major for HWC), converted to
/// the tensor's element type (integers rounded and saturated).
///
/// ```
/// use tensorprep::train::erase;
/// use tensorprep::{Layout, Rect, TensorMut};
///
/// let mut t = vec![1f32; 2 * 3 * 4];
/// erase(TensorMut::F32(&mut t), [2, 3, 4], Layout::Chw, Rect::new(1, 1, 2, 1), &mut |c| c as f32 * 5.0)?;
/// assert_eq!(&t[4..8], &[1.0, 0.0, 0.0, 1.0]);
/// assert_eq!(&t[16..20], &[1.0, 5.0, 5.0, 1.0]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub fn erase(
    out: TensorMut<'_>,
    shape: [usize; 3],
    layout: Layout,
    rect: Rect,
    fill: &mut dyn FnMut(usize) -> f32,
) -> Result<()> {
    let (c, h, w) = chw(shape, layout);
    let (x0, y0) = (rect.x as usize, rect.y as usize);
    let (x1, y1) = (x0 + rect.width as usize, y0 + rect.height as usize);
    let needed = c.checked_mul(h).and_then(|ch| ch.checked_mul(w));
    if needed != Some(out.len()) {
        return Err(Error::TensorSize {
            len: out.len(),
            needed: needed.unwrap_or(usize::MAX),
        });
    }
    if x1 > w || y1 > h {
        let side = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        return Err(Error::RectOutOfBounds {
            rect,
            width: side(w),
            height: side(h),
        });
    }
    let index = |ch: usize, y: usize, x: usize| match layout {
        Layout::Chw => (ch * h + y) * w + x,
        Layout::Hwc => (y * w + x) * c + ch,
    };
    let mut each = |set: &mut dyn FnMut(usize, f32)| match layout {
        Layout::Chw => {
            for ch in 0..c {
                for y in y0..y1 {
                    for x in x0..x1 {
                        set(index(ch, y, x), fill(ch));
                    }
                }
            }
        }
        Layout::Hwc => {
            for y in y0..y1 {
                for x in x0..x1 {
                    for ch in 0..c {
                        set(index(ch, y, x), fill(ch));
                    }
                }
            }
        }
    };
    match out {
        TensorMut::F32(t) => each(&mut |i, v| t[i] = v),
        TensorMut::F16(t) => each(&mut |i, v| t[i] = half::f16::from_f32(v)),
        TensorMut::U8(t) => each(&mut |i, v| t[i] = libm::rintf(v).clamp(0.0, 255.0) as u8),
        TensorMut::I8(t) => each(&mut |i, v| t[i] = libm::rintf(v).clamp(-128.0, 127.0) as i8),
    }
    Ok(())
}

impl fmt::Display for RandomErasing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RandomErasing p {} scale {:?} ratio {:?} value {:?}",
            self.p, self.scale, self.ratio, self.value
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_or_a_tensor_that_does_not_fit_is_a_typed_error() {
        let mut t = [0f32; 24];
        let outside = Rect::new(3, 0, 2, 1);
        let e = erase(
            TensorMut::F32(&mut t),
            [2, 3, 4],
            Layout::Chw,
            outside,
            &mut |_| 1.0,
        );
        assert_eq!(
            e,
            Err(Error::RectOutOfBounds {
                rect: outside,
                width: 4,
                height: 3,
            })
        );
        let inside = Rect::new(0, 0, 1, 1);
        let short = &mut t[..23];
        let e = erase(
            TensorMut::F32(short),
            [2, 3, 4],
            Layout::Chw,
            inside,
            &mut |_| 1.0,
        );
        assert_eq!(
            e,
            Err(Error::TensorSize {
                len: 23,
                needed: 24
            })
        );
        let huge = [usize::MAX, 2, 2];
        let e = erase(
            TensorMut::F32(&mut t),
            huge,
            Layout::Chw,
            inside,
            &mut |_| 1.0,
        );
        assert!(matches!(e, Err(Error::TensorSize { len: 24, .. })));
        // Nothing was written.
        assert_eq!(t, [0f32; 24]);
    }
}
