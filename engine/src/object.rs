//! Objects: what a change carries and what filters read.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use crate::rv::ResourceVersion;

/// The field name under which an object's name is selectable.
pub const FIELD_NAME: &str = "metadata.name";
/// The field name under which an object's namespace is selectable.
pub const FIELD_NAMESPACE: &str = "metadata.namespace";

/// One stored object: namespace, name, labels, named fields and an opaque
/// payload that Herald never parses.
///
/// Cloning is cheap: an `Object` is a reference-counted handle, and clones
/// share one allocation (the payload is a [`Bytes`], itself shared).
///
/// An object's key is `namespace/name`, or `name` for a cluster-scoped object
/// (empty namespace). Watches select on keys (see [`KeyScope`](crate::KeyScope)).
///
/// # Names
///
/// A key is one path, so its parts must not contain its separator:
/// namespace `a/b` with name `c` and namespace `a` with name `b/c` would
/// both be `a/b/c`. The [`Writer`](crate::Writer) refuses an object whose
/// name, or non-empty namespace, is not a valid path segment, with
/// [`WriteError::InvalidName`](crate::WriteError::InvalidName): Kubernetes'
/// rule for every object name (`path.IsValidPathSegmentName`): not empty,
/// not `.` or `..`, no `/` and no `%`. Herald validates rather than
/// escapes: a key stays the one Kubernetes stores (`namespace/name`),
/// prefixes and continue tokens stay readable, and such a name can never
/// come from an apiserver anyway. The stricter rules (DNS labels for
/// namespaces, subdomains for most names) are the API server's, per
/// resource type; the cache needs only keys that cannot collide. Building
/// an object never fails; the writer is the boundary.
///
/// ```
/// use herald::Object;
/// let pod = Object::builder("default", "web-1")
///     .label("app", "web")
///     .field("spec.nodeName", "node-7")
///     .payload("{\"kind\":\"Pod\"}")
///     .build();
/// assert_eq!(pod.key(), "default/web-1");
/// assert_eq!(pod.label("app"), Some("web"));
/// assert_eq!(pod.field("spec.nodeName"), Some("node-7"));
/// assert_eq!(pod.field("metadata.name"), Some("web-1"));
/// assert_eq!(&pod.payload()[..], b"{\"kind\":\"Pod\"}");
/// ```
#[derive(Clone)]
pub struct Object {
    inner: Arc<Inner>,
}

struct Inner {
    /// `namespace/name` or `name`; `name` is `key[name_at..]`.
    key: Box<str>,
    name_at: usize,
    /// Sorted by key, keys unique.
    labels: Box<[(Box<str>, Box<str>)]>,
    /// Sorted by name, names unique. Excludes the implicit metadata fields.
    fields: Box<[(Box<str>, Box<str>)]>,
    payload: Bytes,
}

impl Object {
    /// Starts building an object. An empty `namespace` makes it
    /// cluster-scoped.
    ///
    /// ```
    /// # use herald::Object;
    /// let node = Object::builder("", "node-1").build();
    /// assert_eq!(node.key(), "node-1");
    /// assert_eq!(node.namespace(), "");
    /// ```
    pub fn builder(namespace: &str, name: &str) -> ObjectBuilder {
        // The key in one allocation of its exact size (`build` boxes it
        // without copying).
        let name_at = if namespace.is_empty() {
            0
        } else {
            namespace.len() + 1
        };
        let mut key = String::with_capacity(name_at + name.len());
        if name_at > 0 {
            key.push_str(namespace);
            key.push('/');
        }
        key.push_str(name);
        ObjectBuilder {
            key,
            name_at,
            labels: Vec::new(),
            fields: Vec::new(),
            payload: Bytes::new(),
        }
    }

    /// The object's key: `namespace/name`, or `name` when cluster-scoped.
    ///
    /// ```
    /// # use herald::Object;
    /// assert_eq!(Object::builder("ns", "a").build().key(), "ns/a");
    /// ```
    pub fn key(&self) -> &str {
        &self.inner.key
    }

    /// The namespace (empty for cluster-scoped objects).
    ///
    /// ```
    /// # use herald::Object;
    /// assert_eq!(Object::builder("ns", "a").build().namespace(), "ns");
    /// ```
    pub fn namespace(&self) -> &str {
        let at = self.inner.name_at;
        if at == 0 {
            ""
        } else {
            &self.inner.key[..at - 1]
        }
    }

