//! The operator's alerts and dashboard (deploy/monitoring/), checked with Prometheus' own tool
//! and against the operator's real /metrics:
//!
//! - `promtool check rules` and `promtool test rules` (promtool built from its Go module by
//!   `molecule-like-tests/promtool install`) on the PrometheusRule's rules and
//!   deploy/monitoring/alerts.test.yaml; every alert has a test where it fires and one where it
//!   does not, a summary, a description naming the CephOSD (or, for the operator's own alerts,
//!   its job), and a runbook_url to its section of README.md's Runbooks.
//! - The operator's /metrics scraped twice on the local control plane: a CephOSD whose writes
//!   fail (a ResourceQuota refuses a pod), and a gated rollout step holding `noout` on a real
//!   Ceph's OSDs. Every series the rule tests feed promtool has a sample there, with exactly
//!   its labels (besides those Prometheus gives each target); every metric the rules and the
//!   dashboard's expressions name is exported; the dashboard is valid JSON.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context};
use molecule_like_tests::journeys::gated::{Gated, GatedOptions};
use molecule_like_tests::journeys::scenario::Scenario;
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, storage, CR,
};
use molecule_like_tests::kubernetes::operator::{free_port, http_get, OperatorOptions};
use molecule_like_tests::paths::workspace_root;
use serde_json::Value;

const RULES: &str = "deploy/monitoring/prometheusrule.yaml";
const RULE_TESTS: &str = "deploy/monitoring/alerts.test.yaml";
const DASHBOARD: &str = "deploy/monitoring/dashboard.json";
/// Labels Prometheus (and the Prometheus Operator) give every series of a target.
const TARGET_LABELS: [&str; 4] = ["job", "instance", "namespace", "pod"];
/// Alerts about the operator itself, not one CephOSD.
/// How long the scraped gated rollout may take to finish.
const ROLLOUT_DONE: Duration = Duration::from_mins(5);

const OPERATOR_ALERTS: [&str; 2] = ["CephOSDOperatorNoLeader", "CephOSDOperatorDown"];

fn read(relative: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(workspace_root().join(relative)).with_context(|| relative.to_owned())
}

fn yaml(relative: &str) -> anyhow::Result<Value> {
    serde_saphyr::from_str(&read(relative)?).map_err(|e| anyhow::anyhow!("{relative}: {e}"))
}

