//! The storage.k8s.io/v1 printers of CSI drivers and their attachments,
//! as `pkg/printers/internalversion/printers.go` prints them:
//! `printCSIDriver`, `printCSINode`, `printVolumeAttachment` and
//! `printVolumeAttributesClass`; and `CSIStorageCapacity`, whose storage
//! has no printer, with the apiserver's default convertor (the name and
//! the creation time).

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, items, name, string};
use super::rbac::created;
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "CSIDriver",
        columns: CSI_DRIVERS,
        row: csi_driver,
    },
    BuiltIn {
        kind: "CSINode",
        columns: CSI_NODES,
        row: csi_node,
    },
    BuiltIn {
        kind: "CSIStorageCapacity",
        columns: CSI_STORAGE_CAPACITIES,
        row: created,
    },
    BuiltIn {
        kind: "VolumeAttachment",
        columns: VOLUME_ATTACHMENTS,
        row: volume_attachment,
    },
    BuiltIn {
        kind: "VolumeAttributesClass",
        columns: VOLUME_ATTRIBUTES_CLASSES,
        row: volume_attributes_class,
    },
];

const CSI_DRIVERS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "AttachRequired",
        "boolean",
        "",
        "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.",
        0,
    ),
    Col::new(
        "PodInfoOnMount",
        "boolean",
        "",
        "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.",
        0,
    ),
    Col::new(
        "StorageCapacity",
        "boolean",
        "",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.",
        0,
    ),
    Col::new(
        "TokenRequests",
        "string",
        "",
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.",
        0,
    ),
    Col::new(
        "RequiresRepublish",
        "boolean",
        "",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.",
        0,
    ),
    Col::new(
        "Modes",
        "string",
        "",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const CSI_NODES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Drivers",
        "integer",
        "",
        "Drivers indicates the number of CSI drivers registered on the node",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const CSI_STORAGE_CAPACITIES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new("Created At", "date", "", CREATED_DOC, 0),
];

const VOLUME_ATTACHMENTS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Attacher",
        "string",
        "name",
        "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
        0,
    ),
    Col::new(
        "PV",
        "string",
        "",
        "persistentVolumeName represents the name of the persistent volume to attach.",
        0,
    ),
    Col::new(
        "Node",
        "string",
        "",
        "nodeName represents the node that the volume should be attached to.",
        0,
    ),
    Col::new(
        "Attached",
        "boolean",
        "",
        "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const VOLUME_ATTRIBUTES_CLASSES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "DriverName",
        "string",
        "",
        "driverName is the name of the CSI driver This field is immutable.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

/// The boolean at `path`, `default` when unset.
fn flag(o: &Value, path: &[&str], default: bool) -> Value {
    at(o, path).as_bool().unwrap_or(default).into()
}

/// The strings of `field` of each item of the array at `path`, or the
/// array's strings themselves for no `field`, joined with `,`.
fn joined(o: &Value, path: &[&str], field: Option<&str>) -> String {
    items(o, path)
        .iter()
        .map(|v| match field {
            Some(f) => string(v, &[f]),
            None => v.as_str().unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `printCSIDriver`: attach required unless said otherwise, the token
/// requests' audiences (`<unset>` for none), the lifecycle modes
/// (`<none>` for none; storage defaults them to `Persistent`).
fn csi_driver(o: &Value, now: Nanos) -> Row {
    let tokens = if at(o, &["spec", "tokenRequests"]).is_array() {
        joined(o, &["spec", "tokenRequests"], Some("audience"))
    } else {
        "<unset>".into()
    };
    let mut modes = joined(o, &["spec", "volumeLifecycleModes"], None);
    if modes.is_empty() {
        modes = "<none>".into();
    }
    Row::from(vec![
        name(o),
        flag(o, &["spec", "attachRequired"], true),
        flag(o, &["spec", "podInfoOnMount"], false),
        flag(o, &["spec", "storageCapacity"], false),
        tokens.into(),
        flag(o, &["spec", "requiresRepublish"], false),
        modes.into(),
        age(o, now),
    ])
}

/// `printCSINode`: how many drivers it runs.
fn csi_node(o: &Value, now: Nanos) -> Row {
    let drivers = items(o, &["spec", "drivers"]).len() as i64;
    Row::from(vec![name(o), drivers.into(), age(o, now)])
}

/// `printVolumeAttachment`.
fn volume_attachment(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["spec", "attacher"]).into(),
        string(o, &["spec", "source", "persistentVolumeName"]).into(),
        string(o, &["spec", "nodeName"]).into(),
        flag(o, &["status", "attached"], false),
        age(o, now),
    ])
}

/// `printVolumeAttributesClass`.
fn volume_attributes_class(o: &Value, now: Nanos) -> Row {
    Row::from(vec![
        name(o),
        string(o, &["driverName"]).into(),
        age(o, now),
    ])
}
