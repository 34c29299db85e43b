//! `kubectl ceph-osd`: the operator's binary installed as `kubectl-ceph_osd` (kubectl runs it
//! as a plugin). It shows a CephOSD's rollout, previews the next one, and steers it by the
//! same fields an admin edits. Exit codes: 0 the asked-for state was reached, 1 stalled,
//! invalid, a failed write or a timeout, 2 bad usage or input.

mod arguments;
mod choices;
mod cluster;
mod failed;
mod finalizing;
mod replacing;
mod steering;
mod watching;

pub use arguments::PluginCli;
use failed::Failed;

use std::process::ExitCode;

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
