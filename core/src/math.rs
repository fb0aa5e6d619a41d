//! Float functions with `std`'s instructions when it is there (`floor`,
//! `round` compile to single instructions) and the `libm` crate's software
//! versions without. Same results: both are exact operations.

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
}

#[cfg(not(feature = "std"))]
mod imp {
    pub(crate) use libm::{floor, rintf, round};
}

pub(crate) use imp::{floor, rintf, round};
