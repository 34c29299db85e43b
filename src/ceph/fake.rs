//! A scripted `CephClient` for unit tests: each method answers from its own queue, in order
//! (independent calls may come in any order), and every call is recorded. A call with nothing
//! scripted fails the test.

use super::answers::{
    ClusterStatus, OkToStop, OsdDump, OsdMetadata, PgBrief, PgStates, SafeToDestroy,
};
use super::client::{CephClient, CephError};
use super::crashes::CrashReport;
use super::crush::{CrushRule, CrushTree, PoolRule};
use super::osd_df::OsdUsage;
use super::osd_id::OsdId;
use super::release::Release;
use super::versions::DaemonReleases;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

/// A call as the fake saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    Status,
    PgStates,
    PgsOnOsd(OsdId),
    OsdDump,
    OsdMetadata,
    Versions,
    RequireOsdRelease(Release),
    OkToStop(Vec<OsdId>),
    AddNoout(Vec<OsdId>),
    RmNoout(Vec<OsdId>),
    OsdOut(Vec<OsdId>),
    OsdIn(Vec<OsdId>),
    SafeToDestroy(Vec<OsdId>),
    OsdDestroy(OsdId),
    OsdDf,
    RecoveryRate,
    NewCrashes,
    CrushTree,
    CrushRules,
    PoolRules,
    ConfigKeyGet(String),
    ConfigKeySet(String, String),
}

/// One scripted answer: a result, or no answer ever (a mgr command without a mgr).
enum Scripted<T> {
    Answer(Result<T, CephError>),
    Hang,
}

type Queue<T> = Mutex<VecDeque<Scripted<T>>>;

#[derive(Default)]
pub(crate) struct ScriptedCeph {
    status: Queue<ClusterStatus>,
    pg_states: Queue<PgStates>,
    pgs_on_osd: Queue<Vec<PgBrief>>,
    osd_dump: Queue<OsdDump>,
    osd_metadata: Queue<BTreeMap<OsdId, OsdMetadata>>,
    versions: Queue<DaemonReleases>,
    require_osd_release: Queue<()>,
    ok_to_stop: Queue<OkToStop>,
    add_noout: Queue<()>,
    rm_noout: Queue<()>,
    osd_out: Queue<()>,
    osd_in: Queue<()>,
    safe_to_destroy: Queue<SafeToDestroy>,
    osd_destroy: Queue<()>,
    osd_df: Queue<BTreeMap<OsdId, OsdUsage>>,
    recovery_rate: Queue<u64>,
    new_crashes: Queue<Vec<CrashReport>>,
    crush_tree: Queue<CrushTree>,
    crush_rules: Queue<BTreeMap<i64, CrushRule>>,
    pool_rules: Queue<Vec<PoolRule>>,
    config_key_get: Queue<Option<String>>,
    config_key_set: Queue<()>,
    calls: Mutex<Vec<Call>>,
}

fn push<T>(queue: &Queue<T>, item: Scripted<T>) {
    queue.lock().unwrap().push_back(item);
}

