//! Self-test vectors: an input and the output it must produce, so that a
//! device can check on first run that it preprocesses exactly as the machine
//! that made the graph did.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::convert::{PIXEL_FORMATS, shape_from_pb};
use super::proto as pb;
use super::{Graph, GraphError, MAX_SAMPLES, MAX_SELF_TESTS};
use crate::pipeline::{Input, InputDesc, Op, PlanState};
use crate::{Image, Limits, PixelFormat, Tensor};

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
    /// A JPEG file: checks the decoder too.
    Jpeg(Vec<u8>),
}

/// The outcome of one self-test.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfTestReport {
    /// The test's name.
    pub name: String,
    /// Whether the output is bit-identical to the expected one.
    pub exact: bool,
    /// The largest difference at the recorded samples.
    pub max_sample_diff: f32,
    /// The test's tolerance.
    pub tolerance: f32,
}

impl SelfTestReport {
    /// Exact, or within the tolerance at every sample.
    pub fn passed(&self) -> bool {
        self.exact || (self.tolerance > 0.0 && self.max_sample_diff <= self.tolerance)
    }
}

/// Samples recorded per self-test.
const SAMPLES: usize = 64;

/// FNV-1a 64 over the elements as little-endian bytes.
pub(crate) fn fnv1a64(tensor: &Tensor) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    match tensor {
        Tensor::F32(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        Tensor::F16(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        Tensor::U8(v) => eat(v),
        Tensor::I8(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
    }
    h
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
            SelfTestInput::Jpeg(bytes) => (InputDesc::Encoded, Input::Encoded(bytes)),
        };
        let plan = self.compile(desc)?;
        let shape = plan.output_shape().ok_or_else(|| {
            GraphError::invalid(
                None,
                "a JPEG self-test needs a graph whose output size is fixed".into(),
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
        Ok(())
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

    /// Runs every self-test.
    ///
    /// Errors only when a test cannot run at all; a wrong output is a report
    /// whose [`SelfTestReport::passed`] is false.
    pub fn verify(&self) -> Result<Vec<SelfTestReport>, GraphError> {
        self.self_tests
            .iter()
            .map(|t| {
                let (tensor, shape) = self.run_self_test_input(&t.input)?;
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
                Ok(SelfTestReport {
                    name: t.name.clone(),
                    exact: shape == t.shape && fnv1a64(&tensor) == t.fnv1a64,
                    max_sample_diff,
                    tolerance: t.tolerance,
                })
            })
            .collect()
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
        SelfTestInput::Jpeg(bytes) => pb::self_test::Input::Jpeg(bytes.clone()),
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
        Some(pb::self_test::Input::Jpeg(bytes)) => SelfTestInput::Jpeg(bytes),
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
