//! Hugging Face `preprocessor_config.json`, as either of transformers' two
//! implementations of each image processor runs it: the torchvision backend
//! (transformers' default wherever torchvision is installed) or the PIL one.

use std::format;

use std::vec::Vec;

use serde_json::Value;

use super::json::{self, Object};
use super::{decode, finish, graph, pillow_filter, shorter_side, three};
use crate::finish::Normalize;
use crate::graph::{Graph, GraphError};
use crate::jpeg::Orientation;
use crate::pipeline::{CenterCrop, CropRounding, Op, Resize};
use crate::resize::{Filter, Resample};
use crate::size::SizeRule;
use crate::{DType, Layout, Quantization};

const FORMAT: &str = "hf";

const STANDARD: [f32; 3] = [0.5; 3];
const CLIP_MEAN: [f32; 3] = [0.481_454_67, 0.457_827_5, 0.408_210_72];
const CLIP_STD: [f32; 3] = [0.268_629_55, 0.261_302_6, 0.275_777_1];
const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Which of transformers' two implementations of an image processor a graph
/// reproduces, and for the torchvision one, which of torchvision's two bilinear
/// resizes. They differ in the resize (Pillow's on a PIL image, or PyTorch's
/// antialiased resize on a tensor) and in the normalize arithmetic
/// (`(v * factor - mean) / std`, or `(v - mean / factor) / (std / factor)`
/// with the fused statistics in float32).
///
/// torchvision resizes a `uint8` tensor BILINEAR natively where it judges
/// PyTorch's `uint8` kernel fast (its `_do_native_uint8_resize_on_cpu`), and
/// otherwise converts it to float32, resizes, rounds and converts back, which
/// is one level off on 12 to 18% of the values of the test photos. Where it does what:
///
/// | torchvision (torch) | AVX2 CPU | AVX-512 CPU | ARM (aarch64) | x86 without AVX2 |
/// |---|---|---|---|---|
/// | up to 0.23 (2.8) | `uint8` | float32 | float32 | float32 |
/// | 0.24 to 0.26 (2.9 to 2.11) | `uint8` | `uint8` | float32 | float32 |
/// | 0.27 on (2.12 on) | `uint8` | `uint8` | `uint8` | float32 |
///
/// (The CPU as `torch.backends.cpu.get_cpu_capability()` reports it, which
/// `ATEN_CPU_CAPABILITY` can lower.) PyTorch's `uint8` kernels give the same
/// bytes on every CPU, its AVX2 and AVX-512 float32 kernels too;
/// [`HfBackend::for_torchvision`] picks the variant from the three facts.
///
/// ```
/// use tensorprep::import::HfBackend;
/// assert_eq!(HfBackend::default(), HfBackend::Torchvision);
/// assert_eq!(HfBackend::from_name("PIL"), Some(HfBackend::Pil));
/// // The uint8 variant's name before it became the default.
/// assert_eq!(HfBackend::from_name("torchvision-avx2"), Some(HfBackend::Torchvision));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HfBackend {
    /// `backend="torchvision"`: what `AutoImageProcessor` loads when
    /// torchvision is installed (the classes without suffix, formerly `...Fast`),
    /// as current PyTorch runs it on AVX2, AVX-512 and ARM CPUs: BILINEAR and
    /// BICUBIC on the `uint8` tensor ([`Resample::Torch`]). Exact to
    /// transformers 5.24 with torch 2.6 under `ATEN_CPU_CAPABILITY=avx2` and
    /// with torch 2.15 (torchvision 0.29.2) on AVX2 kernels and on PyTorch's
    /// generic ones, which AVX-512 and ARM CPUs run. Also named
    /// `torchvision-avx2`, its name while it was not the default.
    #[default]
    Torchvision,
    /// The torchvision backend where torchvision resizes BILINEAR through
    /// float32 ([`Resample::TorchFloat`]; BICUBIC stays on `uint8`): AVX-512
    /// CPUs with torchvision 0.23 (torch 2.8) and before, ARM ones with
    /// torchvision 0.26 (torch 2.11) and before, x86 CPUs without AVX2 with
    /// any. Exact to transformers 5.24 with torch 2.6 on AVX-512 kernels and
    /// with torch 2.15 on AVX2 ones; PyTorch's generic float32 kernels (x86
    /// without AVX2) differ from those by a level on about 1 value in 10,000
    /// (torch 2.15); ARM's were not measured.
    TorchvisionFloat32,
    /// `backend="pil"`: the `...Pil` classes (the slow processors of transformers 4).
    Pil,
}

