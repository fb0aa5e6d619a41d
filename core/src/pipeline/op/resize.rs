//! `Resize`: to a size given by a rule, with a given library's resampler.
//! The crops that follow it become the window it computes.

use core::fmt;

use crate::resize::Resample;
use crate::size::SizeRule;

/// A resize step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resize {
    /// How the output size follows from the input size (with its rounding rule).
    pub size: SizeRule,
    /// Which library's resampling to reproduce, and its filter.
    pub resample: Resample,
}

impl fmt::Display for Resize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resize {:?} with {:?}", self.size, self.resample)
    }
}

#[cfg(feature = "alloc")]
mod compiled {
    use super::Resize;
    use crate::pipeline::Affine;
    use crate::pipeline::op::{Compiling, Step, Work, packed};
    use crate::pipeline::resolve::{Read, Resolver, Shape, offset};
    use crate::resize::{ResizePlan, SourceBox};
    use crate::size::SizeRule;
    use crate::{Rect, Result};

    impl Resize {
        /// Resizing needs packed pixels.
        pub(in crate::pipeline) fn compile(&self, cx: &mut Compiling<'_>) -> Result<()> {
            packed("Resize", cx.format)?;
            cx.steps.push(Step::Resize(*self));
            Ok(())
        }

        /// An exact size is fixed whatever the input.
        pub(in crate::pipeline) fn fixed_size(&self) -> Option<(u32, u32)> {
            match self.size {
                SizeRule::Exact { width, height } => Some((width, height)),
                _ => None,
            }
        }

        /// One resampling stage; the crops right after it narrow its window.
        pub(in crate::pipeline) fn resolve(&self, r: &mut Resolver<'_>) -> Result<()> {
            let (w, h) = r.size();
            // The size rule sees the full-size image even when decoding is reduced.
            let rule_size = r.logical.take().unwrap_or((w, h));
            let full = self.size.output_size(rule_size.0, rule_size.1)?;
            let mut window = Rect::new(0, 0, full.0, full.1);
            while let Some(crop) = r.next_crop() {
                window = offset(window, crop.rect(window.width, window.height)?);
            }
            let plan = ResizePlan::windowed_reusing(
                (w, h),
                SourceBox::full(w, h),
                full,
                window,
                self.resample,
                r.limits,
                r.spares,
            )?;
            r.map = r.map.then(&Affine::scale_translate(
                f64::from(full.0) / f64::from(w),
                f64::from(full.1) / f64::from(h),
                -f64::from(window.x),
                -f64::from(window.y),
            ));
            let reads = Read {
                region: offset(r.read.region, plan.input_region()),
                ..r.read
            };
            let out = Shape {
                format: r.read.format,
                width: window.width,
                height: window.height,
            };
            r.read = r.emit(Work::Resize(plan), out, reads)?;
            r.stored = r.read.format;
            Ok(())
        }
    }
}
