//! Objects: what a change carries and what filters read.

use std::fmt;
use std::sync::{Arc, OnceLock};

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
/// Its key, labels and fields are packed in one string, with one array of
/// where each label and field is in it: an object is four allocations
/// (handle, text, array, payload) however many labels and fields it has,
/// and a filter reading its labels reads one contiguous block.
///
/// An object's key is `namespace/name`, or `name` for a cluster-scoped object
/// (empty namespace). Watches select on keys (see [`KeyScope`](crate::selector::KeyScope)).
///
/// # Names
///
/// A key is one path, so its parts must not contain its separator:
/// namespace `a/b` with name `c` and namespace `a` with name `b/c` would
/// both be `a/b/c`. The [`Writer`](crate::Writer) refuses an object whose
/// name, or non-empty namespace, is not a valid path segment, with
/// [`WriteError::InvalidName`](crate::writer::WriteError::InvalidName): Kubernetes'
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
    /// The key (`namespace/name` or `name`: `text[..key_len]`, the name
    /// from `name_at`), then each label's and field's key and value, back
    /// to back (and, after duplicate keys, text no span points at).
    text: Box<str>,
    key_len: usize,
    name_at: usize,
    /// The labels' spans, sorted by key, keys unique; then the fields',
    /// sorted by name, names unique (the implicit metadata fields
    /// excluded).
    spans: Box<[Span]>,
    /// How many of `spans` are labels.
    labels: usize,
    payload: Bytes,
    /// A second form of the payload, made by the first caller of
    /// [`Object::derived`] (`None`: it could not be made).
    derived: OnceLock<Option<Bytes>>,
}

/// Where one label or field is in an object's text: its key is
/// `text[at..key_end]`, its value `text[key_end..end]`.
#[derive(Debug, Clone, Copy)]
struct Span {
    at: usize,
    key_end: usize,
    end: usize,
    /// A field (sorted after every label), not a label.
    field: bool,
}

impl Span {
    fn key<'a>(&self, text: &'a str) -> &'a str {
        &text[self.at..self.key_end]
    }

    fn value<'a>(&self, text: &'a str) -> &'a str {
        &text[self.key_end..self.end]
    }
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
        Object::builder_with_capacity(namespace, name, 0, 0)
    }

    /// Starts building an object with room for `pairs` labels and fields
    /// whose keys and values take `bytes` bytes in all: adding them then
    /// allocates nothing, and [`build`](ObjectBuilder::build) copies
    /// nothing. A hint only: more or fewer are fine, and a hint past 4,096
    /// pairs or 1 MiB is taken as that much (a huge one is no error).
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder_with_capacity("ns", "a", 1, 15)
    ///     .field("spec.nodeName", "n1")
    ///     .build();
    /// assert_eq!(o.field("spec.nodeName"), Some("n1"));
    /// ```
    pub fn builder_with_capacity(
        namespace: &str,
        name: &str,
        pairs: usize,
        bytes: usize,
    ) -> ObjectBuilder {
        let name_at = if namespace.is_empty() {
            0
        } else {
            namespace.len() + 1
        };
        let mut text = String::with_capacity(name_at + name.len() + bytes.min(1 << 20));
        if name_at > 0 {
            text.push_str(namespace);
            text.push('/');
        }
        text.push_str(name);
        ObjectBuilder {
            key_len: text.len(),
            text,
            name_at,
            spans: Vec::with_capacity(pairs.min(1 << 12)),
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
        &self.inner.text[..self.inner.key_len]
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
            &self.inner.text[..at - 1]
        }
    }

    /// The name.
    ///
    /// ```
    /// # use herald::Object;
    /// assert_eq!(Object::builder("ns", "a").build().name(), "a");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.text[self.inner.name_at..self.inner.key_len]
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
        self.inner.lookup(self.inner.label_spans(), key)
    }

    /// All labels, sorted by key.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").label("b", "2").label("a", "1").build();
    /// assert_eq!(o.labels().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
    /// ```
    pub fn labels(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        let text = &*self.inner.text;
        self.inner
            .label_spans()
            .iter()
            .map(move |s| (s.key(text), s.value(text)))
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
            _ => self.inner.lookup(self.inner.field_spans(), name),
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

    /// A second encoding of the payload, made from it at most once per
    /// object and kept as long as the object: the first caller runs
    /// `make` (callers racing with it wait for its result rather than make
    /// another), every later one gets the same bytes. `None` when `make`
    /// returned `None`, which is kept too.
    ///
    /// For a server that sends one object in more than one encoding
    /// (herald-server's protobuf for client-go): a change is encoded once,
    /// however many connections send it and however far behind they are,
    /// and the encoding goes when the last event holding the object does.
    /// Herald still never parses the payload; `make` does, and must be a
    /// function of the payload alone (one object has one derived form).
    /// Not counted in the history's byte bound, which is taken at write.
    ///
    /// ```
    /// # use herald::Object;
    /// let o = Object::builder("ns", "a").payload("abc").build();
    /// let upper = |p: &bytes::Bytes| Some(p.to_ascii_uppercase().into());
    /// assert_eq!(o.derived(upper).as_deref(), Some(&b"ABC"[..]));
    /// // Made once: a second `make` is not run.
    /// assert_eq!(o.clone().derived(|_| None).as_deref(), Some(&b"ABC"[..]));
    /// ```
    pub fn derived(&self, make: impl FnOnce(&Bytes) -> Option<Bytes>) -> Option<Bytes> {
        self.inner
            .derived
            .get_or_init(|| make(&self.inner.payload))
            .clone()
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
    /// an object that does not ([`WriteError::InvalidName`](crate::writer::WriteError::InvalidName)).
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
        64 + i.text.len() + i.spans.len() * size_of::<Span>() + i.payload.len()
    }

    /// The fields, sorted by name (without the implicit metadata fields).
    fn fields(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let text = &*self.inner.text;
        self.inner
            .field_spans()
            .iter()
            .map(move |s| (s.key(text), s.value(text)))
    }
}

