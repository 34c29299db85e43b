//! `kubectl ceph-osd`: the operator's binary installed as `kubectl-ceph_osd` (kubectl runs it
//! as a plugin). It shows a CephOSD's rollout, previews the next one, and steers it by the
//! same fields an admin edits. Exit codes: 0 the asked-for state was reached, 1 stalled,
//! invalid, a failed write or a timeout, 2 bad usage or input.

mod arguments;
mod cluster;
mod steering;
mod watching;

pub use arguments::PluginCli;

use std::process::ExitCode;

/// Why a command ended without reaching what was asked: its exit code and message.
#[derive(Debug)]
pub(crate) struct Failed {
    code: u8,
    message: String,
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

/// Runs the plugin command line `cli`.
pub fn run_plugin(cli: PluginCli) -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(Box::pin(arguments::dispatch(cli))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed { code, message }) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}
