//! Pull-based running: sources of inputs, batches, and batches over threads.

use std::path::PathBuf;
use std::vec::Vec;

use super::mapping::Geometry;
use super::plan::{Input, Plan, PlanState};
use crate::{Error, ImageView, PixelFormat, Result, TensorMut};

/// Where a pipeline pulls its inputs from: files, byte buffers, camera frames.
///
/// Each input is borrowed from the source until the next call, so a source can
/// reuse one buffer for every input (no allocation per image once it is large
/// enough).
pub trait Source {
    /// The next input, or `None` when the source is exhausted.
    fn next_input(&mut self) -> Option<Result<Input<'_>>>;
}

/// Encoded files read one at a time into a reused buffer.
///
/// ```no_run
/// use tensorprep::pipeline::{FileSource, InputDesc, Pipeline, PlanState};
/// use tensorprep::TensorMut;
///
/// let plan = Pipeline::imagenet_eval().compile(InputDesc::Encoded)?;
/// let mut source = FileSource::new(["a.jpg", "b.jpg"]);
/// let (mut state, mut tensor) = (PlanState::new(), vec![0f32; 3 * 224 * 224]);
/// while let Some(result) = plan.pull(&mut state, &mut source, TensorMut::F32(&mut tensor)) {
///     result?; // `tensor` now holds the next image's input
/// }
/// # Ok::<(), tensorprep::Error>(())
/// ```
#[derive(Debug)]
pub struct FileSource {
    paths: std::vec::IntoIter<PathBuf>,
    buf: Vec<u8>,
    current: Option<PathBuf>,
}

impl FileSource {
    /// Reads `paths` in order.
    pub fn new<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> Self {
        FileSource {
            paths: paths
                .into_iter()
                .map(Into::into)
                .collect::<Vec<_>>()
                .into_iter(),
            buf: Vec::new(),
            current: None,
        }
    }

    /// The file the last input came from.
    pub fn current(&self) -> Option<&std::path::Path> {
        self.current.as_deref()
    }
}

impl Source for FileSource {
    fn next_input(&mut self) -> Option<Result<Input<'_>>> {
        use std::io::Read;
        let path = self.paths.next()?;
        self.buf.clear();
        let read = std::fs::File::open(&path).and_then(|mut f| f.read_to_end(&mut self.buf));
        self.current = Some(path);
        Some(match read {
            Ok(_) => Ok(Input::Encoded(&self.buf)),
            Err(e) => Err(Error::Io { kind: e.kind() }),
        })
    }
}

/// Encoded inputs already in memory.
#[derive(Clone, Debug)]
pub struct BytesSource<'a> {
    items: core::slice::Iter<'a, &'a [u8]>,
}

impl<'a> BytesSource<'a> {
    /// Yields each of `items` in order.
    pub fn new(items: &'a [&'a [u8]]) -> Self {
        BytesSource {
            items: items.iter(),
        }
    }
}

impl Source for BytesSource<'_> {
    fn next_input(&mut self) -> Option<Result<Input<'_>>> {
        self.items.next().map(|b| Ok(Input::Encoded(b)))
    }
}

