//! Output-size rules, each reproducing a reference library's arithmetic exactly.
//!
//! ```
//! use tensorprep::size::{Rounding, SizeRule};
//! // torchvision `Resize(256)` on a 451x300 photo: short side 256, long int(256 * 451 / 300).
//! let rule = SizeRule::ShorterSide { size: 256, max_size: None, rounding: Rounding::Truncate };
//! assert_eq!(rule.output_size(451, 300)?, (384, 256));
//! // Ultralytics letterbox to 640x640: scale min(640/451, 640/300), sides round-half-even.
//! assert_eq!(SizeRule::Fit { width: 640, height: 640, upscale: true }.output_size(451, 300)?, (640, 426));
//! # Ok::<(), tensorprep::Error>(())
//! ```

use crate::image::check_dimensions;
use crate::{Error, Result};

/// How a computed side length, a float64 quotient, becomes an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Rounding {
    /// Toward zero, Python's `int(x)` (torchvision, timm, Hugging Face).
    #[default]
    Truncate,
    /// To nearest, ties to even, Python's `round(x)` (PaddleClas).
    HalfEven,
    /// MindSpore's `Resize`: `floor(float(b) / c * a)` in float32 arithmetic
    /// (the other side over the matched side, times the target).
    FloorF32,
}

/// How the output size of a resize follows from the input size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SizeRule {
    /// Exactly `width` x `height`, aspect ratio not kept.
    Exact {
        /// Output width.
        width: u32,
        /// Output height.
        height: u32,
    },
    /// torchvision `Resize(size, max_size=...)` with an int `size`: the shorter side
    /// becomes `size` and the longer side `size * long / short` (float64 division,
    /// then `rounding`; torchvision truncates). If `max_size` is set and the longer
    /// side would exceed it, the longer side becomes `max_size` and the shorter
    /// `max_size * size / long`, rounded the same way. Square inputs give `size` x `size`.
    ShorterSide {
        /// Target length of the shorter side.
        size: u32,
        /// Optional cap on the longer side; must be greater than `size`.
        max_size: Option<u32>,
        /// How the other side is rounded.
        rounding: Rounding,
    },
    /// The longer side becomes `size` and the shorter `size * short / long`, rounded
    /// by `rounding` (torchvision v2 `Resize(size=None, max_size=size)` truncates).
    LongerSide {
        /// Target length of the longer side.
        size: u32,
        /// How the other side is rounded.
        rounding: Rounding,
    },
    /// Fit inside `width` x `height` keeping the aspect ratio, as Ultralytics'
    /// letterbox: `r = min(width / w, height / h)` in float64 (capped at 1 unless
    /// `upscale`), sides `round_half_even(w * r)` and `round_half_even(h * r)`.
    Fit {
        /// Box width.
        width: u32,
        /// Box height.
        height: u32,
        /// Whether images smaller than the box are enlarged (Ultralytics `scaleup`).
        upscale: bool,
    },
    /// Hugging Face's DPT resize (DPT, Depth Anything, ZoeDepth): each side
    /// scaled toward `width` x `height` (with `keep_aspect_ratio`, both by the
    /// one of the two scales closer to 1), then to the nearest multiple of
    /// `multiple`: `round(side * scale / multiple) * multiple`, float64 and
    /// Python's `round` (half to even), as `ensure_multiple_of` does.
    Multiple {
        /// Target width.
        width: u32,
        /// Target height.
        height: u32,
        /// Each side becomes a multiple of this (1: no constraint); not 0.
        multiple: u32,
        /// Scale both sides alike, by the scale that changes the image least.
        keep_aspect_ratio: bool,
    },
    /// timm's `ResizeKeepRatio` (its eval transforms for `crop_mode: "border"`
    /// and non-square targets): `ratio` is the larger (`longest`) or the
    /// smaller of `height / target_height` and `width / target_width`, and
    /// each side becomes `round(side / ratio)` (float64, Python's half to
    /// even). With `longest` the image fits inside the target, without it it
    /// covers it.
    KeepRatio {
        /// Target width.
        width: u32,
        /// Target height.
        height: u32,
        /// Fit inside (timm's `longest=1`) rather than cover (`longest=0`).
        longest: bool,
    },
    /// Hugging Face's DETR resize (`get_size_with_aspect_ratio`: DETR,
    /// Conditional and Deformable DETR): the shorter side becomes `shortest`,
    /// unless the longer would then exceed `longest`, in which case the
    /// shorter becomes `round(raw)` with `raw = longest * short / long`
    /// (float64, half to even) and the longer `int(raw * long / short)`;
    /// otherwise the longer is `int(shortest * long / short)`. With `yolos`,
    /// YOLOS's variant: the same sizes floored to multiples of 16 (and its
    /// order of the tests, which differs when `round(raw)` equals the shorter side).
    Detr {
        /// The shorter side's target.
        shortest: u32,
        /// The longer side's cap, if any.
        longest: Option<u32>,
        /// YOLOS's variant.
        yolos: bool,
    },
}

