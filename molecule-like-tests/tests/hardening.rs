//! What a hostile probe found, checked on the real control plane (kube-apiserver with RBAC):
//! leader election is on by default, so a second operator started by hand creates nothing
//! while the first leads; the operator may hold its own Lease and no other; `/metrics` needs a
//! token allowed `get /metrics`; and an operator under only the namespaced RBAC of
//! deploy/namespaced/ reconciles its namespace (and says, by name, what it lacks elsewhere).
//!
//! Operators here are started by hand (not through the scenario's spawn, which turns leader
//! election off), as an admin would, with `POD_NAMESPACE` set as deploy/'s Deployment does.
//!
//! Needs a running control plane:
//! `molecule-like-tests/control-plane install && molecule-like-tests/control-plane up`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use molecule_like_tests::journeys::scenario::{create_namespace, hold, Scenario};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, random_suffix, storage, CR,
};
use molecule_like_tests::kubernetes::operator::{free_port, lease_holder, OperatorOptions};
use molecule_like_tests::kubernetes::rbac::{apply, manifests};
use molecule_like_tests::paths::{kubectl, operator_binary, tail};
use molecule_like_tests::paths::{operator_kubeconfig_path, state_dir};
use serde_json::{json, Value};

/// deploy/'s operator identity.
const OPERATOR_NS: &str = "ceph-osd-operator";
const OPERATOR_USER: &str = "system:serviceaccount:ceph-osd-operator:ceph-osd-operator";