/// Raw frames produced by a callback (a camera, a video decoder) into a reused buffer.
///
/// ```
/// use tensorprep::color::YuvRange;
/// use tensorprep::pipeline::{FrameSource, InputDesc, Op, Pipeline, PlanState};
/// use tensorprep::{PixelFormat, TensorMut};
///
/// // Three gray NV21 frames from a "camera".
/// let mut frames = 0;
/// let mut source = FrameSource::new(|buf: &mut Vec<u8>| {
///     frames += 1;
///     if frames > 3 {
///         return None;
///     }
///     buf.clear();
///     buf.resize(64 * 48 * 3 / 2, 128);
///     Some(Ok((PixelFormat::Nv21, 64, 48)))
/// });
/// // The eval transform after converting the frames to RGB (Decode is skipped for pixels).
/// let mut ops = vec![Op::ConvertColor { to: PixelFormat::Rgb8, range: YuvRange::Full }];
/// ops.extend_from_slice(&Pipeline::imagenet_eval().ops()[1..]);
/// let plan = Pipeline::from_ops(&ops)?.compile(InputDesc::pixels(PixelFormat::Nv21, 64, 48))?;
/// let (mut state, mut tensor) = (PlanState::new(), vec![0f32; 3 * 224 * 224]);
/// let mut n = 0;
/// while let Some(r) = plan.pull(&mut state, &mut source, TensorMut::F32(&mut tensor)) {
///     r?;
///     n += 1;
/// }
/// assert_eq!(n, 3);
/// # Ok::<(), tensorprep::Error>(())
/// ```
pub struct FrameSource<F> {
    produce: F,
    buf: Vec<u8>,
}

impl<F> FrameSource<F>
where
    F: FnMut(&mut Vec<u8>) -> Option<Result<(PixelFormat, u32, u32)>>,
{
    /// Calls `produce` for each frame: it fills the buffer (tightly packed, as
    /// [`ImageView::new`] takes it) and returns the frame's format and size, or
    /// `None` at the end.
    pub fn new(produce: F) -> Self {
        FrameSource {
            produce,
            buf: Vec::new(),
        }
    }
}

impl<F> Source for FrameSource<F>
where
    F: FnMut(&mut Vec<u8>) -> Option<Result<(PixelFormat, u32, u32)>>,
{
    fn next_input(&mut self) -> Option<Result<Input<'_>>> {
        let frame = (self.produce)(&mut self.buf)?;
        Some(
            frame.and_then(|(format, w, h)| {
                ImageView::new(format, w, h, &self.buf).map(Input::Pixels)
            }),
        )
    }
}

impl<F> core::fmt::Debug for FrameSource<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameSource").finish_non_exhaustive()
    }
}

/// The `i`-th of `n` equal chunks of a tensor buffer.
fn chunk<'t>(out: &'t mut TensorMut<'_>, i: usize, len: usize) -> TensorMut<'t> {
    let r = i * len..(i + 1) * len;
    match out {
        TensorMut::F32(s) => TensorMut::F32(&mut s[r]),
        TensorMut::F16(s) => TensorMut::F16(&mut s[r]),
        TensorMut::U8(s) => TensorMut::U8(&mut s[r]),
        TensorMut::I8(s) => TensorMut::I8(&mut s[r]),
    }
}

/// A tensor buffer cut into `len`-element chunks, one per image.
#[cfg(feature = "parallel")]
fn chunks<'t>(out: TensorMut<'t>, len: usize) -> Vec<TensorMut<'t>> {
    match out {
        TensorMut::F32(s) => s.chunks_exact_mut(len).map(TensorMut::F32).collect(),
        TensorMut::F16(s) => s.chunks_exact_mut(len).map(TensorMut::F16).collect(),
        TensorMut::U8(s) => s.chunks_exact_mut(len).map(TensorMut::U8).collect(),
        TensorMut::I8(s) => s.chunks_exact_mut(len).map(TensorMut::I8).collect(),
    }
}

impl Plan {
    /// Pulls the next input from `source` and writes its tensor into `out`.
    /// `None` when the source is exhausted.
    pub fn pull(
        &self,
        state: &mut PlanState,
        source: &mut impl Source,
        out: TensorMut<'_>,
    ) -> Option<Result<Geometry>> {
        let input = source.next_input()?;
        Some(input.and_then(|i| self.run(state, i, out)))
    }

    /// Elements of one image's tensor in a batch buffer holding `n` images.
    fn per_image(&self, out: &TensorMut<'_>, n: usize) -> Result<usize> {
        let len = self.output_len().ok_or(Error::InvalidParameter {
            name: "batch",
            reason: "the plan's output size depends on the input (end it with a crop or canvas)",
        })?;
        let needed = len * n;
        if out.len() != needed {
            return Err(Error::TensorSize {
                len: out.len(),
                needed,
            });
        }
        Ok(len)
    }

