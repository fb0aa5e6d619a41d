//! A Cortex-M4F firmware turning a QVGA RGB565 camera frame (in flash) into
//! the example's two 96x96 int8 model inputs (see the `person` crate), then
//! printing over semihosting:
//!
//! ```text
//! checksum <16 hex digits>   the tensors' FNV-1a, equal to the host's
//! memory <bytes>             heap peak (alloc) or arena bytes taken (no-alloc)
//! needed <bytes>             what the plans reported they need (no-alloc)
//! reserved <bytes>           the static memory set aside: heap or arena
//! stack <bytes>              the stack's high-water mark, found by painting it
//! ```
//!
//! Built twice: with the `alloc` feature (embedded-alloc's heap as the global
//! allocator, tensorprep's heap plans) and without it (no allocator linked at
//! all: tensorprep without `alloc`, arena plans in a static buffer).
#![no_std]
#![no_main]

#[cfg(feature = "alloc")]
extern crate alloc;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use tensorprep::{Error, ImageView, TensorMut};

/// What a run measured.
struct Report {
    checksum: u64,
    /// Heap peak (alloc) or arena bytes taken (no-alloc).
    memory: usize,
    /// Arena bytes the plans reported needing (no-alloc; 0 with alloc).
    needed: usize,
    /// The static memory set aside for the plans: the heap or the arena.
    reserved: usize,
}

#[entry]
fn main() -> ! {
    stack::paint();
    let result = run();
    let stack = stack::high_water();
    match result {
        Ok(r) => {
            hprintln!("checksum {:016x}", r.checksum);
            hprintln!("memory {}", r.memory);
            hprintln!("needed {}", r.needed);
            hprintln!("reserved {}", r.reserved);
            hprintln!("stack {}", stack);
            debug::exit(debug::EXIT_SUCCESS);
        }
        Err(e) => {
            hprintln!("error {}", e);
            debug::exit(debug::EXIT_FAILURE);
        }
    }
    loop {
        cortex_m::asm::wfi();
    }
}

/// The two output tensors, in RAM (`.bss`).
fn tensors() -> (&'static mut [i8], &'static mut [i8]) {
    let rgb = cortex_m::singleton!(: [i8; person::OUTPUT_LEN[0]] = [0; person::OUTPUT_LEN[0]]);
    let gray = cortex_m::singleton!(: [i8; person::OUTPUT_LEN[1]] = [0; person::OUTPUT_LEN[1]]);
    // `run` is called once: each singleton is still free.
    match (rgb, gray) {
        (Some(r), Some(g)) => (r, g),
        _ => panic!("tensors taken twice"),
    }
}

fn frame() -> Result<ImageView<'static>, Error> {
    ImageView::new(
        person::FORMAT,
        person::WIDTH,
        person::HEIGHT,
        &person::FRAME,
    )
}

/// Heap plans, with embedded-alloc's heap behind a peak counter.
#[cfg(feature = "alloc")]
fn run() -> Result<Report, Error> {
    use tensorprep::pipeline::{Input, PlanState};
    heap::init();
    let (rgb, gray) = tensors();
    let frame = frame()?;
    let mut state = PlanState::new();
    for (pipeline, tensor) in person::pipelines()?.iter().zip([&mut *rgb, &mut *gray]) {
        let plan = pipeline.compile(person::INPUT)?;
        plan.run(&mut state, Input::Pixels(frame), TensorMut::I8(tensor))?;
    }
    Ok(Report {
        checksum: person::checksum([rgb, gray]),
        memory: heap::peak(),
        needed: 0,
        reserved: heap::SIZE,
    })
}