    /// The name.
    ///
    /// ```
    /// # use herald::Object;
    /// assert_eq!(Object::builder("ns", "a").build().name(), "a");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.key[self.inner.name_at..]
    }

    /// The value of label `key`, if set.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").label("tier", "db").build();
    /// assert_eq!(o.label("tier"), Some("db"));
    /// assert_eq!(o.label("app"), None);
    /// ```
    pub fn label(&self, key: &str) -> Option<&str> {
        lookup(&self.inner.labels, key)
    }

    /// All labels, sorted by key.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").label("b", "2").label("a", "1").build();
    /// assert_eq!(o.labels().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
    /// ```
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.inner.labels.iter().map(|(k, v)| (&**k, &**v))
    }

    /// The value of the named field, if the object has it. `metadata.name`
    /// and `metadata.namespace` are always present.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").field("status.phase", "Running").build();
    /// assert_eq!(o.field("status.phase"), Some("Running"));
    /// assert_eq!(o.field("metadata.namespace"), Some("ns"));
    /// assert_eq!(o.field("spec.nodeName"), None);
    /// ```
    pub fn field(&self, name: &str) -> Option<&str> {
        match name {
            FIELD_NAME => Some(self.name()),
            FIELD_NAMESPACE => Some(self.namespace()),
            _ => lookup(&self.inner.fields, name),
        }
    }

    /// The opaque payload.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").payload(vec![1u8, 2]).build();
    /// assert_eq!(&o.payload()[..], &[1, 2]);
    /// ```
    pub fn payload(&self) -> &Bytes {
        &self.inner.payload
    }

    /// Whether two handles share one allocation (clones of one object).
    ///
    /// ```
    /// # use herald::Object;
    /// let a = Object::builder("ns", "a").build();
    /// assert!(Object::ptr_eq(&a, &a.clone()));
    /// assert!(!Object::ptr_eq(&a, &Object::builder("ns", "a").build()));
    /// ```
    pub fn ptr_eq(a: &Object, b: &Object) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// Whether the namespace (if any) and the name pass Kubernetes'
    /// path-segment rule (see [Names](Object#names)): the writer refuses
    /// an object that does not ([`WriteError::InvalidName`](crate::WriteError::InvalidName)).
    /// A source that reads names from untrusted data checks them first and
    /// skips what fails, rather than have one bad object refuse a whole
    /// list.
    ///
    /// ```
    /// use herald::Object;
    /// assert!(Object::builder("ns", "a").build().has_valid_names());
    /// assert!(!Object::builder("ns", "..").build().has_valid_names());
    /// assert!(!Object::builder("a%2F", "b").build().has_valid_names());
    /// assert!(Object::builder("", "node-1").build().has_valid_names());
    /// ```
    pub fn has_valid_names(&self) -> bool {
        self.invalid_name().is_none()
    }

    /// The first part that fails the path-segment rule: (which part, its
    /// value, the rule it breaks).
    pub(crate) fn invalid_name(&self) -> Option<(&'static str, &str, &'static str)> {
        let namespace = self.namespace();
        if !namespace.is_empty() {
            if let Some(rule) = segment_rule(namespace) {
                return Some(("namespace", namespace, rule));
            }
        }
        segment_rule(self.name()).map(|rule| ("name", self.name(), rule))
    }

    /// Approximate heap bytes the object holds, for byte-bounded history.
    pub(crate) fn approx_bytes(&self) -> usize {
        let i = &self.inner;
        let pairs = |p: &[(Box<str>, Box<str>)]| {
            p.iter().map(|(k, v)| k.len() + v.len() + 32).sum::<usize>()
        };
        64 + i.key.len() + pairs(&i.labels) + pairs(&i.fields) + i.payload.len()
    }
}

fn lookup<'a>(pairs: &'a [(Box<str>, Box<str>)], key: &str) -> Option<&'a str> {
    // Objects carry a handful of labels and fields: a linear scan beats a
    // binary search below ~16 entries and both beat hashing.
    if pairs.len() <= 16 {
        pairs.iter().find(|(k, _)| &**k == key).map(|(_, v)| &**v)
    } else {
        pairs
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*pairs[i].1)
    }
}

