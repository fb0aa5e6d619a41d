//! Self-test vectors: an input and the output it must produce, so that a
//! device can check on first run that it preprocesses exactly as the machine
//! that made the graph did: a synthetic picture for the ops after decoding,
//! and a small photo as a JPEG and as a PNG for the decoders too.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::convert::{PIXEL_FORMATS, shape_from_pb};
use super::proto as pb;
use super::{Graph, GraphError, MAX_SAMPLES, MAX_SELF_TESTS};
use crate::jpeg::Backend;
use crate::pipeline::{Input, InputDesc, Op, PlanState};
use crate::{DType, Image, Limits, PixelFormat, Tensor};

/// An input and the output the graph must produce for it.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfTest {
    /// A label for reports.
    pub name: String,
    /// The input.
    pub input: SelfTestInput,
    /// Output shape without the batch dimension.
    pub shape: [usize; 3],
    /// FNV-1a 64 of the output's elements as little-endian bytes.
    pub fnv1a64: u64,
    /// Element indices and their expected values (as f32).
    pub samples: Vec<(u64, f32)>,
    /// Largest accepted difference at the samples when the checksum differs;
    /// 0 requires a bit-exact output.
    pub tolerance: f32,
}

/// A self-test's input.
#[derive(Clone, Debug, PartialEq)]
pub enum SelfTestInput {
    /// Raw pixels (the graph's Decode op is skipped): checks every op after decoding.
    Pixels(Image),
    /// An encoded file (JPEG, PNG, WebP): checks the decoder too.
    Encoded(Vec<u8>),
}

/// The outcome of one self-test on one decoder.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SelfTestReport {
    /// The test's name.
    pub name: String,
    /// The JPEG decoder that ran it (`None` when no JPEG was decoded).
    pub decoder: Option<Backend>,
    /// Whether the output is bit-identical to the expected one.
    pub exact: bool,
    /// The largest difference at the recorded samples, in output units.
    pub max_sample_diff: f32,
    /// The test's tolerance, in output units.
    pub tolerance: f32,
    /// Output units per 8-bit input level (see [`Graph::units_per_level`]).
    pub units_per_level: f32,
}

impl SelfTestReport {
    /// Exact, or within the tolerance at every sample.
    pub fn passed(&self) -> bool {
        self.exact || (self.tolerance > 0.0 && self.max_sample_diff <= self.tolerance)
    }

    /// The largest sample difference in 8-bit input levels.
    pub fn levels(&self) -> f32 {
        self.max_sample_diff / self.units_per_level
    }
}

impl core::fmt::Display for SelfTestReport {
    /// One line a user can act on: what was checked, the verdict, what it means.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(d) = self.decoder {
            write!(f, ", decoded by {}", d.name())?;
        }
        if self.exact {
            return f.write_str(": exact (the tensor is the graph maker's, bit for bit)");
        }
        let levels = self.levels();
        let allowed = self.tolerance / self.units_per_level;
        if self.passed() {
            write!(
                f,
                ": within {levels:.1} levels ({allowed:.0} allowed; this decoder's pixels differ \
                 slightly from the maker's: fine for inference, not bit-exact)"
            )
        } else if self.max_sample_diff.is_infinite() {
            write!(
                f,
                ": FAILED (the output has another shape than the maker's)"
            )
        } else {
            write!(
                f,
                ": FAILED (differs by up to {levels:.1} levels, {allowed:.0} allowed: this build \
                 preprocesses differently from the graph's maker, so the model would see other inputs)"
            )
        }
    }
}

/// The photo of the JPEG self-test (a 93x62 4:2:0 crop of the CC0 sample).
const SAMPLE_JPEG: &[u8] = include_bytes!("selftest_sample.jpg");
/// The photo of the PNG self-test (a 47x31 crop of the CC0 sample).
const SAMPLE_PNG: &[u8] = include_bytes!("selftest_sample.png");
/// How far (in 8-bit levels) another JPEG decoder may be from the maker's:
/// zune-jpeg and libjpeg-turbo differ by up to 4 on 4:2:0 photos.
const JPEG_LEVELS: f32 = 6.0;

/// The most pixels a graph's self-tests may decode and run in all: `verify`
/// runs on devices, and a graph file is untrusted input (sixteen 4000x3000
/// JPEGs would take minutes). The tests `convert` writes use about 10 000.
pub const MAX_SELF_TEST_PIXELS: u64 = 4 << 20;

