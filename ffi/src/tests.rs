//! The C API called from Rust: no allocation per image in steady state, and
//! one plan shared by threads.

use std::ffi::c_void;
use std::ptr;

use tensorprep_tests::{CountingAllocator, allocations};

use crate::*;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const W: u32 = 160;
const H: u32 = 120;

/// A synthetic NV21 frame: a gradient in Y, a slow pattern in V,U.
fn nv21() -> Vec<u8> {
    let (w, h) = (W as usize, H as usize);
    let mut f = vec![0u8; w * h + w * h / 2];
    for (i, v) in f.iter_mut().enumerate() {
        *v = (i * 7 % 251) as u8;
    }
    f
}

fn frame(bytes: &[u8]) -> tp_image {
    let luma = (W * H) as usize;
    let plane = |data: &[u8]| tp_plane {
        data: data.as_ptr(),
        len: data.len(),
        stride: 0,
    };
    tp_image {
        format: tp_pixel_format::Nv21 as u32,
        width: W,
        height: H,
        planes: [plane(&bytes[..luma]), plane(&bytes[luma..]), plane(&[])],
    }
}

/// The imagenet-eval graph compiled for NV21 frames.
fn frame_plan() -> *mut tp_plan {
    let mut graph = ptr::null_mut();
    let mut plan = ptr::null_mut();
    let input = tp_input_desc {
        kind: tp_input_kind::Pixels as u32,
        format: tp_pixel_format::Nv21 as u32,
        width: W,
        height: H,
    };
    // SAFETY: valid strings, structs and out-pointers.
    unsafe {
        assert_eq!(
            tp_graph_from_preset(c"imagenet-eval".as_ptr(), &mut graph),
            tp_result::Ok
        );
        assert_eq!(
            tp_plan_new(graph, &input, ptr::null(), &mut plan),
            tp_result::Ok
        );
        tp_graph_free(graph);
    }
    plan
}

fn new_state() -> *mut tp_run_state {
    let mut state = ptr::null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { tp_run_state_new(&mut state) }, tp_result::Ok);
    state
}

/// Runs the frame into `out`.
///
/// # Safety
///
/// `plan` and `state` must be live handles.
unsafe fn run(plan: *const tp_plan, state: *mut tp_run_state, img: &tp_image, out: &mut [f32]) {
    // SAFETY: forwarded from the caller.
    assert_eq!(unsafe { try_run(plan, state, img, out) }, tp_result::Ok);
}

#[test]
fn running_frames_allocates_nothing_after_the_first() {
    let bytes = nv21();
    let img = frame(&bytes);
    let plan = frame_plan();
    let state = new_state();
    let mut out = vec![0f32; 3 * 224 * 224];
    // SAFETY: live handles throughout; freed at the end.
    unsafe {
        run(plan, state, &img, &mut out);
        let first = out.clone();
        assert_eq!(allocations(|| run(plan, state, &img, &mut out)), 0);
        assert_eq!(out, first);

        let mut batch = vec![0f32; 2 * out.len()];
        let images = [img, img];
        let mut geometries = [tp_geometry::default(); 2];
        let mut run_batch = || {
            let r = tp_plan_run_batch_pixels(
                plan,
                state,
                images.as_ptr(),
                2,
                batch.as_mut_ptr().cast(),
                size_of_val(batch.as_slice()),
                geometries.as_mut_ptr(),
            );
            assert_eq!(r, tp_result::Ok);
        };
        run_batch();
        assert_eq!(allocations(run_batch), 0);
        assert_eq!(&batch[..first.len()], first.as_slice());
        assert_eq!(&batch[first.len()..], first.as_slice());
        assert_eq!(geometries[1].input_width, W);

        // Failures allocate only their message.
        let mut short = [0f32; 4];
        let failing = allocations(|| {
            let r = tp_plan_run_pixels(
                plan,
                state,
                &img,
                short.as_mut_ptr().cast(),
                size_of_val(&short),
                ptr::null_mut(),
            );
            assert_eq!(r, tp_result::BufferTooSmall);
        });
        assert!(failing <= 2, "{failing} allocations");
        tp_run_state_free(state);
        tp_plan_free(plan);
    }
}

