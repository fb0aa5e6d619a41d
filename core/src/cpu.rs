//! The CPU extensions the kernels use, detected in this one place.
//!
//! [`Simd`] is the one token every kernel family takes: the resampler's
//! convolution loops and its float loops, the colour and YUV conversions and
//! the finish pass. [`Simd::detect`] picks the best path this CPU has (at run
//! time with `std`, detected once and cached; from the compile-time target
//! features without it). A caller can pin a lower path instead, as
//! fast_image_resize's `CpuExtensions` allows: `Simd::Scalar` runs the portable
//! code every vector path is tested against.

use core::fmt;

/// Which instruction set the kernels' inner loops use.
///
/// [`Simd::detect`] picks the best one the CPU has; a resize plan
/// ([`crate::resize::ResizePlanIn::with_simd`]) or a finisher
/// ([`crate::finish::Finisher::with_simd`]) can be pinned to another to compare
/// them. A path the CPU lacks is refused with [`crate::Error::UnsupportedCpu`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Simd {
    /// Portable Rust, the reference every other path is tested against.
    Scalar,
    /// x86_64 SSE4.1 (128-bit integer multiply).
    Sse41,
    /// x86_64 AVX2 (256-bit); the float kernels also use FMA where the CPU has it.
    Avx2,
    /// aarch64 NEON (128-bit).
    Neon,
}

impl Simd {
    /// Every path, the reference first, then from slower to faster on each architecture.
    pub const ALL: [Simd; 4] = [Simd::Scalar, Simd::Sse41, Simd::Avx2, Simd::Neon];

    /// The paths this CPU can run.
    ///
    /// ```
    /// use tensorprep::resize::Simd;
    /// assert!(Simd::available().any(|s| s == Simd::Scalar));
    /// assert!(Simd::available().any(|s| s == Simd::detect()));
    /// ```
    pub fn available() -> impl DoubleEndedIterator<Item = Simd> {
        Simd::ALL.into_iter().filter(|s| s.is_available())
    }

    /// The fastest path this CPU supports (detected at run time with `std`, from
    /// the compile-time target features without it).
    pub fn detect() -> Simd {
        Simd::available().last().unwrap_or(Simd::Scalar)
    }

    /// Whether this CPU can run the path.
    pub fn is_available(self) -> bool {
        let cpu = Features::get();
        match self {
            Simd::Scalar => true,
            Simd::Sse41 => cpu.has(Features::SSE41),
            Simd::Avx2 => cpu.has(Features::AVX2),
            Simd::Neon => cpu.has(Features::NEON),
        }
    }

    /// The path as an error if this CPU cannot run it.
    pub(crate) fn check(self) -> crate::Result<Simd> {
        if self.is_available() {
            Ok(self)
        } else {
            Err(crate::Error::UnsupportedCpu { requested: self })
        }
    }

    /// Whether the float kernels of this (available) path may use FMA: the
    /// AVX2 path on a CPU that also has FMA.
    pub(crate) fn fma(self) -> bool {
        self == Simd::Avx2 && Features::get().has(Features::FMA)
    }

    /// Whether this (available) path has the colour and YUV conversions'
    /// vector kernels: AVX2 (built with `std` only) or NEON.
    pub(crate) fn color_kernel(self) -> bool {
        match self {
            Simd::Avx2 => cfg!(all(target_arch = "x86_64", feature = "std")),
            Simd::Neon => cfg!(target_arch = "aarch64"),
            _ => false,
        }
    }

    /// Whether this (available) path has the finish pass's float32 vector
    /// kernel: AVX2 with FMA, or NEON.
    pub(crate) fn finish_kernel(self) -> bool {
        match self {
            Simd::Avx2 => self.fma(),
            Simd::Neon => cfg!(target_arch = "aarch64"),
            _ => false,
        }
    }
}

impl fmt::Display for Simd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Simd::Scalar => "scalar",
            Simd::Sse41 => "SSE4.1",
            Simd::Avx2 => "AVX2",
            Simd::Neon => "NEON",
        })
    }
}

/// The extensions found, one bit each.
#[derive(Clone, Copy)]
struct Features(u8);

impl Features {
    const SSE41: u8 = 1;
    const AVX2: u8 = 2;
    const FMA: u8 = 4;
    const NEON: u8 = 8;
    /// Set once the bits are known (the cache's "not yet" is 0).
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    const KNOWN: u8 = 0x80;

    fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The extensions of this CPU, detected on the first call.
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    fn get() -> Features {
        use core::sync::atomic::{AtomicU8, Ordering};
        static CACHE: AtomicU8 = AtomicU8::new(0);
        let mut bits = CACHE.load(Ordering::Relaxed);
        if bits & Self::KNOWN == 0 {
            let detected = [
                (std::arch::is_x86_feature_detected!("sse4.1"), Self::SSE41),
                (std::arch::is_x86_feature_detected!("avx2"), Self::AVX2),
                (std::arch::is_x86_feature_detected!("fma"), Self::FMA),
            ];
            bits = detected
                .iter()
                .filter(|(found, _)| *found)
                .fold(Self::KNOWN, |bits, (_, bit)| bits | bit);
            // Every thread detects the same bits: a race stores them twice.
            CACHE.store(bits, Ordering::Relaxed);
        }
        Features(bits)
    }

    /// The extensions the crate was compiled for (no run-time detection
    /// without `std`; NEON is part of the aarch64 targets).
    #[cfg(not(all(target_arch = "x86_64", feature = "std")))]
    fn get() -> Features {
        let compiled = [
            (
                cfg!(all(target_arch = "x86_64", target_feature = "sse4.1")),
                Self::SSE41,
            ),
            (
                cfg!(all(target_arch = "x86_64", target_feature = "avx2")),
                Self::AVX2,
            ),
            (
                cfg!(all(target_arch = "x86_64", target_feature = "fma")),
                Self::FMA,
            ),
            (
                cfg!(all(target_arch = "aarch64", target_feature = "neon")),
                Self::NEON,
            ),
        ];
        Features(
            compiled
                .iter()
                .filter(|(found, _)| *found)
                .fold(0, |bits, (_, bit)| bits | bit),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_is_always_available_and_detect_is_available() {
        assert!(Simd::Scalar.is_available());
        assert!(Simd::detect().is_available());
        assert_eq!(Simd::detect(), Simd::available().last().unwrap());
    }

    #[test]
    fn a_missing_path_is_a_typed_error() {
        for simd in Simd::ALL {
            match simd.check() {
                Ok(s) => assert!(s.is_available()),
                Err(e) => {
                    assert!(!simd.is_available());
                    assert_eq!(e, crate::Error::UnsupportedCpu { requested: simd });
                }
            }
        }
        // No CPU has both x86 and Arm paths.
        assert!(!(Simd::Neon.is_available() && Simd::Sse41.is_available()));
    }

    #[test]
    fn the_scalar_path_has_no_vector_kernels() {
        assert!(!Simd::Scalar.fma());
        assert!(!Simd::Scalar.color_kernel());
        assert!(!Simd::Scalar.finish_kernel());
        assert!(!Simd::Sse41.finish_kernel());
    }
}
