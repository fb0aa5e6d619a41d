//! Adapters that let `fast_image_resize` read and write our strided views in place.

use core::marker::PhantomData;

use fast_image_resize::pixels::{InnerPixel, U8, U8x3, U8x4};
use fast_image_resize::{ImageView as FirView, ImageViewMut as FirViewMut};

/// The u8 pixel types we hand to `fast_image_resize`: plain bytes, castable with bytemuck.
pub(super) trait BytePixel: InnerPixel + bytemuck::Pod {}
impl BytePixel for U8 {}
impl BytePixel for U8x3 {}
impl BytePixel for U8x4 {}

/// A read-only plane: rows of `width` pixels, `stride` bytes apart.
pub(super) struct Src<'a, P> {
    data: &'a [u8],
    stride: usize,
    width: u32,
    height: u32,
    _pixel: PhantomData<P>,
}

impl<'a, P: BytePixel> Src<'a, P> {
    /// `data` must hold `height` rows as validated by `ImageView`.
    pub(super) fn new(view: &crate::ImageView<'a>) -> Self {
        let plane = view.plane(0);
        Src {
            data: plane.data,
            stride: plane.stride,
            width: view.width(),
            height: view.height(),
            _pixel: PhantomData,
        }
    }
}

fn row_bytes<P>(width: u32) -> usize {
    width as usize * core::mem::size_of::<P>()
}

/// Rows `start..height` of `width` pixels, `stride` bytes apart.
fn rows<P: BytePixel>(
    data: &[u8],
    stride: usize,
    width: u32,
    height: u32,
    start: u32,
) -> impl Iterator<Item = &[P]> {
    let n = row_bytes::<P>(width);
    data.chunks(stride)
        .take(height as usize)
        .skip(start as usize)
        .map(move |r| bytemuck::cast_slice(&r[..n]))
}

// SAFETY: fast_image_resize requires every row yielded to hold at least `width`
// pixels. Each row is cut as exactly `width * size_of::<P>()` bytes from a
// buffer that `ImageView` validated to hold `height` such rows `stride` apart,
// and `bytemuck::cast_slice` of that length yields exactly `width` pixels.
unsafe impl<P: BytePixel> FirView for Src<'_, P> {
    type Pixel = P;

    fn width(&self) -> u32 {
        self.width
    }

    fn height(&self) -> u32 {
        self.height
    }

    fn iter_rows(&self, start_row: u32) -> impl Iterator<Item = &[P]> {
        rows(self.data, self.stride, self.width, self.height, start_row)
    }
}

/// A writable plane: rows of `width` pixels, `stride` bytes apart.
pub(super) struct Dst<'a, P> {
    data: &'a mut [u8],
    stride: usize,
    width: u32,
    height: u32,
    _pixel: PhantomData<P>,
}

impl<'a, P: BytePixel> Dst<'a, P> {
    pub(super) fn new(data: &'a mut [u8], stride: usize, width: u32, height: u32) -> Self {
        Dst {
            data,
            stride,
            width,
            height,
            _pixel: PhantomData,
        }
    }
}

// SAFETY: as for `Src`: every row is exactly `width` pixels, cut from a buffer
// that `ImageViewMut` validated.
unsafe impl<P: BytePixel> FirView for Dst<'_, P> {
    type Pixel = P;

    fn width(&self) -> u32 {
        self.width
    }

    fn height(&self) -> u32 {
        self.height
    }

    fn iter_rows(&self, start_row: u32) -> impl Iterator<Item = &[P]> {
        rows(self.data, self.stride, self.width, self.height, start_row)
    }
}

// SAFETY: as for `Src`.
unsafe impl<P: BytePixel> FirViewMut for Dst<'_, P> {
    fn iter_rows_mut(&mut self, start_row: u32) -> impl Iterator<Item = &mut [P]> {
        let n = row_bytes::<P>(self.width);
        self.data
            .chunks_mut(self.stride)
            .take(self.height as usize)
            .skip(start_row as usize)
            .map(move |r| bytemuck::cast_slice_mut(&mut r[..n]))
    }
}
