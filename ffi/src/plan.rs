//! `tp_plan` (a graph compiled for one kind of input) and `tp_run_state`
//! (one thread's scratch), and running them into the caller's tensor.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use half::f16;
use tensorprep::jpeg::Orientation;
use tensorprep::pipeline::{Input, InputDesc, Plan, PlanState};
use tensorprep::{DType, Limits, TensorMut};

use crate::args::{self, Span, Spans, lookup};
use crate::boundary::{boundary, boundary_value};
use crate::graph::tp_graph;
use crate::result::{Failure, Result, tp_result};
use crate::types::{
    self, CHANNEL_ORDERS, DTYPES, LAYOUTS, PIXEL_FORMATS, tp_bytes, tp_geometry, tp_image,
    tp_tensor_info,
};

/// A compiled plan: every op checked, shapes known, tables built. Immutable:
/// any number of threads may run one plan at once, each with its own
/// `tp_run_state`.
pub struct tp_plan {
    plan: Plan,
}

/// The scratch of one thread running plans: the decoder, intermediate
/// buffers and resampler rows, grown on the first run and reused after (no
/// allocation per image in steady state). Used by one thread at a time; may
/// serve several plans in turn.
pub struct tp_run_state {
    /// Reached only through [`tp_run_state::enter`].
    state: std::cell::UnsafeCell<PlanState>,
    /// Set for the duration of a call that uses the state: a second thread
    /// calling meanwhile (not allowed) gets `TP_RESULT_STATE_BUSY` instead of
    /// racing on the decoder and buffers.
    pub(crate) busy: std::sync::atomic::AtomicBool,
}

/// A run state marked busy; unmarked when dropped (on unwinding too).
struct Busy<'a>(&'a tp_run_state);

impl tp_run_state {
    fn new() -> tp_run_state {
        tp_run_state {
            state: std::cell::UnsafeCell::new(PlanState::new()),
            busy: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Marks the state busy for one call; a state some other thread is using
    /// is `TP_RESULT_STATE_BUSY` (the header forbids sharing it, this makes
    /// the mistake an error instead of undefined behaviour).
    fn enter(&self) -> Result<Busy<'_>> {
        use std::sync::atomic::Ordering;
        if self.busy.swap(true, Ordering::Acquire) {
            return Err(Failure::new(
                tp_result::StateBusy,
                "this tp_run_state is in use by another call (give each thread its own)",
            ));
        }
        Ok(Busy(self))
    }
}

impl Busy<'_> {
    fn state(&mut self) -> &mut PlanState {
        // SAFETY: only a `Busy` reaches the cell, and the flag admits one at a time.
        unsafe { &mut *self.0.state.get() }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0
            .busy
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

/// What a plan is compiled for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tp_input_kind {
    /// Encoded image files: JPEG, PNG or WebP, the format found from each
    /// file's bytes (each image's size is read from its header). The name
    /// stays from when JPEG was the only format.
    Jpeg = 1,
    /// Raw pixels of one format and size (camera frames, decoded images).
    Pixels = 2,
}

/// The input a plan is compiled for.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tp_input_desc {
    /// A `tp_input_kind`.
    pub kind: u32,
    /// For `TP_INPUT_KIND_PIXELS`: a `tp_pixel_format` the graph accepts.
    pub format: u32,
    /// For `TP_INPUT_KIND_PIXELS`: width in pixels.
    pub width: u32,
    /// For `TP_INPUT_KIND_PIXELS`: height in pixels.
    pub height: u32,
}

/// Options of `tp_plan_new`. All zero (or a NULL pointer) means the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tp_plan_options {
    /// A `tp_decoder` for JPEG plans (frames need none); `TP_DECODER_AUTO` (0)
    /// keeps the graph's decoder when this build has it and otherwise uses
    /// zune-jpeg.
    pub decoder: u32,
    /// Largest image accepted, in pixels; 0 for the default (128 Mpixel).
    pub max_pixels: u64,
    /// Largest single allocation, in bytes; 0 for the default (1 GiB).
    pub max_alloc_bytes: u64,
}

