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
    let mut g = tp_geometry::default();
    // SAFETY: the caller's handles; `out` is a live buffer of its length.
    let r = unsafe {
        tp_plan_run_pixels(
            plan,
            state,
            img,
            out.as_mut_ptr().cast::<c_void>(),
            size_of_val(out),
            &mut g,
        )
    };
    assert_eq!(r, tp_result::Ok);
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
