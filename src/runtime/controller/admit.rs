//! Before a CephOSD is observed: a deleted one is left alone while it awaits its deletion, a
//! live one gets the operator's finalizer first.

use crate::crd::CephOsd;
use crate::plan::rules::deletion::{self, Deletion, FinalizerWrite};
use crate::runtime::act::finalizer;
use crate::runtime::controller::context::Context;
use crate::runtime::controller::reconcile_error::ReconcileError;
use kube::api::Api;
use kube::ResourceExt;
use std::ops::ControlFlow;
use tracing::info;

/// Break: `cr` is left alone until it changes.
pub(super) async fn admit(ctx: &Context, cr: &CephOsd) -> Result<ControlFlow<()>, ReconcileError> {
    if cr.metadata.deletion_timestamp.is_some() {
        if awaits_deletion(cr) {
            return Ok(ControlFlow::Break(()));
        }
    } else if deletion::finalizer_write(cr, None, true, true) == Some(FinalizerWrite::Add) {
        write_finalizer(ctx, cr, true).await?;
        info!(cephosd = %cr.object_key(), finalizer = deletion::FINALIZER, "added the finalizer");
    }
    Ok(ControlFlow::Continue(()))
}

/// Adds (`on`) or removes the operator's finalizer on `cr`.
pub(super) async fn write_finalizer(
    ctx: &Context,
    cr: &CephOsd,
    on: bool,
) -> Result<(), ReconcileError> {
    let crs: Api<CephOsd> =
        Api::namespaced(ctx.client.clone(), &cr.namespace().unwrap_or_default());
    Box::pin(finalizer::write(&crs, &cr.name_any(), on))
        .await
        .map_err(|source| ReconcileError::Finalizer {
            cr: cr.object_key(),
            what: if on { "add" } else { "remove" },
            source,
        })
}

/// Whether a deleted CephOSD is left alone for now: the operator's finalizer is not on it
/// (nothing to do), or the garbage collector is still orphaning its pods.
pub(super) fn awaits_deletion(cr: &CephOsd) -> bool {
    !deletion::is_held(cr) || deletion::deletion_of(cr, false) == Some(Deletion::Orphaning)
}
