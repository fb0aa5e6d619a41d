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
use std::io;
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use super::data::{DataError, Dataset, Sample};
use super::{Drawn, ImageOp, Order, SampleKey, Shard, TrainPipeline, TrainState, epoch_indices};
use crate::pipeline::Op;
use crate::{DType, Layout, TensorMut};

/// The most samples one grid shows.
pub const MAX_SAMPLES: usize = 256;

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

impl Preview {
    /// `samples` of epoch 0 under seed 0, shuffled as the loader does.
    pub fn new(samples: usize) -> Preview {
        Preview {
            samples,
            columns: 0,
            seed: 0,
            epoch: 0,
            order: Order::Shuffled,
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
        let (mean, std) = normalization(pipeline);
        let layout = plan.layout();
        let (h, w) = match layout {
            Layout::Hwc => (shape[0], shape[1]),
            _ => (shape[1], shape[2]),
        };
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
        let (mut state, mut sample) = (TrainState::new(), Sample::default());
        let mut tensor = vec![0f32; shape.iter().product()];
        let mut tiles = Vec::with_capacity(order.len());
        for &index in &order {
            data.read(index as usize, &mut sample)
                .map_err(|source| PreviewError::Read { index, source })?;
            let key = SampleKey::new(self.seed, self.epoch, index);
            let failed = |source| PreviewError::Run {
                index,
                sample: data.describe(index as usize),
                source,
            };
            let drawn = plan.draw(&mut state, key, &sample.bytes).map_err(failed)?;
            let lines: Vec<String> = drawn.iter().map(describe).collect();
            plan.run(&mut state, key, &sample.bytes, TensorMut::F32(&mut tensor))
                .map_err(failed)?;
            let mut rgb = vec![0u8; w * h * 3];
            denormalize(&tensor, [h, w], layout, mean, std, &mut rgb);
            let label = match sample.labels.first() {
                Some(l) => format!("#{index} label {l}"),
                None => format!("#{index}"),
            };
            tiles.push((rgb, label, lines));
        }
        Ok(Grid::lay_out(self.columns, (w, h), &tiles))
    }
}

/// The pipeline's normalization, 0-1 units (none: mean 0, std 1).
fn normalization(pipeline: &TrainPipeline) -> ([f32; 3], [f32; 3]) {
    pipeline
        .finish
        .iter()
        .find_map(|op| match op {
            Op::Normalize(n) => Some((n.mean, n.std)),
            _ => None,
        })
        .unwrap_or(([0.0; 3], [1.0; 3]))
}

/// A normalized float tensor of `[height, width]` pixels in `layout` back to
/// 8-bit RGB (`x * std + mean` in 0-1 units, rounded and clamped to 0-255):
/// the image the model sees.
pub fn denormalize(
    tensor: &[f32],
    [height, width]: [usize; 2],
    layout: Layout,
    mean: [f32; 3],
    std: [f32; 3],
    rgb: &mut [u8],
) {
    let plane = height * width;
    for p in 0..plane.min(rgb.len() / 3) {
        for c in 0..3 {
            let at = match layout {
                Layout::Hwc => p * 3 + c,
                _ => c * plane + p,
            };
            let v = tensor.get(at).copied().unwrap_or(0.0);
            let v = ((v * std[c] + mean[c]) * 255.0).round();
            rgb[p * 3 + c] = v.clamp(0.0, 255.0) as u8;
        }
    }
}

/// One drawn op in a few words.
fn describe(d: &Drawn) -> String {
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
            ImageOp::GaussianBlur { kernel, sigma } => {
                format!("blur {}x{} sigma {sigma:.2}", kernel.0, kernel.1)
            }
            ImageOp::Warp { size, .. } => format!("warp to {}x{}", size.0, size.1),
        },
        Drawn::AugMix(_) => "augmix step".to_string(),
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
    fn lay_out(
        columns: usize,
        (w, h): (usize, usize),
        tiles: &[(Vec<u8>, String, Vec<String>)],
    ) -> Grid {
        let n = tiles.len();
        let columns = match columns {
            0 => n.min(4),
            c => c.min(n),
        };
        let rows = n.div_ceil(columns);
        let lines = tiles
            .iter()
            .map(|(_, _, l)| 1 + l.len().min(MAX_LINES))
            .max()
            .unwrap_or(1);
        let cell = (w + GAP, h + GAP / 2 + lines * LINE + GAP);
        let mut grid = Grid {
            width: GAP + columns * cell.0,
            height: GAP + rows * cell.1,
            rgb: Vec::new(),
            tiles: Vec::with_capacity(n),
        };
        grid.rgb = BACKGROUND.repeat(grid.width * grid.height);
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
        grid
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
        for (t, layout) in [(chw, Layout::Chw), (hwc, Layout::Hwc)] {
            let mut rgb = [0u8; 6];
            denormalize(&t, [1, 2], layout, mean, std, &mut rgb);
            assert_eq!(rgb, [255, 0, 128, 0, 64, 255]);
        }
    }
}
