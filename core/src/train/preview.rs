//! A picture of what the model is trained on (feature `preview`): a grid of
//! the first samples of an epoch as the loader makes them (same seed, same
//! order, same draws), de-normalised back to 8-bit RGB, each tile with the
//! ops drawn for it written under it, encoded as PNG. The CLI's `tensorprep
//! preview` and Python's `train.preview` both draw it here.
//!
//! ```no_run
//! use tensorprep::train::data::folder::FolderDataset;
//! use tensorprep::train::{Preview, TrainPipeline};
//!
//! let data = FolderDataset::open(std::path::Path::new("imagenet/train"))?;
//! let grid = Preview::new(8).render(&TrainPipeline::imagenet_train(), &data)?;
//! grid.write_png(std::fs::File::create("grid.png")?)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

use std::fmt;
use std::format;
use std::io;
use std::string::{String, ToString};
use std::vec::Vec;

use super::data::{DataError, Dataset, Sample};
use super::{
    Drawn, ImageOp, LoaderConfig, Order, SampleKey, Shard, TrainPipeline, TrainPlan, TrainState,
    epoch_indices,
};
use crate::finish::{ChannelOrder, Normalize};
use crate::{DType, Layout, TensorMut};

/// The most samples one grid shows.
pub const MAX_SAMPLES: usize = 256;

/// The most bytes a preview holds at once (the sample tensor, the tiles and
/// the grid): a pipeline whose tiles would need more is refused before
/// anything is allocated.
pub const MAX_BYTES: usize = 1 << 30;

/// What to show: how many samples of which epoch, drawn from which seed,
/// in how many columns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Preview {
    /// Samples shown (1 to [`MAX_SAMPLES`]): the epoch's first, in the
    /// loader's order.
    pub samples: usize,
    /// Tiles per row; 0: up to four.
    pub columns: usize,
    /// The loader's seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u32,
    /// The epoch's order (the loader's: shuffled by default).
    pub order: Order,
}

impl Default for Preview {
    /// [`Preview::DEFAULT_SAMPLES`] samples of epoch 0 under the loader's
    /// default seed, shuffled as the loader does, up to four per row: what
    /// the CLI and Python show when not told otherwise.
    fn default() -> Preview {
        Preview {
            samples: Preview::DEFAULT_SAMPLES,
            columns: 0,
            seed: LoaderConfig::DEFAULT_SEED,
            epoch: 0,
            order: Order::Shuffled,
        }
    }
}

impl Preview {
    /// The samples a preview shows unless told otherwise.
    pub const DEFAULT_SAMPLES: usize = 8;

    /// `samples`, the rest [`Preview::default`]'s (epoch 0 under the
    /// loader's default seed, shuffled as the loader does).
    pub fn new(samples: usize) -> Preview {
        Preview {
            samples,
            ..Preview::default()
        }
    }