#[test]
fn one_plan_serves_several_threads() {
    let bytes = nv21();
    let plan = frame_plan();
    let expected = {
        let state = new_state();
        let mut out = vec![0f32; 3 * 224 * 224];
        // SAFETY: live handles.
        unsafe {
            run(plan, state, &frame(&bytes), &mut out);
            tp_run_state_free(state);
        }
        out
    };
    // A plan is immutable and shared; each thread has its own state.
    let shared = plan as usize;
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (bytes, expected) = (&bytes, &expected);
            s.spawn(move || {
                let state = new_state();
                let mut out = vec![0f32; expected.len()];
                for _ in 0..5 {
                    // SAFETY: the plan outlives the scope; the state is this thread's.
                    unsafe { run(shared as *const tp_plan, state, &frame(bytes), &mut out) };
                    assert_eq!(&out, expected);
                }
                // SAFETY: this thread's state, freed once.
                unsafe { tp_run_state_free(state) };
            });
        }
    });
    // SAFETY: no thread uses the plan any more.
    unsafe { tp_plan_free(plan) };
}

#[test]
fn the_header_version_macros_are_the_crate_version() {
    let v = |s: &str| s.parse::<u32>().unwrap();
    assert_eq!(crate::TP_VERSION_MAJOR, v(env!("CARGO_PKG_VERSION_MAJOR")));
    assert_eq!(crate::TP_VERSION_MINOR, v(env!("CARGO_PKG_VERSION_MINOR")));
    assert_eq!(crate::TP_VERSION_PATCH, v(env!("CARGO_PKG_VERSION_PATCH")));
}

/// The imagenet-eval graph compiled with `tp_plan_new_ex`.
fn plan_ex(input: tp_input_desc, options: tp_plan_options_ex) -> *mut tp_plan {
    let mut graph = ptr::null_mut();
    let mut plan = ptr::null_mut();
    // SAFETY: valid strings, structs and out-pointers.
    unsafe {
        assert_eq!(
            tp_graph_from_preset(c"imagenet-eval".as_ptr(), &mut graph),
            tp_result::Ok
        );
        assert_eq!(
            tp_plan_new_ex(graph, &input, &options, &mut plan),
            tp_result::Ok
        );
        tp_graph_free(graph);
    }
    plan
}

#[test]
fn plan_options_ex_choose_the_yuv_range_and_the_exif_handling() {
    let frame_in = tp_input_desc {
        kind: tp_input_kind::Pixels as u32,
        format: tp_pixel_format::Nv21 as u32,
        width: W,
        height: H,
    };
    let options = |yuv_range, flags| tp_plan_options_ex {
        struct_size: size_of::<tp_plan_options_ex>(),
        yuv_range,
        flags,
        ..tp_plan_options_ex::default()
    };
    let bytes = nv21();
    let img = frame(&bytes);
    let state = new_state();
    let tensor = |plan: *mut tp_plan| {
        let mut out = vec![0f32; 3 * 224 * 224];
        // SAFETY: live handles; the plan is freed once.
        unsafe {
            run(plan, state, &img, &mut out);
            tp_plan_free(plan);
        }
        out
    };
    let default = tensor(frame_plan());
    let full = tensor(plan_ex(frame_in, options(tp_yuv_range::Full as u32, 0)));
    let limited = tensor(plan_ex(frame_in, options(tp_yuv_range::Limited as u32, 0)));
    assert!(default == full, "the graph's range is full");
    assert!(full != limited, "the limited range changes the pixels");

    // EXIF orientation 6: applied, the upright photo; ignored, the stored one.
    let jpeg = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/exif_orient6_grace_hopper.jpg"
    ))
    .unwrap();
    let jpeg_in = tp_input_desc {
        kind: tp_input_kind::Jpeg as u32,
        format: 0,
        width: 0,
        height: 0,
    };
    let encoded = |flags| {
        let plan = plan_ex(jpeg_in, options(0, flags));
        let mut out = vec![0f32; 3 * 224 * 224];
        let mut g = tp_geometry::default();
        // SAFETY: live handles and valid buffers; the plan is freed once.
        unsafe {
            assert_eq!(
                tp_plan_run_jpeg(
                    plan,
                    state,
                    jpeg.as_ptr(),
                    jpeg.len(),
                    out.as_mut_ptr().cast::<c_void>(),
                    out.len() * 4,
                    &mut g,
                ),
                tp_result::Ok
            );
            tp_plan_free(plan);
        }
        (g.input_width, g.input_height)
    };
    assert_eq!(encoded(TP_PLAN_APPLY_EXIF_ORIENTATION), (512, 600));
    assert_eq!(encoded(TP_PLAN_IGNORE_EXIF_ORIENTATION), (600, 512));
    // SAFETY: a live state, freed once.
    unsafe { tp_run_state_free(state) };
}

