//! Masks through the geometric ops, as torchvision v2's mask kernels move
//! them: `[N, H, W]` uint8 (instance masks; a semantic mask is `N = 1`),
//! resized with torch's `nearest`, cropped and padded with zeros.

use alloc::vec;
use alloc::vec::Vec;

use super::boxes::check_keep;
use super::{Canvas, Padding};
use crate::pipeline::CropRounding;
use crate::{Error, Limits, Result};

/// `count` masks of one canvas, stored mask after mask, row after row
/// (torchvision's `tv_tensors.Mask` of shape `[N, H, W]`, uint8).
///
/// ```
/// use tensorprep::targets::{Canvas, Masks};
///
/// let mut m = Masks::new(vec![1, 2, 3, 4, 5, 6], 1, Canvas::new(2, 3)?)?;
/// m.horizontal_flip();
/// assert_eq!(m.data(), &[3, 2, 1, 6, 5, 4]);
/// m.crop(-1, 1, 2, 2)?; // top, left, height, width: zeros outside
/// assert_eq!(m.data(), &[0, 0, 2, 1]);
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Masks {
    data: Vec<u8>,
    count: usize,
    canvas: Canvas,
}

impl Masks {
    /// `count` masks of `canvas`'s size in `data` (`count * H * W` bytes).
    pub fn new(data: Vec<u8>, count: usize, canvas: Canvas) -> Result<Masks> {
        let needed = (area(canvas) as u64).saturating_mul(count as u64);
        if data.len() as u64 != needed {
            return Err(Error::TensorSize {
                len: data.len(),
                needed: usize::try_from(needed).unwrap_or(usize::MAX),
            });
        }
        Ok(Masks {
            data,
            count,
            canvas,
        })
    }

    /// The masks' bytes, `[N, H, W]`.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The bytes, given back.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// How many masks there are (`N`).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Their size.
    pub fn canvas(&self) -> Canvas {
        self.canvas
    }

    fn rows_mut(&mut self) -> impl Iterator<Item = &mut [u8]> {
        let w = self.canvas.width as usize;
        self.data.chunks_exact_mut(w)
    }