impl HfBackend {
    /// The name `convert --from hf:NAME` takes: transformers' `torchvision`
    /// or `pil`, and `torchvision-float32`.
    pub const fn name(self) -> &'static str {
        match self {
            HfBackend::Torchvision => "torchvision",
            HfBackend::TorchvisionFloat32 => "torchvision-float32",
            HfBackend::Pil => "pil",
        }
    }

    /// A backend by its name ([`HfBackend::name`]), any case;
    /// `torchvision-avx2` is [`HfBackend::Torchvision`].
    pub fn from_name(name: &str) -> Option<HfBackend> {
        if name.eq_ignore_ascii_case("torchvision-avx2") {
            return Some(HfBackend::Torchvision);
        }
        [
            HfBackend::Torchvision,
            HfBackend::TorchvisionFloat32,
            HfBackend::Pil,
        ]
        .into_iter()
        .find(|b| b.name().eq_ignore_ascii_case(name))
    }

    /// The torchvision backend's variant that a torchvision version
    /// (`torchvision.__version__`) runs on a CPU, as PyTorch reports it
    /// (`torch.backends.cpu.get_cpu_capability()`: `"AVX2"`, `"AVX512"`,
    /// `"DEFAULT"`, ...) on a machine (`platform.machine()`): the table of
    /// [`HfBackend`]. A version it cannot read is taken as current.
    ///
    /// ```
    /// use tensorprep::import::HfBackend;
    /// let pick = HfBackend::for_torchvision;
    /// assert_eq!(pick("0.21.0+cu124", "AVX512", "x86_64"), HfBackend::TorchvisionFloat32);
    /// assert_eq!(pick("0.29.2", "AVX512", "x86_64"), HfBackend::Torchvision);
    /// assert_eq!(pick("0.26.0", "DEFAULT", "aarch64"), HfBackend::TorchvisionFloat32);
    /// assert_eq!(pick("0.27.1", "DEFAULT", "arm64"), HfBackend::Torchvision);
    /// assert_eq!(pick("0.29.2", "DEFAULT", "x86_64"), HfBackend::TorchvisionFloat32);
    /// ```
    pub fn for_torchvision(version: &str, cpu_capability: &str, machine: &str) -> HfBackend {
        let mut parts = version.split(['.', '+']).map(|p| p.parse::<u32>().ok());
        let minor = match (parts.next().flatten(), parts.next().flatten()) {
            (Some(0), Some(minor)) => minor,
            _ => u32::MAX,
        };
        let native = match cpu_capability {
            "AVX2" => true,
            "AVX512" => minor >= 24,
            _ => minor >= 27 && matches!(machine, "aarch64" | "arm64"),
        };
        if native {
            HfBackend::Torchvision
        } else {
            HfBackend::TorchvisionFloat32
        }
    }
}

/// A size as the processors hold it after `get_size_dict`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Size {
    HeightWidth(u32, u32),
    ShortestEdge(u32),
    /// `shortest_edge` and `longest_edge` (the DETR family).
    ShortestLongest(u32, u32),
}

/// How a class turns its `size` into the resize it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    /// `size` as it is (shortest edge or height and width).
    Plain,
    /// ConvNeXT: below 384, the shortest edge to `int(edge / crop_pct)` then a
    /// centre crop back to the edge; from 384 on, a square of the edge.
    ConvNext { crop_pct: f64 },
    /// PoolFormer: with `crop_pct` (`null` turns it off), the shortest edge
    /// (or a square size) to `int(size / crop_pct)`, or both sides divided
    /// for a non-square size; the class's centre crop follows.
    PoolFormer { crop_pct: f64 },
    /// LeViT: the shortest edge to `int(256 / 224 * edge)`.
    Levit,
    /// DPT (and Depth Anything): height and width with `keep_aspect_ratio`
    /// and `ensure_multiple_of` ([`SizeRule::Multiple`]).
    Dpt,
    /// The DETR family: shortest and longest edge ([`SizeRule::Detr`]); an
    /// integer size is the shortest edge with `max_size` (1333) the longest;
    /// `do_pad` pads a batch to its largest image (nothing for one image).
    Detr { yolos: bool },
}

/// An image processor class's defaults (transformers 5).
struct Defaults {
    class: &'static str,
    size: Size,
    default_to_square: bool,
    filter: Filter,
    /// `do_center_crop`'s default.
    center_crop: bool,
    /// `crop_size`'s default (height, width).
    crop_size: (u32, u32),
    mean: [f32; 3],
    std: [f32; 3],
    rule: Rule,
    /// The class reads the legacy `rescale` key as `do_rescale` (OWL-ViT's
    /// first hub configurations).
    legacy_rescale: bool,
    /// EfficientNet's `include_top` default (it divides by `image_std` again
    /// after the normalization); `None` for the classes without the key.
    include_top: Option<bool>,
}

const fn class(
    class: &'static str,
    size: Size,
    filter: Filter,
    center_crop: Option<(u32, u32)>,
    (mean, std): ([f32; 3], [f32; 3]),
    rule: Rule,
) -> Defaults {
    Defaults {
        class,
        size,
        // `get_size_dict` squares an integer size unless the class says not to:
        // the classes whose default size is a shortest edge.
        default_to_square: matches!(size, Size::HeightWidth(..)),
        filter,
        center_crop: center_crop.is_some(),
        crop_size: match center_crop {
            Some(c) => c,
            None => (224, 224),
        },
        mean,
        std,
        rule,
        legacy_rescale: false,
        include_top: None,
    }
}