/// `a * b / c` on non-negative integers in float64 (the product is exact), then
/// rounded: Python's `int(a * b / c)` or `round(a * b / c)`; or MindSpore's
/// float32 `floor(b / c * a)`.
fn scaled_side(a: u32, b: u32, c: u32, rounding: Rounding) -> u64 {
    let q = (u64::from(a) * u64::from(b)) as f64 / f64::from(c);
    match rounding {
        Rounding::Truncate => q as u64,
        Rounding::HalfEven => libm::rint(q) as u64,
        Rounding::FloorF32 => libm::floorf(b as f32 / c as f32 * a as f32) as u64,
    }
}

fn to_size(w: u64, h: u64) -> Result<(u32, u32)> {
    check_dimensions(w, h)?;
    Ok((w as u32, h as u32))
}

impl SizeRule {
    /// The output width and height for an input of `width` x `height`.
    pub fn output_size(&self, width: u32, height: u32) -> Result<(u32, u32)> {
        check_dimensions(u64::from(width), u64::from(height))?;
        match *self {
            SizeRule::Exact { width, height } => to_size(u64::from(width), u64::from(height)),
            SizeRule::ShorterSide {
                size,
                max_size,
                rounding,
            } => {
                let (short, long) = (width.min(height), width.max(height));
                let mut new_short = u64::from(size);
                let mut new_long = scaled_side(size, long, short, rounding);
                if let Some(max) = max_size {
                    if max <= size {
                        return Err(Error::InvalidParameter {
                            name: "max_size",
                            reason: "must be greater than size",
                        });
                    }
                    if new_long > u64::from(max) {
                        let long = new_long.min(u64::from(u32::MAX)) as u32;
                        new_short = scaled_side(max, size, long, rounding);
                        new_long = u64::from(max);
                    }
                }
                if width <= height {
                    to_size(new_short, new_long)
                } else {
                    to_size(new_long, new_short)
                }
            }
            SizeRule::LongerSide { size, rounding } => {
                let (short, long) = (width.min(height), width.max(height));
                let new_short = scaled_side(size, short, long, rounding);
                if width >= height {
                    to_size(u64::from(size), new_short)
                } else {
                    to_size(new_short, u64::from(size))
                }
            }
            SizeRule::Fit {
                width: bw,
                height: bh,
                upscale,
            } => {
                check_dimensions(u64::from(bw), u64::from(bh))?;
                let r = fit_scale(width, height, bw, bh, upscale);
                let w = libm::rint(f64::from(width) * r) as u64;
                let h = libm::rint(f64::from(height) * r) as u64;
                to_size(w.max(1), h.max(1))
            }
            SizeRule::Multiple {
                width: tw,
                height: th,
                multiple,
                keep_aspect_ratio,
            } => {
                check_dimensions(u64::from(tw), u64::from(th))?;
                if multiple == 0 {
                    return Err(Error::InvalidParameter {
                        name: "size",
                        reason: "`multiple` must be at least 1",
                    });
                }
                let mut sh = f64::from(th) / f64::from(height);
                let mut sw = f64::from(tw) / f64::from(width);
                if keep_aspect_ratio {
                    if (1.0 - sw).abs() < (1.0 - sh).abs() {
                        sh = sw;
                    } else {
                        sw = sh;
                    }
                }
                let m = f64::from(multiple);
                // round(v / m) * m is never negative here, so never ceil'd.
                let side = |scale: f64, n: u32| libm::rint(scale * f64::from(n) / m) * m;
                to_size(side(sw, width) as u64, side(sh, height) as u64)
            }
            SizeRule::KeepRatio {
                width: tw,
                height: th,
                longest,
            } => {
                check_dimensions(u64::from(tw), u64::from(th))?;
                let rh = f64::from(height) / f64::from(th);
                let rw = f64::from(width) / f64::from(tw);
                let ratio = if longest { rh.max(rw) } else { rh.min(rw) };
                let side = |n: u32| libm::rint(f64::from(n) / ratio) as u64;
                to_size(side(width), side(height))
            }
            SizeRule::Detr {
                shortest,
                longest,
                yolos,
            } => {
                let (h, w) = (u64::from(height), u64::from(width));
                let (short, long) = (h.min(w) as f64, h.max(w) as f64);
                let mut size = u64::from(shortest);
                let mut raw = None;
                if let Some(max) = longest
                    && long / short * size as f64 > f64::from(max)
                {
                    let r = f64::from(max) * short / long;
                    size = libm::rint(r) as u64;
                    raw = Some(r);
                }
                // `int(raw * a / b)` or `int(size * a / b)` (the product
                // exact as an integer, then a float division).
                let other = |a: u64, b: u64| match raw {
                    Some(r) => (r * a as f64 / b as f64) as u64,
                    None => ((size * a) as f64 / b as f64) as u64,
                };
                let unchanged = (h <= w && h == size) || (w <= h && w == size);
                let (oh, ow) = if yolos {
                    if w < h {
                        (other(h, w), size)
                    } else if unchanged {
                        (h, w)
                    } else {
                        (size, other(w, h))
                    }
                } else if unchanged {
                    (h, w)
                } else if w < h {
                    (other(h, w), size)
                } else {
                    (size, other(w, h))
                };
                let (oh, ow) = if yolos {
                    (oh - oh % 16, ow - ow % 16)
                } else {
                    (oh, ow)
                };
                to_size(ow, oh)
            }
        }
    }
}

