//! Float functions with `std`'s instructions when it is there (`floor`,
//! `round` compile to single instructions) and the `libm` crate's software
//! versions without. Same results: both are exact operations (`fmaf` is
//! the fused multiply-add, rounded once).

#[cfg(feature = "std")]
mod imp {
    pub(crate) fn floor(x: f64) -> f64 {
        x.floor()
    }
    pub(crate) fn round(x: f64) -> f64 {
        x.round()
    }
    pub(crate) fn rintf(x: f32) -> f32 {
        x.round_ties_even()
    }
    #[cfg(any(feature = "resize-torch", feature = "resize-float"))]
    #[inline(always)]
    pub(crate) fn fmaf(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

#[cfg(not(feature = "std"))]
mod imp {
    #[cfg(any(feature = "resize-torch", feature = "resize-float"))]
    pub(crate) use libm::fmaf;
    pub(crate) use libm::{floor, rintf, round};
}

#[cfg(any(feature = "resize-torch", feature = "resize-float"))]
pub(crate) use imp::fmaf;
pub(crate) use imp::{floor, rintf, round};