fn promtool() -> anyhow::Result<String> {
    let script = workspace_root().join("molecule-like-tests/promtool");
    let out = Command::new(&script).arg("path").output()?;
    ensure!(
        out.status.success(),
        "no promtool: run `molecule-like-tests/promtool install` ({})",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The rules of the PrometheusRule as a Prometheus rule file, beside a copy of the rule tests
/// (their `rule_files` names it), in a directory of the test `test`'s own (the tests run at
/// once: one's write must never be another's read): the directory.
fn rule_files(test: &str) -> anyhow::Result<PathBuf> {
    let dir = workspace_root().join("target/monitoring").join(test);
    std::fs::create_dir_all(&dir)?;
    // JSON is YAML: promtool reads it as such.
    std::fs::write(
        dir.join("alerts.rules.yaml"),
        serde_json::to_string_pretty(&yaml(RULES)?["spec"])?,
    )?;
    std::fs::write(dir.join("alerts.test.yaml"), read(RULE_TESTS)?)?;
    Ok(dir)
}

fn alerts(rules: &Value) -> Vec<&Value> {
    rules["spec"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
        .filter(|r| r["alert"].is_string())
        .collect()
}

fn promtool_run(args: &[&str], dir: &std::path::Path) -> anyhow::Result<String> {
    let out = Command::new(promtool()?)
        .args(args)
        .current_dir(dir)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        out.status.success(),
        "`promtool {}` failed:\n{text}",
        args.join(" ")
    );
    eprintln!("[monitoring] promtool {}: {}", args.join(" "), text.trim());
    Ok(text)
}

#[test]
fn promtool_checks_the_rules_and_each_alert_fires_in_one_test_and_not_in_another(
) -> anyhow::Result<()> {
    let dir = rule_files("fires")?;
    promtool_run(&["check", "rules", "alerts.rules.yaml"], &dir)?;
    promtool_run(&["test", "rules", "alerts.test.yaml"], &dir)?;

    let rules = yaml(RULES)?;
    let tests = yaml(RULE_TESTS)?;
    let readme = read("README.md")?;
    let runbooks = readme
        .split_once("\n## Runbooks\n")
        .map(|(_, rest)| rest.split("\n## ").next().unwrap_or(rest))
        .context("README.md has no `## Runbooks` section")?;
    let cases: Vec<&Value> = tests["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["alert_rule_test"].as_array().into_iter().flatten())
        .collect();
    let names: Vec<&str> = alerts(&rules)
        .iter()
        .filter_map(|a| a["alert"].as_str())
        .collect();
    ensure!(names.len() >= 8, "only {} alerts: {names:?}", names.len());
    for alert in alerts(&rules) {
        let name = alert["alert"].as_str().context("alert name")?;
        let expected = |firing: bool| {
            cases.iter().any(|c| {
                c["alertname"] == name
                    && c["exp_alerts"]
                        .as_array()
                        .is_some_and(|a| a.is_empty() != firing)
            })
        };
        ensure!(expected(true), "{name}: no rule test where it fires");
        ensure!(
            expected(false),
            "{name}: no rule test where it does not fire"
        );
        let annotations = &alert["annotations"];
        ensure!(
            annotations["summary"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{name}: no summary"
        );
        let description = annotations["description"].as_str().unwrap_or_default();
        let names_what = if OPERATOR_ALERTS.contains(&name) {
            "operator"
        } else {
            "{{ $labels.namespace }}/{{ $labels.cephosd }}"
        };
        ensure!(
            description.contains(names_what),
            "{name}: the description does not name {names_what}: {description:?}"
        );
        let anchor = format!("#{}", name.to_lowercase());
        ensure!(
            annotations["runbook_url"]
                .as_str()
                .is_some_and(|u| u.ends_with(&format!("README.md{anchor}"))),
            "{name}: runbook_url is not README.md{anchor}: {}",
            annotations["runbook_url"]
        );
        ensure!(
            runbooks.contains(&format!("\n### {name}\n")),
            "README.md's Runbooks have no `### {name}`"
        );
    }
    // The tests test no alert the rules lack.
    for case in &cases {
        let name = case["alertname"].as_str().unwrap_or_default();
        ensure!(names.contains(&name), "a rule test of unknown alert {name}");
    }
    Ok(())
}

/// A promtool test that cannot fail would prove nothing: the rule tests with one alert's
/// threshold changed fail, naming that alert.
#[test]
fn promtool_test_fails_when_an_alerts_threshold_changes() -> anyhow::Result<()> {
    let dir = rule_files("threshold")?;
    let text = std::fs::read_to_string(dir.join("alerts.rules.yaml"))?;
    let changed = text.replacen("> 600", "> 6000", 1);
    ensure!(changed != text, "no `> 600` threshold in the rules");
    let mutated = dir.join("mutated");
    std::fs::create_dir_all(&mutated)?;
    std::fs::write(mutated.join("alerts.rules.yaml"), changed)?;
    std::fs::copy(
        dir.join("alerts.test.yaml"),
        mutated.join("alerts.test.yaml"),
    )?;
    let out = Command::new(promtool()?)
        .args(["test", "rules", "alerts.test.yaml"])
        .current_dir(&mutated)
        .output()?;
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && said.contains("CephOSDCephUnreachable"),
        "promtool test passed with a changed threshold:\n{said}"
    );
    Ok(())
}

/// Metric names of a PromQL expression: identifiers that are not functions, keywords,
/// aggregations, label names (inside `{}` or a `by (…)` list), durations or Grafana variables.
fn metric_names(expr: &str) -> BTreeSet<String> {
    // Keywords followed by a list of label names.
    const LABEL_LISTS: [&str; 6] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    // Other keywords, and aggregations (their `by (…)` may come before their parentheses).
    const KEYWORDS: [&str; 20] = [
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "atan2",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    let mut label_list_next = false;
    let skip_to = |from: usize, close: char| -> usize {
        let mut j = from + 1;
        let mut quote: Option<char> = None;
        while j < chars.len() {
            match (quote, chars[j]) {
                (Some(_), '\\') => j += 1,
                (Some(q), c) if c == q => quote = None,
                (None, c @ ('"' | '\'' | '`')) => quote = Some(c),
                (None, c) if c == close => return j + 1,
                _ => {}
            }
            j += 1;
        }
        j
    };
    while i < chars.len() {
        let c = chars[i];
        let word = |i: usize| {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_alphanumeric() || "_:".contains(chars[j])) {
                j += 1;
            }
            j
        };
        match c {
            '{' => i = skip_to(i, '}'),
            '[' => i = skip_to(i, ']'),
            '"' | '\'' | '`' => {
                let mut j = i + 1;
                while j < chars.len() && chars[j] != c {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                i = j + 1;
            }
            '(' if label_list_next => {
                label_list_next = false;
                i = skip_to(i, ')');
            }
            '$' => i = word(i + 1),
            c if c.is_ascii_digit() || c == '.' => i = word(i + 1),
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let end = word(i);
                let ident: String = chars[i..end].iter().collect();
                let next = chars[end..].iter().find(|c| !c.is_whitespace());
                if LABEL_LISTS.contains(&ident.as_str()) {
                    label_list_next = true;
                } else if !KEYWORDS.contains(&ident.as_str()) && next != Some(&'(') {
                    names.insert(ident);
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    names
}

#[test]
fn metric_names_are_read_from_promql_as_prometheus_would() {
    let got = metric_names(
        r#"histogram_quantile(0.9, sum by (le) (rate(a_bucket{x="}",y=~"$v"}[$__rate_interval]))) / on(job) group_left b > 0.8 * c offset 5m"#,
    );
    let want: BTreeSet<String> = ["a_bucket", "b", "c"].map(String::from).into();
    assert_eq!(got, want);
}

/// A series selector of the rule tests, `name{label="value",…}`: its name and label names.
fn series_name_and_labels(series: &str) -> (String, BTreeSet<String>) {
    let (name, rest) = series.split_once('{').unwrap_or((series, "}"));
    let labels = rest
        .trim_end_matches('}')
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(label, _)| label.trim().to_owned())
        .collect();
    (name.trim().to_owned(), labels)
}

/// What a scrape exports: each sample name with the label names its samples carry, plus the
/// sample names the `# TYPE` lines declare for families without a sample yet.
struct Exported {
    samples: BTreeMap<String, BTreeSet<String>>,
    declared: BTreeSet<String>,
}

impl Exported {
    fn parse(text: &str) -> Self {
        let mut samples: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut declared = BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut words = rest.split_whitespace();
                let (Some(family), Some(kind)) = (words.next(), words.next()) else {
                    continue;
                };
                let suffixes: &[&str] = match kind {
                    "counter" => &["_total"],
                    "histogram" => &["_bucket", "_sum", "_count"],
                    _ => &[""],
                };
                declared.extend(suffixes.iter().map(|s| format!("{family}{s}")));
            } else if !line.starts_with('#') && !line.trim().is_empty() {
                let selector = line.rsplit_once(' ').map_or(line, |(s, _)| s);
                let (name, labels) = series_name_and_labels(selector);
                samples.entry(name).or_default().extend(labels);
            }
        }
        Self { samples, declared }
    }

    fn has(&self, name: &str) -> bool {
        self.samples.contains_key(name) || self.declared.contains(name)
    }
}

/// `/metrics` on `port` once `until` holds for its text (within 3 minutes).
async fn scrape_until(
    s: &Scenario,
    port: u16,
    what: &str,
    until: impl Fn(&str) -> bool,
) -> anyhow::Result<String> {
    let until = &until;
    s.wait_until(what, Duration::from_mins(3), || async move {
        let Ok((200, body)) = http_get(port, "/metrics").await else {
            return Ok(None);
        };
        Ok(until(&body).then_some(body))
    })
    .await
}

/// Whether `text` has a sample of `name` for CephOSD `namespace/CR` (and `more` labels).
fn shows(text: &str, name: &str, namespace: &str, more: &str) -> bool {
    let selector = format!(r#"{name}{{namespace="{namespace}",cephosd="{CR}"{more}"#);
    text.lines().any(|l| l.starts_with(&selector))
}

/// The operator's /metrics with a CephOSD whose writes fail: a ResourceQuota of one pod
/// refuses its second OSD's pod (`ReconcileFailed`, `reconcile_errors_total`).
async fn scrape_of_failing_writes() -> anyhow::Result<String> {
    use k8s_openapi::api::core::v1::ResourceQuota;
    use kube::api::{Api, PostParams};
    let mut s = Scenario::create("monitoring").await?;
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    s.start_operator_with_args(
        &OperatorOptions::default(),
        &["--http-address", &address, "--metrics-auth=false"],
    )?;
    let hosts = s.hosts(["m1"]);
    s.create_converged(
        &cephosd(
            CR,
            storage(&hosts, &["/dev/sdb"]),
            "Host",
            fast_sample_template()?,
        ),
        keys(&hosts, &["/dev/sdb"]),
    )
    .await?;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.client.clone(), &s.namespace);
    let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "one-pod"},
        "spec": {"hard": {"pods": "1"}},
    }))?;
    quotas.create(&PostParams::default(), &quota).await?;
    s.wait_until(
        "the quota controller counts pods",
        Duration::from_mins(1),
        || async {
            let used = quotas.get("one-pod").await?.status.and_then(|st| st.used);
            Ok(used.unwrap_or_default().contains_key("pods").then_some(()))
        },
    )
    .await?;
    s.patch_spec(
        CR,
        serde_json::json!({"storage": storage(&hosts, &["/dev/sdb", "/dev/sdc"])}),
    )
    .await?;
    let ns = s.namespace.clone();
    let text = scrape_until(&s, port, "/metrics shows the refused creation", |text| {
        shows(
            text,
            "ceph_osd_operator_condition_since_timestamp_seconds",
            &ns,
            r#",type="ReconcileFailed""#,
        ) && shows(text, "ceph_osd_operator_budget_drains_waiting", &ns, "")
            && text.contains("ceph_osd_operator_reconcile_errors_total{")
    })
    .await?;
    // One process without leader election leads.
    ensure!(
        text.lines().any(|l| l == "ceph_osd_operator_leader 1"),
        "the only process does not say it leads:\n{text}"
    );
    s.destroy().await?;
    Ok(text)
}

