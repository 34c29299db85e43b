//! The operator process: the controller, run at once or, with leader election, only while this
//! replica holds the Lease; it ends on SIGTERM or Ctrl-C, or when leadership is lost.

use crate::runtime::controller::{self, context::Settings};
use crate::runtime::serve::lease::{LeaderLease, LeaseError, LeaseSettings};
use crate::runtime::serve::metrics::Metrics;
use kube::Client;
use std::sync::Arc;

/// Runs the controller until a shutdown signal. With `lease`, first waits to lead (a signal
/// meanwhile ends the wait), and stops at once when the Lease is lost (the error); on a clean
/// shutdown the Lease is released so a standby takes over without waiting for it to expire.
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    lease: Option<LeaseSettings>,
) -> Result<(), LeaseError> {
    let Some(lease) = lease else {
        // Without leader election this process is the one that acts: it leads.
        metrics.set_leader(true);
        controller::run(client, settings, metrics.clone()).await;
        metrics.set_leader(false);
        return Ok(());
    };
    let lease = LeaderLease::new(client.clone(), lease);
    tokio::select! {
        () = lease.acquire() => {}
        () = shutdown_signal() => return Ok(()),
    }
    metrics.set_leader(true);
    let outcome = tokio::select! {
        () = controller::run(client, settings, metrics.clone()) => Ok(()),
        // Only the leader writes: stop at once when leadership is gone.
        lost = lease.hold() => Err(lost),
    };
    metrics.set_leader(false);
    if outcome.is_ok() {
        lease.release().await;
    }
    outcome
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