/// Runs the frame into `out`, returning the result code.
///
/// # Safety
///
/// `plan` and `state` must be live handles.
unsafe fn try_run(
    plan: *const tp_plan,
    state: *mut tp_run_state,
    img: &tp_image,
    out: &mut [f32],
) -> tp_result {
    let mut g = tp_geometry::default();
    // SAFETY: the caller's handles; `out` is a live buffer of its length.
    unsafe {
        tp_plan_run_pixels(
            plan,
            state,
            img,
            out.as_mut_ptr().cast::<c_void>(),
            size_of_val(out),
            &mut g,
        )
    }
}

#[test]
fn a_run_state_used_by_two_calls_at_once_refuses_the_second() {
    let bytes = nv21();
    let img = frame(&bytes);
    let plan = frame_plan();
    let state = new_state();
    let mut want = vec![0f32; 3 * 224 * 224];
    // SAFETY: live handles; `busy` is set and cleared here as a call in
    // progress on another thread would.
    unsafe {
        run(plan, state, &img, &mut want);
        (*state)
            .busy
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut out = vec![0f32; want.len()];
        assert_eq!(try_run(plan, state, &img, &mut out), tp_result::StateBusy);
        (*state)
            .busy
            .store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(try_run(plan, state, &img, &mut out), tp_result::Ok);
        assert_eq!(out, want);
    }
    // Two threads sharing one state (the misuse itself): every call either
    // runs alone and is right, or is refused; none races.
    let (plan_addr, state_addr) = (plan as usize, state as usize);
    let refused = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (bytes, want, refused) = (&bytes, &want, &refused);
            s.spawn(move || {
                let img = &frame(bytes);
                let mut out = vec![0f32; want.len()];
                for _ in 0..200 {
                    // SAFETY: the handles outlive the scope.
                    let r = unsafe {
                        try_run(
                            plan_addr as *const tp_plan,
                            state_addr as *mut tp_run_state,
                            img,
                            &mut out,
                        )
                    };
                    match r {
                        tp_result::Ok => assert!(out == *want),
                        tp_result::StateBusy => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        other => panic!("{other:?}"),
                    }
                }
            });
        }
    });
    // SAFETY: live handles, freed once.
    unsafe {
        tp_run_state_free(state);
        tp_plan_free(plan);
    }
}

