//! The panic boundary every export runs inside, and the per-thread message of
//! the last failed call.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::string::String;

use crate::args;
use crate::result::{Failure, Result, tp_result};

thread_local! {
    /// The message of the last call on this thread that failed.
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(message: String) {
    // `try_with`: a call made while the thread is being torn down has no
    // message to keep; it still returns its code.
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = message);
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Runs an export's body: a failure becomes its code with the message kept
/// for [`tp_last_error_message`]; a panic becomes [`tp_result::Panic`].
pub(crate) fn boundary(body: impl FnOnce() -> Result<()>) -> tp_result {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return tp_result::Ok,
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::new(
            tp_result::Panic,
            format!(
                "internal error (a bug in tensorprep, please report it): {}",
                panic_message(payload.as_ref())
            ),
        ),
    };
    set_last_error(failure.message);
    failure.code
}

/// Runs an export that returns no `tp_result` (the `_free` functions, the
/// static strings): a panic is contained, recorded and replaced by `fallback`,
/// never unwound into C.
pub(crate) fn boundary_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    let mut value = None;
    let _ = boundary(|| {
        value = Some(body());
        Ok(())
    });
    value.unwrap_or(fallback)
}

/// Copies the message of the last call on this thread that failed into
/// `buf` as a NUL-terminated UTF-8 string, cut at a character boundary if it
/// does not fit. `*out_len` (if not NULL) receives the message's full length
/// in bytes without the NUL, so a caller can tell it was cut. The message is
/// empty when no call has failed on this thread; a successful call leaves
/// it as it was.
///
/// Returns `TP_RESULT_NULL_PARAMETER` if `buf` is NULL and `len` is not 0,
/// `TP_RESULT_BUFFER_TOO_SMALL` if `len` is 0; neither changes the message.
///
/// # Safety
///
/// `buf` must be valid for writes of `len` bytes; `out_len` must be NULL or
/// valid for a write. The caller owns both.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tp_last_error_message(
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> tp_result {
    // Not through `boundary`: a failure here must not replace the message.
    let copy = || -> Result<()> {
        // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
        let dst = unsafe { args::bytes_mut(buf.cast::<u8>(), len, "buf") }?;
        // SAFETY: the caller guarantees `out_len` is NULL or valid.
        let out_len = unsafe { args::optional_out(out_len, "out_len") }?;
        if dst.is_empty() {
            return Err(Failure::new(tp_result::BufferTooSmall, ""));
        }
        LAST_ERROR.with(|m| {
            let m = m.borrow();
            let mut n = m.len().min(dst.len() - 1);
            while !m.is_char_boundary(n) {
                n -= 1;
            }
            dst[..n].copy_from_slice(&m.as_bytes()[..n]);
            dst[n] = 0;
            if let Some(out) = out_len {
                out.write(m.len());
            }
        });
        Ok(())
    };
    match catch_unwind(AssertUnwindSafe(copy)) {
        Ok(Ok(())) => tp_result::Ok,
        Ok(Err(f)) => f.code,
        Err(_) => tp_result::Panic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_message() -> String {
        let mut buf = [0 as c_char; 256];
        let mut n = 0usize;
        // SAFETY: a 256-byte buffer and a local length.
        let r = unsafe { tp_last_error_message(buf.as_mut_ptr(), buf.len(), &mut n) };
        assert_eq!(r, tp_result::Ok);
        // `c_char` is i8 on x86_64 and u8 on aarch64: reinterpret its bits.
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| u8::from_ne_bytes(c.to_ne_bytes()))
            .collect();
        assert_eq!(bytes.len(), n.min(255));
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        let r = boundary(|| panic!("kaboom {}", 42));
        assert_eq!(r, tp_result::Panic);
        assert!(last_message().contains("kaboom 42"));
        // The boundary still works after a panic.
        assert_eq!(boundary(|| Ok(())), tp_result::Ok);
        assert!(
            last_message().contains("kaboom 42"),
            "success keeps the message"
        );
        let r = boundary(|| Err(Failure::invalid("bad width")));
        assert_eq!(r, tp_result::InvalidParameter);
        assert_eq!(last_message(), "bad width");
    }

    #[test]
    fn messages_are_cut_at_a_character_boundary() {
        let _ = boundary(|| Err(Failure::invalid("héllo")));
        let mut buf = [0x55 as c_char; 3];
        let mut n = 0usize;
        // SAFETY: a 3-byte buffer.
        let r = unsafe { tp_last_error_message(buf.as_mut_ptr(), 3, &mut n) };
        assert_eq!(r, tp_result::Ok);
        // "h" + the first byte of "é" would not be UTF-8: only "h" is kept.
        assert_eq!(buf[..2], [b'h' as c_char, 0]);
        assert_eq!(n, "héllo".len());
        // SAFETY: NULL with a zero length, then a zero length.
        unsafe {
            assert_eq!(
                tp_last_error_message(std::ptr::null_mut(), 4, &mut n),
                tp_result::NullParameter
            );
            assert_eq!(
                tp_last_error_message(buf.as_mut_ptr(), 0, &mut n),
                tp_result::BufferTooSmall
            );
        }
        assert_eq!(last_message(), "héllo");
    }

    #[test]
    fn each_thread_has_its_own_message() {
        let _ = boundary(|| Err(Failure::invalid("main thread")));
        std::thread::spawn(|| {
            assert_eq!(last_message(), "");
            let _ = boundary(|| Err(Failure::invalid("other thread")));
            assert_eq!(last_message(), "other thread");
        })
        .join()
        .unwrap();
        assert_eq!(last_message(), "main thread");
    }
}
