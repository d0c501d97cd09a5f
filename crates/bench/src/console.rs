//! The commands' standard output. [`outln!`](crate::outln) and
//! [`out!`](crate::out) are `println!` and `print!` that treat a closed
//! stdout (`ndpdb ... | head`) as the end of the reader's interest, not as an
//! error: the command goes on and finishes its work, so a database command
//! still closes its database. Any other failure to write (a full disk under a
//! redirection) is reported on stderr once, and [`stdout_failed`] tells the
//! binary to exit 1 at the end.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set when writing to stdout failed for any reason but a closed pipe.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// `println!` with a closed stdout as the end of the output (module docs).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::console::stdout_result({
            use std::io::Write;
            writeln!(std::io::stdout(), $($arg)*)
        })
    };
}

/// `print!` with [`outln!`]'s handling of a closed stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::stdout_result({
            use std::io::Write;
            write!(std::io::stdout(), $($arg)*)
        })
    };
}

/// What [`outln!`] and [`out!`] do with a write's result.
#[doc(hidden)]
pub fn stdout_result(r: std::io::Result<()>) {
    if let Err(e) = r
        && e.kind() != std::io::ErrorKind::BrokenPipe
        && !STDOUT_FAILED.swap(true, Ordering::Relaxed)
    {
        eprintln!("error: writing the output to stdout: {e}");
    }
}

/// Whether a write to stdout failed other than by a closed pipe.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}
