//! The C API's plan calls on arbitrary bytes, as a C program would make
//! them: the first byte picks what the rest is. 0: a graph file
//! (`tp_graph_from_bytes`), compiled for encoded images and run on the
//! bundled sample; 1: an image run through the imagenet-eval plan
//! (`tp_plan_output_info_for_jpeg`, `tp_plan_run_jpeg`); 2: a Hugging Face
//! configuration (`tp_graph_from_hugging_face`) compiled and run. Every call
//! must return a code (never panic: that is `TP_RESULT_PANIC`), and a
//! failing one must leave a message.
#![no_main]

use std::ptr;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tensorprep_capi::*;

const SAMPLE: &[u8] = include_bytes!("../../tests/fixtures/sample.jpg");

fn check(r: tp_result) -> bool {
    assert_ne!(r, tp_result::Panic, "a panic crossed into the C API");
    if r != tp_result::Ok {
        let (mut buf, mut len) = ([0 as std::ffi::c_char; 256], 0usize);
        // SAFETY: `buf` is writable for its length.
        let m = unsafe { tp_last_error_message(buf.as_mut_ptr(), buf.len(), &mut len) };
        assert!(
            m == tp_result::Ok && len > 0,
            "{r:?} without a message ({m:?})"
        );
    }
    r == tp_result::Ok
}

/// Compiles `graph` for encoded images and runs it on `image`.
fn run(graph: *const tp_graph, image: &[u8]) {
    let input = tp_input_desc {
        kind: tp_input_kind::Jpeg as u32,
        format: 0,
        width: 0,
        height: 0,
    };
    let mut plan = ptr::null_mut();
    // SAFETY: valid handles and pointers throughout; each is freed once.
    unsafe {
        if !check(tp_plan_new(graph, &input, ptr::null(), &mut plan)) {
            return;
        }
        let mut state = ptr::null_mut();
        assert!(check(tp_run_state_new(&mut state)));
        let mut info = std::mem::zeroed::<tp_tensor_info>();
        if check(tp_plan_output_info_for_jpeg(
            plan,
            state,
            image.as_ptr(),
            image.len(),
            &mut info,
        )) && info.bytes <= 64 << 20
        {
            let mut out = vec![0u64; info.bytes.div_ceil(8)];
            let mut geometry = std::mem::zeroed::<tp_geometry>();
            check(tp_plan_run_jpeg(
                plan,
                state,
                image.as_ptr(),
                image.len(),
                out.as_mut_ptr().cast(),
                info.bytes,
                &mut geometry,
            ));
        }
        tp_run_state_free(state);
        tp_plan_free(plan);
    }
}

fuzz_target!(|data: &[u8]| {
    static EVAL: OnceLock<usize> = OnceLock::new();
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let mut graph = ptr::null_mut();
    // SAFETY: `rest` is valid for its length; handles are freed once.
    unsafe {
        match which % 3 {
            0 => {
                if check(tp_graph_from_bytes(rest.as_ptr(), rest.len(), &mut graph)) {
                    run(graph, SAMPLE);
                    tp_graph_free(graph);
                }
            }
            1 => {
                let eval = *EVAL.get_or_init(|| {
                    let mut g = ptr::null_mut();
                    assert!(check(tp_graph_from_preset(
                        c"imagenet-eval".as_ptr(),
                        &mut g
                    )));
                    g as usize
                });
                run(eval as *const tp_graph, rest);
            }
            _ => {
                if check(tp_graph_from_hugging_face(
                    rest.as_ptr(),
                    rest.len(),
                    &mut graph,
                )) {
                    run(graph, SAMPLE);
                    tp_graph_free(graph);
                }
            }
        }
    }
});