    /// The grid of `pipeline`'s samples of `data`.
    pub fn render(
        &self,
        pipeline: &TrainPipeline,
        data: &dyn Dataset,
    ) -> Result<Grid, PreviewError> {
        if self.samples == 0 || self.samples > MAX_SAMPLES {
            return Err(PreviewError::Samples {
                asked: self.samples,
            });
        }
        let plan = pipeline.compile().map_err(PreviewError::Plan)?;
        let shape = plan.output_shape().ok_or(PreviewError::VariableSize)?;
        if plan.dtype() != DType::F32 {
            return Err(PreviewError::Dtype);
        }
        let (layout, order_out) = (plan.layout(), plan.channel_order());
        let normalize = *plan.normalization();
        let [_, h, w] = layout.channels_height_width(shape);
        let mut order = Vec::new();
        epoch_indices(
            &self.order,
            self.seed,
            Shard::ALL,
            self.epoch,
            data.len(),
            &mut order,
        );
        order.truncate(self.samples);
        if order.is_empty() {
            return Err(PreviewError::NoSamples);
        }
        let columns = Grid::columns(self.columns, order.len());
        let bytes = preview_bytes(shape, order.len(), columns, (w, h))
            .filter(|&b| b <= MAX_BYTES)
            .ok_or(PreviewError::TooLarge {
                shape,
                samples: order.len(),
            })?;
        let mut state = TrainState::with_decode_budget(LoaderConfig::DEFAULT_DECODE_BUDGET);
        let mut sample = Sample::default();
        let mut tensor = zeroed(shape.iter().product(), bytes)?;
        let mut tiles = Vec::new();
        tiles
            .try_reserve_exact(order.len())
            .map_err(|_| PreviewError::OutOfMemory { bytes })?;
        for &index in &order {
            data.read(index as usize, &mut sample)
                .map_err(|source| PreviewError::Read { index, source })?;
            let key = SampleKey::new(self.seed, self.epoch, index);
            let failed = |source| PreviewError::Run {
                index,
                sample: data.describe(index as usize),
                source,
            };
            let input = sample.input().map_err(failed)?;
            let drawn = plan.draw_input(&mut state, key, input).map_err(failed)?;
            let lines: Vec<String> = drawn.iter().map(|d| describe(d, &plan)).collect();
            plan.run_input(&mut state, key, input, TensorMut::F32(&mut tensor))
                .map_err(failed)?;
            let mut rgb = zeroed(w * h * 3, bytes)?;
            denormalize(&tensor, [h, w], layout, order_out, &normalize, &mut rgb);
            let label = match sample.labels.first() {
                Some(l) => format!("#{index} label {l}"),
                None => format!("#{index}"),
            };
            tiles.push((rgb, label, lines));
        }
        Grid::lay_out(columns, (w, h), &tiles, bytes)
    }
}

/// Bytes a preview of `samples` tensors of `shape` with `(w, h)` tiles in
/// `columns` holds at most (text lines at their most); `None` on overflow.
fn preview_bytes(
    shape: [usize; 3],
    samples: usize,
    columns: usize,
    (w, h): (usize, usize),
) -> Option<usize> {
    let tensor = shape
        .iter()
        .try_fold(size_of::<f32>(), |n, &d| n.checked_mul(d))?;
    let tile = w.checked_mul(h)?.checked_mul(3)?;
    let (width, height) = Grid::size(columns, samples, (w, h), 1 + MAX_LINES)?;
    let grid = width.checked_mul(height)?.checked_mul(3)?;
    tensor
        .checked_add(tile.checked_mul(samples)?)?
        .checked_add(grid)
}

/// `len` zeros, or [`PreviewError::OutOfMemory`] (naming the preview's
/// `bytes`) when the allocator refuses.
fn zeroed<T: Clone + Default>(len: usize, bytes: usize) -> Result<Vec<T>, PreviewError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| PreviewError::OutOfMemory { bytes })?;
    v.resize(len, T::default());
    Ok(v)
}

/// A float tensor of `[height, width]` pixels in `layout` and channel
/// `order`, made with `normalize`, back to 8-bit RGB ([`Normalize::invert`],
/// rounded and clamped to 0-255; a gray channel repeated into all three):
/// the image the model sees.
pub fn denormalize(
    tensor: &[f32],
    [height, width]: [usize; 2],
    layout: Layout,
    order: ChannelOrder,
    normalize: &Normalize,
    rgb: &mut [u8],
) {
    let plane = height * width;
    let channels = order.channels();
    for p in 0..plane.min(rgb.len() / 3) {
        for c in 0..3 {
            // The tensor's channel holding colour `c`; the statistics are
            // indexed by colour (index 0 for gray).
            let (k, stat) = match order {
                ChannelOrder::Gray => (0, 0),
                ChannelOrder::Bgr => (2 - c, c),
                _ => (c, c),
            };
            let at = match layout {
                Layout::Hwc => p * channels + k,
                Layout::Chw => k * plane + p,
            };
            let v = tensor.get(at).copied().unwrap_or(0.0);
            let v = normalize.invert(stat, v).round();
            rgb[p * 3 + c] = v.clamp(0.0, 255.0) as u8;
        }
    }
}