/// The camera formats of boards and webcams go through the C API as NV21
/// does: one plane, and the same tensor as the Rust plan gives.
#[test]
fn board_and_webcam_formats_run_through_the_c_api() {
    use tensorprep::PixelFormat;
    use tensorprep::pipeline::{Input, InputDesc, Pipeline, PlanState};
    let bytes: Vec<u8> = (0..W as usize * H as usize * 2)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let state = new_state();
    for (c, format) in [
        (tp_pixel_format::Yuyv, PixelFormat::Yuyv),
        (tp_pixel_format::Uyvy, PixelFormat::Uyvy),
        (tp_pixel_format::Rgb565Le, PixelFormat::Rgb565Le),
        (tp_pixel_format::Rgb565Be, PixelFormat::Rgb565Be),
    ] {
        let input = tp_input_desc {
            kind: tp_input_kind::Pixels as u32,
            format: c as u32,
            width: W,
            height: H,
        };
        let plan = plan_ex(
            input,
            tp_plan_options_ex {
                struct_size: size_of::<tp_plan_options_ex>(),
                ..tp_plan_options_ex::default()
            },
        );
        let img = tp_image {
            format: c as u32,
            width: W,
            height: H,
            planes: [
                tp_plane {
                    data: bytes.as_ptr(),
                    len: bytes.len(),
                    stride: 0,
                },
                tp_plane {
                    data: ptr::null(),
                    len: 0,
                    stride: 0,
                },
                tp_plane {
                    data: ptr::null(),
                    len: 0,
                    stride: 0,
                },
            ],
        };
        let mut got = vec![0f32; 3 * 224 * 224];
        // SAFETY: live handles, freed once; `img` points into `bytes`.
        unsafe {
            run(plan, state, &img, &mut got);
            let short = tp_image {
                planes: [
                    tp_plane {
                        len: bytes.len() - 1,
                        ..img.planes[0]
                    },
                    img.planes[1],
                    img.planes[2],
                ],
                ..img
            };
            assert_eq!(
                try_run(plan, state, &short, &mut got.clone()),
                tp_result::BufferTooSmall,
                "{format:?}: a short plane is an error"
            );
            tp_plan_free(plan);
        }
        let rust = tensorprep::graph::Graph::new(Pipeline::imagenet_eval())
            .unwrap()
            .compile(InputDesc::pixels(format, W, H))
            .unwrap();
        let src = tensorprep::ImageView::new(format, W, H, &bytes).unwrap();
        let mut want = vec![0f32; 3 * 224 * 224];
        rust.run(
            &mut PlanState::new(),
            Input::Pixels(src),
            tensorprep::TensorMut::F32(&mut want),
        )
        .unwrap();
        assert!(got == want, "{format:?}");
    }
    // SAFETY: a live state, freed once.
    unsafe { tp_run_state_free(state) };
}

/// The last error message, as a C caller reads it.
fn last_message() -> String {
    let mut buf = [0u8; 512];
    let mut len = 0usize;
    // SAFETY: `buf` and `len` are live and writable.
    let r = unsafe { tp_last_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut len) };
    assert_eq!(r, tp_result::Ok);
    String::from_utf8_lossy(&buf[..len.min(buf.len() - 1)]).into_owned()
}

/// A part of the library its build leaves out is `TP_RESULT_NOT_BUILT` with
/// a message naming the Cargo feature: `tp_resize_f32` (whose feature is the
/// C library's own) and a core error (a resampler, a format) alike.
#[test]
fn a_feature_left_out_of_the_build_is_not_built() {
    let failure = crate::result::Failure::from(tensorprep::Error::NotBuilt {
        what: "libyuv's bilinear resize",
        feature: "resize-libyuv",
    });
    assert_eq!(failure.code, tp_result::NotBuilt);
    assert!(
        failure.message.contains("`resize-libyuv`"),
        "{}",
        failure.message
    );

    let src_px = [0.5f32; 4 * 4];
    let mut dst_px = [0f32; 2 * 2];
    let src = tp_float_image {
        data: src_px.as_ptr(),
        len: src_px.len(),
        width: 4,
        height: 4,
        channels: 1,
        stride: 0,
    };
    let dst = tp_float_image_mut {
        data: dst_px.as_mut_ptr(),
        len: dst_px.len(),
        width: 2,
        height: 2,
        channels: 1,
        stride: 0,
    };
    // SAFETY: both images point into live arrays of their `len`.
    let r = unsafe { tp_resize_f32(&src, &dst, tp_resample::PillowBilinear as u32) };
    if cfg!(feature = "resize-float") {
        assert_eq!(r, tp_result::Ok);
        assert_eq!(dst_px, [0.5; 4]);
    } else {
        assert_eq!(r, tp_result::NotBuilt);
        let message = last_message();
        assert!(message.contains("`resize-float`"), "{message}");
    }
}