/// Refuses self-tests whose inputs total more than [`MAX_SELF_TEST_PIXELS`]
/// (encoded inputs by their headers' sizes; an unreadable header counts as
/// nothing here and fails when the test runs).
pub(crate) fn check_budget(tests: &[SelfTest]) -> Result<(), GraphError> {
    let mut decoder = crate::decode::ImageDecoder::default();
    let mut total = 0u64;
    for t in tests {
        total += match &t.input {
            SelfTestInput::Pixels(image) => u64::from(image.width()) * u64::from(image.height()),
            SelfTestInput::Encoded(bytes) => decoder
                .read_info(bytes)
                .map_or(0, |i| u64::from(i.width) * u64::from(i.height)),
        };
    }
    if total > MAX_SELF_TEST_PIXELS {
        return Err(GraphError::invalid(
            None,
            format!(
                "the self-tests' inputs have {total} pixels in all, more than the \
                 {MAX_SELF_TEST_PIXELS} a graph may carry"
            ),
        ));
    }
    Ok(())
}

/// Samples recorded per self-test.
const SAMPLES: usize = 64;

/// FNV-1a 64 over the elements as little-endian bytes.
pub(crate) fn fnv1a64(tensor: &Tensor) -> u64 {
    let mut h = crate::Fnv1a64::new();
    h.update_elements(tensor, 0, tensor.len());
    h.finish()
}

fn value(tensor: &Tensor, i: usize) -> Option<f32> {
    match tensor {
        Tensor::F32(v) => v.get(i).copied(),
        Tensor::F16(v) => v.get(i).map(|x| x.to_f32()),
        Tensor::U8(v) => v.get(i).map(|&x| f32::from(x)),
        Tensor::I8(v) => v.get(i).map(|&x| f32::from(x)),
    }
}

/// A deterministic test picture: gradients, a diagonal edge and hashed noise,
/// so that every filter tap and rounding path matters.
pub fn pattern(format: PixelFormat, width: u32, height: u32) -> Result<Image, GraphError> {
    let mut image = Image::new(format, width, height)?;
    let mut state: u32 = 0x9e37_79b9;
    for (i, b) in image.as_bytes_mut().iter_mut().enumerate() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let (x, y) = ((i as u32) % (width * 3), (i as u32) / (width * 3));
        let ramp = (x * 5 + y * 3) as u8;
        let edge = if x / 3 > y { 60 } else { 0 };
        *b = ramp.wrapping_add(edge).wrapping_add((state >> 27) as u8);
    }
    Ok(image)
}

impl Graph {
    /// Runs the graph on `input`, returning the output tensor and its shape.
    pub fn run_self_test_input(
        &self,
        input: &SelfTestInput,
    ) -> Result<(Tensor, [usize; 3]), GraphError> {
        let (desc, run_input) = match input {
            SelfTestInput::Pixels(image) => (
                InputDesc::pixels(image.format(), image.width(), image.height()),
                Input::Pixels(image.view()),
            ),
            SelfTestInput::Encoded(bytes) => (InputDesc::Encoded, Input::Encoded(bytes)),
        };
        let plan = self.compile(desc)?;
        let shape = plan.output_shape().ok_or_else(|| {
            GraphError::invalid(
                None,
                "a self-test needs a graph whose output size is fixed".into(),
            )
        })?;
        let len = shape.iter().product();
        let mut tensor = Tensor::zeros(plan.dtype(), len);
        plan.run(&mut PlanState::new(), run_input, tensor.as_mut())?;
        Ok((tensor, shape))
    }

    /// Adds a self-test on `input`, expecting the output this build produces now.
    pub fn add_self_test_with(
        &mut self,
        name: &str,
        input: SelfTestInput,
        tolerance: f32,
    ) -> Result<(), GraphError> {
        if self.self_tests.len() >= MAX_SELF_TESTS {
            return Err(GraphError::invalid(None, "too many self-tests".into()));
        }
        let (tensor, shape) = self.run_self_test_input(&input)?;
        let len = tensor.len();
        let samples = (0..SAMPLES.min(len))
            .map(|k| {
                let i = k * len / SAMPLES.min(len);
                (i as u64, value(&tensor, i).unwrap_or(f32::NAN))
            })
            .collect();
        self.self_tests.push(SelfTest {
            name: name.into(),
            input,
            shape,
            fnv1a64: fnv1a64(&tensor),
            samples,
            tolerance,
        });
        // A graph this would make is one readers refuse: not added.
        check_budget(&self.self_tests).inspect_err(|_| {
            self.self_tests.pop();
        })
    }

