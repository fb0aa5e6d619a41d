//! Mapping coordinates from the model's output back to the input image.

use crate::args;
use crate::boundary::boundary;
use crate::result::tp_result;
use crate::types::tp_geometry;

/// Maps a point from output (model) coordinates back to the input image.
///
/// # Safety
///
/// `geometry` must point to a `tp_geometry` a run wrote; `x_out` and `y_out`
/// must be valid for writes. They are written only on success.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_geometry_to_source_point(
    geometry: *const tp_geometry,
    x: f64,
    y: f64,
    x_out: *mut f64,
    y_out: *mut f64,
) -> tp_result {
    boundary(|| {
        // SAFETY: the caller guarantees the pointers.
        let (g, x_out, y_out) = unsafe {
            (
                args::required(geometry, "geometry")?,
                args::out(x_out, "x_out")?,
                args::out(y_out, "y_out")?,
            )
        };
        let (sx, sy) = g.to_core()?.to_source((x, y));
        x_out.write(sx);
        y_out.write(sy);
        Ok(())
    })
}

/// Maps `n` boxes `{x0, y0, x1, y1}` (4 floats each, a detector's output
/// layout) in place from output coordinates back to the input image,
/// clamped to it: undoes letterbox padding, resizes, crops, flips and
/// quarter turns. Non-finite coordinates are refused before any box is
/// changed.
///
/// # Safety
///
/// `geometry` must point to a `tp_geometry`; `boxes` must be valid for
/// reads and writes of `4 * n` floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_geometry_to_source_boxes(
    geometry: *const tp_geometry,
    boxes: *mut f32,
    n: usize,
) -> tp_result {
    boundary(|| {
        let len = n
            .checked_mul(4)
            .ok_or_else(|| crate::result::Failure::invalid("`n` is too large"))?;
        // SAFETY: the caller guarantees the pointers.
        let (g, boxes) = unsafe {
            (
                args::required(geometry, "geometry")?,
                args::slice_mut(boxes, len, "boxes")?,
            )
        };
        let g = g.to_core()?;
        if let Some(i) = boxes.iter().position(|v| !v.is_finite()) {
            return Err(crate::result::Failure::invalid(format!(
                "box {} has a non-finite coordinate",
                i / 4
            )));
        }
        for b in boxes.chunks_exact_mut(4) {
            let mapped = g.to_source_box([b[0], b[1], b[2], b[3]].map(f64::from));
            for (v, m) in b.iter_mut().zip(mapped) {
                *v = m as f32;
            }
        }
        Ok(())
    })
}