/// `tp_plan_options_ex.flags`: apply the EXIF orientation tag of encoded
/// images (Pillow's `ImageOps.exif_transpose`) instead of the graph's choice.
pub const TP_PLAN_APPLY_EXIF_ORIENTATION: u32 = 1;
/// `tp_plan_options_ex.flags`: ignore the EXIF orientation tag (pixels as
/// stored, as torchvision's loader reads them) instead of the graph's choice.
pub const TP_PLAN_IGNORE_EXIF_ORIENTATION: u32 = 2;
/// `tp_plan_options_ex.flags`: decode damaged files as far as possible
/// (missing parts filled) instead of failing.
pub const TP_PLAN_LENIENT: u32 = 4;

/// Options of `tp_plan_new_ex`: those of `tp_plan_options`, plus the EXIF
/// and damage handling of encoded images and the YUV range of frames. Set
/// `struct_size` to `sizeof(tp_plan_options_ex)`: fields added in later
/// versions go at the end, and a caller built with this header keeps
/// working with them (their defaults apply). Other fields 0 mean the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tp_plan_options_ex {
    /// `sizeof(tp_plan_options_ex)`.
    pub struct_size: usize,
    /// A `tp_decoder` (as in `tp_plan_options`).
    pub decoder: u32,
    /// `TP_PLAN_*` bits.
    pub flags: u32,
    /// A `tp_yuv_range` for YUV frames (NV12/NV21/I420); 0 keeps the graph's.
    pub yuv_range: u32,
    /// Largest image accepted, in pixels; 0 for the default (128 Mpixel).
    pub max_pixels: u64,
    /// Largest single allocation, in bytes; 0 for the default (1 GiB).
    pub max_alloc_bytes: u64,
}

/// The limits the options ask for.
pub(crate) fn limits(max_pixels: u64, max_alloc_bytes: u64) -> Limits {
    let or = |v: u64, default: u64| if v == 0 { default } else { v };
    Limits {
        max_pixels: or(max_pixels, Limits::DEFAULT.max_pixels),
        max_alloc_bytes: or(max_alloc_bytes, Limits::DEFAULT.max_alloc_bytes),
    }
}

/// Compiles `graph` for `input`: checks every op and, for pixel inputs,
/// resolves every shape and builds every table now. For a pixel format other
/// than the one the graph's ops expect, a colour conversion is put first
/// (and fused into the first pass).
///
/// # Safety
///
/// `graph` must be a live graph handle; `input` must point to a
/// `tp_input_desc`; `options` must be NULL or point to a `tp_plan_options`.
/// `out` must be valid for a write; on success it receives a plan the caller
/// owns and frees with `tp_plan_free` (the graph may be freed first).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_new(
    graph: *const tp_graph,
    input: *const tp_input_desc,
    options: *const tp_plan_options,
    out: *mut *mut tp_plan,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees each pointer is NULL or valid.
        let (graph, input, options, out) = unsafe {
            (
                args::required(graph, "graph")?,
                args::required(input, "input")?,
                args::optional(options, "options")?,
                args::out(out, "out")?,
            )
        };
        let o = options.copied().unwrap_or_default();
        let options = tp_plan_options_ex {
            struct_size: size_of::<tp_plan_options_ex>(),
            decoder: o.decoder,
            max_pixels: o.max_pixels,
            max_alloc_bytes: o.max_alloc_bytes,
            ..tp_plan_options_ex::default()
        };
        args::give(out, compile(&graph.graph, input, &options)?);
        Ok(())
    })
}

/// `tp_plan_new` with the options of `tp_plan_options_ex`: EXIF orientation
/// and lenient decoding for encoded images, the YUV range for frames.
///
/// # Safety
///
/// As for `tp_plan_new`; `options` must be NULL or point to at least
/// `options->struct_size` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_new_ex(
    graph: *const tp_graph,
    input: *const tp_input_desc,
    options: *const tp_plan_options_ex,
    out: *mut *mut tp_plan,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees each pointer is NULL or valid.
        let (graph, input, options, out) = unsafe {
            (
                args::required(graph, "graph")?,
                args::required(input, "input")?,
                args::sized(options, "options")?,
                args::out(out, "out")?,
            )
        };
        let options = options.unwrap_or_default();
        args::give(out, compile(&graph.graph, input, &options)?);
        Ok(())
    })
}