    /// Adds a bit-exact self-test on a small synthetic picture in the format the
    /// graph's pixel ops take (RGB for most models), of the first size among
    /// 61x47, 317x239 and 1021x767 the graph accepts.
    pub fn add_self_test(&mut self, name: &str) -> Result<(), GraphError> {
        let format = match self.pipeline.ops().first() {
            Some(Op::Decode(d)) => d.format,
            _ => self
                .input
                .pixel_formats
                .first()
                .copied()
                .unwrap_or(PixelFormat::Rgb8),
        };
        let mut last = None;
        for (w, h) in [(61, 47), (317, 239), (1021, 767)] {
            let input = SelfTestInput::Pixels(pattern(format, w, h)?);
            match self.add_self_test_with(name, input, 0.0) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| GraphError::invalid(None, "no self-test size fits".into())))
    }

    /// Adds the self-tests a graph made for files carries: the synthetic
    /// picture (bit-exact), a small photo as a JPEG (decoded by the graph's
    /// decoder if this build has it; another decoder may differ by a few
    /// levels) and as a PNG (bit-exact). Graphs without a Decode op get the
    /// picture only.
    pub fn add_self_tests(&mut self) -> Result<(), GraphError> {
        self.add_self_test("pattern")?;
        if !matches!(self.pipeline.ops().first(), Some(Op::Decode(_))) {
            return Ok(());
        }
        let usable = self.clone().with_decoder(Backend::default());
        if usable.compile(InputDesc::Encoded)?.output_shape().is_none() {
            // The tensor's size depends on the image: a file's test would
            // check the one size; the picture's checks every op.
            return Ok(());
        }
        let decoder = self
            .pipeline
            .decoder()
            .filter(|b| b.is_available())
            .unwrap_or_else(|| Backend::available().next_back().unwrap_or_default());
        let maker = self.clone().with_decoder(decoder);
        let tolerance = JPEG_LEVELS * self.units_per_level();
        let mut tests = Vec::new();
        for (name, bytes, tolerance) in [
            ("photo.jpg", SAMPLE_JPEG, tolerance),
            ("photo.png", SAMPLE_PNG, 0.0),
        ] {
            let mut one = maker.clone();
            one.self_tests.clear();
            one.add_self_test_with(name, SelfTestInput::Encoded(bytes.to_vec()), tolerance)?;
            tests.extend(one.self_tests);
        }
        if self.self_tests.len() + tests.len() > MAX_SELF_TESTS {
            return Err(GraphError::invalid(None, "too many self-tests".into()));
        }
        self.self_tests.extend(tests);
        Ok(())
    }

    /// How much one 8-bit level of the input moves the output, at most over
    /// the channels: `1 / (divisor * std)` for normalized float outputs,
    /// divided by the quantization scale for integer ones. Reports give
    /// differences in levels with it.
    pub fn units_per_level(&self) -> f32 {
        let mut per_level = 1.0f32;
        for op in self.pipeline.ops() {
            match op {
                Op::Normalize(n) => {
                    // The channel whose level is worth most: the smallest
                    // std (times the second one, if any).
                    let min_std = (0..3)
                        .map(|c| (n.std[c] * n.second_std[c]).abs())
                        .fold(f32::INFINITY, f32::min);
                    if min_std > 0.0 && n.divisor > 0.0 {
                        per_level = 1.0 / (n.divisor * min_std);
                    }
                }
                Op::Cast {
                    dtype: DType::U8 | DType::I8,
                    quantization,
                } if quantization.scale > 0.0 => per_level /= quantization.scale,
                _ => {}
            }
        }
        per_level
    }

    /// Runs every self-test: a test on an encoded JPEG once with each JPEG
    /// decoder this build has, every other test once.
    ///
    /// Errors only when a test cannot run at all; a wrong output is a report
    /// whose [`SelfTestReport::passed`] is false.
    pub fn verify(&self) -> Result<Vec<SelfTestReport>, GraphError> {
        let units_per_level = self.units_per_level();
        let mut reports = Vec::new();
        for t in &self.self_tests {
            let jpeg = matches!(&t.input, SelfTestInput::Encoded(b)
                if crate::decode::ImageFormat::sniff(b) == Some(crate::decode::ImageFormat::Jpeg));
            let decoders: Vec<Option<Backend>> = if jpeg {
                Backend::available().map(Some).collect()
            } else {
                alloc::vec![None]
            };
            for decoder in decoders {
                // A file that is no JPEG needs no JPEG decoder, but the plan
                // must compile: one this build lacks is swapped for one it has.
                let lacking = self.pipeline.decoder().is_some_and(|b| !b.is_available());
                let graph = match decoder {
                    Some(b) => &self.clone().with_decoder(b),
                    None if lacking => &self.clone().with_decoder(Backend::default()),
                    None => self,
                };
                let (tensor, shape) = graph.run_self_test_input(&t.input)?;
                let max_sample_diff = if shape == t.shape {
                    t.samples
                        .iter()
                        .map(|&(i, expected)| {
                            let got = usize::try_from(i).ok().and_then(|i| value(&tensor, i));
                            got.map_or(f32::INFINITY, |g| (g - expected).abs())
                        })
                        .fold(0.0, f32::max)
                } else {
                    f32::INFINITY
                };
                reports.push(SelfTestReport {
                    name: t.name.clone(),
                    decoder,
                    exact: shape == t.shape && fnv1a64(&tensor) == t.fnv1a64,
                    max_sample_diff,
                    tolerance: t.tolerance,
                    units_per_level,
                });
            }
        }
        Ok(reports)
    }
}