/// A class of the DETR family: their defaults are all the same.
const fn detr(class_name: &'static str, yolos: bool) -> Defaults {
    class(
        class_name,
        Size::ShortestLongest(800, 1333),
        Filter::Bilinear,
        None,
        IMAGENET,
        Rule::Detr { yolos },
    )
}

const HALF: ([f32; 3], [f32; 3]) = (STANDARD, STANDARD);
const IMAGENET: ([f32; 3], [f32; 3]) = (IMAGENET_MEAN, IMAGENET_STD);
const CLIP: ([f32; 3], [f32; 3]) = (CLIP_MEAN, CLIP_STD);
const SQUARE_224: Option<(u32, u32)> = Some((224, 224));

const CLASSES: &[Defaults] = &[
    class(
        "ViT",
        Size::HeightWidth(224, 224),
        Filter::Bilinear,
        None,
        HALF,
        Rule::Plain,
    ),
    class(
        "DeiT",
        Size::HeightWidth(256, 256),
        Filter::Bicubic,
        SQUARE_224,
        HALF,
        Rule::Plain,
    ),
    class(
        "Beit",
        Size::HeightWidth(224, 224),
        Filter::Bicubic,
        None,
        HALF,
        Rule::Plain,
    ),
    class(
        "CLIP",
        Size::ShortestEdge(224),
        Filter::Bicubic,
        SQUARE_224,
        CLIP,
        Rule::Plain,
    ),
    class(
        "ConvNext",
        Size::ShortestEdge(384),
        Filter::Bicubic,
        None,
        HALF,
        Rule::ConvNext {
            crop_pct: 224.0 / 256.0,
        },
    ),
    class(
        "Bit",
        Size::ShortestEdge(224),
        Filter::Bicubic,
        SQUARE_224,
        CLIP,
        Rule::Plain,
    ),
    Defaults {
        // SigLIP squares integer sizes although its default is a square.
        default_to_square: false,
        ..class(
            "Siglip",
            Size::HeightWidth(224, 224),
            Filter::Bicubic,
            None,
            HALF,
            Rule::Plain,
        )
    },
    class(
        "MobileNetV1",
        Size::ShortestEdge(256),
        Filter::Bilinear,
        SQUARE_224,
        HALF,
        Rule::Plain,
    ),
    class(
        "MobileNetV2",
        Size::ShortestEdge(256),
        Filter::Bilinear,
        SQUARE_224,
        HALF,
        Rule::Plain,
    ),
    class(
        "Levit",
        Size::ShortestEdge(224),
        Filter::Bicubic,
        SQUARE_224,
        IMAGENET,
        Rule::Levit,
    ),
    class(
        "PoolFormer",
        Size::ShortestEdge(224),
        Filter::Bicubic,
        SQUARE_224,
        IMAGENET,
        Rule::PoolFormer { crop_pct: 0.9 },
    ),
    class(
        "Segformer",
        Size::HeightWidth(512, 512),
        Filter::Bilinear,
        None,
        IMAGENET,
        Rule::Plain,
    ),
    class(
        "DPT",
        Size::HeightWidth(384, 384),
        Filter::Bicubic,
        None,
        HALF,
        Rule::Dpt,
    ),
    detr("Detr", false),
    detr("ConditionalDetr", false),
    detr("DeformableDetr", false),
    detr("Yolos", true),
    Defaults {
        // No centre crop by default, but a crop size.
        crop_size: (289, 289),
        include_top: Some(true),
        ..class(
            "EfficientNet",
            Size::HeightWidth(346, 346),
            Filter::Bicubic,
            None,
            HALF,
            Rule::Plain,
        )
    },
    Defaults {
        // No centre crop by default, but a crop size of the image size.
        crop_size: (768, 768),
        legacy_rescale: true,
        ..class(
            "OwlViT",
            Size::HeightWidth(768, 768),
            Filter::Bicubic,
            None,
            CLIP,
            Rule::Plain,
        )
    },
];

/// Classes known and not reproduced, with what they do that a graph does not.
const REFUSED: [(&[&str], &str); 1] = [(
    &["Owlv2"],
    "it pads to a square with 0.5 gray and resizes with scikit-image's \
     Gaussian-smoothed bilinear resize",
)];

/// `ViTImageProcessorFast`, `ViTFeatureExtractor`, ... → `ViT`.
fn class_stem(name: &str) -> &str {
    let name = name.strip_suffix("Pil").unwrap_or(name);
    let name = name.strip_suffix("Fast").unwrap_or(name);
    name.strip_suffix("ImageProcessor")
        .or_else(|| name.strip_suffix("FeatureExtractor"))
        .unwrap_or(name)
}