fn compile(
    graph: &tensorprep::graph::Graph,
    input: &tp_input_desc,
    options: &tp_plan_options_ex,
) -> Result<tp_plan> {
    let kinds = [
        (tp_input_kind::Jpeg as u32, tp_input_kind::Jpeg),
        (tp_input_kind::Pixels as u32, tp_input_kind::Pixels),
    ];
    let flags = args::flags(
        options.flags,
        TP_PLAN_APPLY_EXIF_ORIENTATION | TP_PLAN_IGNORE_EXIF_ORIENTATION | TP_PLAN_LENIENT,
        "options.flags",
    )?;
    let exif = flags & (TP_PLAN_APPLY_EXIF_ORIENTATION | TP_PLAN_IGNORE_EXIF_ORIENTATION);
    let orientation = match exif {
        0 => None,
        TP_PLAN_APPLY_EXIF_ORIENTATION => Some(Orientation::Apply),
        TP_PLAN_IGNORE_EXIF_ORIENTATION => Some(Orientation::Ignore),
        _ => {
            return Err(Failure::invalid(
                "options.flags: TP_PLAN_APPLY_EXIF_ORIENTATION and TP_PLAN_IGNORE_EXIF_ORIENTATION \
                 contradict each other",
            ));
        }
    };
    let mut graph = graph.clone();
    if options.yuv_range != 0 {
        graph.input.yuv_range = lookup(&types::YUV_RANGES, options.yuv_range, "options.yuv_range")?;
    }
    let limits = limits(options.max_pixels, options.max_alloc_bytes);
    let plan = match lookup(&kinds, input.kind, "input.kind")? {
        tp_input_kind::Jpeg => {
            let backend = types::decoder(options.decoder, graph.pipeline.decoder())?;
            graph.pipeline.map_decode(|d| {
                d.backend = backend;
                if let Some(o) = orientation {
                    d.orientation = o;
                }
                if flags & TP_PLAN_LENIENT != 0 {
                    d.strict = false;
                }
            });
            graph.compile_with_limits(InputDesc::Encoded, &limits)?
        }
        // Frames skip the Decode op: no decoder is chosen or needed (but
        // the value must still be one of `tp_decoder`'s).
        tp_input_kind::Pixels => {
            lookup(&types::DECODERS, options.decoder, "decoder")?;
            let format = lookup(&PIXEL_FORMATS, input.format, "input.format")?;
            let desc = InputDesc::pixels(format, input.width, input.height);
            graph.compile_with_limits(desc, &limits)?
        }
    };
    Ok(tp_plan { plan })
}

/// Frees a plan. NULL is a no-op.
///
/// # Safety
///
/// `plan` must be NULL or a handle from `tp_plan_new` not yet freed; no
/// thread may be running it, and it must not be used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_free(plan: *mut tp_plan) {
    // SAFETY: the caller guarantees an unfreed handle or NULL.
    boundary_value((), || unsafe { args::free(plan) });
}

fn tensor_info(plan: &Plan, shape: Option<[usize; 3]>) -> tp_tensor_info {
    let (layout, order) = plan.layout();
    let shape = shape.unwrap_or_default();
    let elements = shape.iter().product();
    tp_tensor_info {
        dtype: args::code(&DTYPES, plan.dtype()),
        layout: args::code(&LAYOUTS, layout),
        channel_order: args::code(&CHANNEL_ORDERS, order),
        shape,
        elements,
        bytes: elements * plan.dtype().size(),
    }
}

/// Describes the plan's output tensor: element type, layout, channel order
/// and, when it does not depend on the input, shape and size (zeros
/// otherwise).
///
/// # Safety
///
/// `plan` must be a live plan handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_output_info(
    plan: *const tp_plan,
    out: *mut tp_tensor_info,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees a live handle and a writable output.
        let (plan, out) = unsafe { (args::required(plan, "plan")?, args::out(out, "out")?) };
        out.write(tensor_info(&plan.plan, plan.plan.output_shape()));
        Ok(())
    })
}

/// Describes the output tensor the plan makes for one encoded image (JPEG,
/// PNG or WebP), its shape read from the file's header (for plans whose output size depends on the
/// image). The plan resolved for the image's size is kept in `state`, so a
/// `tp_plan_run_jpeg` on the same bytes that follows reuses it.
///
/// # Safety
///
/// `plan` and `state` must be live handles, `state` used by no other thread
/// meanwhile; `data` valid for reads of `len` bytes; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_output_info_for_jpeg(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    data: *const u8,
    len: usize,
    out: *mut tp_tensor_info,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees live handles and valid buffers.
        let (plan, state, bytes, out) = unsafe {
            (
                args::required(plan, "plan")?,
                args::required(state.cast_const(), "state")?,
                args::bytes(data, len, "data")?,
                args::out(out, "out")?,
            )
        };
        let mut busy = state.enter()?;
        let shape = plan
            .plan
            .output_shape_for(busy.state(), Input::Encoded(bytes))?;
        out.write(tensor_info(&plan.plan, Some(shape)));
        Ok(())
    })
}

