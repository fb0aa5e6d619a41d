//! Running a resolved plan: its stages over two image slots, then the finish
//! pass into the tensor. Heap plans and arena plans run the same code; only
//! where the slots and scratch live differs.

use super::mapping::Geometry;
use super::op::Work;
use super::resolve::{Read, Resolved, Shape};
use crate::arena::{Scratch, Storage};
use crate::finish::Finisher;
use crate::resize::{ResizeScratch, ResizeStateIn};
use crate::rows::RowReader;
use crate::{ImageView, ImageViewMut, PixelFormat, Result, TensorMut};

/// The scratch a resolved plan's runs need besides its two image slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Needs {
    /// The resamplers' rows (the largest of every resize stage).
    pub(super) resize: ResizeScratch,
    /// One converted row, for the passes that read a row at a time.
    pub(super) line: usize,
}

impl<S: Storage> Resolved<S> {
    /// The format of what `read` reads from: the input, or a buffer.
    fn source_format(&self, read: &Read) -> PixelFormat {
        read.buffer
            .map_or(self.input.format, |b| self.buffers[b].format)
    }

    /// The scratch every stage and the finish pass need, each the largest.
    pub(super) fn needs(&self) -> Result<Needs> {
        let mut needs = Needs::default();
        let mut line = |read: &Read| -> Result<()> {
            let from = self.source_format(read);
            let bytes = RowReader::rows_scratch_for(from, read.region, read.format, 1, false)?;
            needs.line = needs.line.max(bytes);
            Ok(())
        };
        for stage in self.stages.iter() {
            match &stage.work {
                Work::Resize(plan) => {
                    let from = self.source_format(&stage.read);
                    let sizes = plan.scratch_for(stage.read.region, from, stage.read.format)?;
                    needs.resize = needs.resize.max(sizes);
                }
                w if w.reads_lines() => line(&stage.read)?,
                _ => {}
            }
        }
        line(&self.finish)?;
        Ok(needs)
    }

    /// Runs the stages on `source` (the input, of the resolved shape), then
    /// the finish pass into `out`. Stage `i` writes slot `i % 2` and reads the
    /// other (or the input); each slot holds at least its [`Resolved::slots`] bytes.
    pub(super) fn execute(
        &self,
        finisher: &Finisher,
        source: ImageView<'_>,
        [slot0, slot1]: [&mut [u8]; 2],
        resize: &mut ResizeStateIn<S>,
        line: &mut impl Scratch,
        out: TensorMut<'_>,
    ) -> Result<Geometry> {
        for stage in self.stages.iter() {
            let (other, mine) = if stage.out % 2 == 0 {
                (&*slot1, &mut *slot0)
            } else {
                (&*slot0, &mut *slot1)
            };
            let src = match stage.read.buffer {
                None => source,
                Some(b) => view_of(other, self.buffers[b])?,
            };
            let s = self.buffers[stage.out];
            let mut dst = ImageViewMut::new(s.format, s.width, s.height, mine)?;
            stage.work.run(&src, stage.read, &mut dst, resize, line)?;
        }
        let read = self.finish;
        let src = match read.buffer {
            None => source,
            Some(b) => view_of(if b % 2 == 0 { slot0 } else { slot1 }, self.buffers[b])?,
        };
        let reader = RowReader::new(&src, read.region, read.format, read.range)?;
        line.reserve(reader.rows_scratch(1, false))?;
        let size = reader.size();
        finisher.run_rows(&mut reader.source(line), read.format, size, out)?;
        Ok(self.geometry)
    }
}

fn view_of(buf: &[u8], s: Shape) -> Result<ImageView<'_>> {
    ImageView::new(s.format, s.width, s.height, buf)
}
