//! The native half of `tensorprep.functional`: one entry point,
//! `_functional(op, image, params, target)`, that runs
//! `tensorprep::functional`'s op `op` on a uint8 image (and its target).
//! The Python module gives each op torchvision v2's signature and passes
//! the parameters here in one form (lists, not torchvision's shorthands).

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tensorprep::functional as f;
use tensorprep::size::{Rounding, SizeRule};
use tensorprep::targets::{Affine, BoxFormat, Padding, Target};
use tensorprep::warp::Warp;
use tensorprep::{Error, Image, ImageView, PixelFormat};

use crate::errors;
use crate::names;

/// The parameters of one call, read by name with the op's name in errors.
struct Params<'a, 'py> {
    op: &'a str,
    dict: &'a Bound<'py, PyDict>,
}

impl<'py> Params<'_, 'py> {
    fn any(&self, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.dict.get_item(name)?.filter(|v| !v.is_none()))
    }

    fn get<T: for<'a> FromPyObject<'a, 'py>>(&self, name: &str) -> PyResult<T> {
        let value = self
            .any(name)?
            .ok_or_else(|| errors::value(format!("{}: {name} is required", self.op)))?;
        value.extract::<T>().map_err(|_| {
            errors::value(format!(
                "{}: {name} = {value} is not what it takes",
                self.op
            ))
        })
    }

    fn maybe<T: for<'a> FromPyObject<'a, 'py>>(&self, name: &str) -> PyResult<Option<T>> {
        match self.any(name)? {
            None => Ok(None),
            Some(_) => self.get(name).map(Some),
        }
    }

    /// A fill: one 0-255 value for every band, or (r, g, b).
    fn fill(&self) -> PyResult<[u8; 3]> {
        let Some(v) = self.any("fill")? else {
            return Ok([0; 3]);
        };
        if let Ok(v) = v.extract::<u8>() {
            return Ok([v; 3]);
        }
        match v.extract::<Vec<u8>>() {
            Ok(v) if v.len() == 1 => Ok([v[0]; 3]),
            Ok(v) if v.len() == 3 => Ok([v[0], v[1], v[2]]),
            _ => Err(errors::value(format!(
                "{}: fill is a 0-255 int or one per band (r, g, b)",
                self.op
            ))),
        }
    }

    fn interpolation(&self) -> PyResult<tensorprep::warp::Interpolation> {
        names::interpolation(&self.get::<String>("interpolation")?)
    }

    /// Two numbers (a list or a tuple).
    fn pair(&self, name: &str) -> PyResult<Option<(f64, f64)>> {
        self.maybe::<[f64; 2]>(name).map(|p| p.map(|[a, b]| (a, b)))
    }

    /// torchvision's `size` / `max_size` as a size rule.
    fn size_rule(&self, name: &str) -> PyResult<SizeRule> {
        let size = self.maybe::<Vec<u32>>(name)?;
        let max_size = self.maybe::<u32>("max_size")?;
        let rounding = Rounding::Truncate;
        match (size.as_deref(), max_size) {
            (Some(&[size]), max_size) => Ok(SizeRule::ShorterSide {
                size,
                max_size,
                rounding,
            }),
            (Some(&[height, width]), None) => Ok(SizeRule::Exact { width, height }),
            (Some(&[_, _]), Some(_)) => Err(errors::value(format!(
                "{}: max_size is only for a size of one value (the shorter side)",
                self.op
            ))),
            (None, Some(size)) => Ok(SizeRule::LongerSide { size, rounding }),
            _ => Err(errors::value(format!(
                "{}: {name} is one int (the shorter side), [height, width], or None with max_size",
                self.op
            ))),
        }
    }
}

/// A uint8 image array as a view: `(H, W)` and `(H, W, 1)` gray,
/// `(H, W, 3)` RGB, `(H, W, 4)` RGBA.
fn view<'a>(shape: &[usize], data: &'a [u8]) -> PyResult<ImageView<'a>> {
    let format = match shape {
        [_, _] | [_, _, 1] => PixelFormat::Gray8,
        [_, _, 3] => PixelFormat::Rgb8,
        [_, _, 4] => PixelFormat::Rgba8,
        _ => {
            return Err(errors::input(format!(
                "an image is a uint8 array (H, W) or (H, W, C) with C 1, 3 or 4; given shape {shape:?}"
            )));
        }
    };
    let dim = |n: usize| u32::try_from(n).map_err(|_| errors::input("the image is too large"));
    ImageView::new(format, dim(shape[1])?, dim(shape[0])?, data).map_err(|e| errors::core(&e))
}