/// `get_size_dict`: an int, a `[height, width]` list or a dict.
fn read_size(
    o: &Object<'_>,
    key: &str,
    default_to_square: bool,
) -> Result<Option<Size>, GraphError> {
    let Some(v) = o.get(key) else {
        return Ok(None);
    };
    let pos = |v: &Value, what: &str| -> Result<u32, GraphError> {
        let n = v
            .as_i64()
            .ok_or_else(|| o.error(format!("`{key}.{what}` must be an integer, not {v}")))?;
        json::size(FORMAT, &format!("`{key}.{what}`"), n)
    };
    Ok(Some(match v {
        Value::Number(_) if default_to_square => {
            let s = pos(v, "")?;
            Size::HeightWidth(s, s)
        }
        Value::Number(_) => Size::ShortestEdge(pos(v, "")?),
        Value::Array(items) if items.len() == 2 => {
            Size::HeightWidth(pos(&items[0], "0")?, pos(&items[1], "1")?)
        }
        Value::Object(map) => {
            let get = |k: &str| map.get(k).filter(|v| !v.is_null());
            let keys: Vec<&str> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, _)| k.as_str())
                .collect();
            match (
                get("height"),
                get("width"),
                get("shortest_edge"),
                keys.len(),
            ) {
                (Some(h), Some(w), None, 2) => {
                    Size::HeightWidth(pos(h, "height")?, pos(w, "width")?)
                }
                (None, None, Some(s), 1) => Size::ShortestEdge(pos(s, "shortest_edge")?),
                (None, None, Some(s), 2) if get("longest_edge").is_some() => Size::ShortestLongest(
                    pos(s, "shortest_edge")?,
                    pos(get("longest_edge").unwrap_or(s), "longest_edge")?,
                ),
                _ => {
                    return Err(o.error(format!(
                        "`{key}` with keys {keys:?} is not supported (height+width or shortest_edge)"
                    )));
                }
            }
        }
        v => return Err(o.error(format!("`{key}` must be a size, not {v}"))),
    }))
}

/// A Hugging Face `preprocessor_config.json`, as `AutoImageProcessor` runs it
/// by default: with the torchvision backend ([`HfBackend::Torchvision`]), on an
/// image loaded by `transformers.image_utils.load_image` (EXIF orientation
/// applied). [`hugging_face_with`] chooses the backend.
pub fn hugging_face(config: &str) -> Result<Graph, GraphError> {
    hugging_face_with(config, HfBackend::default())
}