    /// Keeps the masks whose `keep` entry is true (one per mask), as
    /// `SanitizeBoundingBoxes` keeps instance masks in step with their boxes.
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        check_keep(keep, self.count)?;
        let size = area(self.canvas);
        let mut kept = 0;
        for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
            self.data.copy_within(i * size..(i + 1) * size, kept * size);
            kept += 1;
        }
        self.data.truncate(kept * size);
        self.count = kept;
        Ok(())
    }

    /// torchvision's `horizontal_flip`: each row reversed.
    pub fn horizontal_flip(&mut self) {
        self.rows_mut().for_each(<[u8]>::reverse);
    }

    /// torchvision's `vertical_flip`: each mask's rows in reverse order.
    pub fn vertical_flip(&mut self) {
        let (w, h) = (self.canvas.width as usize, self.canvas.height as usize);
        if w == 0 {
            return;
        }
        for mask in self.data.chunks_exact_mut(w * h) {
            for y in 0..h / 2 {
                let (top, bottom) = mask.split_at_mut((h - 1 - y) * w);
                top[y * w..(y + 1) * w].swap_with_slice(&mut bottom[..w]);
            }
        }
    }

    /// torchvision's `resize` of a mask to `size`: torch's `nearest`
    /// (`interpolate(mode="nearest")`), the source index of each output
    /// index `i` being `min(floor(i * (in / out)), in - 1)` with the ratio
    /// in float32 (`i` itself when the side is unchanged, `i / 2` when it
    /// doubles).
    pub fn resize(&mut self, size: Canvas) -> Result<()> {
        if size == self.canvas {
            return Ok(());
        }
        let xs = nearest_indices(self.canvas.width, size.width);
        let ys = nearest_indices(self.canvas.height, size.height);
        let (iw, ih) = (self.canvas.width as usize, self.canvas.height as usize);
        let mut out = self.allocation(size)?;
        let ow = size.width as usize;
        for (src, dst) in self
            .data
            .chunks_exact(iw * ih)
            .zip(out.chunks_exact_mut(area(size)))
        {
            for (row, &y) in dst.chunks_exact_mut(ow).zip(&ys) {
                let src_row = &src[y * iw..][..iw];
                for (d, &x) in row.iter_mut().zip(&xs) {
                    *d = src_row[x];
                }
            }
        }
        self.data = out;
        self.canvas = size;
        Ok(())
    }

    /// A zeroed buffer for the masks at `size`, its length checked against
    /// the default allocation cap ([`Limits`]) first.
    fn allocation(&self, size: Canvas) -> Result<Vec<u8>> {
        let bytes = (area(size) as u64).saturating_mul(self.count as u64);
        Ok(vec![0; Limits::default().check_alloc(bytes)?])
    }

    /// torchvision's `crop(top, left, height, width)`: the window, zeros
    /// where it lies outside the masks.
    pub fn crop(&mut self, top: i64, left: i64, height: u32, width: u32) -> Result<()> {
        let size = Canvas::new(height, width)?;
        let mut out = self.allocation(size)?;
        let (iw, ih) = (i64::from(self.canvas.width), i64::from(self.canvas.height));
        // The columns of the window inside the source, and where they land.
        let x0 = left.clamp(0, iw);
        let x1 = left.saturating_add(i64::from(width)).clamp(0, iw);
        let ow = width as usize;
        if x1 > x0 {
            let n = (x1 - x0) as usize;
            let dst_x = (x0 - left) as usize;
            for (src, dst) in self
                .data
                .chunks_exact((iw * ih) as usize)
                .zip(out.chunks_exact_mut(area(size)))
            {
                for (oy, row) in dst.chunks_exact_mut(ow).enumerate() {
                    let y = top.saturating_add(oy as i64);
                    if (0..ih).contains(&y) {
                        let start = (y * iw + x0) as usize;
                        row[dst_x..dst_x + n].copy_from_slice(&src[start..start + n]);
                    }
                }
            }
        }
        self.data = out;
        self.canvas = size;
        Ok(())
    }

    /// torchvision's `center_crop(output_size=[height, width])` of a mask:
    /// as the image is cropped (zero padding first where the crop is larger,
    /// `(crop - side) // 2` before), which can place it a pixel apart from
    /// the boxes' crop, as in torchvision.
    pub fn center_crop(&mut self, height: u32, width: u32) -> Result<()> {
        let offset = |side: u32, crop: u32| {
            let (side, crop) = (i64::from(side), i64::from(crop));
            if crop > side {
                -((crop - side) / 2)
            } else {
                CropRounding::HalfEven.offset(side - crop)
            }
        };
        let top = offset(self.canvas.height, height);
        let left = offset(self.canvas.width, width);
        self.crop(top, left, height, width)
    }

    /// torchvision's `resized_crop(top, left, height, width, size)`:
    /// [`crop`](Self::crop), then [`resize`](Self::resize) (nearest).
    pub fn resized_crop(
        &mut self,
        top: i64,
        left: i64,
        height: u32,
        width: u32,
        size: Canvas,
    ) -> Result<()> {
        self.crop(top, left, height, width)?;
        self.resize(size)
    }

    /// torchvision's `pad(padding)` with zeros (constant padding, fill 0).
    pub fn pad(&mut self, padding: Padding) -> Result<()> {
        let size = padding.canvas(self.canvas)?;
        // Padding that fits a canvas is far from i64::MIN: the negations hold.
        self.crop(-padding.top, -padding.left, size.height, size.width)
    }
}

fn area(c: Canvas) -> usize {
    c.width as usize * c.height as usize
}

/// torch's `nearest` source index for each of `out` output indices.
fn nearest_indices(input: u32, out: u32) -> Vec<usize> {
    let scale = input as f32 / out as f32;
    (0..out)
        .map(|i| {
            if out == input {
                i as usize
            } else if out == 2 * input {
                (i >> 1) as usize
            } else {
                (libm::floorf(i as f32 * scale) as usize).min(input as usize - 1)
            }
        })
        .collect()
}
