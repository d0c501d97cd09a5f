//! The commands' standard output and standard error. [`outln!`](crate::outln)
//! and [`out!`](crate::out) are `println!` and `print!` that treat a closed
//! stdout (`ndpdb ... | head`) as the end of the reader's interest, not as an
//! error: the command goes on and finishes its work, so a database command
//! still closes its database. Any other failure to write (a full disk under a
//! redirection) is reported on stderr once, and [`stdout_failed`] tells the
//! binary to exit 1 at the end.
//!
//! [`errln!`](crate::errln) and [`err!`](crate::err) are `eprintln!` and
//! `eprint!` for notes, progress and errors, which do not panic when stderr
//! is closed (`ndpdb ... 2>&1 | head`): what cannot be written there cannot
//! be reported anywhere, so it is dropped and the command goes on.

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

/// `eprintln!` that drops what a closed stderr cannot take (module docs).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` with [`errln!`]'s handling of a closed stderr.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

/// What [`outln!`] and [`out!`] do with a write's result.
#[doc(hidden)]
pub fn stdout_result(r: std::io::Result<()>) {
    if let Err(e) = r
        && e.kind() != std::io::ErrorKind::BrokenPipe
        && !STDOUT_FAILED.swap(true, Ordering::Relaxed)
    {
        errln!("error: writing the output to stdout: {e}");
    }
}

/// Whether a write to stdout failed other than by a closed pipe.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}
