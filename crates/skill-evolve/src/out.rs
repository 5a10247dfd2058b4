//! Standard output that ends the program quietly when its reader has gone.
//!
//! `println!` panics when stdout is a closed pipe (`skill-evolve history --json | head -1`).
//! Every line this program prints goes through [`outln!`] and [`out!`] instead: a reader that
//! went away ends the program with exit code 0, like the commands of a shell pipeline; any
//! other write error is reported on stderr with exit code 1.

use std::io::{ErrorKind, Write as _};

/// Writes `args` to stdout; see the module docs for what happens when that fails.
pub(crate) fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| {
            if newline {
                stdout.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| stdout.flush());
    if let Err(e) = written {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// `println!` for this program's output: see the module docs.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), true)
    };
}

/// `print!` for this program's output: see the module docs.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), false)
    };
}

pub(crate) use {out, outln};
