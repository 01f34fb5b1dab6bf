//! A pod-shaped [`Object`] for tests: the namespace and name, then only
//! what the test cares about (labels, the node, the uid, a version or a
//! payload).

use bytes::Bytes;
use herald::Object;
use herald::object::ObjectBuilder;

/// The field selector's name for a pod's node.
const NODE_FIELD: &str = "spec.nodeName";

/// The field a pod's uid is indexed under (the shard key).
const UID_FIELD: &str = "metadata.uid";

/// A pod `namespace/name` with nothing set yet; add what the test needs
/// and [`build`](Pod::build) it.
///
/// ```
/// use herald_testkit::pod;
///
/// let p = pod("ns", "a").app("web").node("n1").version(3).build();
/// assert_eq!(p.key(), "ns/a");
/// assert_eq!(p.label("app"), Some("web"));
/// assert_eq!(p.field("spec.nodeName"), Some("n1"));
/// assert_eq!(&p.payload()[..], b"ns/a@3");
/// ```
pub fn pod(namespace: &str, name: &str) -> Pod {
    Pod {
        key: format!("{namespace}/{name}"),
        builder: Object::builder(namespace, name),
    }
}

/// A pod being built: an [`ObjectBuilder`] with the fields and labels pods
/// carry in Herald's tests named. Made by [`pod`].
#[derive(Debug, Clone)]
#[must_use = "a Pod does nothing until it is built"]
pub struct Pod {
    /// `namespace/name`, for [`Pod::version`]'s payload.
    key: String,
    builder: ObjectBuilder,
}

impl Pod {
    /// The label `key=value`.
    pub fn label(mut self, key: &str, value: &str) -> Pod {
        self.builder = self.builder.label(key, value);
        self
    }

    /// Every `(key, value)` of `labels` as a label.
    pub fn labels(mut self, labels: &[(&str, &str)]) -> Pod {
        for (key, value) in labels {
            self.builder = self.builder.label(key, value);
        }
        self
    }

    /// The label `app=app`, the one most selectors in the tests name.
    pub fn app(self, app: &str) -> Pod {
        self.label("app", app)
    }

    /// The field `spec.nodeName`: the node the pod runs on.
    pub fn node(self, node: &str) -> Pod {
        self.field(NODE_FIELD, node)
    }

    /// The field `metadata.uid` (what shards by uid hash).
    pub fn uid(self, uid: &str) -> Pod {
        self.field(UID_FIELD, uid)
    }

    /// The selectable field `name=value`.
    pub fn field(mut self, name: &str, value: &str) -> Pod {
        self.builder = self.builder.field(name, value);
        self
    }

    /// The payload `namespace/name@version`: two writes of one pod at
    /// different versions differ, and a payload says which it is.
    pub fn version(self, version: u64) -> Pod {
        let payload = format!("{}@{version}", self.key);
        self.payload(payload)
    }

    /// The payload (the serialized object a watcher is handed).
    pub fn payload(mut self, payload: impl Into<Bytes>) -> Pod {
        self.builder = self.builder.payload(payload);
        self
    }

    /// The object.
    pub fn build(self) -> Object {
        self.builder.build()
    }
}

impl From<Pod> for Object {
    fn from(pod: Pod) -> Object {
        pod.build()
    }
}