/// Makes an empty run state.
///
/// # Safety
///
/// `out` must be valid for a write; on success it receives a state the
/// caller owns and frees with `tp_run_state_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_run_state_new(out: *mut *mut tp_run_state) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees `out` is NULL or writable.
        let out = unsafe { args::out(out, "out") }?;
        args::give(out, tp_run_state::new());
        Ok(())
    })
}

/// Frees a run state. NULL is a no-op.
///
/// # Safety
///
/// `state` must be NULL or a handle from `tp_run_state_new` not yet freed,
/// in use by no thread, and not used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_run_state_free(state: *mut tp_run_state) {
    // SAFETY: the caller guarantees an unfreed handle or NULL.
    boundary_value((), || unsafe { args::free(state) });
}

/// The caller's tensor buffer as the plan's element type: `bytes` must hold
/// at least `elements` (only those are written), aligned for the type.
///
/// # Safety
///
/// `out` must be valid for writes of `bytes` bytes, accessed by nothing else.
pub(crate) unsafe fn tensor<'a>(
    out: *mut c_void,
    bytes: usize,
    dtype: DType,
    elements: usize,
    read: &[Span],
) -> Result<TensorMut<'a>> {
    let needed = elements
        .checked_mul(dtype.size())
        .ok_or_else(|| Failure::invalid("the tensor is larger than memory"))?;
    if bytes < needed {
        return Err(Failure::new(
            tp_result::BufferTooSmall,
            format!(
                "the output tensor needs {needed} bytes ({elements} elements of {} bytes); `out_bytes` is {bytes}",
                dtype.size()
            ),
        ));
    }
    args::no_overlap(&[Span::raw(out.cast::<u8>(), needed, "out")], read)?;
    // SAFETY: the caller guarantees `needed <= bytes` writable bytes at
    // `out`; `slice_mut` checks NULL and alignment for the element type, and
    // nothing read by the call overlaps them (checked above).
    unsafe {
        Ok(match dtype {
            DType::F32 => TensorMut::F32(args::slice_mut(out.cast::<f32>(), elements, "out")?),
            DType::F16 => TensorMut::F16(args::slice_mut(out.cast::<f16>(), elements, "out")?),
            DType::U8 => TensorMut::U8(args::slice_mut(out.cast::<u8>(), elements, "out")?),
            DType::I8 => TensorMut::I8(args::slice_mut(out.cast::<i8>(), elements, "out")?),
            _ => return Err(Failure::invalid("an element type this C API does not know")),
        })
    }
}

/// Runs one input into the tensor at `out`.
///
/// # Safety
///
/// `out` writable for `out_bytes` bytes, overlapping nothing in `read`.
unsafe fn run_one(
    plan: &Plan,
    state: &mut PlanState,
    input: Input<'_>,
    read: &[Span],
    out: *mut c_void,
    out_bytes: usize,
) -> Result<tp_geometry> {
    // The arguments (the tensor's size and overlaps) are checked before the
    // input is read: a fixed shape needs no header.
    let shape = match plan.output_shape() {
        Some(shape) => shape,
        None => plan.output_shape_for(state, input)?,
    };
    let elements = shape.iter().product();
    // SAFETY: forwarded from the caller.
    let tensor = unsafe { tensor(out, out_bytes, plan.dtype(), elements, read) }?;
    Ok(plan.run(state, input, tensor)?.into())
}