/// The operator's /metrics while a gated rollout step holds `noout` on a real Ceph's OSDs.
async fn scrape_of_a_gated_step() -> anyhow::Result<String> {
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    let extra_args = ["--http-address", &address, "--metrics-auth=false"];
    let g = Gated::up_with(
        "monitoring-gate",
        &GatedOptions {
            extra_args: &extra_args,
            ..GatedOptions::default()
        },
    )
    .await?;
    let scraped = async {
        let from = g.ceph.elapsed();
        let (_, hash) =
            g.s.patch_template_metadata(CR, serde_json::json!({"labels": {"rev": "2"}}))
                .await?;
        let ns = g.s.namespace.clone();
        let text = scrape_until(&g.s, port, "/metrics shows a step's noout", |text| {
            shows(
                text,
                "ceph_osd_operator_ceph_noout_since_timestamp_seconds",
                &ns,
                "",
            ) && shows(text, "ceph_osd_operator_ceph_noout_limit_seconds", &ns, "")
        })
        .await?;
        // The rollout it scraped, finished and checked as every gated rollout is.
        g.s.wait_converged(CR, &g.want, &hash, ROLLOUT_DONE).await?;
        g.wait_gate_idle(ROLLOUT_DONE).await?;
        g.ceph.recording().check_one_host_at_a_time(from)?;
        g.bridge.check()?;
        g.check_pods_rolled_by_host().await?;
        Ok(text)
    }
    .await;
    g.down().await?;
    scraped
}