impl Inner {
    fn label_spans(&self) -> &[Span] {
        &self.spans[..self.labels]
    }

    fn field_spans(&self) -> &[Span] {
        &self.spans[self.labels..]
    }

    fn lookup(&self, spans: &[Span], key: &str) -> Option<&str> {
        let text = &*self.text;
        // Objects carry a handful of labels and fields: a linear scan beats
        // a binary search below ~16 entries and both beat hashing.
        if spans.len() <= 16 {
            spans
                .iter()
                .find(|s| s.key(text) == key)
                .map(|s| s.value(text))
        } else {
            spans
                .binary_search_by(|s| s.key(text).cmp(key))
                .ok()
                .map(|i| spans[i].value(text))
        }
    }
}

impl PartialEq for Object {
    /// Two objects are equal when key, labels, fields and payload are equal.
    fn eq(&self, other: &Self) -> bool {
        Object::ptr_eq(self, other)
            || (self.key() == other.key()
                && self.inner.name_at == other.inner.name_at
                && self.labels().eq(other.labels())
                && self.fields().eq(other.fields())
                && self.inner.payload == other.inner.payload)
    }
}

impl Eq for Object {}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("key", &self.key())
            .field("labels", &self.labels().collect::<Vec<_>>())
            .field("fields", &self.fields().collect::<Vec<_>>())
            .field("payload_len", &self.inner.payload.len())
            .finish()
    }
}

/// Builds an [`Object`]; see [`Object::builder`].
#[derive(Debug, Clone)]
pub struct ObjectBuilder {
    /// The object's text so far: the key, then each label and field in
    /// the order given (see `Inner`).
    text: String,
    key_len: usize,
    name_at: usize,
    /// In the order given; `build` sorts them and drops those a later
    /// one of the same key replaces.
    spans: Vec<Span>,
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
        self.push(key, value, false);
        self
    }

    fn push(&mut self, key: &str, value: &str, field: bool) {
        let at = self.text.len();
        self.text.push_str(key);
        let key_end = self.text.len();
        self.text.push_str(value);
        self.spans.push(Span {
            at,
            key_end,
            end: self.text.len(),
            field,
        });
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
            self.push(name, value, true);
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
    pub fn build(mut self) -> Object {
        let text = &*self.text;
        // Labels first, each kind sorted by key. The sort is stable, so
        // equal keys keep the order they were given in; `dedup_by` keeps
        // the first of a run, which takes the span of each later one (the
        // last given wins).
        self.spans
            .sort_by(|a, b| (a.field, a.key(text)).cmp(&(b.field, b.key(text))));
        self.spans.dedup_by(|later, kept| {
            let same = later.field == kept.field && later.key(text) == kept.key(text);
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        let labels = self.spans.partition_point(|s| !s.field);
        Object {
            inner: Arc::new(Inner {
                text: self.text.into_boxed_str(),
                key_len: self.key_len,
                name_at: self.name_at,
                spans: self.spans.into_boxed_slice(),
                labels,
                payload: self.payload,
                derived: OnceLock::new(),
            }),
        }
    }
}

/// One object with the resource version of its last change (etcd's
/// `mod_revision`): what a read returns, and what a re-list gives the
/// writer ([`Relist::items`](crate::Relist::items)).
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
    fn the_last_value_given_for_a_key_wins_and_kinds_stay_apart() {
        let o = Object::builder("ns", "a")
            .field("f", "1")
            .label("f", "label")
            .label("b", "1")
            .field("f", "2")
            .label("a", "x")
            .label("b", "2")
            .field("e", "3")
            .field("f", "3")
            .build();
        assert_eq!(
            o.labels().collect::<Vec<_>>(),
            [("a", "x"), ("b", "2"), ("f", "label")]
        );
        assert_eq!(o.fields().collect::<Vec<_>>(), [("e", "3"), ("f", "3")]);
        assert_eq!(o.field("f"), Some("3"));
        assert_eq!(o.label("f"), Some("label"));
        assert_eq!(o.key(), "ns/a");
        assert_eq!(o.namespace(), "ns");
        assert_eq!(o.name(), "a");
        // Equal whatever the order given and the dead text left behind.
        let same = Object::builder("ns", "a")
            .label("a", "x")
            .label("b", "2")
            .label("f", "label")
            .field("e", "3")
            .field("f", "3")
            .build();
        assert_eq!(o, same);
        assert_ne!(o, Object::builder("ns", "a").label("a", "x").build());
        // Multi-byte text around the spans.
        let o = Object::builder("ñs", "é").label("ключ", "значение").build();
        assert_eq!(o.label("ключ"), Some("значение"));
        assert_eq!((o.namespace(), o.name()), ("ñs", "é"));
    }

    #[test]
    fn huge_capacity_hints_are_capped_not_a_panic() {
        let o = Object::builder_with_capacity("ns", "a", usize::MAX, usize::MAX)
            .label("k", "v")
            .build();
        assert_eq!((o.key(), o.label("k")), ("ns/a", Some("v")));
    }

    #[test]
    fn implicit_fields_cannot_be_overridden() {
        let o = Object::builder("ns", "a")
            .field("metadata.name", "evil")
            .build();
        assert_eq!(o.field("metadata.name"), Some("a"));
    }
}
