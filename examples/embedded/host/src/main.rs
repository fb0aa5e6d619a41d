//! The firmware's frame and pipelines run on the build machine with the
//! standard library's heap plans: the checksum the firmware must print.

use tensorprep::pipeline::{Input, PlanState};
use tensorprep::{ImageView, TensorMut};

fn main() -> Result<(), tensorprep::Error> {
    let frame = ImageView::new(
        person::FORMAT,
        person::WIDTH,
        person::HEIGHT,
        &person::FRAME,
    )?;
    let mut tensors = [
        vec![0i8; person::OUTPUT_LEN[0]],
        vec![0i8; person::OUTPUT_LEN[1]],
    ];
    let mut state = PlanState::new();
    for (pipeline, tensor) in person::pipelines()?.iter().zip(&mut tensors) {
        let plan = pipeline.compile(person::INPUT)?;
        plan.run(&mut state, Input::Pixels(frame), TensorMut::I8(tensor))?;
    }
    println!(
        "checksum {:016x}",
        person::checksum([&tensors[0], &tensors[1]])
    );
    Ok(())
}