/// The scale factor of [`SizeRule::Fit`].
pub fn fit_scale(width: u32, height: u32, box_width: u32, box_height: u32, upscale: bool) -> f64 {
    let r =
        (f64::from(box_width) / f64::from(width)).min(f64::from(box_height) / f64::from(height));
    if upscale { r } else { r.min(1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detr_caps_the_longer_side_as_transformers() {
        let detr = |shortest, longest, yolos| SizeRule::Detr {
            shortest,
            longest,
            yolos,
        };
        // 451x300: shorter 300 -> 800, longer int(800 * 451 / 300) = 1202.
        assert_eq!(
            detr(800, Some(1333), false).output_size(451, 300).unwrap(),
            (1202, 800)
        );
        // Capped: raw = 280 * 300 / 451 = 186.25..., size 186, longer int(raw * 451 / 300) = 280.
        assert_eq!(
            detr(200, Some(280), false).output_size(451, 300).unwrap(),
            (280, 186)
        );
        // Portrait, no cap.
        assert_eq!(
            detr(200, None, false).output_size(300, 451).unwrap(),
            (200, 300)
        );
        // Already the size: unchanged.
        assert_eq!(
            detr(300, Some(1333), false).output_size(451, 300).unwrap(),
            (451, 300)
        );
        // YOLOS floors to multiples of 16: (1202, 800) -> (1200, 800); (280, 186) -> (272, 176).
        assert_eq!(
            detr(800, Some(1333), true).output_size(451, 300).unwrap(),
            (1200, 800)
        );
        assert_eq!(
            detr(200, Some(280), true).output_size(451, 300).unwrap(),
            (272, 176)
        );
        assert!(detr(0, None, false).output_size(451, 300).is_err());
        assert!(detr(5, None, true).output_size(451, 300).is_err());
    }

    #[test]
    fn keep_ratio_fits_or_covers_like_timm() {
        let fit = |w, h, longest| {
            SizeRule::KeepRatio {
                width: 248,
                height: 248,
                longest,
            }
            .output_size(w, h)
            .unwrap()
        };
        // 640x427 inside 248x248: ratio 640/248, height round(165.47...) = 165.
        assert_eq!(fit(640, 427, true), (248, 165));
        // Covering: ratio 427/248, width round(371.7...) = 372.
        assert_eq!(fit(640, 427, false), (372, 248));
        // Non-square target: 320x192 covered by a 500x500 image scaled to 320.
        let cover = SizeRule::KeepRatio {
            width: 320,
            height: 192,
            longest: false,
        };
        assert_eq!(cover.output_size(500, 500).unwrap(), (320, 320));
        // Half to even: 5 / (10 / 4) = 2.0, 3 / 2.5 = 1.2; 7 / 2 = 3.5 -> 4, 5 / 2 = 2.5 -> 2.
        let half = SizeRule::KeepRatio {
            width: 4,
            height: 2,
            longest: true,
        };
        assert_eq!(half.output_size(10, 3).unwrap(), (4, 1));
        assert_eq!(half.output_size(7, 4).unwrap(), (4, 2));
        let zero = SizeRule::KeepRatio {
            width: 0,
            height: 2,
            longest: true,
        };
        assert!(zero.output_size(10, 10).is_err());
    }

    #[test]
    fn shorter_side_truncates_like_torchvision() {
        let r = SizeRule::ShorterSide {
            size: 256,
            max_size: None,
            rounding: Rounding::Truncate,
        };
        // int(256 * 427 / 640) is not needed; 640x427 -> short 427: long int(256*640/427) = 383
        assert_eq!(r.output_size(640, 427).unwrap(), (383, 256));
        assert_eq!(r.output_size(427, 640).unwrap(), (256, 383));
        assert_eq!(r.output_size(300, 300).unwrap(), (256, 256));
        let capped = SizeRule::ShorterSide {
            size: 256,
            max_size: Some(300),
            rounding: Rounding::Truncate,
        };
        // 1000x200: long would be 1280 > 300 -> short int(300*256/1280) = 60
        assert_eq!(capped.output_size(1000, 200).unwrap(), (300, 60));
        let bad = SizeRule::ShorterSide {
            size: 256,
            max_size: Some(256),
            rounding: Rounding::Truncate,
        };
        assert!(bad.output_size(10, 10).is_err());
    }

    #[test]
    fn multiple_follows_dpt_and_depth_anything() {
        let depth_anything = SizeRule::Multiple {
            width: 518,
            height: 518,
            multiple: 14,
            keep_aspect_ratio: true,
        };
        // 640x427: scales 0.809 (w) and 1.213 (h); the width's is closer to 1:
        // 427 * 518/640 = 345.6 -> round(24.69) * 14 = 350, 518 -> 518.
        assert_eq!(depth_anything.output_size(640, 427).unwrap(), (518, 350));
        assert_eq!(depth_anything.output_size(427, 640).unwrap(), (350, 518));
        let dpt = SizeRule::Multiple {
            width: 384,
            height: 384,
            multiple: 1,
            keep_aspect_ratio: false,
        };
        assert_eq!(dpt.output_size(640, 427).unwrap(), (384, 384));
        let zero = SizeRule::Multiple {
            width: 384,
            height: 384,
            multiple: 0,
            keep_aspect_ratio: false,
        };
        assert!(zero.output_size(640, 427).is_err());
        // A side that rounds to 0 is refused, not a zero-sized image.
        let tiny = SizeRule::Multiple {
            width: 4,
            height: 4,
            multiple: 14,
            keep_aspect_ratio: false,
        };
        assert!(tiny.output_size(640, 427).is_err());
    }

    #[test]
    fn floor_f32_follows_mindspore_not_python() {
        let rule = |rounding| SizeRule::ShorterSide {
            size: 224,
            max_size: None,
            rounding,
        };
        // 117 / 112 * 224 is exactly 234, but float32 gives 233.99998 and
        // MindSpore's floor keeps 233 (numpy float32 agrees).
        assert_eq!(
            rule(Rounding::FloorF32).output_size(117, 112).unwrap(),
            (233, 224)
        );
        assert_eq!(
            rule(Rounding::Truncate).output_size(117, 112).unwrap(),
            (234, 224)
        );
        assert_eq!(
            rule(Rounding::FloorF32).output_size(112, 117).unwrap(),
            (224, 233)
        );
    }

    #[test]
    fn longer_and_fit_rules() {
        assert_eq!(
            SizeRule::LongerSide {
                size: 320,
                rounding: Rounding::Truncate
            }
            .output_size(640, 427)
            .unwrap(),
            (320, 213)
        );
        let fit = SizeRule::Fit {
            width: 640,
            height: 640,
            upscale: false,
        };
        assert_eq!(fit.output_size(100, 50).unwrap(), (100, 50));
        // 810x1080 in 640: r = 640/1080; 810*r = 480.0 exactly
        assert_eq!(fit.output_size(810, 1080).unwrap(), (480, 640));
        // Half-way cases round to even: 5 * 0.5 = 2.5 -> 2, 7 * 0.5 = 3.5 -> 4.
        let half = SizeRule::Fit {
            width: 5,
            height: 100,
            upscale: true,
        };
        assert_eq!(half.output_size(10, 7).unwrap(), (5, 4));
        assert_eq!(
            SizeRule::Fit {
                width: 100,
                height: 3,
                upscale: true
            }
            .output_size(10, 6)
            .unwrap(),
            (5, 3)
        );
    }

    #[test]
    fn degenerate_sizes_are_errors() {
        assert!(
            SizeRule::Exact {
                width: 0,
                height: 4
            }
            .output_size(4, 4)
            .is_err()
        );
        assert!(
            SizeRule::LongerSide {
                size: 10,
                rounding: Rounding::Truncate
            }
            .output_size(10_000, 1)
            .is_err()
        );
        assert!(
            SizeRule::LongerSide {
                size: 10,
                rounding: Rounding::Truncate
            }
            .output_size(0, 1)
            .is_err()
        );
    }
}
