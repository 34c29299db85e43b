//! `finalize`: asks the operator to raise the Ceph cluster's `require_osd_release` (the
//! CephOSD's `finalize-release` annotation). The operator raises it only once every OSD and
//! monitor of the Ceph cluster runs that release; the `Finalized` condition says where it
//! stands. Once raised, an older release never boots again: rollback is over.

use crate::ceph::Release;
use crate::kubectl::cluster::Cluster;
use crate::kubectl::failed::Failed;
use crate::labels;
use serde_json::json;

pub(crate) async fn finalize(
    cluster: &Cluster,
    name: Option<String>,
    release: &str,
) -> Result<(), Failed> {
    let Some(named) = Release::from_name(release).and_then(Release::name) else {
        return Err(Failed::usage(format!(
            "{release:?} is not the name of a Ceph release (e.g. reef)"
        )));
    };
    let name = cluster.resolve(name).await?;
    let patch = json!({"metadata": {"annotations": {labels::FINALIZE_RELEASE: named}}});
    cluster.patch_cephosd(&name, &patch).await?;
    println!(
        "cephosd {name}: require_osd_release is raised to {named} once every OSD and monitor \
         of the Ceph cluster runs it (condition Finalized); after it, an older release never \
         boots again"
    );
    Ok(())
}
