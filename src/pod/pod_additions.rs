//! The operator's additions to every OSD pod, from `templates/pod.yaml.j2`.
//!
//! Rendering the template and parsing its YAML for each of thousands of pods would cost more
//! than everything else the planner does, so each shape of the output (which of db, wal and
//! owner uid the template sees) is rendered and parsed once with a placeholder for every value,
//! and each pod's copy is filled in. The template uses every value as a whole scalar; a test
//! checks the filled copies against rendering directly.

use crate::crd::desired::DesiredOsd;
use crate::crd::CrdError;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use minijinja::{context, AutoEscape, Environment, UndefinedBehavior};
use serde_json::{Map, Value};
use std::sync::{Arc, LazyLock, OnceLock};

/// Everything about one pod that does not come from the template.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PodIdentity<'a> {
    pub cr_name: &'a str,
    pub namespace: &'a str,
    /// The CR's uid; without it (offline rendering) no ownerReference is added.
    pub owner_uid: Option<&'a str>,
    pub name: &'a str,
    pub template_hash: &'a TemplateHash,
    pub pod_state: PodState,
}

/// Why no pod can be built (or shown).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("failed to render the operator's pod additions: {0}")]
    Template(#[from] minijinja::Error),
    #[error("the built-in pod template does not compile: {0}")]
    Setup(#[source] Arc<minijinja::Error>),
    #[error("the built-in pod template does not compile: no template shape {0}")]
    NoShape(usize),
    /// The first rendering of a shape failed: every pod of that shape fails alike.
    #[error("the built-in pod template does not compile: {0}")]
    Shape(#[source] Arc<RenderError>),
    #[error("cannot derive the embedded Pod schema: {0}")]
    Schema(#[source] Box<CrdError>),
    #[error("the rendered pod additions are not valid YAML: {0}")]
    Yaml(#[source] Box<serde_saphyr::Error>),
    /// A built pod could not be written out as YAML.
    #[error("the rendered pod additions are not valid YAML: {0}")]
    Output(#[source] Box<serde_saphyr::SerializeError>),
    #[error("spec.podTemplate must be a mapping (a complete Pod), found {0}")]
    TemplateNotAMapping(&'static str),
    #[error("spec.podTemplate.{path}: {source}")]
    InvalidPod {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

const TEMPLATE_NAME: &str = "pod.yaml.j2";
const TEMPLATE_SOURCE: &str = include_str!("../../templates/pod.yaml.j2");

static ENVIRONMENT: LazyLock<Result<Environment<'static>, Arc<minijinja::Error>>> =
    LazyLock::new(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Every `{{ value }}` is emitted as a JSON literal, which is also valid YAML.
        env.set_auto_escape_callback(|_| AutoEscape::Json);
        env.add_template(TEMPLATE_NAME, TEMPLATE_SOURCE)
            .map_err(Arc::new)?;
        Ok(env)
    });

/// The values the template reads.
struct Values<'a> {
    name: &'a str,
    namespace: &'a str,
    cr_name: &'a str,
    owner_uid: Option<&'a str>,
    owner_label: &'a str,
    template_hash: &'a str,
    pod_state: &'a str,
    host: &'a str,
    data: &'a str,
    db: Option<&'a str>,
    wal: Option<&'a str>,
}

impl<'a> Values<'a> {
    fn of(osd: &'a DesiredOsd, identity: &PodIdentity<'a>, owner_label: &'a str) -> Self {
        Self {
            name: identity.name,
            namespace: identity.namespace,
            cr_name: identity.cr_name,
            owner_uid: identity.owner_uid,
            owner_label,
            template_hash: identity.template_hash.as_str(),
            pod_state: identity.pod_state.as_str(),
            host: &osd.key.host,
            data: &osd.key.data,
            db: osd.db.as_deref(),
            wal: osd.wal.as_deref(),
        }
    }

    /// Which optional values the template's conditions see (Jinja: an empty string is false).
    fn shape(&self) -> usize {
        let present = |v: Option<&str>| usize::from(v.is_some_and(|v| !v.is_empty()));
        present(self.db) | present(self.wal) << 1 | present(self.owner_uid) << 2
    }

    /// Each value by the name of its placeholder (the name between NUL characters).
    fn by_placeholder(&self) -> [(&'static str, &str); 11] {
        [
            ("name", self.name),
            ("namespace", self.namespace),
            ("cr_name", self.cr_name),
            ("owner_uid", self.owner_uid.unwrap_or_default()),
            ("owner_label", self.owner_label),
            ("template_hash", self.template_hash),
            ("pod_state", self.pod_state),
            ("host", self.host),
            ("data", self.data),
            ("db", self.db.unwrap_or_default()),
            ("wal", self.wal.unwrap_or_default()),
        ]
    }
}

/// The additions for one pod (`pod`: merged over the template; `containerEnv`: appended to
/// every container's env).
pub(crate) fn pod_additions(
    osd: &DesiredOsd,
    identity: &PodIdentity<'_>,
) -> Result<Map<String, Value>, RenderError> {
    let owner_label = crate::labels::owner_label_value(identity.cr_name);
    let values = Values::of(osd, identity, &owner_label);
    let mut additions = with_placeholders(values.shape())?.clone();
    let by_placeholder = values.by_placeholder();
    for value in additions.values_mut() {
        fill(value, &by_placeholder);
    }
    Ok(additions)
}

/// The additions of `shape`, rendered once, with placeholders.
fn with_placeholders(shape: usize) -> Result<&'static Map<String, Value>, RenderError> {
    type Shape = Result<Map<String, Value>, Arc<RenderError>>;
    static SHAPES: [OnceLock<Shape>; 8] = [const { OnceLock::new() }; 8];
    let cell = SHAPES.get(shape).ok_or(RenderError::NoShape(shape))?;
    cell.get_or_init(|| {
        let some =
            |bit: usize, placeholder: &'static str| (shape & bit != 0).then_some(placeholder);
        render(&Values {
            name: "\0name\0",
            namespace: "\0namespace\0",
            cr_name: "\0cr_name\0",
            owner_uid: some(4, "\0owner_uid\0"),
            owner_label: "\0owner_label\0",
            template_hash: "\0template_hash\0",
            pod_state: "\0pod_state\0",
            host: "\0host\0",
            data: "\0data\0",
            db: some(1, "\0db\0"),
            wal: some(2, "\0wal\0"),
        })
        .map_err(Arc::new)
    })
    .as_ref()
    .map_err(|e| RenderError::Shape(e.clone()))
}

/// Replaces the placeholders in every string of `value`, in one pass: a value put in is never
/// read again (a host spelled like a placeholder stays that host).
fn fill(value: &mut Value, by_placeholder: &[(&str, &str)]) {
    match value {
        Value::String(s) if s.contains('\0') => {
            let mut filled = String::with_capacity(s.len());
            // The template's own text has no NUL: every second part is a placeholder's name.
            for (i, part) in s.split('\0').enumerate() {
                if i % 2 == 0 {
                    filled.push_str(part);
                } else {
                    let with = by_placeholder
                        .iter()
                        .find(|(name, _)| *name == part)
                        .map_or(part, |(_, with)| with);
                    filled.push_str(with);
                }
            }
            *s = filled;
        }
        Value::Array(items) => items.iter_mut().for_each(|v| fill(v, by_placeholder)),
        Value::Object(map) => map.values_mut().for_each(|v| fill(v, by_placeholder)),
        _ => {}
    }
}

/// Renders the template with `values` and parses it.
fn render(values: &Values<'_>) -> Result<Map<String, Value>, RenderError> {
    let env = ENVIRONMENT
        .as_ref()
        .map_err(|e| RenderError::Setup(e.clone()))?;
    let text = env.get_template(TEMPLATE_NAME)?.render(context! {
        name => values.name,
        namespace => values.namespace,
        cr_name => values.cr_name,
        owner_uid => values.owner_uid,
        owner_label => values.owner_label,
        template_hash => values.template_hash,
        pod_state => values.pod_state,
        host => values.host,
        data => values.data,
        db => values.db,
        wal => values.wal,
    })?;
    serde_saphyr::from_str(&text).map_err(|e| RenderError::Yaml(Box::new(e)))
}

#[cfg(test)]
mod tests;