/// The image as an array: 2-D for gray unless the input was `(H, W, 1)`.
fn array<'py>(py: Python<'py>, image: Image, three_d: bool) -> PyResult<Bound<'py, PyAny>> {
    let (h, w) = (image.height() as usize, image.width() as usize);
    let channels = image.format().bytes_per_pixel().unwrap_or(1);
    let flat = numpy::PyArray1::from_vec(py, image.into_vec());
    Ok(if channels == 1 && !three_d {
        flat.reshape([h, w])?.into_any()
    } else {
        flat.reshape([h, w, channels])?.into_any()
    })
}

/// What `_functional` gives back: the image and the target, each if given.
type Outputs<'py> = (Option<Bound<'py, PyAny>>, Option<Bound<'py, PyDict>>);

/// Runs op `op` of `tensorprep.functional` on `image` (a uint8 array, or
/// `None` for the ops on boxes alone) and `target` (a target dict); returns
/// `(image, target)`, each `None` when not given.
#[pyfunction]
#[pyo3(name = "_functional", signature = (op, image, params, target=None))]
pub(crate) fn functional<'py>(
    py: Python<'py>,
    op: &str,
    image: Option<&Bound<'py, PyAny>>,
    params: &Bound<'py, PyDict>,
    target: Option<&Bound<'py, PyDict>>,
) -> PyResult<Outputs<'py>> {
    let p = Params { op, dict: params };
    let held = image
        .map(|i| {
            let numpy = py.import("numpy")?;
            let a = numpy.call_method1("ascontiguousarray", (i,))?;
            a.cast_into::<PyArrayDyn<u8>>().map_err(|_| {
                errors::input(format!(
                    "{op}: an image is a uint8 array or a PIL image; given {}",
                    i.get_type()
                ))
            })
        })
        .transpose()?;
    let readonly = held
        .as_ref()
        .map(|a| a.try_readonly().map_err(|e| errors::input(e.to_string())))
        .transpose()?;
    let image = match (&held, &readonly) {
        (Some(a), Some(r)) => {
            let data = r.as_slice().map_err(|e| errors::input(e.to_string()))?;
            Some((view(a.shape(), data)?, a.ndim() == 3))
        }
        _ => None,
    };
    let mut target = target
        .map(|d| {
            crate::targets::from_dict(d, || match &image {
                Some((v, _)) => Ok((v.height(), v.width())),
                None => Err("canvas_size is required without an image".to_owned()),
            })
            .map_err(|e| errors::value(format!("{op}: target: {e}")))
        })
        .transpose()?;
    let out = match &image {
        Some((v, _)) => Some(run(&p, v, target.as_mut())?),
        None => {
            let t = target
                .as_mut()
                .ok_or_else(|| errors::value(format!("{op}: give an image or a target")))?;
            on_boxes(&p, t)?;
            None
        }
    };
    let three_d = image.as_ref().is_some_and(|(_, d)| *d);
    let out = out
        .map(|(image, gray_out)| array(py, image, three_d && !gray_out))
        .transpose()?;
    let target = target
        .map(|t| crate::targets::to_dict(py, &t))
        .transpose()?;
    Ok((out, target))
}

/// The ops on boxes alone.
fn on_boxes(p: &Params<'_, '_>, t: &mut Target) -> PyResult<()> {
    let r = match p.op {
        "convert_bounding_box_format" => {
            let name = p.get::<String>("new_format")?;
            let format = name
                .parse::<BoxFormat>()
                .map_err(|e| errors::value(format!("{}: {e}", p.op)))?;
            f::convert_bounding_box_format(t, format)
        }
        "clamp_bounding_boxes" => f::clamp_bounding_boxes(t),
        op => {
            return Err(errors::value(format!(
                "{op} takes an image (only convert_bounding_box_format and \
                 clamp_bounding_boxes take boxes alone)"
            )));
        }
    };
    r.map_err(|e| errors::core(&e))
}

