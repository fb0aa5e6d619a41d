//! Tensor destinations: element type, layout, quantization.

use half::f16;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// 32-bit float.
    F32,
    /// IEEE half precision.
    F16,
    /// Unsigned 8-bit, quantized with a [`Quantization`].
    U8,
    /// Signed 8-bit, quantized with a [`Quantization`].
    I8,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 => 2,
            DType::U8 | DType::I8 => 1,
        }
    }
}

/// Memory layout of an image tensor (batch dimension excluded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// Planar: channel, row, column (PyTorch, ONNX).
    #[default]
    Chw,
    /// Interleaved: row, column, channel (TFLite, most NHWC engines).
    Hwc,
}

impl Layout {
    /// Channels, height and width of a sample tensor of `shape` (batch
    /// dimension excluded) in this layout.
    pub const fn channels_height_width(self, shape: [usize; 3]) -> [usize; 3] {
        match self {
            Layout::Chw => shape,
            Layout::Hwc => [shape[2], shape[0], shape[1]],
        }
    }
}

/// Affine quantization of a real value `r` to an integer `q`: `r = scale * (q - zero_point)`.
///
/// Quantizing computes `q = clamp(round_half_even(r / scale) + zero_point)`, the rounding
/// ONNX `QuantizeLinear` and PyTorch `quantize_per_tensor` use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantization {
    /// Real value of one integer step; must be finite and positive.
    pub scale: f32,
    /// Integer that represents the real value 0.
    pub zero_point: i32,
}

impl Quantization {
    /// `scale = 1, zero_point = 0`: integers equal the real values (clamped).
    pub const IDENTITY: Quantization = Quantization {
        scale: 1.0,
        zero_point: 0,
    };
}

impl Default for Quantization {
    fn default() -> Self {
        Quantization::IDENTITY
    }
}

/// A caller-owned tensor buffer, typically the inference engine's input.
#[derive(Debug)]
#[non_exhaustive]
pub enum TensorMut<'a> {
    /// 32-bit float elements.
    F32(&'a mut [f32]),
    /// Half-precision elements.
    F16(&'a mut [f16]),
    /// Unsigned 8-bit elements.
    U8(&'a mut [u8]),
    /// Signed 8-bit elements.
    I8(&'a mut [i8]),
}

impl TensorMut<'_> {
    /// A shorter borrow of the same elements, to pass on and use again after.
    pub fn reborrow(&mut self) -> TensorMut<'_> {
        match self {
            TensorMut::F32(v) => TensorMut::F32(v),
            TensorMut::F16(v) => TensorMut::F16(v),
            TensorMut::U8(v) => TensorMut::U8(v),
            TensorMut::I8(v) => TensorMut::I8(v),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            TensorMut::F32(_) => DType::F32,
            TensorMut::F16(_) => DType::F16,
            TensorMut::U8(_) => DType::U8,
            TensorMut::I8(_) => DType::I8,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorMut::F32(s) => s.len(),
            TensorMut::F16(s) => s.len(),
            TensorMut::U8(s) => s.len(),
            TensorMut::I8(s) => s.len(),
        }
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An owned tensor buffer, returned by the allocating convenience forms.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Tensor {
    /// 32-bit float elements.
    F32(alloc::vec::Vec<f32>),
    /// Half-precision elements.
    F16(alloc::vec::Vec<f16>),
    /// Unsigned 8-bit elements.
    U8(alloc::vec::Vec<u8>),
    /// Signed 8-bit elements.
    I8(alloc::vec::Vec<i8>),
}

#[cfg(feature = "alloc")]
impl Tensor {
    /// A zeroed tensor of `len` elements of `dtype`, or
    /// [`crate::Error::OutOfMemory`] where the system cannot provide it (for a
    /// size that comes from an image or a graph; [`Tensor::zeros`] aborts).
    ///
    /// ```
    /// use tensorprep::{DType, Tensor};
    ///
    /// assert_eq!(Tensor::try_zeros(DType::U8, 12)?.len(), 12);
    /// assert!(Tensor::try_zeros(DType::F32, usize::MAX / 8).is_err());
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    pub fn try_zeros(dtype: DType, len: usize) -> crate::Result<Self> {
        fn make<T: Clone>(len: usize, zero: T) -> crate::Result<alloc::vec::Vec<T>> {
            let mut v = alloc::vec::Vec::new();
            crate::buffer::reserve(&mut v, len)?;
            v.resize(len, zero);
            Ok(v)
        }
        Ok(match dtype {
            DType::F32 => Tensor::F32(make(len, 0.0)?),
            DType::F16 => Tensor::F16(make(len, f16::ZERO)?),
            DType::U8 => Tensor::U8(make(len, 0)?),
            DType::I8 => Tensor::I8(make(len, 0)?),
        })
    }

    /// A zeroed tensor of `len` elements of `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> Self {
        use alloc::vec;
        match dtype {
            DType::F32 => Tensor::F32(vec![0.0; len]),
            DType::F16 => Tensor::F16(vec![f16::ZERO; len]),
            DType::U8 => Tensor::U8(vec![0; len]),
            DType::I8 => Tensor::I8(vec![0; len]),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Tensor::F32(v) => v.len(),
            Tensor::F16(v) => v.len(),
            Tensor::U8(v) => v.len(),
            Tensor::I8(v) => v.len(),
        }
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Tensor::F32(_) => DType::F32,
            Tensor::F16(_) => DType::F16,
            Tensor::U8(_) => DType::U8,
            Tensor::I8(_) => DType::I8,
        }
    }

    /// A mutable borrow, to pass where a [`TensorMut`] is expected.
    pub fn as_mut(&mut self) -> TensorMut<'_> {
        match self {
            Tensor::F32(v) => TensorMut::F32(v),
            Tensor::F16(v) => TensorMut::F16(v),
            Tensor::U8(v) => TensorMut::U8(v),
            Tensor::I8(v) => TensorMut::I8(v),
        }
    }

    /// The f32 elements, if this is an f32 tensor.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self {
            Tensor::F32(v) => Some(v),
            _ => None,
        }
    }
}

/// FNV-1a 64, fed bytes in pieces: the checksum `verify` and the training
/// benchmark print over tensors (elements as little-endian bytes).
///
/// ```
/// use tensorprep::Fnv1a64;
///
/// let mut h = Fnv1a64::new();
/// h.update(b"a");
/// assert_eq!(h.finish(), 0xaf63dc4c8601ec8c); // FNV-1a 64 of "a"
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv1a64 {
    /// The empty input's hash.
    pub const fn new() -> Fnv1a64 {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Feeds `values` as little-endian float32 bytes.
    pub fn update_f32(&mut self, values: &[f32]) {
        for v in values {
            self.update(&v.to_le_bytes());
        }
    }

    /// Feeds `len` elements of `tensor` from element `start`.
    #[cfg(feature = "alloc")]
    pub fn update_elements(&mut self, tensor: &Tensor, start: usize, len: usize) {
        let end = start + len;
        match tensor {
            Tensor::F32(v) => self.update_f32(&v[start..end]),
            Tensor::F16(v) => v[start..end]
                .iter()
                .for_each(|x| self.update(&x.to_le_bytes())),
            Tensor::U8(v) => self.update(&v[start..end]),
            Tensor::I8(v) => v[start..end]
                .iter()
                .for_each(|x| self.update(&x.to_le_bytes())),
        }
    }

    /// The hash so far.
    pub const fn finish(&self) -> u64 {
        self.0
    }
}