impl ScriptedCeph {
    pub(crate) fn on_status(self, answer: Result<ClusterStatus, CephError>) -> Self {
        push(&self.status, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_pg_states(self, answer: Result<PgStates, CephError>) -> Self {
        push(&self.pg_states, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_pg_states_hang(self) -> Self {
        push(&self.pg_states, Scripted::Hang);
        self
    }

    pub(crate) fn on_osd_dump(self, answer: Result<OsdDump, CephError>) -> Self {
        push(&self.osd_dump, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_versions(self, answer: Result<DaemonReleases, CephError>) -> Self {
        push(&self.versions, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_require_osd_release(self, answer: Result<(), CephError>) -> Self {
        push(&self.require_osd_release, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_osd_metadata(
        self,
        answer: Result<BTreeMap<OsdId, OsdMetadata>, CephError>,
    ) -> Self {
        push(&self.osd_metadata, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_ok_to_stop(self, answer: Result<OkToStop, CephError>) -> Self {
        push(&self.ok_to_stop, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_ok_to_stop_hang(self) -> Self {
        push(&self.ok_to_stop, Scripted::Hang);
        self
    }

    pub(crate) fn on_pgs_on_osd(self, answer: Result<Vec<PgBrief>, CephError>) -> Self {
        push(&self.pgs_on_osd, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_pgs_on_osd_hang(self) -> Self {
        push(&self.pgs_on_osd, Scripted::Hang);
        self
    }

    pub(crate) fn on_add_noout(self, answer: Result<(), CephError>) -> Self {
        push(&self.add_noout, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_rm_noout(self, answer: Result<(), CephError>) -> Self {
        push(&self.rm_noout, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_osd_out(self, answer: Result<(), CephError>) -> Self {
        push(&self.osd_out, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_osd_in(self, answer: Result<(), CephError>) -> Self {
        push(&self.osd_in, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_osd_destroy(self, answer: Result<(), CephError>) -> Self {
        push(&self.osd_destroy, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_safe_to_destroy(self, answer: Result<SafeToDestroy, CephError>) -> Self {
        push(&self.safe_to_destroy, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_safe_to_destroy_hang(self) -> Self {
        push(&self.safe_to_destroy, Scripted::Hang);
        self
    }

    pub(crate) fn on_new_crashes(self, answer: Result<Vec<CrashReport>, CephError>) -> Self {
        push(&self.new_crashes, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_new_crashes_hang(self) -> Self {
        push(&self.new_crashes, Scripted::Hang);
        self
    }

    pub(crate) fn on_crush_tree(self, answer: Result<CrushTree, CephError>) -> Self {
        push(&self.crush_tree, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_crush_rules(
        self,
        answer: Result<BTreeMap<i64, CrushRule>, CephError>,
    ) -> Self {
        push(&self.crush_rules, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_pool_rules(self, answer: Result<Vec<PoolRule>, CephError>) -> Self {
        push(&self.pool_rules, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_config_key_get(self, answer: Result<Option<String>, CephError>) -> Self {
        push(&self.config_key_get, Scripted::Answer(answer));
        self
    }

    pub(crate) fn on_config_key_set(self, answer: Result<(), CephError>) -> Self {
        push(&self.config_key_set, Scripted::Answer(answer));
        self
    }

    /// The calls so far, in the order they were made.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn answer<T: Send + 'static>(
        &self,
        call: Call,
        queue: &Queue<T>,
    ) -> BoxFuture<'static, Result<T, CephError>> {
        let next = queue.lock().unwrap().pop_front();
        let answer = match next {
            Some(Scripted::Answer(answer)) => futures::future::ready(answer).boxed(),
            Some(Scripted::Hang) => futures::future::pending().boxed(),
            None => panic!("unexpected Ceph call {call:?}: nothing scripted"),
        };
        self.calls.lock().unwrap().push(call);
        answer
    }
}

impl CephClient for ScriptedCeph {
    fn status(&self) -> BoxFuture<'_, Result<ClusterStatus, CephError>> {
        self.answer(Call::Status, &self.status)
    }

    fn pg_states(&self) -> BoxFuture<'_, Result<PgStates, CephError>> {
        self.answer(Call::PgStates, &self.pg_states)
    }

    fn pgs_on_osd(&self, id: OsdId) -> BoxFuture<'_, Result<Vec<PgBrief>, CephError>> {
        self.answer(Call::PgsOnOsd(id), &self.pgs_on_osd)
    }

    fn osd_dump(&self) -> BoxFuture<'_, Result<OsdDump, CephError>> {
        self.answer(Call::OsdDump, &self.osd_dump)
    }

    fn osd_metadata(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdMetadata>, CephError>> {
        self.answer(Call::OsdMetadata, &self.osd_metadata)
    }

    fn versions(&self) -> BoxFuture<'_, Result<DaemonReleases, CephError>> {
        self.answer(Call::Versions, &self.versions)
    }

    fn require_osd_release(&self, release: Release) -> BoxFuture<'_, Result<(), CephError>> {
        self.answer(Call::RequireOsdRelease(release), &self.require_osd_release)
    }

    fn ok_to_stop<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<OkToStop, CephError>> {
        self.answer(Call::OkToStop(ids.to_vec()), &self.ok_to_stop)
    }

    fn add_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.answer(Call::AddNoout(ids.to_vec()), &self.add_noout)
    }

    fn rm_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.answer(Call::RmNoout(ids.to_vec()), &self.rm_noout)
    }

    fn osd_out<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.answer(Call::OsdOut(ids.to_vec()), &self.osd_out)
    }

    fn osd_in<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.answer(Call::OsdIn(ids.to_vec()), &self.osd_in)
    }

    fn osd_df(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdUsage>, CephError>> {
        self.answer(Call::OsdDf, &self.osd_df)
    }

    fn recovery_rate(&self) -> BoxFuture<'_, Result<u64, CephError>> {
        self.answer(Call::RecoveryRate, &self.recovery_rate)
    }

    fn osd_destroy(&self, id: OsdId) -> BoxFuture<'_, Result<(), CephError>> {
        self.answer(Call::OsdDestroy(id), &self.osd_destroy)
    }

    fn safe_to_destroy<'a>(
        &'a self,
        ids: &'a [OsdId],
    ) -> BoxFuture<'a, Result<SafeToDestroy, CephError>> {
        self.answer(Call::SafeToDestroy(ids.to_vec()), &self.safe_to_destroy)
    }

    /// Crash reports: none, and the call not recorded, unless a test scripts them (most
    /// tests are not about crashes).
    fn new_crashes(&self) -> BoxFuture<'_, Result<Vec<CrashReport>, CephError>> {
        if self.new_crashes.lock().unwrap().is_empty() {
            return futures::future::ready(Ok(Vec::new())).boxed();
        }
        self.answer(Call::NewCrashes, &self.new_crashes)
    }

    fn crush_tree(&self) -> BoxFuture<'_, Result<CrushTree, CephError>> {
        self.answer(Call::CrushTree, &self.crush_tree)
    }

    fn crush_rules(&self) -> BoxFuture<'_, Result<BTreeMap<i64, CrushRule>, CephError>> {
        self.answer(Call::CrushRules, &self.crush_rules)
    }

    fn pool_rules(&self) -> BoxFuture<'_, Result<Vec<PoolRule>, CephError>> {
        self.answer(Call::PoolRules, &self.pool_rules)
    }

    fn config_key_get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, CephError>> {
        self.answer(Call::ConfigKeyGet(key.to_owned()), &self.config_key_get)
    }

    fn config_key_set<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
    ) -> BoxFuture<'a, Result<(), CephError>> {
        self.answer(
            Call::ConfigKeySet(key.to_owned(), value.to_owned()),
            &self.config_key_set,
        )
    }
}

#[cfg(test)]
mod tests;