/// One drawn op of `plan` in a few words.
fn describe(d: &Drawn, plan: &TrainPlan) -> String {
    match d {
        Drawn::Op(op) => op.to_string(),
        Drawn::Image(p) => match p {
            ImageOp::Point(_) => "point table".to_string(),
            ImageOp::Contrast(f) => format!("contrast {f:.2}"),
            ImageOp::Saturation(f) => format!("saturation {f:.2}"),
            ImageOp::Hue(f) => format!("hue {f:.2}"),
            ImageOp::Sharpness(f) => format!("sharpness {f:.2}"),
            ImageOp::Grayscale => "grayscale".to_string(),
            ImageOp::Autocontrast => "autocontrast".to_string(),
            ImageOp::Equalize => "equalize".to_string(),
            ImageOp::PermuteChannels(p) => format!("channels {p:?}"),
            ImageOp::GaussianBlur { kernel, sigma } => {
                format!("blur {}x{} sigma {sigma:.2}", kernel.0, kernel.1)
            }
            ImageOp::Warp { size, .. } => format!("warp to {}x{}", size.0, size.1),
        },
        Drawn::AugMix(_) => "augmix step".to_string(),
        Drawn::Target(op) => op.to_string(),
        Drawn::Custom { position, .. } => match plan.custom_op(*position) {
            Some(op) => format!("Lambda({})", op.name()),
            None => "Lambda".to_string(),
        },
    }
}

/// A rendered grid: RGB8 rows, tiles left to right and top to bottom, each
/// with its text under it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Grid {
    /// Pixels across.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// RGB8, `width * 3` bytes per row.
    pub rgb: Vec<u8>,
    /// Each tile's image: `(x, y, width, height)` in the grid.
    pub tiles: Vec<[usize; 4]>,
}

/// Space around tiles, in pixels.
const GAP: usize = 8;
/// The font's scale: each glyph cell pixel is this many pixels square.
const SCALE: usize = 2;
/// A text line's height (the glyph, then a gap).
const LINE: usize = (GLYPH_H + 2) * SCALE;
/// A character's advance.
const ADVANCE: usize = (GLYPH_W + 1) * SCALE;
const BACKGROUND: [u8; 3] = [32, 32, 32];
const INK: [u8; 3] = [235, 235, 235];
/// The most text lines under a tile (the first draws; the rest elided).
const MAX_LINES: usize = 8;

impl Grid {
    /// Tiles per row for `asked` columns (0: up to four) and `n` tiles.
    fn columns(asked: usize, n: usize) -> usize {
        match asked {
            0 => n.min(4),
            c => c.min(n),
        }
    }

    /// Pixels across and down of `n` tiles of `(w, h)` in `columns`, with
    /// `lines` text lines under each; `None` on overflow.
    fn size(
        columns: usize,
        n: usize,
        (w, h): (usize, usize),
        lines: usize,
    ) -> Option<(usize, usize)> {
        let cell_w = w.checked_add(GAP)?;
        let cell_h = h.checked_add(GAP / 2 + lines * LINE + GAP)?;
        let width = columns.checked_mul(cell_w)?.checked_add(GAP)?;
        let height = n.div_ceil(columns).checked_mul(cell_h)?.checked_add(GAP)?;
        Some((width, height))
    }

    /// The grid of `tiles` (at most `bytes` in all, checked by the caller).
    fn lay_out(
        columns: usize,
        (w, h): (usize, usize),
        tiles: &[(Vec<u8>, String, Vec<String>)],
        bytes: usize,
    ) -> Result<Grid, PreviewError> {
        let n = tiles.len();
        let lines = tiles
            .iter()
            .map(|(_, _, l)| 1 + l.len().min(MAX_LINES))
            .max()
            .unwrap_or(1);
        let cell = (w + GAP, h + GAP / 2 + lines * LINE + GAP);
        let (width, height) =
            Grid::size(columns, n, (w, h), lines).ok_or(PreviewError::OutOfMemory { bytes })?;
        let mut grid = Grid {
            width,
            height,
            rgb: zeroed(width * height * 3, bytes)?,
            tiles: Vec::with_capacity(n),
        };
        for px in grid.rgb.chunks_exact_mut(3) {
            px.copy_from_slice(&BACKGROUND);
        }
        let chars = w / ADVANCE;
        for (k, (rgb, label, text)) in tiles.iter().enumerate() {
            let (x, y) = (GAP + (k % columns) * cell.0, GAP + (k / columns) * cell.1);
            for row in 0..h {
                let at = ((y + row) * grid.width + x) * 3;
                grid.rgb[at..at + w * 3].copy_from_slice(&rgb[row * w * 3..(row + 1) * w * 3]);
            }
            grid.tiles.push([x, y, w, h]);
            let mut ty = y + h + GAP / 2;
            for line in core::iter::once(label).chain(text.iter().take(MAX_LINES)) {
                grid.text(x, ty, line, chars);
                ty += LINE;
            }
        }
        Ok(grid)
    }