/// The body of the single-input runs: checks the handles, turns the C input
/// into a core one (with the spans it reads), runs it, writes the geometry.
///
/// # Safety
///
/// `plan`, `state` and `geometry` as the exports document; `out` writable for
/// `out_bytes` bytes.
unsafe fn single<'a>(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    input: impl FnOnce() -> Result<(Input<'a>, Spans)>,
    out: *mut c_void,
    out_bytes: usize,
    geometry: *mut tp_geometry,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees live handles and a writable geometry.
        let (plan, state, geometry) = unsafe {
            (
                args::required(plan, "plan")?,
                args::required(state.cast_const(), "state")?,
                args::optional_out(geometry, "geometry")?,
            )
        };
        let (input, read) = input()?;
        let mut busy = state.enter()?;
        // SAFETY: the caller guarantees `out`; overlaps with the input are checked.
        let g = unsafe {
            run_one(
                &plan.plan,
                busy.state(),
                input,
                read.as_slice(),
                out,
                out_bytes,
            )
        }?;
        if let Some(out) = geometry {
            out.write(g);
        }
        Ok(())
    })
}

/// Preprocesses one encoded image (JPEG, PNG or WebP: the format is found
/// from the bytes; the name stays from when JPEG was the only one) into the
/// caller's tensor (the inference engine's input buffer): decode, every op of the plan, and the finish pass writing
/// `out` directly. `out_bytes` must be at least the output's size (see
/// `tp_plan_output_info`); only that many bytes are written, and `out` must
/// be aligned for the element type. `*geometry` (may be NULL) receives how
/// the image was scaled and moved, to map detections back.
///
/// On failure `geometry` is not written and the tensor's contents are
/// unspecified.
///
/// # Safety
///
/// `plan` and `state` must be live handles, `state` used by no other thread
/// meanwhile; `data` valid for reads of `len` bytes; `out` valid for writes
/// of `out_bytes` bytes; `geometry` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_run_jpeg(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    data: *const u8,
    len: usize,
    out: *mut c_void,
    out_bytes: usize,
    geometry: *mut tp_geometry,
) -> tp_result {
    // SAFETY: forwarded; the caller guarantees `data`.
    unsafe {
        single(
            plan,
            state,
            || encoded(data, len, "data"),
            out,
            out_bytes,
            geometry,
        )
    }
}

/// Preprocesses one frame of raw pixels (the format and size the plan was
/// compiled for; planes with their own strides for NV12/NV21/I420) into the
/// caller's tensor. Otherwise as `tp_plan_run_jpeg`.
///
/// # Safety
///
/// `plan` and `state` must be live handles, `state` used by no other thread
/// meanwhile; `image` must point to a `tp_image` whose used planes are valid
/// for reads of their `len`; `out` valid for writes of `out_bytes` bytes;
/// `geometry` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_run_pixels(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    image: *const tp_image,
    out: *mut c_void,
    out_bytes: usize,
    geometry: *mut tp_geometry,
) -> tp_result {
    let input = || {
        // SAFETY: the caller guarantees `image` and its planes.
        unsafe { pixels(args::required(image, "image")?) }
    };
    // SAFETY: forwarded.
    unsafe { single(plan, state, input, out, out_bytes, geometry) }
}

/// An encoded input and the span it reads.
///
/// # Safety
///
/// `data` valid for reads of `len` bytes for `'a`.
unsafe fn encoded<'a>(
    data: *const u8,
    len: usize,
    name: &'static str,
) -> Result<(Input<'a>, Spans)> {
    // SAFETY: forwarded.
    let bytes = unsafe { args::bytes(data, len, name) }?;
    Ok((Input::Encoded(bytes), Spans::one(Span::of(bytes, name))))
}

/// A pixel input and the spans of its planes.
///
/// # Safety
///
/// The image's used planes valid for reads of their `len` for `'a`.
unsafe fn pixels<'a>(image: &tp_image) -> Result<(Input<'a>, Spans)> {
    // SAFETY: forwarded.
    let (view, read) = unsafe { types::view(image, "image") }?;
    Ok((Input::Pixels(view), read))
}