/// A Hugging Face `preprocessor_config.json`, as its image processor class
/// runs it with `backend` on an image loaded by
/// `transformers.image_utils.load_image` (EXIF orientation applied). The graph's
/// provenance names the backend (`tensorprep inspect` shows it).
///
/// Supported classes: ViT, DeiT, BEiT, CLIP, ConvNeXT (with `crop_pct`), BiT,
/// SigLIP, MobileNetV1, MobileNetV2, LeViT, PoolFormer (with `crop_pct`),
/// SegFormer, DPT (with `keep_aspect_ratio` and `ensure_multiple_of`: Depth
/// Anything), OWL-ViT (with its legacy `rescale` key), EfficientNet (with
/// `include_top`; its published configurations resize NEAREST, which the
/// torchvision backend runs as PyTorch's nearest) and the DETR family
/// (DETR, Conditional and Deformable DETR, YOLOS: shortest and longest edge,
/// one image, so `do_pad` pads nothing and the pixel mask is all ones), in their `ImageProcessor`, `ImageProcessorFast`,
/// `ImageProcessorPil` and legacy `FeatureExtractor` spellings. Keys the file
/// leaves out take the class's defaults (transformers 5); legacy integer sizes
/// follow `get_size_dict` (`size: 224` is 224x224 for ViT, shortest edge 224
/// for CLIP). The torchvision backend resizes with BILINEAR or BICUBIC only
/// (other filters are refused by name).
///
/// ```
/// use tensorprep::import::{HfBackend, hugging_face_with};
/// use tensorprep::resize::{Filter, Resample};
/// use tensorprep::pipeline::Op;
///
/// let config = r#"{"image_processor_type": "CLIPImageProcessor"}"#;
/// let resample = |backend| match hugging_face_with(config, backend).unwrap().pipeline.ops()[1] {
///     Op::Resize(r) => r.resample,
///     _ => unreachable!(),
/// };
/// assert_eq!(resample(HfBackend::Torchvision), Resample::Torch(Filter::Bicubic));
/// assert_eq!(resample(HfBackend::Pil), Resample::Pillow(Filter::Bicubic));
/// ```
pub fn hugging_face_with(config: &str, backend: HfBackend) -> Result<Graph, GraphError> {
    let value = json::parse(FORMAT, config)?;
    let o = Object::new(FORMAT, &value)?;
    let class = match (
        o.str("image_processor_type")?,
        o.str("feature_extractor_type")?,
    ) {
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => {
            return Err(o.error(
                "neither `image_processor_type` nor `feature_extractor_type` names the processor class"
                    .into(),
            ));
        }
    };
    let stem = class_stem(class);
    if let Some((_, why)) = REFUSED
        .iter()
        .find(|(names, _)| names.iter().any(|n| n.eq_ignore_ascii_case(stem)))
    {
        return Err(o.error(format!("processor class `{class}` is not supported: {why}")));
    }
    let d = CLASSES
        .iter()
        .find(|d| d.class.eq_ignore_ascii_case(stem))
        .ok_or_else(|| {
            let known: Vec<&str> = CLASSES.iter().map(|d| d.class).collect();
            o.error(format!(
                "processor class `{class}` is not supported (known: {})",
                known.join(", ")
            ))
        })?;
    let detr = matches!(d.rule, Rule::Detr { .. });
    for key in ["do_pad", "do_flip_channel_order"] {
        // The DETR family pads a batch to its largest image: nothing for one.
        if o.bool(key)? == Some(true) && !(detr && key == "do_pad") {
            return Err(o.error(format!("`{key}: true` is not supported")));
        }
    }
    if detr && o.get("pad_size").is_some_and(|v| !v.is_null()) {
        return Err(o.error(
            "`pad_size` (padding to a fixed size in the normalized tensor, with a pixel \
             mask) is not supported"
                .into(),
        ));
    }

    let mut ops = Vec::from([decode(Orientation::Apply)]);
    if o.bool("do_resize")?.unwrap_or(true) {
        let size = match read_size(&o, "size", d.default_to_square)? {
            // The DETR family's constructor: an integer size is the shortest
            // edge, `max_size` (default 1333) the longest.
            Some(Size::ShortestEdge(edge))
                if detr && o.get("size").is_some_and(Value::is_number) =>
            {
                let max = match o.int("max_size")? {
                    Some(n) => json::size(FORMAT, "`max_size`", n)?,
                    None => 1333,
                };
                Size::ShortestLongest(edge, max)
            }
            Some(size) => size,
            None => d.size,
        };
        let filter = match o.int("resample")? {
            Some(n) => pillow_filter(n)
                .ok_or_else(|| o.error(format!("`resample` {n} is not a Pillow filter")))?,
            None => d.filter,
        };
        let resample = match (backend, filter) {
            (HfBackend::Pil, _) => Resample::Pillow(filter),
            // Where torchvision converts bilinear uint8 to float32 (the table of `HfBackend`).
            (HfBackend::TorchvisionFloat32, Filter::Bilinear) => Resample::TorchFloat(filter),
            (_, Filter::Bilinear | Filter::Bicubic) => Resample::Torch(filter),
            // transformers maps PIL's NEAREST to torchvision's NEAREST_EXACT.
            (_, Filter::Nearest) => Resample::TorchNearestExact,
            (_, other) => {
                return Err(o.error(format!(
                    "`resample` {other:?} with the torchvision backend is not supported \
                     (PyTorch's BILINEAR and BICUBIC are); import with the PIL backend (hf:pil)"
                )));
            }
        };
        let resize = |size| Op::Resize(Resize { size, resample });
        let detr_only = || {
            o.error(
                "`size` with `shortest_edge` and `longest_edge` is supported for the DETR family only"
                    .into(),
            )
        };
        let exact = |height, width| resize(SizeRule::Exact { width, height });
        let pct = |default: f64| -> Result<Option<f64>, GraphError> {
            if o.is_null("crop_pct") {
                return Ok(None);
            }
            let pct = o.f64("crop_pct")?.unwrap_or(default);
            if pct > 0.0 && pct <= 1.0 {
                Ok(Some(pct))
            } else {
                Err(o.error(format!("`crop_pct` must be in (0, 1], not {pct}")))
            }
        };
        // Python's int() of a float: truncation.
        let scaled = |edge: u32, by: f64| (f64::from(edge) / by) as u32;
        match (d.rule, size) {
            (Rule::ConvNext { crop_pct }, Size::ShortestEdge(edge)) => {
                if edge < 384 {
                    let pct = pct(crop_pct)?.unwrap_or(crop_pct);
                    // int(shortest_edge / crop_pct), then a centre crop back to it.
                    ops.push(resize(shorter_side(scaled(edge, pct))));
                    ops.push(Op::CenterCrop(CenterCrop {
                        width: edge,
                        height: edge,
                        rounding: CropRounding::Floor,
                    }));
                } else {
                    ops.push(exact(edge, edge));
                }
            }
            (Rule::ConvNext { .. }, _) => {
                return Err(o.error("ConvNeXT needs `size.shortest_edge`".into()));
            }
            (Rule::PoolFormer { crop_pct }, size) => match (pct(crop_pct)?, size) {
                (None, Size::ShortestEdge(edge)) => ops.push(resize(shorter_side(edge))),
                (None, Size::HeightWidth(h, w)) => ops.push(exact(h, w)),
                (Some(p), Size::ShortestEdge(edge)) => {
                    ops.push(resize(shorter_side(scaled(edge, p))))
                }
                (Some(p), Size::HeightWidth(h, w)) if h == w => {
                    ops.push(resize(shorter_side(scaled(h, p))))
                }
                (Some(p), Size::HeightWidth(h, w)) => ops.push(exact(scaled(h, p), scaled(w, p))),
                (_, Size::ShortestLongest(..)) => return Err(detr_only()),
            },
            (Rule::Dpt, Size::HeightWidth(height, width)) => {
                let keep_aspect_ratio = o.bool("keep_aspect_ratio")?.unwrap_or(false);
                let multiple = match o.int("ensure_multiple_of")?.unwrap_or(1) {
                    n if n >= 1 => json::size(FORMAT, "`ensure_multiple_of`", n)?,
                    n => {
                        return Err(
                            o.error(format!("`ensure_multiple_of` must be at least 1, not {n}"))
                        );
                    }
                };
                ops.push(if keep_aspect_ratio || multiple > 1 {
                    resize(SizeRule::Multiple {
                        width,
                        height,
                        multiple,
                        keep_aspect_ratio,
                    })
                } else {
                    exact(height, width)
                });
            }
            (Rule::Dpt, Size::ShortestEdge(_)) => {
                return Err(o.error("DPT needs `size` with height and width".into()));
            }
            (Rule::Levit, Size::ShortestEdge(edge)) => ops.push(resize(shorter_side(
                (256.0 / 224.0 * f64::from(edge)) as u32,
            ))),
            (Rule::Detr { .. }, Size::ShortestEdge(_)) => {
                return Err(o.error(
                    "`size` needs `shortest_edge` and `longest_edge`, or height and width".into(),
                ));
            }
            (Rule::Detr { yolos }, Size::ShortestLongest(shortest, longest)) => {
                ops.push(resize(SizeRule::Detr {
                    shortest,
                    longest: Some(longest),
                    yolos,
                }));
            }
            (_, Size::ShortestLongest(..)) => return Err(detr_only()),
            (_, Size::ShortestEdge(edge)) => ops.push(resize(shorter_side(edge))),
            (_, Size::HeightWidth(height, width)) => ops.push(exact(height, width)),
        }
    }
    let do_center_crop = o.bool("do_center_crop")?.unwrap_or(d.center_crop);
    if do_center_crop {
        let (height, width) = match read_size(&o, "crop_size", true)? {
            Some(Size::HeightWidth(h, w)) => (h, w),
            Some(Size::ShortestEdge(_) | Size::ShortestLongest(..)) => {
                return Err(o.error("`crop_size` must give height and width".into()));
            }
            None => d.crop_size,
        };
        ops.push(Op::CenterCrop(CenterCrop {
            width,
            height,
            rounding: CropRounding::Floor,
        }));
    }
    // OWL-ViT's constructor turns a legacy `rescale` into `do_rescale`, over it.
    let legacy = match d.legacy_rescale {
        true => o.bool("rescale")?,
        false => None,
    };
    let factor = if legacy.or(o.bool("do_rescale")?).unwrap_or(true) {
        let factor = o.f64("rescale_factor")?.unwrap_or(1.0 / 255.0);
        if !(factor.is_finite() && factor > 0.0) {
            return Err(o.error(format!("`rescale_factor` must be positive, not {factor}")));
        }
        Some(factor)
    } else {
        None
    };
    let do_normalize = o.bool("do_normalize")?.unwrap_or(true);
    let stat = |key: &str, default: [f32; 3]| -> Result<[f32; 3], GraphError> {
        match o.floats(key)? {
            Some(v) => three(&v).ok_or_else(|| o.error(format!("`{key}` needs 1 or 3 values"))),
            None => Ok(default),
        }
    };
    let (mean, std) = if do_normalize {
        (stat("image_mean", d.mean)?, stat("image_std", d.std)?)
    } else {
        ([0.0; 3], [1.0; 3])
    };
    // EfficientNet: `include_top` divides by `image_std` once more (in
    // float32, after the normalization); `rescale_offset` (`v * factor - 1`,
    // not fused with the normalization) is not reproduced.
    let second_std = match d.include_top {
        Some(default) => {
            if o.bool("rescale_offset")? == Some(true) {
                return Err(o.error(
                    "`rescale_offset: true` (`v * rescale_factor - 1` before the \
                     normalization) is not supported"
                        .into(),
                ));
            }
            if o.bool("include_top")?.unwrap_or(default) {
                stat("image_std", d.std)?
            } else {
                [1.0; 3]
            }
        }
        None => [1.0; 3],
    };
    let normalize = match (backend, factor) {
        (HfBackend::Pil, Some(factor)) => Normalize {
            mean,
            std,
            divisor: (1.0 / factor) as f32,
            std_reciprocal: false,
            second_std,
        },
        (_, None) => Normalize {
            mean,
            std,
            divisor: 1.0,
            std_reciprocal: false,
            second_std,
        },
        // `rescale_and_normalize` fuses the two: float32 statistics times the
        // float32 of `1 / factor`, then `(v - mean) / std` on the float32 pixels.
        (HfBackend::Torchvision | HfBackend::TorchvisionFloat32, Some(factor)) if do_normalize => {
            let up = (1.0 / factor) as f32;
            Normalize {
                mean: mean.map(|m| m * up),
                std: std.map(|s| s * up),
                divisor: 1.0,
                std_reciprocal: false,
                second_std,
            }
        }
        (_, Some(_)) => {
            return Err(o.error(
                "`do_rescale` without `do_normalize` under the torchvision backend multiplies \
                 by `rescale_factor` in float32, which is not reproduced exactly; import with \
                 the PIL backend (hf:pil)"
                    .into(),
            ));
        }
    };
    ops.extend(finish(
        normalize,
        Layout::Chw,
        DType::F32,
        Quantization::IDENTITY,
    ));
    let default = if backend == HfBackend::default() {
        ", transformers' default"
    } else {
        ""
    };
    graph(
        &ops,
        "pixel_values",
        format!(
            "hf {class} preprocessor_config.json, {} backend{default}",
            backend.name()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::Rounding;
    use std::string::ToString;

    #[test]
    fn legacy_int_sizes_follow_the_class() {
        let vit = hugging_face(r#"{"feature_extractor_type": "ViTFeatureExtractor", "size": 384}"#)
            .unwrap();
        assert_eq!(vit.output.shape, Some([3, 384, 384]));
        let clip = hugging_face(
            r#"{"image_processor_type": "CLIPImageProcessor", "size": 256, "crop_size": 240}"#,
        )
        .unwrap();
        assert!(clip.pipeline.ops().iter().any(|op| matches!(
            op,
            Op::Resize(Resize {
                size: SizeRule::ShorterSide { size: 256, .. },
                ..
            })
        )));
        assert_eq!(clip.output.shape, Some([3, 240, 240]));
    }

    /// The resize rules (first resize op's size) of a configuration.
    fn resize_of(config: &str) -> SizeRule {
        let g = hugging_face(config).unwrap();
        g.pipeline
            .ops()
            .iter()
            .find_map(|op| match op {
                Op::Resize(r) => Some(r.size),
                _ => None,
            })
            .unwrap()
    }

    fn shorter(size: u32) -> SizeRule {
        SizeRule::ShorterSide {
            size,
            max_size: None,
            rounding: Rounding::Truncate,
        }
    }

    #[test]
    fn poolformer_and_levit_scale_their_sizes_as_transformers() {
        let pf = |extra: &str| {
            resize_of(&format!(
                r#"{{"image_processor_type": "PoolFormerImageProcessor"{extra}}}"#
            ))
        };
        // int(224 / 0.9) = 248; a null crop_pct turns the scaling off.
        assert_eq!(pf(""), shorter(248));
        assert_eq!(pf(r#", "crop_pct": null"#), shorter(224));
        assert_eq!(
            pf(r#", "size": {"height": 300, "width": 300}"#),
            shorter(333)
        );
        assert_eq!(
            pf(r#", "size": {"height": 300, "width": 200}, "crop_pct": 0.5"#),
            SizeRule::Exact {
                width: 400,
                height: 600
            }
        );
        assert!(
            hugging_face(r#"{"image_processor_type": "PoolFormerImageProcessor", "crop_pct": 0}"#)
                .is_err()
        );
        // int(256 / 224 * 224) = 256; int(256 / 224 * 100) = 114.
        let levit = |edge: u32| {
            resize_of(&format!(
                r#"{{"image_processor_type": "LevitImageProcessor", "size": {{"shortest_edge": {edge}}}}}"#
            ))
        };
        assert_eq!(levit(224), shorter(256));
        assert_eq!(levit(100), shorter(114));
    }

    #[test]
    fn dpt_keeps_aspect_and_multiples_only_when_asked() {
        let dpt =
            |extra: &str| format!(r#"{{"image_processor_type": "DPTImageProcessor"{extra}}}"#);
        assert_eq!(
            resize_of(&dpt(r#", "size": 384"#)),
            SizeRule::Exact {
                width: 384,
                height: 384
            }
        );
        assert_eq!(
            resize_of(&dpt(
                r#", "size": {"height": 518, "width": 518}, "keep_aspect_ratio": true, "ensure_multiple_of": 14"#
            )),
            SizeRule::Multiple {
                width: 518,
                height: 518,
                multiple: 14,
                keep_aspect_ratio: true
            }
        );
        let g = hugging_face(&dpt(r#", "keep_aspect_ratio": true"#)).unwrap();
        assert_eq!(g.output.shape, None, "the size follows the image's");
        for bad in [
            r#", "ensure_multiple_of": 0"#,
            r#", "size": {"shortest_edge": 384}"#,
            r#", "do_pad": true"#,
        ] {
            assert!(hugging_face(&dpt(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn convnext_crop_pct_resizes_then_crops() {
        let g = hugging_face(
            r#"{"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 224}, "crop_pct": 0.875}"#,
        )
        .unwrap();
        let sizes: Vec<_> = g
            .pipeline
            .ops()
            .iter()
            .filter_map(|op| match op {
                Op::Resize(r) => Some(r.size),
                _ => None,
            })
            .collect();
        assert_eq!(
            sizes,
            [SizeRule::ShorterSide {
                size: 256,
                max_size: None,
                rounding: Rounding::Truncate
            }]
        );
        assert_eq!(g.output.shape, Some([3, 224, 224]));
        let big = hugging_face(
            r#"{"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 384}}"#,
        )
        .unwrap();
        assert_eq!(big.output.shape, Some([3, 384, 384]));
    }

    #[test]
    fn owlvit_squares_without_crop_and_reads_the_legacy_rescale() {
        let ops = |config: &str| hugging_face(config).unwrap().pipeline.ops().to_vec();
        let plain = ops(r#"{"image_processor_type": "OwlViTImageProcessor"}"#);
        assert!(matches!(
            plain[1],
            Op::Resize(Resize {
                size: SizeRule::Exact {
                    width: 768,
                    height: 768
                },
                resample: Resample::Torch(Filter::Bicubic),
            })
        ));
        assert!(!plain.iter().any(|op| matches!(op, Op::CenterCrop(_))));
        // The crop size defaults to the image size, not 224.
        let cropped = ops(
            r#"{"image_processor_type": "OwlViTImageProcessor", "size": 800, "do_center_crop": true}"#,
        );
        assert!(cropped.iter().any(|op| matches!(
            op,
            Op::CenterCrop(CenterCrop {
                width: 768,
                height: 768,
                ..
            })
        )));
        // `rescale: false` (legacy) wins over `do_rescale`; elsewhere it is ignored.
        let normalize = |config: &str| {
            let g = hugging_face_with(config, HfBackend::Pil).unwrap();
            match g
                .pipeline
                .ops()
                .iter()
                .find(|op| matches!(op, Op::Normalize(_)))
            {
                Some(Op::Normalize(n)) => *n,
                other => panic!("{other:?}"),
            }
        };
        let owl = normalize(
            r#"{"image_processor_type": "OwlViTImageProcessor", "rescale": false, "do_rescale": true}"#,
        );
        assert_eq!(owl.divisor, 1.0);
        let vit = normalize(r#"{"image_processor_type": "ViTImageProcessor", "rescale": false}"#);
        assert_eq!(vit.divisor, 255.0);
    }

    #[test]
    fn detr_family_sizes_follow_their_constructors() {
        let rule = |config: &str| {
            hugging_face(config)
                .unwrap()
                .pipeline
                .ops()
                .iter()
                .find_map(|op| match op {
                    Op::Resize(r) => Some(r.size),
                    _ => None,
                })
        };
        let detr = |shortest, longest, yolos| {
            Some(SizeRule::Detr {
                shortest,
                longest: Some(longest),
                yolos,
            })
        };
        assert_eq!(
            rule(r#"{"image_processor_type": "DetrImageProcessor"}"#),
            detr(800, 1333, false)
        );
        // Legacy: an int size with `max_size`, or with the default 1333.
        assert_eq!(
            rule(
                r#"{"feature_extractor_type": "DetrFeatureExtractor", "size": 600, "max_size": 1000, "do_pad": true}"#
            ),
            detr(600, 1000, false)
        );
        assert_eq!(
            rule(r#"{"image_processor_type": "ConditionalDetrImageProcessor", "size": 512}"#),
            detr(512, 1333, false)
        );
        assert_eq!(
            rule(
                r#"{"image_processor_type": "YolosImageProcessor", "size": {"shortest_edge": 512, "longest_edge": 864}}"#
            ),
            detr(512, 864, true)
        );
        assert_eq!(
            rule(
                r#"{"image_processor_type": "DeformableDetrImageProcessor", "size": {"height": 640, "width": 640}}"#
            ),
            Some(SizeRule::Exact {
                width: 640,
                height: 640
            })
        );
    }

    #[test]
    fn unsupported_settings_are_named() {
        for (config, needle) in [
            (
                r#"{"image_processor_type": "DetrImageProcessor", "pad_size": {"height": 800, "width": 800}}"#,
                "pad_size",
            ),
            (
                r#"{"image_processor_type": "DetrImageProcessor", "size": {"shortest_edge": 800}}"#,
                "longest_edge",
            ),
            (
                r#"{"image_processor_type": "Owlv2ImageProcessorFast"}"#,
                "pads to a square",
            ),
            (
                r#"{"image_processor_type": "EfficientNetImageProcessor", "rescale_offset": true}"#,
                "rescale_offset",
            ),
            (
                r#"{"image_processor_type": "NoSuchImageProcessor"}"#,
                "known: ViT",
            ),
            (
                r#"{"image_processor_type": "ViTImageProcessor", "do_pad": true}"#,
                "do_pad",
            ),
            (
                r#"{"image_processor_type": "ViTImageProcessor", "size": {"shortest_edge": 800, "longest_edge": 1333}}"#,
                "longest_edge",
            ),
            (
                r#"{"image_processor_type": "ViTImageProcessor", "resample": 9}"#,
                "resample",
            ),
            (
                r#"{"image_processor_type": "ViTImageProcessor", "image_mean": [1, 2]}"#,
                "image_mean",
            ),
            (r#"[1, 2]"#, "not a JSON object"),
            (r#"{"size": 224}"#, "processor class"),
        ] {
            let e = hugging_face(config).unwrap_err().to_string();
            assert!(e.contains(needle), "{config}: {e}");
        }
    }
}