pub(super) fn to_pb(t: &SelfTest) -> pb::SelfTest {
    let input = match &t.input {
        SelfTestInput::Pixels(image) => pb::self_test::Input::Pixels(pb::RawImage {
            format: PIXEL_FORMATS
                .iter()
                .find(|r| r.0 == image.format())
                .map_or(0, |r| r.1 as i32),
            width: image.width(),
            height: image.height(),
            pixels: image.as_bytes().to_vec(),
        }),
        SelfTestInput::Encoded(bytes) => pb::self_test::Input::Encoded(bytes.clone()),
    };
    pb::SelfTest {
        name: t.name.clone(),
        input: Some(input),
        shape: t.shape.iter().map(|&d| d as u32).collect(),
        fnv1a64: t.fnv1a64,
        sample_index: t.samples.iter().map(|s| s.0).collect(),
        sample_value: t.samples.iter().map(|s| s.1).collect(),
        tolerance: t.tolerance,
    }
}

pub(super) fn from_pb(t: pb::SelfTest) -> Result<SelfTest, GraphError> {
    let bad =
        |message: String| GraphError::invalid(None, format!("self-test `{}`: {message}", t.name));
    let input = match t.input {
        Some(pb::self_test::Input::Pixels(raw)) => {
            let format = PIXEL_FORMATS
                .iter()
                .find(|r| r.1 as i32 == raw.format)
                .map(|r| r.0)
                .ok_or_else(|| bad(format!("pixel format {} is not known", raw.format)))?;
            // The limits cap the size before the pixels are checked against it.
            Limits::DEFAULT
                .check_pixels(u64::from(raw.width), u64::from(raw.height))
                .map_err(|e| bad(format!("{e}")))?;
            let image = Image::from_vec(format, raw.width, raw.height, raw.pixels)
                .map_err(|e| bad(format!("{e}")))?;
            SelfTestInput::Pixels(image)
        }
        Some(pb::self_test::Input::Encoded(bytes)) => SelfTestInput::Encoded(bytes),
        None => return Err(bad("the input is missing".into())),
    };
    let shape = shape_from_pb(&t.shape, "a self-test shape")?
        .ok_or_else(|| bad("the output shape is missing".into()))?;
    if t.sample_index.len() != t.sample_value.len() || t.sample_index.len() > MAX_SAMPLES {
        return Err(bad(format!(
            "{} sample indices and {} values (at most {MAX_SAMPLES}, equal counts)",
            t.sample_index.len(),
            t.sample_value.len()
        )));
    }
    if !t.sample_value.iter().all(|v| v.is_finite()) {
        return Err(bad("sample values must be finite".into()));
    }
    if !(t.tolerance.is_finite() && t.tolerance >= 0.0) {
        return Err(bad("the tolerance must be finite and not negative".into()));
    }
    Ok(SelfTest {
        name: t.name.clone(),
        input,
        shape,
        fnv1a64: t.fnv1a64,
        samples: t.sample_index.into_iter().zip(t.sample_value).collect(),
        tolerance: t.tolerance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;
    use alloc::vec;

    #[test]
    fn a_changed_output_fails_and_a_tolerant_test_reports_the_distance() {
        let mut graph = Graph::new(Pipeline::imagenet_eval()).unwrap();
        graph.add_self_test("pattern").unwrap();
        let report = graph.verify().unwrap();
        assert!(report[0].exact && report[0].passed(), "{report:?}");

        // The same graph with a different mean no longer matches.
        let mut other = graph.clone();
        let ops: Vec<Op> = other
            .pipeline
            .ops()
            .iter()
            .map(|op| match op {
                Op::Normalize(n) => Op::Normalize(crate::finish::Normalize {
                    mean: [n.mean[0] + 0.01, n.mean[1], n.mean[2]],
                    ..*n
                }),
                op => *op,
            })
            .collect();
        other.pipeline = Pipeline::from_ops(&ops).unwrap();
        let report = other.verify().unwrap();
        assert!(!report[0].exact && !report[0].passed());
        // 0.01 / 0.229 on the red samples.
        let d = report[0].max_sample_diff;
        assert!((d - 0.01 / 0.229).abs() < 1e-4, "{d}");
        other.self_tests[0].tolerance = 0.05;
        assert!(other.verify().unwrap()[0].passed());
    }

    #[test]
    fn the_checksum_covers_every_byte() {
        let a = Tensor::F32(vec![1.0, 2.0]);
        let b = Tensor::F32(vec![1.0, 2.000_000_2]);
        assert_ne!(fnv1a64(&a), fnv1a64(&b));
        assert_ne!(
            fnv1a64(&Tensor::U8(vec![1, 2])),
            fnv1a64(&Tensor::U8(vec![2, 1]))
        );
    }
}

#[cfg(test)]
mod decoding_tests {
    use super::*;
    use crate::pipeline::Pipeline;

    #[test]
    fn self_tests_have_a_total_pixel_budget() {
        use alloc::string::ToString;
        // A 1920x1278 photo in 98 KB: files compress, so the file-size cap
        // alone would let a graph carry minutes of decoding.
        let photo = include_bytes!("../../../tests/fixtures/lxqt_butterfly_kenneth_wimer.jpg");
        let input = SelfTestInput::Encoded(photo.to_vec());
        let mut graph = Graph::new(Pipeline::imagenet_eval()).unwrap();
        graph.add_self_tests().unwrap();
        graph
            .add_self_test_with("photo", input.clone(), 0.0)
            .unwrap();
        // A second one would pass 4 Mpixel: refused when adding...
        let err = graph.add_self_test_with("again", input, 0.0).unwrap_err();
        assert!(err.to_string().contains("pixels in all"), "{err}");
        assert_eq!(graph.self_tests.len(), 4);
        // ...and when reading a file that carries it anyway.
        let mut forged = graph.clone();
        forged.self_tests.push(forged.self_tests[3].clone());
        let err = Graph::decode(&forged.encode()).unwrap_err();
        assert!(err.to_string().contains("pixels in all"), "{err}");
        assert!(Graph::decode(&graph.encode()).is_ok());
    }

    #[test]
    fn graphs_for_files_carry_a_jpeg_and_a_png_self_test() {
        let mut graph = Graph::new(Pipeline::imagenet_eval()).unwrap();
        graph.add_self_tests().unwrap();
        let names: Vec<&str> = graph.self_tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["pattern", "photo.jpg", "photo.png"]);
        // They survive the file format.
        let read = Graph::decode(&graph.encode()).unwrap();
        assert_eq!(read.self_tests, graph.self_tests);
        let reports = read.verify().unwrap();
        assert_eq!(reports.len(), 2 + Backend::available().count());
        assert!(reports.iter().all(SelfTestReport::passed), "{reports:?}");
        // The PNG test is bit-exact: a pixel changed in the recorded file fails it.
        let mut broken = graph.clone();
        let png = &mut broken.self_tests[2];
        png.fnv1a64 ^= 1;
        png.samples[5].1 += 10.0 * graph.units_per_level();
        let report = &broken.verify().unwrap()[2 + Backend::available().count() - 1];
        assert!(!report.passed());
        let text = alloc::format!("{report}");
        assert!(
            text.starts_with("photo.png: FAILED (differs by up to 10.0 levels"),
            "{text}"
        );
        // 1 level of ImageNet's red channel is 1 / (255 * 0.224).
        assert!((graph.units_per_level() - 1.0 / (255.0 * 0.224)).abs() < 1e-6);
    }

    #[test]
    fn pixel_graphs_carry_the_picture_only() {
        let ops: Vec<Op> = Pipeline::imagenet_eval().ops()[1..].to_vec();
        let mut graph = Graph::new(Pipeline::from_ops(&ops).unwrap()).unwrap();
        graph.add_self_tests().unwrap();
        assert_eq!(graph.self_tests.len(), 1);
    }
}