    /// Writes `text` (upper-cased, cut to `chars` characters) at `(x, y)`.
    fn text(&mut self, x: usize, y: usize, text: &str, chars: usize) {
        for (i, ch) in text.chars().take(chars).enumerate() {
            let rows = glyph(ch);
            for (gy, row) in rows.iter().enumerate() {
                for (gx, bit) in row.bytes().enumerate() {
                    if bit != b'#' {
                        continue;
                    }
                    for dy in 0..SCALE {
                        for dx in 0..SCALE {
                            let px = x + i * ADVANCE + gx * SCALE + dx;
                            let py = y + gy * SCALE + dy;
                            let at = (py * self.width + px) * 3;
                            self.rgb[at..at + 3].copy_from_slice(&INK);
                        }
                    }
                }
            }
        }
    }

    /// The grid as a PNG (RGB, 8 bits) into `out`.
    pub fn write_png<W: io::Write>(&self, out: W) -> io::Result<()> {
        let size = |v: usize| u32::try_from(v).map_err(io::Error::other);
        let mut encoder = png::Encoder::new(out, size(self.width)?, size(self.height)?);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(io::Error::other)?;
        writer
            .write_image_data(&self.rgb)
            .map_err(io::Error::other)?;
        writer.finish().map_err(io::Error::other)
    }
}

/// Why a preview could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum PreviewError {
    /// The samples asked for are not 1 to [`MAX_SAMPLES`].
    Samples {
        /// The number asked for.
        asked: usize,
    },
    /// The dataset is empty.
    NoSamples,
    /// The pipeline does not compile.
    Plan(crate::Error),
    /// The pipeline's output size varies (no final crop or resize): tiles
    /// need one size.
    VariableSize,
    /// The pipeline's output is not float32 (only such tensors are
    /// de-normalised).
    Dtype,
    /// The grid would need more than [`MAX_BYTES`]: tiles this large, this
    /// many.
    TooLarge {
        /// One sample's tensor shape.
        shape: [usize; 3],
        /// The samples shown.
        samples: usize,
    },
    /// The allocator refused the preview's memory.
    OutOfMemory {
        /// The bytes the preview needs at most.
        bytes: usize,
    },
    /// A sample could not be read.
    Read {
        /// Its index in the dataset.
        index: u64,
        /// Why.
        source: DataError,
    },
    /// A sample could not be decoded or augmented.
    Run {
        /// Its index in the dataset.
        index: u64,
        /// The dataset's name for it (its file or record).
        sample: String,
        /// Why.
        source: crate::Error,
    },
}

impl fmt::Display for PreviewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreviewError::Samples { asked } => {
                write!(f, "a preview shows 1 to {MAX_SAMPLES} samples, not {asked}")
            }
            PreviewError::NoSamples => f.write_str("the dataset has no samples"),
            PreviewError::Plan(_) => f.write_str("the pipeline does not compile"),
            PreviewError::VariableSize => f.write_str(
                "the pipeline's output size varies (no final crop or resize): a grid needs one tile size",
            ),
            PreviewError::Dtype => {
                f.write_str("a preview de-normalises float32 tensors: the pipeline's dtype is not")
            }
            PreviewError::TooLarge { shape, samples } => write!(
                f,
                "{samples} tiles of a {}x{}x{} tensor need more than the preview's {MAX_BYTES} bytes",
                shape[0], shape[1], shape[2]
            ),
            PreviewError::OutOfMemory { bytes } => {
                write!(f, "the allocator refused the preview's {bytes} bytes")
            }
            PreviewError::Read { index, .. } => write!(f, "sample {index} could not be read"),
            PreviewError::Run { index, sample, .. } => {
                write!(f, "sample {index} ({sample}) could not be decoded or augmented")
            }
        }
    }
}