/// The op on an image; `true` with it when the op makes a gray image of
/// any input (`rgb_to_grayscale(num_output_channels=1)`).
fn run(p: &Params<'_, '_>, v: &ImageView<'_>, t: Option<&mut Target>) -> PyResult<(Image, bool)> {
    let float = |name: &str| p.get::<f32>(name);
    let resample = || names::resample(&p.get::<String>("interpolation")?);
    let int = |name: &str| p.get::<i64>(name);
    let side = |name: &str| p.get::<u32>(name);
    let mut gray = false;
    let r: Result<Image, Error> = match p.op {
        "horizontal_flip" => f::horizontal_flip(v, t),
        "vertical_flip" => f::vertical_flip(v, t),
        "resize" => f::resize(v, p.size_rule("size")?, resample()?, t),
        "crop" => f::crop(
            v,
            int("top")?,
            int("left")?,
            side("height")?,
            side("width")?,
            t,
        ),
        "center_crop" => {
            let [h, w] = p.get::<[u32; 2]>("output_size")?;
            f::center_crop(v, h, w, t)
        }
        "resized_crop" => f::resized_crop(
            v,
            int("top")?,
            int("left")?,
            side("height")?,
            side("width")?,
            p.size_rule("size")?,
            resample()?,
            t,
        ),
        "pad" => {
            let mode = p.get::<String>("padding_mode")?;
            if mode != "constant" {
                return Err(errors::value(format!(
                    "pad: padding_mode {mode:?} (tensorprep pads with a constant only)"
                )));
            }
            let padding = Padding::from_torchvision(&p.get::<Vec<i64>>("padding")?)
                .map_err(|e| errors::core(&e))?;
            f::pad(v, padding, p.fill()?, t)
        }
        "affine" => {
            let required = |name: &str| {
                p.pair(name)?
                    .ok_or_else(|| errors::value(format!("affine: {name} is required")))
            };
            let a = Affine::new(
                p.get("angle")?,
                required("translate")?,
                p.get("scale")?,
                required("shear")?,
                p.pair("center")?,
            );
            f::affine(v, a, p.interpolation()?, p.fill()?, t)
        }
        "rotate" => f::rotate(
            v,
            p.get("angle")?,
            p.get("expand")?,
            p.pair("center")?,
            p.interpolation()?,
            p.fill()?,
            t,
        ),
        "perspective" => {
            let coefficients = match p.maybe::<[f64; 8]>("coefficients")? {
                Some(c) => c,
                None => {
                    let corners =
                        |name: &str| p.get::<[[f64; 2]; 4]>(name).map(|c| c.map(|[x, y]| (x, y)));
                    let (start, end) = (corners("startpoints")?, corners("endpoints")?);
                    match Warp::perspective(start, end).map_err(|e| errors::core(&e))? {
                        Warp::Perspective(c) => c,
                        _ => return Err(errors::value("perspective: not a perspective")),
                    }
                }
            };
            f::perspective(v, coefficients, p.interpolation()?, p.fill()?, t)
        }
        photometric => {
            let out = match photometric {
                "adjust_brightness" => f::adjust_brightness(v, float("brightness_factor")?),
                "adjust_contrast" => f::adjust_contrast(v, float("contrast_factor")?),
                "adjust_saturation" => f::adjust_saturation(v, float("saturation_factor")?),
                "adjust_hue" => f::adjust_hue(v, float("hue_factor")?),
                "adjust_sharpness" => f::adjust_sharpness(v, float("sharpness_factor")?),
                "posterize" => f::posterize(v, p.get("bits")?),
                "solarize" => f::solarize(v, p.get("threshold")?),
                "autocontrast" => f::autocontrast(v),
                "equalize" => f::equalize(v),
                "invert" => f::invert(v),
                "rgb_to_grayscale" => {
                    let n = p.get::<u8>("num_output_channels")?;
                    gray = n == 1;
                    f::rgb_to_grayscale(v, n)
                }
                "gaussian_blur" => {
                    let [kw, kh] = p.get::<[u16; 2]>("kernel_size")?;
                    let [sx, sy] = p.get::<[f32; 2]>("sigma")?;
                    if sx != sy {
                        return Err(errors::value(format!(
                            "gaussian_blur: sigma ({sx}, {sy}): tensorprep blurs with one \
                             sigma for both directions"
                        )));
                    }
                    f::gaussian_blur(v, (kw, kh), sx)
                }
                "erase" => {
                    let (i, j) = (p.get::<u32>("i")?, p.get::<u32>("j")?);
                    let (h, w) = (p.get::<u32>("h")?, p.get::<u32>("w")?);
                    f::erase(v, (i, j, h, w), &p.get::<Vec<u8>>("v")?)
                }
                "convert_bounding_box_format" | "clamp_bounding_boxes" => {
                    return Err(errors::value(format!(
                        "{photometric} takes a target (boxes), not an image"
                    )));
                }
                op => return Err(errors::value(format!("tensorprep.functional has no {op}"))),
            };
            // Photometric ops leave the target as it is.
            let _ = t;
            out
        }
    };
    r.map(|i| (i, gray)).map_err(|e| errors::core(&e))
}