/// Arena plans in a static buffer: no allocator in the program.
#[cfg(not(feature = "alloc"))]
fn run() -> Result<Report, Error> {
    use tensorprep::arena::Arena;
    use tensorprep::pipeline::ArenaPlan;
    /// Caller memory for both plans (what they need is printed).
    const ARENA: usize = 96 * 1024;
    let memory: &mut [u8] = match cortex_m::singleton!(: [u8; ARENA] = [0; ARENA]) {
        Some(m) => m,
        None => &mut [], // `run` is called once: never taken before
    };
    let mut arena = Arena::new(memory);
    let (rgb, gray) = tensors();
    let frame = frame()?;
    let mut needed = 0;
    for (pipeline, tensor) in person::pipelines()?.iter().zip([&mut *rgb, &mut *gray]) {
        needed += ArenaPlan::bytes_needed(pipeline, person::INPUT)?;
        let (plan, mut state) = ArenaPlan::new_in(&mut arena, pipeline, person::INPUT)?;
        plan.run(&mut state, frame, TensorMut::I8(tensor))?;
    }
    Ok(Report {
        checksum: person::checksum([rgb, gray]),
        memory: arena.used(),
        needed,
        reserved: ARENA,
    })
}

/// The global allocator of the alloc variant: embedded-alloc's linked-list
/// heap, counting the bytes in use and their peak.
#[cfg(feature = "alloc")]
mod heap {
    use core::alloc::{GlobalAlloc, Layout};
    use core::sync::atomic::{AtomicUsize, Ordering};

    use embedded_alloc::LlffHeap;

    /// Heap bytes.
    pub(crate) const SIZE: usize = 128 * 1024;

    struct Counting {
        heap: LlffHeap,
        used: AtomicUsize,
        peak: AtomicUsize,
    }

    #[global_allocator]
    static HEAP: Counting = Counting {
        heap: LlffHeap::empty(),
        used: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
    };

    // SAFETY: every call is forwarded to embedded-alloc's heap unchanged;
    // the counters only observe sizes.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded from the caller.
            let p = unsafe { self.heap.alloc(layout) };
            if !p.is_null() {
                let now = self.used.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
                self.peak.fetch_max(now, Ordering::Relaxed);
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            self.used.fetch_sub(layout.size(), Ordering::Relaxed);
            // SAFETY: forwarded from the caller.
            unsafe { self.heap.dealloc(ptr, layout) }
        }
    }

    /// Gives the heap its memory (once, before the first allocation).
    pub(crate) fn init() {
        static mut MEMORY: [core::mem::MaybeUninit<u8>; SIZE] =
            [core::mem::MaybeUninit::uninit(); SIZE];
        // SAFETY: called once, first thing in `run`; `MEMORY` is used by
        // nothing else.
        unsafe { HEAP.heap.init(&raw mut MEMORY as usize, SIZE) }
    }

    /// The most heap bytes in use at once.
    pub(crate) fn peak() -> usize {
        HEAP.peak.load(Ordering::Relaxed)
    }
}

/// The stack's high-water mark: the free stack is painted with a pattern
/// first, and the deepest word overwritten is found afterwards.
mod stack {
    const PAINT: u32 = 0xC0DE_CAFE;

    unsafe extern "C" {
        /// Lowest stack address (end of `.bss`/`.uninit`), from cortex-m-rt's link.x.
        static _stack_end: u32;
        /// Highest stack address (the initial stack pointer).
        static _stack_start: u32;
    }

    fn bounds() -> (usize, usize) {
        // Only the symbols' addresses are taken.
        (
            &raw const _stack_end as usize,
            &raw const _stack_start as usize,
        )
    }

    /// Paints from the stack's lowest address up to just below the current frame.
    #[inline(never)]
    pub(crate) fn paint() {
        let (low, _) = bounds();
        let sp = cortex_m::register::msp::read() as usize;
        let mut a = low;
        while a + 256 < sp {
            // SAFETY: `[low, sp - 256)` is free stack (below every live
            // frame): nothing reads it until it is used as stack.
            unsafe { core::ptr::write_volatile(a as *mut u32, PAINT) };
            a += 4;
        }
    }

    /// Bytes of stack used at the deepest point since [`paint`].
    pub(crate) fn high_water() -> usize {
        let (low, high) = bounds();
        let mut a = low;
        // SAFETY: reads words of the stack region, which is RAM.
        while a < high && unsafe { core::ptr::read_volatile(a as *const u32) } == PAINT {
            a += 4;
        }
        high - a
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hprintln!("panic {}", info);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
