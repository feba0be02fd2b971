//! Panics of third-party readers as errors.
//!
//! The Parquet footer reader and Arrow's IPC reader panic on some corrupt inputs instead of
//! returning an error. A library call must not panic on bad input, so the calls that read
//! untrusted bytes run under [`no_panic`], which turns a panic into its message. The panic
//! hook stays quiet for those calls only (a thread-local flag), so the default message still
//! reaches stderr for a real bug anywhere else, on any thread.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Runs `f`, returning its result, or the panic's message when it panicked.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|panic| panic_text(panic.as_ref()).to_string())
}

/// The message of a caught panic.
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_a_value_passes_through() {
        assert_eq!(no_panic(|| 7), Ok(7));
        let caught = no_panic(|| -> u32 { panic!("footer length {} past the file", 9) });
        assert_eq!(caught, Err("footer length 9 past the file".to_string()));
        // The flag is restored: a later call still returns values.
        assert_eq!(no_panic(|| "ok"), Ok("ok"));
    }
}