impl std::error::Error for PreviewError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PreviewError::Plan(e) | PreviewError::Run { source: e, .. } => Some(e),
            PreviewError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A glyph's cells across and down.
const GLYPH_W: usize = 3;
const GLYPH_H: usize = 5;

/// The glyph of `ch` (letters in upper case, an arrow as `>`; `?` for one
/// the font lacks).
fn glyph(ch: char) -> &'static [&'static str; GLYPH_H] {
    let ch = match ch {
        '\u{2192}' => '>',
        c => c.to_ascii_uppercase(),
    };
    FONT.iter()
        .find(|(c, _)| *c == ch)
        .or_else(|| FONT.iter().find(|(c, _)| *c == '?'))
        .map(|(_, g)| g)
        .unwrap_or(&FONT[0].1)
}

/// A 3 x 5 font of the characters op descriptions use, drawn for this
/// preview: `#` is ink.
const FONT: &[(char, [&str; GLYPH_H])] = &[
    (' ', ["...", "...", "...", "...", "..."]),
    ('A', [".#.", "#.#", "###", "#.#", "#.#"]),
    ('B', ["##.", "#.#", "##.", "#.#", "##."]),
    ('C', [".##", "#..", "#..", "#..", ".##"]),
    ('D', ["##.", "#.#", "#.#", "#.#", "##."]),
    ('E', ["###", "#..", "##.", "#..", "###"]),
    ('F', ["###", "#..", "##.", "#..", "#.."]),
    ('G', [".##", "#..", "#.#", "#.#", ".##"]),
    ('H', ["#.#", "#.#", "###", "#.#", "#.#"]),
    ('I', ["###", ".#.", ".#.", ".#.", "###"]),
    ('J', ["..#", "..#", "..#", "#.#", ".#."]),
    ('K', ["#.#", "#.#", "##.", "#.#", "#.#"]),
    ('L', ["#..", "#..", "#..", "#..", "###"]),
    ('M', ["#.#", "###", "###", "#.#", "#.#"]),
    ('N', ["##.", "#.#", "#.#", "#.#", "#.#"]),
    ('O', [".#.", "#.#", "#.#", "#.#", ".#."]),
    ('P', ["##.", "#.#", "##.", "#..", "#.."]),
    ('Q', [".#.", "#.#", "#.#", "##.", ".##"]),
    ('R', ["##.", "#.#", "##.", "#.#", "#.#"]),
    ('S', [".##", "#..", ".#.", "..#", "##."]),
    ('T', ["###", ".#.", ".#.", ".#.", ".#."]),
    ('U', ["#.#", "#.#", "#.#", "#.#", "###"]),
    ('V', ["#.#", "#.#", "#.#", "#.#", ".#."]),
    ('W', ["#.#", "#.#", "###", "###", "#.#"]),
    ('X', ["#.#", "#.#", ".#.", "#.#", "#.#"]),
    ('Y', ["#.#", "#.#", ".#.", ".#.", ".#."]),
    ('Z', ["###", "..#", ".#.", "#..", "###"]),
    ('0', ["###", "#.#", "#.#", "#.#", "###"]),
    ('1', [".#.", "##.", ".#.", ".#.", "###"]),
    ('2', ["##.", "..#", ".#.", "#..", "###"]),
    ('3', ["##.", "..#", ".#.", "..#", "##."]),
    ('4', ["#.#", "#.#", "###", "..#", "..#"]),
    ('5', ["###", "#..", "##.", "..#", "##."]),
    ('6', [".##", "#..", "###", "#.#", "###"]),
    ('7', ["###", "..#", ".#.", ".#.", ".#."]),
    ('8', ["###", "#.#", "###", "#.#", "###"]),
    ('9', ["###", "#.#", "###", "..#", "##."]),
    ('.', ["...", "...", "...", "...", ".#."]),
    (',', ["...", "...", "...", ".#.", "#.."]),
    ('-', ["...", "...", "###", "...", "..."]),
    ('+', ["...", ".#.", "###", ".#.", "..."]),
    ('=', ["...", "###", "...", "###", "..."]),
    (':', ["...", ".#.", "...", ".#.", "..."]),
    (';', ["...", ".#.", "...", ".#.", "#.."]),
    ('>', ["#..", ".#.", "..#", ".#.", "#.."]),
    ('<', ["..#", ".#.", "#..", ".#.", "..#"]),
    ('*', ["...", "#.#", ".#.", "#.#", "..."]),
    ('(', [".#.", "#..", "#..", "#..", ".#."]),
    (')', [".#.", "..#", "..#", "..#", ".#."]),
    ('[', ["##.", "#..", "#..", "#..", "##."]),
    (']', [".##", "..#", "..#", "..#", ".##"]),
    ('/', ["..#", "..#", ".#.", "#..", "#.."]),
    ('_', ["...", "...", "...", "...", "###"]),
    ('%', ["#..", "..#", ".#.", "#..", "..#"]),
    ('#', ["#.#", "###", "#.#", "###", "#.#"]),
    ('?', ["##.", "..#", ".#.", "...", ".#."]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_glyph_is_three_by_five_and_named_once() {
        for (i, (c, rows)) in FONT.iter().enumerate() {
            assert!(
                rows.iter()
                    .all(|r| r.len() == GLYPH_W && r.bytes().all(|b| b == b'#' || b == b'.')),
                "{c}"
            );
            assert!(FONT[..i].iter().all(|(d, _)| d != c), "{c} twice");
        }
        assert_eq!(glyph('a'), glyph('A'));
        assert_eq!(glyph('\u{e9}'), glyph('?'));
        assert_eq!(glyph('\u{2192}'), glyph('>'));
    }

    use crate::finish::ChannelOrder;
    use crate::pipeline::{Decode, Op, Pipeline, Resize};
    use crate::resize::Resample;
    use crate::size::SizeRule;
    use crate::train::data::combine::InMemory;
    use crate::{PixelFormat, Quantization};

    /// A `w` x `h` PNG of `color` (RGB or gray) pixels `pixel(x, y)`.
    fn png_of(w: u32, h: u32, gray: bool, pixel: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut e = png::Encoder::new(&mut out, w, h);
        e.set_color(if gray {
            png::ColorType::Grayscale
        } else {
            png::ColorType::Rgb
        });
        e.set_depth(png::BitDepth::Eight);
        let data: Vec<u8> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .flat_map(|(x, y)| {
                let p = pixel(x, y);
                if gray { p[..1].to_vec() } else { p.to_vec() }
            })
            .collect();
        let mut wr = e.write_header().unwrap();
        wr.write_image_data(&data).unwrap();
        wr.finish().unwrap();
        out
    }

    /// A pipeline decoding to `format`, resizing to `w` x `h` and finishing
    /// with `normalize`, `layout` and `order` as float32.
    fn pipeline(
        format: PixelFormat,
        (w, h): (u32, u32),
        normalize: Normalize,
        layout: Layout,
        order: ChannelOrder,
    ) -> TrainPipeline {
        let mut p = Pipeline::new();
        let decode = Decode {
            format,
            ..Decode::exact(crate::jpeg::Backend::Zune)
        };
        let resize = Resize {
            size: SizeRule::Exact {
                width: w,
                height: h,
            },
            resample: Resample::OpenCvLinear,
        };
        for op in [Op::Decode(decode), Op::Resize(resize)]
            .into_iter()
            .chain(Op::finish(
                normalize,
                layout,
                order,
                DType::F32,
                Quantization::IDENTITY,
            ))
        {
            p.push(op).unwrap();
        }
        TrainPipeline::from_pipeline(&p).unwrap()
    }

    fn samples(bytes: Vec<u8>, n: usize) -> InMemory {
        InMemory::new(
            (0..n)
                .map(|i| Sample {
                    bytes: bytes.clone(),
                    labels: Vec::new(),
                    id: i as u64,
                    ..Sample::default()
                })
                .collect(),
        )
    }

    /// Tile `k`'s pixels, row by row.
    fn tile(grid: &Grid, k: usize) -> Vec<u8> {
        let [x, y, w, h] = grid.tiles[k];
        (0..h)
            .flat_map(|row| {
                let at = ((y + row) * grid.width + x) * 3;
                grid.rgb[at..at + w * 3].to_vec()
            })
            .collect()
    }

    /// A TFLite/MindSpore-style graph (bytes / 1, mean 127.5, std 127.5)
    /// shows the source pixels, in either layout and channel order: the
    /// preview inverts the divisor too (it once assumed 255: a white grid).
    #[test]
    fn a_divisor_one_graph_shows_the_source_pixels() {
        let (w, h) = (6u32, 4u32);
        let pixel = |x: u32, y: u32| [(x * 40) as u8, (y * 60) as u8, (255 - x * y * 9) as u8];
        let data = samples(png_of(w, h, false, pixel), 2);
        // Independent of the library: the decoded source pixels themselves
        // (a resize to the source's own size keeps them).
        let want: Vec<u8> = (0..h)
            .flat_map(|y| (0..w).flat_map(move |x| pixel(x, y)))
            .collect();
        let tflite = Normalize {
            mean: [127.5; 3],
            std: [127.5; 3],
            divisor: 1.0,
            std_reciprocal: true,
            second_std: [1.0; 3],
        };
        for layout in [Layout::Chw, Layout::Hwc] {
            for order in [ChannelOrder::Rgb, ChannelOrder::Bgr] {
                let p = pipeline(PixelFormat::Rgb8, (w, h), tflite, layout, order);
                let grid = Preview::new(2).render(&p, &data).unwrap();
                assert_eq!(grid.tiles.len(), 2);
                for k in 0..2 {
                    let got = tile(&grid, k);
                    assert!(
                        got.iter().zip(&want).all(|(a, b)| a.abs_diff(*b) <= 1),
                        "{layout:?} {order:?} tile {k}: {got:?} != {want:?}"
                    );
                }
            }
        }
    }

    /// A custom op's line names it, as `Lambda(name)`.
    #[test]
    fn a_custom_op_is_described_by_its_name() {
        use crate::train::{Augment, CustomOp};
        let normalize = Normalize::IMAGENET;
        let mut p = pipeline(
            PixelFormat::Rgb8,
            (6, 4),
            normalize,
            Layout::Chw,
            ChannelOrder::Rgb,
        );
        let same = CustomOp::new("tint", |image, _key, out| {
            out.clear();
            (0..image.height()).for_each(|y| out.extend_from_slice(image.row(y)));
            Ok((image.width(), image.height()))
        });
        p.augments.push(Augment::Custom(same));
        let plan = p.compile().unwrap();
        let png = png_of(6, 4, false, |x, y| [x as u8, y as u8, 0]);
        let mut state = TrainState::new();
        let drawn = plan
            .draw(&mut state, SampleKey::new(0, 0, 0), &png)
            .unwrap();
        let lines: Vec<String> = drawn.iter().map(|d| describe(d, &plan)).collect();
        assert_eq!(
            lines.last().map(String::as_str),
            Some("Lambda(tint)"),
            "{lines:?}"
        );
        assert!(Preview::new(1).render(&p, &samples(png, 1)).is_ok());
    }

    /// Pixel samples (RGB, and gray made RGB) show their own pixels, with
    /// no file in between.
    #[test]
    fn pixel_samples_show_their_pixels() {
        let (w, h) = (5u32, 4u32);
        let pixel = |x: u32, y: u32| [(x * 40) as u8, (y * 60) as u8, (200 - x * y * 9) as u8];
        let rgb: Vec<u8> = (0..h)
            .flat_map(|y| (0..w).flat_map(move |x| pixel(x, y)))
            .collect();
        let gray: Vec<u8> = rgb.iter().step_by(3).copied().collect();
        let sample = |bytes: &[u8], format| Sample {
            bytes: bytes.to_vec(),
            content: crate::train::data::Content::Pixels {
                width: w,
                height: h,
                format,
            },
            ..Sample::default()
        };
        let data = InMemory::new(alloc::vec![
            sample(&rgb, PixelFormat::Rgb8),
            sample(&gray, PixelFormat::Gray8)
        ]);
        let gray_rgb: Vec<u8> = gray.iter().flat_map(|&g| [g; 3]).collect();
        let p = pipeline(
            PixelFormat::Rgb8,
            (w, h),
            Normalize::IMAGENET,
            Layout::Chw,
            ChannelOrder::Rgb,
        );
        let mut preview = Preview::new(2);
        preview.order = Order::Sequential;
        let grid = preview.render(&p, &data).unwrap();
        for (k, want) in [rgb, gray_rgb].iter().enumerate() {
            let got = tile(&grid, k);
            assert!(
                got.iter().zip(want).all(|(a, b)| a.abs_diff(*b) <= 1),
                "tile {k}: {got:?} != {want:?}"
            );
        }
    }

    /// A one-channel (gray) pipeline shows gray tiles: the channel repeated,
    /// not read as red.
    #[test]
    fn a_gray_pipeline_shows_gray_tiles() {
        let (w, h) = (5u32, 3u32);
        let pixel = |x: u32, y: u32| [(x * 50 + y * 7) as u8; 3];
        let data = samples(png_of(w, h, true, pixel), 1);
        let want: Vec<u8> = (0..h)
            .flat_map(|y| (0..w).flat_map(move |x| pixel(x, y)))
            .collect();
        for layout in [Layout::Chw, Layout::Hwc] {
            let p = pipeline(
                PixelFormat::Gray8,
                (w, h),
                Normalize::IMAGENET,
                layout,
                ChannelOrder::Gray,
            );
            let grid = Preview::new(1).render(&p, &data).unwrap();
            let got = tile(&grid, 0);
            assert!(
                got.iter().zip(&want).all(|(a, b)| a.abs_diff(*b) <= 1),
                "{layout:?}: {got:?} != {want:?}"
            );
        }
    }

    /// Tiles too large, or too many, are refused with a typed error before
    /// anything is decoded or allocated.
    #[test]
    fn an_absurd_grid_is_refused_before_allocating() {
        let data = samples(png_of(2, 2, false, |_, _| [1, 2, 3]), 256);
        for (size, n) in [((8000, 8000), 1), ((1024, 1024), 256)] {
            let p = pipeline(
                PixelFormat::Rgb8,
                size,
                Normalize::IMAGENET,
                Layout::Chw,
                ChannelOrder::Rgb,
            );
            match Preview::new(n).render(&p, &data) {
                Err(PreviewError::TooLarge { shape, samples }) => {
                    assert_eq!((shape, samples), ([3, size.1 as usize, size.0 as usize], n));
                }
                other => panic!("{size:?} x {n}: {other:?}"),
            }
        }
        // Within the cap the same data renders.
        let p = pipeline(
            PixelFormat::Rgb8,
            (64, 64),
            Normalize::IMAGENET,
            Layout::Chw,
            ChannelOrder::Rgb,
        );
        assert_eq!(
            Preview::new(256).render(&p, &data).unwrap().tiles.len(),
            256
        );
        assert!(preview_bytes([3, usize::MAX, 2], 1, 1, (2, usize::MAX)).is_none());
    }

    #[test]
    fn denormalize_inverts_normalize_in_either_layout() {
        let (mean, std) = ([0.5, 0.25, 0.0], [0.5, 0.25, 1.0]);
        // Two pixels: (255, 0, 128) and (0, 64, 255), normalized.
        let px = [[255u8, 0, 128], [0, 64, 255]];
        let norm = |p: [u8; 3], c: usize| (f32::from(p[c]) / 255.0 - mean[c]) / std[c];
        let chw: Vec<f32> = (0..3)
            .flat_map(|c| px.iter().map(move |p| norm(*p, c)))
            .collect();
        let hwc: Vec<f32> = px
            .iter()
            .flat_map(|p| (0..3).map(move |c| norm(*p, c)))
            .collect();
        let n = Normalize {
            mean,
            std,
            ..Normalize::UNIT
        };
        for (t, layout) in [(chw, Layout::Chw), (hwc, Layout::Hwc)] {
            let mut rgb = [0u8; 6];
            denormalize(&t, [1, 2], layout, ChannelOrder::Rgb, &n, &mut rgb);
            assert_eq!(rgb, [255, 0, 128, 0, 64, 255]);
        }
    }
}
