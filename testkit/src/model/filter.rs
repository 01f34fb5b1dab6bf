//! Selectors and scopes (docs/semantics.md §3.1, §3.6), evaluated by the
//! model's own code, not the engine's, and the verdict on a change.

use std::fmt;

use herald::event::ChangeKind;
use herald::selector::KeyScope;
use herald::{EventKind, Object, WatchRequest};

/// One label requirement, in the model's own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelReq {
    /// `k=v`: the label exists and equals `v`.
    Eq(String, String),
    /// `k==v`: the same as `k=v`.
    DoubleEq(String, String),
    /// `k!=v`: the label is missing or differs from `v`.
    NotEq(String, String),
    /// `k in (a,b)`: the label exists and is one of the values.
    In(String, Vec<String>),
    /// `k notin (a,b)`: the label is missing or is none of the values.
    NotIn(String, Vec<String>),
    /// `k`: the label exists.
    Exists(String),
    /// `!k`: the label does not exist.
    NotExists(String),
}

impl LabelReq {
    /// Kubernetes label-selector semantics (docs/semantics.md §3.6).
    pub fn matches(&self, o: &Object) -> bool {
        match self {
            LabelReq::Eq(k, v) | LabelReq::DoubleEq(k, v) => o.label(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => o.label(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => o.label(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => !o.label(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => o.label(k).is_some(),
            LabelReq::NotExists(k) => o.label(k).is_none(),
        }
    }

    /// The Kubernetes syntax for this requirement.
    pub fn render(&self) -> String {
        match self {
            LabelReq::Eq(k, v) => format!("{k}={v}"),
            LabelReq::DoubleEq(k, v) => format!("{k}=={v}"),
            LabelReq::NotEq(k, v) => format!("{k}!={v}"),
            LabelReq::In(k, vs) => format!("{k} in ({})", vs.join(",")),
            LabelReq::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
            LabelReq::Exists(k) => k.clone(),
            LabelReq::NotExists(k) => format!("!{k}"),
        }
    }
}

/// One field requirement, in the model's own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldReq {
    /// `f=v`.
    Eq(String, String),
    /// `f==v`: the same as `f=v`.
    DoubleEq(String, String),
    /// `f!=v`.
    NotEq(String, String),
}

/// The value of a named field (docs/semantics.md §1.1): `metadata.name` and
/// `metadata.namespace` come from the key; a missing field is the empty
/// string, as in Kubernetes.
pub fn field_value<'a>(o: &'a Object, field: &str) -> &'a str {
    match field {
        "metadata.name" => o.name(),
        "metadata.namespace" => o.namespace(),
        other => o.field(other).unwrap_or(""),
    }
}

impl FieldReq {
    /// Kubernetes field-selector semantics (docs/semantics.md §3.6).
    pub fn matches(&self, o: &Object) -> bool {
        match self {
            FieldReq::Eq(f, v) | FieldReq::DoubleEq(f, v) => field_value(o, f) == v,
            FieldReq::NotEq(f, v) => field_value(o, f) != v,
        }
    }

    /// The Kubernetes syntax for this requirement.
    pub fn render(&self) -> String {
        match self {
            FieldReq::Eq(f, v) => format!("{f}={v}"),
            FieldReq::DoubleEq(f, v) => format!("{f}=={v}"),
            FieldReq::NotEq(f, v) => format!("{f}!={v}"),
        }
    }
}

/// Which keys a watch covers (docs/semantics.md §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every key.
    All,
    /// Exactly this key.
    Exact(String),
    /// Keys `prefix/...` (recursive).
    Prefix(String),
}

impl Scope {
    /// Whether `key` is in scope.
    pub fn contains(&self, key: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Exact(k) => key == k,
            Scope::Prefix(p) => key.starts_with(&format!("{p}/")),
        }
    }

    fn to_engine(&self) -> KeyScope {
        match self {
            Scope::All => KeyScope::All,
            Scope::Exact(k) => KeyScope::exact(k),
            Scope::Prefix(p) => KeyScope::prefix(p),
        }
    }
}

/// A watcher's filter: scope AND every label requirement AND every field
/// requirement.
#[derive(Clone, PartialEq, Eq)]
pub struct Filter {
    /// Key scope.
    pub scope: Scope,
    /// Label requirements (comma = AND).
    pub labels: Vec<LabelReq>,
    /// Field requirements (comma = AND).
    pub fields: Vec<FieldReq>,
}

impl Filter {
    /// Admits every object.
    pub fn everything() -> Filter {
        Filter {
            scope: Scope::All,
            labels: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// Whether the filter admits `o` (docs/semantics.md §3.5).
    pub fn admits(&self, o: &Object) -> bool {
        self.scope.contains(o.key())
            && self.labels.iter().all(|r| r.matches(o))
            && self.fields.iter().all(|r| r.matches(o))
    }

    /// The label selector in Kubernetes syntax.
    pub fn label_string(&self) -> String {
        let v: Vec<String> = self.labels.iter().map(LabelReq::render).collect();
        v.join(",")
    }

    /// The field selector in Kubernetes syntax.
    pub fn field_string(&self) -> String {
        let v: Vec<String> = self.fields.iter().map(FieldReq::render).collect();
        v.join(",")
    }

    /// The engine request for this filter (selectors go through the
    /// engine's parser from their string form).
    pub fn request(&self) -> WatchRequest {
        WatchRequest::new()
            .scope(self.scope.to_engine())
            .labels(self.label_string().parse().expect("model label selector"))
            .fields(self.field_string().parse().expect("model field selector"))
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match &self.scope {
            Scope::All => "*".to_owned(),
            Scope::Exact(k) => k.clone(),
            Scope::Prefix(p) => format!("{p}/"),
        };
        write!(
            f,
            "[{scope} l:{:?} f:{:?}]",
            self.label_string(),
            self.field_string()
        )
    }
}

/// docs/semantics.md §3.5, the filtering rule, on the current and previous
/// object: cur passes (and the change is not a deletion) and prev passes ->
/// Modified; cur passes, prev does not (or none) -> Added; prev passes, cur
/// does not -> Deleted carrying prev; neither -> nothing. Returns the kind and
/// the object the watcher is shown.
pub fn verdict<'a>(
    f: &Filter,
    kind: ChangeKind,
    obj: &'a Object,
    prev: Option<&'a Object>,
) -> Option<(EventKind, &'a Object)> {
    let cur = kind != ChangeKind::Deleted && f.admits(obj);
    let old = match prev {
        Some(p) => f.admits(p),
        None => false,
    };
    match (cur, old) {
        (true, true) => Some((EventKind::Modified, obj)),
        (true, false) => Some((EventKind::Added, obj)),
        (false, true) => prev.map(|p| (EventKind::Deleted, p)),
        (false, false) => None,
    }
}
