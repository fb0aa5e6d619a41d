//! `Flip` and `Rotate`: the pixels moved by a mirror or a quarter turn (one
//! [`Transform`]). A pending colour conversion stays pending: flips and turns
//! commute with per-pixel conversion, except for 4:2:0 regions, which are
//! converted while moving.

use core::fmt;

use crate::geometry::{Flip, Rotation};

/// The ops' names in messages, and the features graph files using them list.
pub(super) const FLIP_NAMES: (&str, &str) = ("Flip", "op.flip");
pub(super) const ROTATE_NAMES: (&str, &str) = ("Rotate", "op.rotate");

/// Describes `Op::Flip`.
pub(super) fn describe_flip(f: &mut fmt::Formatter<'_>, axis: Flip) -> fmt::Result {
    write!(f, "Flip {axis:?}")
}

/// Describes `Op::Rotate`.
pub(super) fn describe_rotate(f: &mut fmt::Formatter<'_>, r: Rotation) -> fmt::Result {
    write!(f, "Rotate {r:?}")
}

pub(in crate::pipeline) use compiled::OrientWork;

mod compiled {
    use crate::arena::{Scratch, Storage};
    use crate::geometry::{Transform, transform};
    use crate::pipeline::Affine;
    use crate::pipeline::op::{Compiling, Step, Work};
    use crate::pipeline::resolve::{Read, Resolver, Shape};
    use crate::rows::RowReader;
    use crate::{ImageView, ImageViewMut, Result};

    /// The pass: the stored pixels moved, or (4:2:0 regions) converted while moving.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(in crate::pipeline) enum OrientWork {
        Move(Transform),
        ConvertMove(Transform),
    }

    /// Records a flip or turn.
    pub(in crate::pipeline) fn compile(t: Transform, cx: &mut Compiling<'_>) -> Result<()> {
        cx.push(Step::Orient(t))
    }

    /// One pass into a buffer of the moved size.
    pub(in crate::pipeline) fn resolve<S: Storage>(
        t: Transform,
        r: &mut Resolver<'_, S>,
    ) -> Result<()> {
        let (w, h) = r.size();
        r.map = r.map.then(&map(t, w, h));
        let (tw, th) = t.output_size(w, h);
        if r.stored.chroma_subsampling() != (1, 1) && r.read.format != r.stored {
            // Subsampled regions may start between chroma samples, and YUV 4:2:2
            // cannot be turned in place: convert while moving.
            let out = Shape {
                format: r.read.format,
                width: tw,
                height: th,
            };
            r.read = r.emit(Work::Orient(OrientWork::ConvertMove(t)), out, r.read)?;
            r.stored = r.read.format;
            return Ok(());
        }
        // Move the stored pixels, convert when they are next read.
        let out = Shape {
            format: r.stored,
            width: tw,
            height: th,
        };
        let pending = (r.read.format, r.read.range);
        let stored = Read {
            format: r.stored,
            ..r.read
        };
        let mut next = r.emit(Work::Orient(OrientWork::Move(t)), out, stored)?;
        (next.format, next.range) = pending;
        r.read = next;
        Ok(())
    }

    impl OrientWork {
        pub(in crate::pipeline) fn run(
            &self,
            src: &ImageView<'_>,
            read: Read,
            dst: &mut ImageViewMut<'_>,
            line: &mut impl Scratch,
        ) -> Result<()> {
            match *self {
                OrientWork::Move(t) => transform(&src.crop(read.region)?, dst, t),
                OrientWork::ConvertMove(t) => {
                    let reader = RowReader::new(src, read.region, read.format, read.range)?;
                    line.reserve(reader.rows_scratch(1, false))?;
                    transform_rows(&reader, line, t, dst);
                    Ok(())
                }
            }
        }
    }

    /// [`transform`] reading through `reader` (one converted row at a time) and
    /// scattering each row's pixels to their places in `dst`.
    fn transform_rows(
        reader: &RowReader<'_>,
        line: &mut impl Scratch,
        t: Transform,
        dst: &mut ImageViewMut<'_>,
    ) {
        let bpp = reader.bpp();
        let (w, h) = reader.size();
        let (w, h) = (w as usize, h as usize);
        for sy in 0..h {
            let row = reader.rows(sy, 1, false, line).row(0);
            for (sx, px) in row.chunks_exact(bpp).enumerate() {
                let (fx, fy) = (
                    if t.flip_x { w - 1 - sx } else { sx },
                    if t.flip_y { h - 1 - sy } else { sy },
                );
                // `transform` writes dst(x, y) = src(x', y'), transposed or not.
                let (dx, dy) = if t.transpose { (fy, fx) } else { (fx, fy) };
                dst.plane_row_mut(0, dy)[dx * bpp..dx * bpp + bpp].copy_from_slice(px);
            }
        }
    }

    /// A flip or quarter turn of a `w` x `h` image as a map of continuous coordinates.
    fn map(t: Transform, w: u32, h: u32) -> Affine {
        let (w, h) = (f64::from(w), f64::from(h));
        // Output x comes from input x (or y when transposed), mirrored when flipped.
        let (fx, tx) = if t.flip_x { (-1.0, w) } else { (1.0, 0.0) };
        let (fy, ty) = if t.flip_y { (-1.0, h) } else { (1.0, 0.0) };
        if t.transpose {
            // dst(x, y) = src(y', x') with x' from flip_x, y' from flip_y.
            Affine {
                m: [0.0, fy, ty, fx, 0.0, tx],
            }
        } else {
            Affine {
                m: [fx, 0.0, tx, 0.0, fy, ty],
            }
        }
    }
}

pub(in crate::pipeline) use compiled::{compile, resolve};

/// The ops in graph files (messages `Flip` and `Rotate`).
#[cfg(feature = "graph")]
pub(crate) mod message {
    use crate::geometry::{Flip, Rotation};
    use crate::graph::GraphError;
    use crate::graph::convert::{At, from_pb, to_pb};
    use crate::graph::proto as pb;

    pub(crate) const FLIPS: [(Flip, pb::FlipAxis); 3] = [
        (Flip::Horizontal, pb::FlipAxis::Horizontal),
        (Flip::Vertical, pb::FlipAxis::Vertical),
        (Flip::Both, pb::FlipAxis::Both),
    ];
    pub(crate) const ROTATIONS: [(Rotation, pb::Rotation); 3] = [
        (Rotation::Cw90, pb::Rotation::Cw90),
        (Rotation::Cw180, pb::Rotation::Cw180),
        (Rotation::Cw270, pb::Rotation::Cw270),
    ];

    pub(crate) fn flip_to_message(axis: Flip) -> pb::Flip {
        pb::Flip {
            axis: to_pb(&FLIPS, axis) as i32,
        }
    }

    pub(crate) fn flip_from_message(f: &pb::Flip, at: At) -> Result<Flip, GraphError> {
        from_pb(&FLIPS, f.axis, "axis", at)
    }

    pub(crate) fn rotate_to_message(r: Rotation) -> pb::Rotate {
        pb::Rotate {
            rotation: to_pb(&ROTATIONS, r) as i32,
        }
    }

    pub(crate) fn rotate_from_message(r: &pb::Rotate, at: At) -> Result<Rotation, GraphError> {
        from_pb(&ROTATIONS, r.rotation, "rotation", at)
    }
}
