//! How a plugin command fails: its exit code and message.

/// Why a command ended without reaching what was asked: its exit code and message.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failed {
    /// Bad usage or input (exit code 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// The state was not reached or a call failed (exit code 1).
    pub(crate) fn not_reached(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }
}
