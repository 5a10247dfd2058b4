//! The adapter's error: a file or process operation that failed, or input it cannot use.

/// What went wrong preparing or driving a host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A file or process operation failed (`what` says which).
    #[error("{what}: {error}")]
    Io {
        /// The operation, with its path or program.
        what: String,
        /// The operating system's error.
        error: std::io::Error,
    },
    /// Input, configuration or a reply the adapter cannot use.
    #[error("{0}")]
    Invalid(String),
}

/// The adapter's result.
pub type Result<T, E = HostError> = std::result::Result<T, E>;

/// Names the operation of an I/O error.
pub(crate) trait IoContext<T> {
    /// The error, if any, as [`HostError::Io`] with `what` (built only on error).
    fn io(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|error| HostError::Io {
            what: what(),
            error,
        })
    }
}

/// Returns early with [`HostError::Invalid`] and a formatted message.
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err($crate::error::HostError::Invalid(format!($($arg)*)))
    };
}
pub(crate) use invalid;