/// The body of the batch runs: `n` items at `items`, each turned into an
/// input by `input`, into an N-image batch buffer (NCHW or NHWC: image `i`
/// at byte `i * bytes`, `bytes` from `tp_plan_output_info`). Allocates nothing.
///
/// # Safety
///
/// As the batch exports document.
#[allow(clippy::too_many_arguments)]
unsafe fn batch<'a, T>(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    items: *const T,
    n: usize,
    name: &'static str,
    input: impl Fn(&'a T) -> Result<(Input<'a>, Spans)>,
    out: *mut c_void,
    out_bytes: usize,
    geometries: *mut tp_geometry,
) -> tp_result
where
    T: 'a,
{
    boundary(|| {
        // SAFETY: the caller guarantees live handles, `n` items and `n` geometries.
        let (plan, state, items, geometries) = unsafe {
            (
                args::required(plan, "plan")?,
                args::required(state.cast_const(), "state")?,
                args::slice(items, n, name)?,
                args::optional_slice_mut(
                    geometries.cast::<MaybeUninit<tp_geometry>>(),
                    n,
                    "geometries",
                )?,
            )
        };
        let mut busy = state.enter()?;
        let (plan, state) = (&plan.plan, busy.state());
        let shape = plan.output_shape().ok_or_else(|| {
            Failure::invalid(
                "a batch needs a plan whose output size is fixed (ending in a crop or a canvas)",
            )
        })?;
        let per_image = shape.iter().product::<usize>() * plan.dtype().size();
        let needed = per_image
            .checked_mul(n)
            .ok_or_else(|| Failure::invalid("`n` images do not fit in memory"))?;
        if out_bytes < needed {
            return Err(Failure::new(
                tp_result::BufferTooSmall,
                format!("a batch of {n} needs {needed} bytes; `out_bytes` is {out_bytes}"),
            ));
        }
        let out_span = Span::raw(out.cast::<u8>(), needed, "out");
        let geometry_span = geometries
            .as_deref()
            .map(|g| Span::raw(g.as_ptr(), g.len(), "geometries"));
        args::no_overlap(&[out_span], geometry_span.as_slice())?;
        let mut geometries = geometries;
        for (i, item) in items.iter().enumerate() {
            let image = |f: Failure| Failure::new(f.code, format!("image {i}: {}", f.message));
            let (input, read) = input(item).map_err(image)?;
            args::no_overlap(&[out_span], read.as_slice())?;
            if let Some(g) = geometry_span {
                args::no_overlap(&[g], read.as_slice())?;
            }
            // SAFETY: image `i`'s slot lies inside the `needed` bytes checked above.
            let slot = unsafe { out.cast::<u8>().add(i * per_image) }.cast::<c_void>();
            // SAFETY: the slot is writable for `per_image` bytes and overlaps no input.
            let g = unsafe { run_one(plan, state, input, &[], slot, per_image) }.map_err(image)?;
            if let Some(gs) = geometries.as_deref_mut() {
                gs[i].write(g);
            }
        }
        Ok(())
    })
}

/// Preprocesses `n` encoded images (JPEG, PNG or WebP, mixed freely) into one batch tensor (image `i` at byte
/// `i * info.bytes`), in order, on this thread. The plan's output size must
/// be fixed. `geometries` (may be NULL) receives `n` geometries. Stops at the
/// first failure, whose message names the image; the tensor and
/// `geometries` are then unspecified.
///
/// # Safety
///
/// `plan` and `state` must be live handles, `state` used by no other thread
/// meanwhile; `inputs` must point to `n` `tp_bytes` each valid for reads;
/// `out` valid for writes of `out_bytes` bytes; `geometries` NULL or valid
/// for writes of `n` `tp_geometry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_run_batch_jpeg(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    inputs: *const tp_bytes,
    n: usize,
    out: *mut c_void,
    out_bytes: usize,
    geometries: *mut tp_geometry,
) -> tp_result {
    // SAFETY: the caller guarantees each input's bytes.
    let input = |b: &tp_bytes| unsafe { encoded(b.data, b.len, "inputs") };
    // SAFETY: forwarded.
    unsafe {
        batch(
            plan, state, inputs, n, "inputs", input, out, out_bytes, geometries,
        )
    }
}

/// Preprocesses `n` frames (each of the plan's format and size) into one
/// batch tensor. Otherwise as `tp_plan_run_batch_jpeg`.
///
/// # Safety
///
/// As for `tp_plan_run_batch_jpeg`, with `images` pointing to `n` `tp_image`
/// whose used planes are valid for reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_plan_run_batch_pixels(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    images: *const tp_image,
    n: usize,
    out: *mut c_void,
    out_bytes: usize,
    geometries: *mut tp_geometry,
) -> tp_result {
    // SAFETY: the caller guarantees each image's planes.
    let input = |image: &tp_image| unsafe { pixels(image) };
    // SAFETY: forwarded.
    unsafe {
        batch(
            plan, state, images, n, "images", input, out, out_bytes, geometries,
        )
    }
}