impl PartialEq for Object {
    /// Two objects are equal when key, labels, fields and payload are equal.
    fn eq(&self, other: &Self) -> bool {
        Object::ptr_eq(self, other)
            || (self.inner.key == other.inner.key
                && self.inner.name_at == other.inner.name_at
                && self.inner.labels == other.inner.labels
                && self.inner.fields == other.inner.fields
                && self.inner.payload == other.inner.payload)
    }
}

impl Eq for Object {}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("key", &self.key())
            .field("labels", &self.inner.labels)
            .field("fields", &self.inner.fields)
            .field("payload_len", &self.inner.payload.len())
            .finish()
    }
}

/// Builds an [`Object`]; see [`Object::builder`].
#[derive(Debug, Clone)]
pub struct ObjectBuilder {
    /// `namespace/name`, or `name`; `name` is `key[name_at..]`.
    key: String,
    name_at: usize,
    labels: Vec<(Box<str>, Box<str>)>,
    fields: Vec<(Box<str>, Box<str>)>,
    payload: Bytes,
}

impl ObjectBuilder {
    /// Sets label `key` to `value` (a later value for the same key wins).
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").label("k", "1").label("k", "2").build();
    /// assert_eq!(o.label("k"), Some("2"));
    /// ```
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.push((key.into(), value.into()));
        self
    }

    /// Sets the named field (a later value for the same name wins). The
    /// implicit `metadata.name` and `metadata.namespace` cannot be
    /// overridden: they always reflect the object's name and namespace.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").field("spec.nodeName", "n1").build();
    /// assert_eq!(o.field("spec.nodeName"), Some("n1"));
    /// ```
    pub fn field(mut self, name: &str, value: &str) -> Self {
        if name != FIELD_NAME && name != FIELD_NAMESPACE {
            self.fields.push((name.into(), value.into()));
        }
        self
    }

    /// Sets the opaque payload.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").payload(bytes::Bytes::from_static(b"x")).build();
    /// assert_eq!(&o.payload()[..], b"x");
    /// ```
    pub fn payload(mut self, payload: impl Into<Bytes>) -> Self {
        self.payload = payload.into();
        self
    }

    /// Finishes the object.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").build();
    /// assert_eq!(o.key(), "ns/a");
    /// ```
    pub fn build(self) -> Object {
        Object {
            inner: Arc::new(Inner {
                key: self.key.into_boxed_str(),
                name_at: self.name_at,
                labels: sorted_unique(self.labels),
                fields: sorted_unique(self.fields),
                payload: self.payload,
            }),
        }
    }
}

/// Sorts by key, keeping the last value given for each key.
fn sorted_unique(mut pairs: Vec<(Box<str>, Box<str>)>) -> Box<[(Box<str>, Box<str>)]> {
    // In place. The sort is stable, so equal keys keep the order they
    // were given in; `dedup_by` keeps the first of a run, which takes
    // the value of each later one (the last given wins).
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(&mut later.1, &mut kept.1);
        }
        same
    });
    pairs.into_boxed_slice()
}

/// One object with the resource version of its last change (etcd's
/// `mod_revision`): what a read returns, and what a re-list gives the
/// writer ([`Writer::replace_items`](crate::Writer::replace_items)).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The object.
    pub object: Object,
    /// The resource version of its last change.
    pub resource_version: ResourceVersion,
}

impl Item {
    /// `object` at `resource_version`.
    pub fn new(object: Object, resource_version: ResourceVersion) -> Item {
        Item {
            object,
            resource_version,
        }
    }
}

/// Kubernetes' `path.IsValidPathSegmentName` (apimachinery
/// `api/validation/path`): the rule every object name must pass, and
/// which part of it `value` breaks.
fn segment_rule(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("must not be empty")
    } else if value == "." || value == ".." {
        Some("may not be '.' or '..'")
    } else if value.contains('/') {
        Some("may not contain '/'")
    } else if value.contains('%') {
        Some("may not contain '%'")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_labels_use_binary_search() {
        let mut b = Object::builder("ns", "a");
        for i in 0..40 {
            b = b.label(&format!("k{i:02}"), &i.to_string());
        }
        let o = b.build();
        for i in 0..40 {
            assert_eq!(o.label(&format!("k{i:02}")), Some(i.to_string().as_str()));
        }
        assert_eq!(o.label("k40"), None);
    }

    #[test]
    fn implicit_fields_cannot_be_overridden() {
        let o = Object::builder("ns", "a")
            .field("metadata.name", "evil")
            .build();
        assert_eq!(o.field("metadata.name"), Some("a"));
    }
}
