//! Pure path and body rewriting between the core API (`/api/v1/...pods...`, `apiVersion: v1`)
//! and the test-only custom resource group that actually stores pods.

use serde_json::{json, Value};

/// The API group that stores Pods on the apiextensions-apiserver.
pub const POD_GROUP: &str = "core.testing.local";
/// `group/version` of the stored Pods.
pub const POD_API_VERSION: &str = "core.testing.local/v1";
/// Finalizer the proxy adds on create; the test kubelet removes it after the grace period.
pub const KUBELET_FINALIZER: &str = "testing.local/kubelet";

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /api`: static `APIVersions`.
    ApiVersions,
    /// `GET /api/v1`: static `APIResourceList`.
    CoreResources,
    /// `GET /apis`: the group list, which this API server does not serve itself.
    ApiGroups,
    /// `GET /openapi/v3`: the upstream index plus `api/v1`.
    OpenApiV3Index,
    /// `GET /openapi/v3/api/v1`: the Pod CRD's OpenAPI document, as the core group's.
    OpenApiV3Core,
    /// A pods path, mapped to this upstream path (no query).
    Pods(PodsPath),
    /// Some other `/api/v1/...` resource: not served here.
    CoreNotFound,
    /// Everything else goes upstream unchanged.
    PassThrough,
}

/// A pods path and its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodsPath {
    /// The upstream path under `/apis/core.testing.local/v1`.
    pub upstream: String,
    /// Namespace, when the path names one.
    pub namespace: Option<String>,
    /// Pod name, when the path names one.
    pub name: Option<String>,
    /// Subresource (`status`), when the path names one.
    pub subresource: Option<String>,
    /// The legacy `/watch/` prefix was used.
    pub watch_prefix: bool,
}

impl PodsPath {
    /// The path names the pods collection of a namespace (POST creates here).
    pub fn is_namespaced_collection(&self) -> bool {
        self.namespace.is_some() && self.name.is_none()
    }
}

/// Classifies a request path.
pub fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    match trimmed {
        "/api" => return Route::ApiVersions,
        "/api/v1" => return Route::CoreResources,
        "/apis" => return Route::ApiGroups,
        "/openapi/v3" => return Route::OpenApiV3Index,
        "/openapi/v3/api/v1" => return Route::OpenApiV3Core,
        _ => {}
    }
    let Some(rest) = trimmed.strip_prefix("/api/v1/") else {
        return Route::PassThrough;
    };
    let (watch_prefix, rest) = match rest.strip_prefix("watch/") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let segs: Vec<&str> = rest.split('/').collect();
    let (namespace, tail) = match segs.as_slice() {
        ["pods", tail @ ..] => (None, tail),
        ["namespaces", ns, "pods", tail @ ..] => (Some((*ns).to_string()), tail),
        _ => return Route::CoreNotFound,
    };
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some((*name).to_string()), None),
        [name, sub] => (Some((*name).to_string()), Some((*sub).to_string())),
        _ => return Route::CoreNotFound,
    };
    if namespace.is_none() && name.is_some() {
        return Route::CoreNotFound;
    }
    let prefix = if watch_prefix { "watch/" } else { "" };
    Route::Pods(PodsPath {
        upstream: format!("/apis/{POD_API_VERSION}/{prefix}{rest}"),
        namespace,
        name,
        subresource,
        watch_prefix,
    })
}

/// True when the query asks for a watch (`watch=true` / `watch=1`).
pub fn query_is_watch(query: Option<&str>) -> bool {
    query_param(query, "watch").is_some_and(|v| v == "true" || v == "1")
}

/// The value of one query parameter (not URL-decoded; enough for booleans and numbers).
pub fn query_param<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then_some(v)
    })
}

fn is_pod_kind(kind: Option<&str>) -> bool {
    matches!(kind, Some("Pod" | "PodList"))
}

fn set_str(obj: &mut Value, key: &str, value: &str) {
    if let Some(map) = obj.as_object_mut() {
        map.insert(key.to_string(), Value::String(value.to_string()));
    }
}

fn map_managed_fields(obj: &mut Value, from: &str, to: &str) {
    if let Some(entries) = obj
        .pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut)
    {
        for e in entries {
            if e.get("apiVersion").and_then(Value::as_str) == Some(from) {
                set_str(e, "apiVersion", to);
            }
        }
    }
}

/// Client → server: `v1` Pod/PodList bodies become `core.testing.local/v1`.
pub fn request_value(v: &mut Value) {
    let kind = v.get("kind").and_then(Value::as_str).map(str::to_string);
    if v.get("apiVersion").and_then(Value::as_str) == Some("v1") && is_pod_kind(kind.as_deref()) {
        set_str(v, "apiVersion", POD_API_VERSION);
    }
    map_managed_fields(v, "v1", POD_API_VERSION);
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            request_value(item);
        }
    }
}

/// Server → client: `core.testing.local/v1` becomes `v1` in objects, lists, tables, watch
/// events, and `Status` messages read like the real API's.
pub fn response_value(v: &mut Value) {
    if v.get("apiVersion").and_then(Value::as_str) == Some(POD_API_VERSION) {
        set_str(v, "apiVersion", "v1");
    }
    map_managed_fields(v, POD_API_VERSION, "v1");
    if v.get("kind").and_then(Value::as_str) == Some("Status") {
        if let Some(msg) = v.get("message").and_then(Value::as_str) {
            let m = msg.replace(&format!("pods.{POD_GROUP}"), "pods");
            set_str(v, "message", &m);
        }
        if let Some(details) = v.get_mut("details") {
            if details.get("group").and_then(Value::as_str) == Some(POD_GROUP) {
                set_str(details, "group", "");
            }
        }
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            response_value(item);
        }
    }
    // Table rows carrying full objects.
    if let Some(rows) = v.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(obj) = row.get_mut("object") {
                response_value(obj);
            }
        }
    }
    // Watch event {"type": ..., "object": {...}}.
    if v.get("type").is_some() {
        if let Some(obj) = v.get_mut("object") {
            response_value(obj);
        }
    }
}

/// Rewrites a JSON body with `f`; non-JSON bodies come back unchanged.
pub fn rewrite_json(body: &[u8], f: impl FnOnce(&mut Value)) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    f(&mut v);
    serde_json::to_vec(&v).ok()
}

/// Adds the kubelet finalizer to a pod being created (idempotent).
pub fn add_kubelet_finalizer(pod: &mut Value) {
    let Some(obj) = pod.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(meta) = meta else {
        return;
    };
    let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
    if fins.is_null() {
        *fins = json!([]);
    }
    if let Some(list) = fins.as_array_mut() {
        if !list.iter().any(|f| f.as_str() == Some(KUBELET_FINALIZER)) {
            list.push(json!(KUBELET_FINALIZER));
        }
    }
}

/// Splits complete lines off a watch-stream buffer, leaving a partial tail in `buf`.
pub fn take_lines(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
        let rest = buf.split_off(pos + 1);
        let mut line = std::mem::replace(buf, rest);
        line.pop();
        out.push(line);
    }
    out
}

/// Rewrites one watch-stream line (a JSON event); blank or unparsable lines pass unchanged.
pub fn watch_line(line: &[u8]) -> Vec<u8> {
    let mut out = if line.iter().all(u8::is_ascii_whitespace) {
        line.to_vec()
    } else {
        rewrite_json(line, response_value).unwrap_or_else(|| line.to_vec())
    };
    out.push(b'\n');
    out
}

/// `/api`: the legacy core group versions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

/// `/api/v1`: only pods (and their status) are served.
pub fn core_resources() -> Value {
    json!({
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["po"], "categories": ["all"]
            },
            {
                "name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod",
                "verbs": ["get", "patch", "update"]
            }
        ]
    })
}

/// `/apis` from the CRD list (`CustomResourceDefinitionList` JSON): every group with its served
/// versions (storage version preferred), plus `apiextensions.k8s.io` itself.
pub fn api_group_list(crds: &Value) -> Value {
    let mut groups: Vec<(String, Vec<String>, Option<String>)> = vec![(
        "apiextensions.k8s.io".into(),
        vec!["v1".into()],
        Some("v1".into()),
    )];
    let items = crds
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for crd in &items {
        let Some(group) = crd.pointer("/spec/group").and_then(Value::as_str) else {
            continue;
        };
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let idx = match groups.iter().position(|g| g.0 == group) {
            Some(i) => i,
            None => {
                groups.push((group.to_string(), Vec::new(), None));
                groups.len() - 1
            }
        };
        for v in versions
            .iter()
            .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        {
            let Some(name) = v.get("name").and_then(Value::as_str) else {
                continue;
            };
            let entry = &mut groups[idx];
            if !entry.1.iter().any(|x| x == name) {
                entry.1.push(name.to_string());
            }
            if v.get("storage").and_then(Value::as_bool) == Some(true) {
                entry.2 = Some(name.to_string());
            }
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|(name, versions, preferred)| {
            let preferred = preferred.unwrap_or_else(|| versions[0].clone());
            json!({
                "name": name,
                "versions": versions.iter().map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v})).collect::<Vec<_>>(),
                "preferredVersion": {"groupVersion": format!("{name}/{preferred}"), "version": preferred},
            })
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// Upstream path of the Pod CRD's OpenAPI v3 document.
pub const POD_OPENAPI_V3: &str = "/openapi/v3/apis/core.testing.local/v1";

/// Adds `api/v1` to an `/openapi/v3` index, pointing at the proxy's core document (with the
/// Pod CRD document's hash, so clients' caches follow its changes).
pub fn openapi_index_add_core(index: &mut Value) {
    let key = POD_OPENAPI_V3.trim_start_matches("/openapi/v3/");
    let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(url) = paths
        .get(key)
        .and_then(|e| e.get("serverRelativeURL"))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    let hash = url
        .split_once('?')
        .map(|(_, q)| format!("?{q}"))
        .unwrap_or_default();
    paths.insert(
        "api/v1".into(),
        json!({"serverRelativeURL": format!("/openapi/v3/api/v1{hash}")}),
    );
}

/// The Pod CRD's OpenAPI v3 document made to describe core `v1` pods: paths under `/api/v1`
/// and `x-kubernetes-group-version-kind` with the empty (core) group.
pub fn openapi_core(doc: &mut Value) {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    if k == "x-kubernetes-group-version-kind" {
                        let gvks: Vec<&mut Value> = match child {
                            Value::Array(a) => a.iter_mut().collect(),
                            other => vec![other],
                        };
                        for gvk in gvks {
                            if gvk.get("group").and_then(Value::as_str) == Some(POD_GROUP) {
                                set_str(gvk, "group", "");
                            }
                        }
                    } else {
                        walk(child);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        let old = std::mem::take(paths);
        for (k, v) in old {
            let k = k.replacen(&format!("/apis/{POD_API_VERSION}/"), "/api/v1/", 1);
            paths.insert(k, v);
        }
    }
    walk(doc);
}

/// A `Status` failure body like the API server's.
pub fn status_failure(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods(p: &str) -> PodsPath {
        match route(p) {
            Route::Pods(pp) => pp,
            other => panic!("{p}: {other:?}"),
        }
    }

    #[test]
    fn routes() {
        assert_eq!(route("/api"), Route::ApiVersions);
        assert_eq!(route("/api/"), Route::ApiVersions);
        assert_eq!(route("/api/v1"), Route::CoreResources);
        assert_eq!(route("/apis"), Route::ApiGroups);
        assert_eq!(route("/apis/"), Route::ApiGroups);
        assert_eq!(route("/apis/coordination.k8s.io"), Route::PassThrough);
        assert_eq!(
            route("/apis/core.testing.local/v1/pods"),
            Route::PassThrough
        );
        assert_eq!(route("/healthz"), Route::PassThrough);
        assert_eq!(
            route("/api/v1/namespaces/x/configmaps"),
            Route::CoreNotFound
        );
        assert_eq!(route("/api/v1/namespaces"), Route::CoreNotFound);
        assert_eq!(route("/api/v1/pods/x"), Route::CoreNotFound);

        let all = pods("/api/v1/pods");
        assert_eq!(all.upstream, "/apis/core.testing.local/v1/pods");
        assert_eq!(all.namespace, None);

        let coll = pods("/api/v1/namespaces/ceph/pods");
        assert_eq!(
            coll.upstream,
            "/apis/core.testing.local/v1/namespaces/ceph/pods"
        );
        assert!(coll.is_namespaced_collection());

        let st = pods("/api/v1/namespaces/ceph/pods/osd-1/status");
        assert_eq!(
            st.upstream,
            "/apis/core.testing.local/v1/namespaces/ceph/pods/osd-1/status"
        );
        assert_eq!(st.name.as_deref(), Some("osd-1"));
        assert_eq!(st.subresource.as_deref(), Some("status"));
        assert!(!st.is_namespaced_collection());

        let w = pods("/api/v1/watch/namespaces/ceph/pods");
        assert!(w.watch_prefix);
        assert_eq!(
            w.upstream,
            "/apis/core.testing.local/v1/watch/namespaces/ceph/pods"
        );
    }

    #[test]
    fn queries() {
        assert!(query_is_watch(Some("labelSelector=a%3Db&watch=true")));
        assert!(query_is_watch(Some("watch=1")));
        assert!(!query_is_watch(Some("watch=false")));
        assert!(!query_is_watch(None));
        assert_eq!(
            query_param(Some("a=1&gracePeriodSeconds=0"), "gracePeriodSeconds"),
            Some("0")
        );
    }

    #[test]
    fn request_and_response_round_trip() {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a",
            "ownerReferences": [{"apiVersion": "ceph.example/v1", "kind": "CephOSD"}]}});
        request_value(&mut pod);
        assert_eq!(pod["apiVersion"], POD_API_VERSION);
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["apiVersion"],
            "ceph.example/v1"
        );
        response_value(&mut pod);
        assert_eq!(pod["apiVersion"], "v1");

        // Other kinds are left alone.
        let mut opts = json!({"apiVersion": "v1", "kind": "DeleteOptions"});
        request_value(&mut opts);
        assert_eq!(opts["apiVersion"], "v1");

        let mut list = json!({"apiVersion": POD_API_VERSION, "kind": "PodList",
            "items": [{"apiVersion": POD_API_VERSION, "kind": "Pod",
                "metadata": {"managedFields": [{"apiVersion": POD_API_VERSION, "manager": "m"}]}}]});
        response_value(&mut list);
        assert_eq!(list["apiVersion"], "v1");
        assert_eq!(list["items"][0]["apiVersion"], "v1");
        assert_eq!(
            list["items"][0]["metadata"]["managedFields"][0]["apiVersion"],
            "v1"
        );

        let mut ev =
            json!({"type": "ADDED", "object": {"apiVersion": POD_API_VERSION, "kind": "Pod"}});
        response_value(&mut ev);
        assert_eq!(ev["object"]["apiVersion"], "v1");

        let mut status = json!({"kind": "Status", "apiVersion": "v1",
            "message": "pods.core.testing.local \"x\" not found",
            "details": {"name": "x", "group": POD_GROUP, "kind": "pods"}});
        response_value(&mut status);
        assert_eq!(status["message"], "pods \"x\" not found");
        assert_eq!(status["details"]["group"], "");
    }

    #[test]
    fn group_list_from_crds() {
        let crds = json!({"items": [
            {"spec": {"group": "ceph.example", "versions": [
                {"name": "v1alpha1", "served": true, "storage": false},
                {"name": "v1", "served": true, "storage": true},
                {"name": "v0", "served": false, "storage": false}]}},
            {"spec": {"group": "ceph.example", "versions": [{"name": "v1", "served": true, "storage": true}]}},
            {"spec": {"group": "core.testing.local", "versions": [{"name": "v1", "served": true, "storage": true}]}},
        ]});
        let list = api_group_list(&crds);
        let groups = list["groups"].as_array().expect("groups");
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[0]["name"], "apiextensions.k8s.io");
        assert_eq!(groups[1]["name"], "ceph.example");
        assert_eq!(groups[1]["versions"].as_array().map(Vec::len), Some(2));
        assert_eq!(groups[1]["preferredVersion"]["version"], "v1");
    }

    #[test]
    fn openapi_for_core_pods() {
        let mut index = json!({"paths": {
            "apis/core.testing.local/v1": {"serverRelativeURL": "/openapi/v3/apis/core.testing.local/v1?hash=AB"},
            "version": {"serverRelativeURL": "/openapi/v3/version?hash=CD"}}});
        openapi_index_add_core(&mut index);
        assert_eq!(
            index["paths"]["api/v1"]["serverRelativeURL"],
            "/openapi/v3/api/v1?hash=AB"
        );

        let mut doc = json!({
            "paths": {"/apis/core.testing.local/v1/namespaces/{namespace}/pods": {"get": {
                "x-kubernetes-group-version-kind": {"group": POD_GROUP, "version": "v1", "kind": "Pod"}}}},
            "components": {"schemas": {"local.testing.core.v1.Pod": {
                "x-kubernetes-group-version-kind": [{"group": POD_GROUP, "version": "v1", "kind": "Pod"}]}}}});
        openapi_core(&mut doc);
        let path = &doc["paths"]["/api/v1/namespaces/{namespace}/pods"];
        assert_eq!(path["get"]["x-kubernetes-group-version-kind"]["group"], "");
        assert_eq!(
            doc["components"]["schemas"]["local.testing.core.v1.Pod"]
                ["x-kubernetes-group-version-kind"][0]["group"],
            ""
        );
    }

    #[test]
    fn finalizer_is_added_once() {
        let mut pod = json!({"metadata": {"name": "a"}});
        add_kubelet_finalizer(&mut pod);
        add_kubelet_finalizer(&mut pod);
        assert_eq!(pod["metadata"]["finalizers"], json!([KUBELET_FINALIZER]));
        let mut pod = json!({"metadata": {"finalizers": ["x"]}});
        add_kubelet_finalizer(&mut pod);
        assert_eq!(
            pod["metadata"]["finalizers"],
            json!(["x", KUBELET_FINALIZER])
        );
        let mut pod = json!({});
        add_kubelet_finalizer(&mut pod);
        assert_eq!(pod["metadata"]["finalizers"], json!([KUBELET_FINALIZER]));
    }

    #[test]
    fn watch_lines_split_across_chunks() {
        let mut buf = Vec::new();
        buf.extend_from_slice(b"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"core.testing.local/v1\"}}\n{\"type\":");
        let lines = take_lines(&mut buf);
        assert_eq!(lines.len(), 1);
        assert_eq!(buf, b"{\"type\":");
        let out = watch_line(&lines[0]);
        assert!(out.ends_with(b"\n"));
        let v: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["object"]["apiVersion"], "v1");
        buf.extend_from_slice(b"\"DELETED\",\"object\":{}}\n");
        assert_eq!(take_lines(&mut buf).len(), 1);
        assert!(buf.is_empty());
    }
}