    /// Fills an N-image batch buffer (`NCHW` or `NHWC`: image `i` at
    /// `[i * len, (i + 1) * len)`) from up to `n` inputs pulled from `source`.
    /// Returns how many images were written (fewer than `n` at the end of the
    /// source). Stops at the first error.
    pub fn pull_batch(
        &self,
        state: &mut PlanState,
        source: &mut impl Source,
        mut out: TensorMut<'_>,
        n: usize,
    ) -> Result<usize> {
        let len = self.per_image(&out, n)?;
        for i in 0..n {
            match self.pull(state, source, chunk(&mut out, i, len)) {
                None => return Ok(i),
                Some(r) => {
                    r?;
                }
            }
        }
        Ok(n)
    }

    /// Runs every input into its slot of a batch buffer of `inputs.len()`
    /// images, in order, on this thread. Stops at the first error.
    pub fn run_batch(
        &self,
        state: &mut PlanState,
        inputs: &[Input<'_>],
        mut out: TensorMut<'_>,
    ) -> Result<()> {
        let len = self.per_image(&out, inputs.len())?;
        for (i, input) in inputs.iter().enumerate() {
            self.run(state, *input, chunk(&mut out, i, len))?;
        }
        Ok(())
    }

    /// [`Plan::run_batch`] spread over one thread per state in `states` (each
    /// thread takes the next image as it finishes one). Returns the first
    /// error any thread met; the other images are still written.
    ///
    /// ```
    /// use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
    /// use tensorprep::{ImageView, PixelFormat, TensorMut};
    ///
    /// let plan = Pipeline::imagenet_eval().compile(InputDesc::pixels(PixelFormat::Rgb8, 320, 240))?;
    /// let px = vec![100u8; 320 * 240 * 3];
    /// let img = Input::Pixels(ImageView::new(PixelFormat::Rgb8, 320, 240, &px)?);
    /// let mut batch = vec![0f32; 8 * 3 * 224 * 224];
    /// let mut states: Vec<PlanState> = (0..2).map(|_| PlanState::new()).collect();
    /// plan.run_batch_parallel(&mut states, &[img; 8], TensorMut::F32(&mut batch))?;
    /// let one = 3 * 224 * 224;
    /// assert!(batch.chunks(one).all(|image| image == &batch[..one]));
    /// # Ok::<(), tensorprep::Error>(())
    /// ```
    #[cfg(feature = "parallel")]
    pub fn run_batch_parallel(
        &self,
        states: &mut [PlanState],
        inputs: &[Input<'_>],
        out: TensorMut<'_>,
    ) -> Result<()> {
        let len = self.per_image(&out, inputs.len())?;
        if states.len() <= 1 {
            let state = states.first_mut().ok_or(Error::InvalidParameter {
                name: "batch",
                reason: "at least one state is needed",
            })?;
            return self.run_batch(state, inputs, out);
        }
        let work = std::sync::Mutex::new(inputs.iter().zip(chunks(out, len)));
        let first_error = std::sync::Mutex::new(None);
        std::thread::scope(|scope| {
            for state in states.iter_mut() {
                let (work, first_error) = (&work, &first_error);
                scope.spawn(move || {
                    loop {
                        // A poisoned lock means another worker panicked; stop taking work.
                        let next = match work.lock() {
                            Ok(mut it) => it.next(),
                            Err(_) => None,
                        };
                        let Some((input, slot)) = next else { break };
                        if let Err(e) = self.run(state, *input, slot)
                            && let Ok(mut f) = first_error.lock()
                        {
                            f.get_or_insert(e);
                        }
                    }
                });
            }
        });
        match first_error.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }
}