#[tokio::test]
async fn the_rule_tests_and_the_dashboard_use_only_series_the_operator_exports(
) -> anyhow::Result<()> {
    let failing = scrape_of_failing_writes().await?;
    let gated = Box::pin(scrape_of_a_gated_step()).await?;
    let text = format!("{failing}\n{gated}");
    let exported = Exported::parse(&text);

    // The rule tests' series: names exported, labels exactly those of the scraped samples.
    let tests = yaml(RULE_TESTS)?;
    let mut problems = Vec::new();
    let mut checked = BTreeSet::new();
    for series in tests["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["input_series"].as_array().into_iter().flatten())
        .filter_map(|s| s["series"].as_str())
    {
        let (name, labels) = series_name_and_labels(series);
        let Some(scraped) = exported.samples.get(&name) else {
            problems.push(format!("{name}: no sample in the operator's scrapes"));
            continue;
        };
        checked.insert(name.clone());
        let own: BTreeSet<&String> = labels
            .iter()
            .filter(|l| !TARGET_LABELS.contains(&l.as_str()) || scraped.contains(*l))
            .collect();
        let scraped: BTreeSet<&String> = scraped.iter().collect();
        if own != scraped {
            problems.push(format!(
                "{name}: the rule tests label it {own:?}, the operator {scraped:?}"
            ));
        }
    }
    eprintln!("[monitoring] series of the rule tests checked against the scrapes: {checked:?}");

    // Every metric the rules and the dashboard name.
    let rules = yaml(RULES)?;
    let dashboard: Value = serde_json::from_str(&read(DASHBOARD)?)
        .map_err(|e| anyhow::anyhow!("{DASHBOARD} is not valid JSON: {e}"))?;
    let mut expressions: Vec<(String, String)> = alerts(&rules)
        .iter()
        .map(|a| {
            let expr = a["expr"].as_str().unwrap_or_default().to_owned();
            (format!("alert {}", a["alert"]), expr)
        })
        .collect();
    for panel in dashboard["panels"].as_array().context("no panels")? {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().context("a target without expr")?;
            expressions.push((format!("panel {}", panel["title"]), expr.to_owned()));
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        // Grafana's `label_values(<selector>, <label>)`: the selector names the metric.
        if let Some(query) = variable["query"]["query"].as_str() {
            let selector = query
                .strip_prefix("label_values(")
                .and_then(|q| q.rsplit_once(','))
                .map_or(query, |(selector, _)| selector);
            expressions.push((
                format!("variable {}", variable["name"]),
                selector.to_owned(),
            ));
        }
    }
    let panels = expressions
        .iter()
        .filter(|(w, _)| w.starts_with("panel"))
        .count();
    ensure!(panels >= 10, "the dashboard has {panels} expressions");
    for (what, expr) in &expressions {
        let names = metric_names(expr);
        if names.is_empty() {
            problems.push(format!("{what}: names no metric: {expr}"));
        }
        for name in names {
            if !exported.has(&name) {
                problems.push(format!("{what}: {name} is not exported"));
            }
        }
    }
    ensure!(
        problems.is_empty(),
        "{}\n-- the scrapes:\n{text}",
        problems.join("\n")
    );
    Ok(())
}