/// An operator process started by hand; killed when dropped.
struct Operator {
    label: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Operator {
    /// `ceph-osd-operator run ARGS` with `env`, its output in `<dir>/operator-<label>.log`.
    fn start(dir: &Path, label: &str, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let log = dir.join(format!("operator-{label}.log"));
        let file = std::fs::File::create(&log)?;
        let mut command = Command::new(operator_binary()?);
        command
            .arg("run")
            .args(args)
            .env_remove("POD_NAME")
            .env_remove("POD_NAMESPACE")
            .env_remove("WATCH_NAMESPACE")
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        for (k, v) in env {
            command.env(k, v);
        }
        Ok(Self {
            label: label.to_owned(),
            child: Some(command.spawn()?),
            log,
        })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self
            .child
            .as_mut()
            .map(Child::try_wait)
            .transpose()?
            .flatten()
        {
            anyhow::bail!(
                "operator {} exited ({status}):\n{}",
                self.label,
                tail(&self.log, 40)
            );
        }
        Ok(())
    }

    /// SIGTERM, then waits up to `timeout` for the exit.
    async fn terminate(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let child = self.child.as_mut().context("not running")?;
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -TERM failed");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                self.child = None;
                return Ok(status);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "operator {} still running {timeout:?} after SIGTERM:\n{}",
                self.label,
                tail(&self.log, 40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn log_dir(s: &Scenario) -> PathBuf {
    s.log_path.parent().expect("log dir").to_path_buf()
}

/// A token of ServiceAccount `namespace/name` (created if missing), valid for an hour.
async fn service_account_token(
    client: &Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    if accounts.get_opt(name).await?.is_none() {
        let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        accounts.create(&PostParams::default(), &account).await?;
    }
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let issued = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    issued
        .status
        .and_then(|s| s.token)
        .context("a TokenRequest without a token")
}

/// A kubeconfig like the operator's, with `token` as its credentials.
fn kubeconfig_with_token(path: &Path, token: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(operator_kubeconfig_path())?;
    let replaced: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("token: ") {
                format!("    token: {token}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    anyhow::ensure!(
        replaced != text,
        "no token line in the operator's kubeconfig"
    );
    std::fs::write(path, replaced)?;
    Ok(())
}

/// `GET path` on 127.0.0.1:`port` with `token` as bearer token: (status, body).
async fn get_with_token(
    port: u16,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nhost: x\r\n{auth}connection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await?;
    let (head, body) = out.split_once("\r\n\r\n").context("no HTTP header")?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("no status")?;
    Ok((code, body.to_owned()))
}

/// Whether `user` may `verb` `resource` (named `name`) in `namespace`, as the API server says.
async fn may(
    client: &Client,
    user: &str,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
    name: Option<&str>,
) -> anyhow::Result<bool> {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:ceph-osd-operator".into(),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                namespace: Some(namespace.into()),
                name: name.map(Into::into),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// `kubectl auth can-i ARGS --as <the operator>`: "yes" or "no".
fn can_i(args: &[&str]) -> anyhow::Result<String> {
    let kubectl = kubectl().context("kubectl not installed (control-plane install fetches it)")?;
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(state_dir().join("kubeconfig"))
        .args(["auth", "can-i"])
        .args(args)
        .args(["--as", OPERATOR_USER])
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

// (a) -----------------------------------------------------------------------------------------

/// Two operators started with no leader-election flag, as by hand beside the Deployment: the
/// first takes the Lease in its namespace, the second waits and creates nothing (the pods
/// stay one per OSD, even while the first creates more), until the first is SIGTERMed; then
/// the second leads and acts.
#[tokio::test]
async fn a_second_operator_started_by_hand_creates_nothing_while_the_first_leads(
) -> anyhow::Result<()> {
    let mut s = Scenario::create("hand-started").await?;
    s.start_recorder().await?;
    let ns = s.namespace.clone();
    let kubeconfig = operator_kubeconfig_path();
    let args = [
        "--kubeconfig",
        kubeconfig.to_str().context("path")?,
        "--namespace",
        &ns,
        "--resync-seconds",
        "2",
    ];
    let (id_a, id_b) = (format!("{ns}-a"), format!("{ns}-b"));
    let env = |id: &str| {
        [
            ("POD_NAMESPACE", OPERATOR_NS.to_owned()),
            ("POD_NAME", id.to_owned()),
        ]
    };
    let env_a = env(&id_a);
    let env_a: Vec<(&str, &str)> = env_a.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut a = Operator::start(&log_dir(&s), "a", &args, &env_a)?;
    // A Lease left by an earlier run expires within 15 s.
    s.wait_until(
        "a holds the Lease in ceph-osd-operator",
        Duration::from_secs(40),
        || async {
            Ok(
                (lease_holder(&s.client, OPERATOR_NS).await?.as_deref() == Some(id_a.as_str()))
                    .then_some(()),
            )
        },
    )
    .await?;
    a.check_alive()?;
    let hosts = ["hand-1", "hand-2"];
    let manifest = cephosd(
        CR,
        storage(&hosts, &["/dev/sdb"]),
        "OSD",
        fast_sample_template()?,
    );
    s.create_converged(&manifest, keys(&hosts, &["/dev/sdb"]))
        .await?;

    let env_b = env(&id_b);
    let env_b: Vec<(&str, &str)> = env_b.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut b = Operator::start(&log_dir(&s), "b", &args, &env_b)?;
    s.wait_until("b waits for the Lease", Duration::from_secs(20), || async {
        Ok(b.log()
            .contains("waiting for the leader lease")
            .then_some(()))
    })
    .await?;
    // More OSDs while b stands by: only a creates their pods.
    let devices = ["/dev/sdb", "/dev/sdc"];
    let want = keys(&hosts, &devices);
    let cr = s.patch_spec(CR, json!({"storage": [{"hosts": hosts, "osds": [{"data": "/dev/sdb"}, {"data": "/dev/sdc"}]}]})).await?;
    let hash = molecule_like_tests::kubernetes::manifests::hash_of(&cr);
    s.wait_converged(CR, &want, &hash, Duration::from_mins(1))
        .await?;
    check_only_a_acts(&s, &mut a, &mut b, &id_a, want.len()).await?;
    s.assert_one_pod_per_key().await?;

    // SIGTERM: a releases the Lease, b takes over within a few seconds and acts.
    let stopped = Instant::now();
    let status = a.terminate(Duration::from_secs(15)).await?;
    anyhow::ensure!(status.success(), "a exited with {status}:\n{}", a.log());
    anyhow::ensure!(a.log().contains("released the leader lease"), "{}", a.log());
    s.wait_until("b holds the Lease", Duration::from_secs(10), || async {
        Ok(
            (lease_holder(&s.client, OPERATOR_NS).await?.as_deref() == Some(id_b.as_str()))
                .then_some(()),
        )
    })
    .await?;
    let took = stopped.elapsed();
    let victim = s.list_pods().await?.remove(0).name_any();
    s.pods.delete(&victim, &DeleteParams::default()).await?;
    let pods = s
        .wait_converged(CR, &want, &hash, Duration::from_mins(1))
        .await?;
    anyhow::ensure!(
        !pods.values().any(|p| p.name_any() == victim),
        "{victim} was not replaced"
    );
    anyhow::ensure!(
        b.log().contains("created pod"),
        "b did not act:\n{}",
        b.log()
    );
    s.assert_one_pod_per_key().await?;
    eprintln!(
        "a created {} pods ({} of them while b stood by); b created none and led {took:?} after a's SIGTERM",
        want.len(),
        want.len() - hosts.len(),
    );
    b.terminate(Duration::from_secs(15)).await?;
    s.destroy().await
}

/// For a few resyncs with `a` leading (`id_a`) and `b` started by hand: the Lease stays
/// `a`'s, one pod for each of the `osds`, both alive; `b` neither leads nor acts; `a` created
/// every pod and checked its permissions.
async fn check_only_a_acts(
    s: &Scenario,
    a: &mut Operator,
    b: &mut Operator,
    id_a: &str,
    osds: usize,
) -> anyhow::Result<()> {
    hold(Duration::from_secs(6), || async {
        anyhow::ensure!(
            lease_holder(&s.client, OPERATOR_NS).await?.as_deref() == Some(id_a),
            "the Lease moved"
        );
        let pods = s.list_pods().await?;
        anyhow::ensure!(pods.len() == osds, "{} pods for {} OSDs", pods.len(), osds);
        Ok(())
    })
    .await?;
    a.check_alive()?;
    b.check_alive()?;
    let b_log = b.log();
    for acted in [
        "acquired the leader lease",
        "reconciled",
        "created pod",
        "deleted pod",
    ] {
        anyhow::ensure!(!b_log.contains(acted), "the standby {acted}:\n{b_log}");
    }
    let a_log = a.log();
    anyhow::ensure!(a_log.matches("created pod").count() == osds, "a:\n{a_log}");
    anyhow::ensure!(
        a_log.contains("the operator's RBAC allows every call it makes"),
        "a's permission check:\n{a_log}"
    );
    Ok(())
}

// (b) -----------------------------------------------------------------------------------------

/// With deploy/'s RBAC, the operator may update its own Lease in its namespace and no other
/// Lease anywhere.
#[tokio::test]
async fn the_operator_may_update_its_own_lease_and_no_other() -> anyhow::Result<()> {
    let client = molecule_like_tests::kubernetes::client::test_client().await?;
    let no = can_i(&["update", "leases", "-n", "kube-system"])?;
    let yes = can_i(&["update", "leases/ceph-osd-operator", "-n", OPERATOR_NS])?;
    anyhow::ensure!(
        no == "no" && yes == "yes",
        "can-i: kube-system {no:?}, own {yes:?}"
    );
    let lease = |verb, namespace, name| {
        may(
            &client,
            OPERATOR_USER,
            verb,
            "coordination.k8s.io",
            "leases",
            namespace,
            name,
        )
    };
    for (verb, namespace, name, allowed) in [
        ("update", OPERATOR_NS, Some("ceph-osd-operator"), true),
        ("get", OPERATOR_NS, Some("ceph-osd-operator"), true),
        // create names no object: any Lease in its namespace (deploy/lease-rbac.yaml says so).
        ("create", OPERATOR_NS, None, true),
        (
            "update",
            OPERATOR_NS,
            Some("kube-controller-manager"),
            false,
        ),
        ("delete", OPERATOR_NS, Some("ceph-osd-operator"), false),
        ("list", OPERATOR_NS, None, false),
        (
            "update",
            "kube-system",
            Some("kube-controller-manager"),
            false,
        ),
        ("update", "kube-system", Some("ceph-osd-operator"), false),
        ("create", "kube-system", None, false),
        ("get", "default", Some("ceph-osd-operator"), false),
    ] {
        let got = lease(verb, namespace, name).await?;
        anyhow::ensure!(
            got == allowed,
            "{verb} lease {name:?} in {namespace}: allowed {got}"
        );
    }
    eprintln!("can-i update leases -n kube-system: {no}; update leases/ceph-osd-operator -n {OPERATOR_NS}: {yes}");
    Ok(())
}

// (c) -----------------------------------------------------------------------------------------

/// `/metrics` with no token is 401; with a ServiceAccount token bound to the metrics-reader
/// ClusterRole 200; with one not bound 403; the probes need none.
#[tokio::test]
async fn metrics_need_a_token_allowed_to_get_metrics() -> anyhow::Result<()> {
    let s = Scenario::create("metrics-auth").await?;
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    // One process (the harness adds --leader-elect=false); /metrics checked by default.
    let operator = s.spawn_operator(
        "metrics",
        &OperatorOptions::default(),
        &["--http-address", &address],
        &[],
    )?;
    s.wait_until("/healthz answers", Duration::from_secs(20), || async {
        operator.check_alive()?;
        Ok(matches!(get_with_token(port, "/healthz", None).await, Ok((200, _))).then_some(()))
    })
    .await?;
    let (code, body) = get_with_token(port, "/metrics", None).await?;
    anyhow::ensure!(
        code == 401 && !body.contains("ceph_osd_operator"),
        "no token: {code} {body}"
    );
    let (code, _) = get_with_token(port, "/metrics", Some("not-a-token")).await?;
    anyhow::ensure!(code == 401, "a forged token: {code}");

    let binding_name = format!("{}-scraper", s.namespace);
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "ceph-osd-operator-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": s.namespace}],
    }))?;
    let bindings: Api<ClusterRoleBinding> = Api::all(s.client.clone());
    bindings.create(&PostParams::default(), &binding).await?;
    let scraper = service_account_token(&s.client, &s.namespace, "scraper").await?;
    let stranger = service_account_token(&s.client, &s.namespace, "stranger").await?;
    let result = async {
        let body = s
            .wait_until(
                "the scraper's token gets /metrics",
                Duration::from_secs(20),
                || async {
                    let (code, body) = get_with_token(port, "/metrics", Some(&scraper)).await?;
                    Ok((code == 200).then_some(body))
                },
            )
            .await?;
        anyhow::ensure!(
            body.contains("ceph_osd_operator_reconciles_total"),
            "{body}"
        );
        let (code, body) = get_with_token(port, "/metrics", Some(&stranger)).await?;
        anyhow::ensure!(
            code == 403 && !body.contains("ceph_osd_operator"),
            "unbound token: {code} {body}"
        );
        let (code, _) = get_with_token(port, "/readyz", None).await?;
        anyhow::ensure!(code == 200, "/readyz without a token: {code}");
        // The reviews are the operator's own requests, counted like all others.
        let (_, text) = get_with_token(port, "/metrics", Some(&scraper)).await?;
        anyhow::ensure!(
            text.contains(
                r#"ceph_osd_operator_api_requests_total{verb="post",resource="tokenreviews"}"#
            ),
            "{text}"
        );
        operator.check_alive()
    }
    .await;
    bindings
        .delete(&binding_name, &DeleteParams::default())
        .await?;
    result?;
    eprintln!("/metrics: no token 401, forged 401, unbound ServiceAccount 403, metrics-reader 200");
    s.destroy().await
}

// (d) -----------------------------------------------------------------------------------------

/// deploy/namespaced/'s RBAC (with deploy/'s Lease Role) for a fresh ServiceAccount in an
/// operator namespace of its own, watching `watched`: the objects, renamed apart.
fn namespaced_rbac(operator_ns: &str, watched: &str, suffix: &str) -> anyhow::Result<Vec<Value>> {
    let mut docs = Vec::new();
    for (file, namespace) in [
        ("deploy/namespaced/watch-rbac.yaml", Some(watched)),
        ("deploy/namespaced/cephosd-reader-rbac.yaml", None),
        ("deploy/lease-rbac.yaml", Some(operator_ns)),
    ] {
        for mut doc in manifests(file)? {
            if let Some(ns) = namespace {
                doc["metadata"]["namespace"] = json!(ns);
            } else {
                // Cluster-scoped: a name of its own, so deploy/'s objects stay untouched.
                let name = format!(
                    "{}-{suffix}",
                    doc["metadata"]["name"].as_str().context("name")?
                );
                doc["metadata"]["name"] = json!(name);
                if doc["roleRef"]["kind"] == "ClusterRole" {
                    let role = format!(
                        "{}-{suffix}",
                        doc["roleRef"]["name"].as_str().context("roleRef")?
                    );
                    doc["roleRef"]["name"] = json!(role);
                }
            }
            if let Some(subjects) = doc.get_mut("subjects").and_then(Value::as_array_mut) {
                for subject in subjects {
                    subject["namespace"] = json!(operator_ns);
                }
            }
            docs.push(doc);
        }
    }
    Ok(docs)
}

/// An operator run with `--namespace X` as a ServiceAccount that has only the namespaced RBAC
/// (no rule in any other namespace) reconciles a CephOSD in X, leading on its Lease in its own
/// namespace; the same identity watching a namespace it has no Role in names, in its log,
/// each permission it lacks.
#[tokio::test]
async fn a_namespaced_operator_under_only_the_namespaced_rbac_reconciles_its_namespace(
) -> anyhow::Result<()> {
    let mut s = Scenario::create("namespaced-rbac").await?;
    s.start_recorder().await?;
    let suffix = random_suffix();
    let operator_ns = format!("mlt-operator-{suffix}");
    create_namespace(&s.client, &operator_ns).await?;
    let docs = namespaced_rbac(&operator_ns, &s.namespace, &suffix)?;
    apply(&s.client, &docs).await?;
    let token = service_account_token(&s.client, &operator_ns, "ceph-osd-operator").await?;
    let kubeconfig = log_dir(&s).join("namespaced.kubeconfig");
    kubeconfig_with_token(&kubeconfig, &token)?;
    let kubeconfig = kubeconfig.to_str().context("path")?.to_owned();
    let result = async {
        let identity = format!("{operator_ns}-0");
        let env = [("POD_NAMESPACE", operator_ns.as_str()), ("POD_NAME", identity.as_str())];
        let args = ["--kubeconfig", kubeconfig.as_str(), "--namespace", &s.namespace, "--resync-seconds", "2"];
        let mut operator = Operator::start(&log_dir(&s), "namespaced", &args, &env)?;
        s.wait_until("it holds its Lease", Duration::from_secs(20), || async {
            Ok((lease_holder(&s.client, &operator_ns).await?.as_deref() == Some(identity.as_str())).then_some(()))
        })
        .await?;
        let hosts = ["ns-1", "ns-2"];
        let devices = ["/dev/sdb", "/dev/sdc"];
        let manifest = cephosd(CR, storage(&hosts, &devices), "Host", fast_sample_template()?);
        s.create_converged(&manifest, keys(&hosts, &devices)).await?;
        s.wait_until("status phase Ready", Duration::from_secs(30), || async {
            let phase = s.cr_status(CR).await?.and_then(|st| st.phase);
            Ok((phase == Some(ceph_osd_operator::crd::Phase::Ready)).then_some(()))
        })
        .await?;
        anyhow::ensure!(!s.cr_events(CR).await?.is_empty(), "no Events posted");
        operator.check_alive()?;
        let log = operator.log();
        anyhow::ensure!(
            log.contains("the operator's RBAC allows every call it makes") && !log.contains("missing permission"),
            "{log}"
        );
        anyhow::ensure!(!log.contains("forbidden"), "a call was forbidden:\n{log}");
        s.assert_one_pod_per_key().await?;

        // The same identity, watching a namespace it has no Role in: each lack named.
        let other = ["--kubeconfig", kubeconfig.as_str(), "--namespace", "default", "--leader-elect=false"];
        let elsewhere = Operator::start(&log_dir(&s), "elsewhere", &other, &[])?;
        let log = s
            .wait_until("the lacks are logged", Duration::from_secs(20), || async {
                let log = elsewhere.log();
                Ok(log.contains("missing permission").then_some(log))
            })
            .await?;
        for lacking in ["list pods in namespace default", "create pods in namespace default", "patch cephosds/status.ceph.elemental.net in namespace default"] {
            anyhow::ensure!(log.contains(&format!("does not allow {lacking}")), "{lacking} not named:\n{log}");
        }
        anyhow::ensure!(!log.contains("does not allow list cephosds"), "{log}");
        operator.terminate(Duration::from_secs(15)).await?;
        eprintln!("namespaced operator: 4 OSD pods Ready, status Ready; elsewhere: {} missing permissions named", log.matches("missing permission").count());
        Ok(())
    }
    .await;
    let roles: Api<ClusterRole> = Api::all(s.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(s.client.clone());
    for doc in docs.iter().filter(|d| d["metadata"]["namespace"].is_null()) {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        if doc["kind"] == "ClusterRole" {
            let _ = roles.delete(name, &DeleteParams::default()).await;
        } else {
            let _ = bindings.delete(name, &DeleteParams::default()).await;
        }
    }
    let namespaces: Api<Namespace> = Api::all(s.client.clone());
    let _ = namespaces
        .delete(&operator_ns, &DeleteParams::default())
        .await;
    result?;
    s.destroy().await
}
