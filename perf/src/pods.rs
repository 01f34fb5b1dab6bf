//! Pods as a real cluster stores them: the JSON of a pod a Deployment's
//! ReplicaSet made and the kubelet reports on (owner reference, labels,
//! an annotation, a projected service-account volume, two containers with
//! ports, env, resources and mounts, the default tolerations; a running
//! status with five conditions, IPs and two container statuses), and its
//! protobuf, the form kube-apiserver writes to etcd for built-in kinds
//! (`k8s\0` + `runtime.Unknown`, made by [`herald_kube::proto::encode`]).
//!
//! Every value a pod carries that differs between real pods (uids, IPs,
//! images, timestamps, container ids, resources) is drawn from its seed,
//! so N pods are N different objects, as a cluster's are. Not included:
//! `managedFields` (a real pod's run to 1-2 KB more, in either form).
//!
//! [`Stored`] is one pod's value in either encoding with a fixed-width
//! write counter (the annotation [`WRITE_ANNOTATION`]) that can be set in
//! place, so that a stream of writes of the same pod costs the writer a
//! copy and ten bytes, whichever the encoding.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// The annotation whose value is a write's counter: ten digits, so that
/// setting it changes no length in the JSON or in the protobuf.
pub const WRITE_ANNOTATION: &str = "perf.herald.dev/write";

/// Digits of the write counter.
const WRITE_DIGITS: usize = 10;

/// The counter's placeholder while a value is encoded (found again in the
/// bytes, once).
const WRITE_MARK: &str = "9876543210";

/// How a value is stored in etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// The apiserver's protobuf (`k8s\0` + `runtime.Unknown`): what it
    /// writes for every built-in kind.
    Protobuf,
    /// JSON (what it writes for custom resources; what a hand-made test
    /// cluster may hold).
    Json,
}

impl Encoding {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "json",
        }
    }
}

/// splitmix64: the seed's draws.
#[derive(Debug, Clone)]
pub struct Draws(u64);

impl Draws {
    /// Draws from `seed`.
    pub fn new(seed: u64) -> Draws {
        Draws(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `n` lowercase hex digits.
    fn hex(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n + 16);
        while s.len() < n {
            let _ = write!(s, "{:016x}", self.next_u64());
        }
        s.truncate(n);
        s
    }

    /// `n` characters of the alphabet Kubernetes' name generator uses.
    fn suffix(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..n)
            .map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize] as char)
            .collect()
    }

    /// A uid as the apiserver makes one (a UUID's text).
    fn uid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }

    /// A time on 2026-11-27, to the second.
    fn time(&mut self) -> String {
        let s = self.below(86_400);
        format!(
            "2026-11-27T{:02}:{:02}:{:02}Z",
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    }
}

/// Where a pod is and what it is called.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The node it runs on.
    pub node: String,
    /// Its app (the Deployment's name, and the `app` label).
    pub app: String,
    /// The ReplicaSet's template hash (`pod-template-hash`).
    pub hash: String,
}

impl Placement {
    /// Pod `i` of a cluster of `namespaces` namespaces and `nodes` nodes,
    /// with 20 apps per namespace: `app-A-<hash>-<suffix>` in `ns-NNN` on
    /// `node-NNNN`. Names are distinct for the first 14 million pods of
    /// each app (the suffix is the pod's index in its ReplicaSet, mixed).
    pub fn spread(i: u64, namespaces: u64, nodes: u64) -> Placement {
        const APPS: u64 = 20;
        let namespaces = namespaces.max(1);
        let mut d = Draws::new(i.wrapping_mul(31).wrapping_add(7));
        let ns = i % namespaces;
        let app = (i / namespaces) % APPS;
        // One ReplicaSet per app and namespace: its hash from both.
        let hash = Draws::new(ns * 1_000 + app).suffix(10);
        let app = format!("app-{app}");
        Placement {
            namespace: format!("ns-{ns:03}"),
            name: format!("{app}-{hash}-{}", replica_suffix(i / (namespaces * APPS))),
            node: format!("node-{:04}", d.below(nodes.max(1))),
            app,
            hash,
        }
    }
}

/// The 5-character suffix of a ReplicaSet's pod `k`: `k` times a number
/// prime to 27^5, mod 27^5, in the name generator's alphabet (27
/// characters): distinct for every `k` below 27^5 (14,348,907), and not
/// in counting order.
fn replica_suffix(k: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const SPACE: u64 = 27 * 27 * 27 * 27 * 27;
    let mut v = (k % SPACE * 1_000_003 + 4_242) % SPACE;
    (0..5)
        .map(|_| {
            let c = ALPHABET[(v % 27) as usize] as char;
            v /= 27;
            c
        })
        .collect()
}

/// The JSON of a running pod at `at`, its other values drawn from `seed`,
/// as the apiserver stores it (no `resourceVersion`: etcd's revision is
/// that). Its write counter ([`WRITE_ANNOTATION`]) is `write`.
pub fn pod_json(at: &Placement, seed: u64, write: u64) -> String {
    pod_text(at, seed, &format!("{write:0WRITE_DIGITS$}"), None)
}

/// A pod's JSON as the apiserver serves it (with its
/// `metadata.resourceVersion`), its node and resourceVersion left open:
/// [`Template::render`] fills them in with one concatenation.
#[derive(Debug, Clone)]
pub struct Template {
    /// Before the resourceVersion, between it and the node, after the
    /// node.
    parts: [String; 3],
}

impl Template {
    /// The pod at `at` (its node aside), drawn from `seed`, write counter
    /// 0.
    pub fn new(at: &Placement, seed: u64) -> Template {
        const RV: &str = "\u{1}rv\u{1}";
        const NODE: &str = "\u{1}node\u{1}";
        let open = Placement {
            node: NODE.into(),
            ..at.clone()
        };
        let text = pod_text(&open, seed, &format!("{:0WRITE_DIGITS$}", 0), Some(RV));
        let (a, rest) = text.split_once(RV).expect("one resourceVersion");
        let (b, c) = rest.split_once(NODE).expect("one node, after it");
        Template {
            parts: [a.into(), b.into(), c.into()],
        }
    }

    /// The JSON on `node` at `rv`.
    pub fn render(&self, node: &str, rv: u64) -> String {
        let [a, b, c] = &self.parts;
        let mut s = String::with_capacity(a.len() + b.len() + c.len() + node.len() + 20);
        s.push_str(a);
        let _ = write!(s, "{rv}");
        s.push_str(b);
        s.push_str(node);
        s.push_str(c);
        s
    }
}

fn pod_text(at: &Placement, seed: u64, write: &str, rv: Option<&str>) -> String {
    let mut d = Draws::new(seed);
    let Placement {
        namespace,
        name,
        node,
        app,
        hash,
    } = at;
    let uid = d.uid();
    // One ReplicaSet per app and namespace: one owner uid.
    let owner_uid = Draws::new(
        format!("{namespace}/{hash}")
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b))),
    )
    .uid();
    let created = d.time();
    let started = d.time();
    let tier = ["frontend", "backend", "cache", "worker"][d.below(4) as usize];
    let version = format!("1.{}.{}", d.below(30), d.below(10));
    let image = format!("registry.example.com/{namespace}/{app}:{version}");
    let image_id = format!(
        "registry.example.com/{namespace}/{app}@sha256:{}",
        d.hex(64)
    );
    let pause_id = format!("registry.k8s.io/pause@sha256:{}", d.hex(64));
    let (app_cid, side_cid) = (d.hex(64), d.hex(64));
    let cpu = [100, 250, 500][d.below(3) as usize];
    let mem = [128, 256, 512][d.below(3) as usize];
    let port = 8000 + d.below(100);
    let node_n = d.below(250) + 1;
    let host_ip = format!("10.0.{}.{}", node_n / 250, node_n % 250 + 1);
    let pod_ip = format!("10.244.{}.{}", d.below(250), d.below(250) + 2);
    let volume = format!("kube-api-access-{}", d.suffix(5));
    let restarts = d.below(3);
    let mount = format!(
        r#"{{"name":"{volume}","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}"#
    );
    let rv = rv.map_or(String::new(), |rv| format!(r#""resourceVersion":"{rv}","#));
    let condition = |ty: &str, at: &str| {
        format!(
            r#"{{"type":"{ty}","status":"True","lastProbeTime":null,"lastTransitionTime":"{at}"}}"#
        )
    };
    format!(
        concat!(
            r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","generateName":"{app}-{hash}-","namespace":"{namespace}","uid":"{uid}",{rv}"creationTimestamp":"{created}","#,
            r#""labels":{{"app":"{app}","pod-template-hash":"{hash}","tier":"{tier}"}},"#,
            r#""annotations":{{"{write_key}":"{write}"}},"#,
            r#""ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"{app}-{hash}","uid":"{owner_uid}","controller":true,"blockOwnerDeletion":true}}]}},"#,
            r#""spec":{{"volumes":[{{"name":"{volume}","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}},{{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}},{{"downwardAPI":{{"items":[{{"path":"namespace","fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.namespace"}}}}]}}}}],"defaultMode":420}}}}],"#,
            r#""containers":[{{"name":"{app}","image":"{image}","ports":[{{"name":"http","containerPort":{port},"protocol":"TCP"}}],"env":[{{"name":"LOG_LEVEL","value":"info"}},{{"name":"POD_NAME","valueFrom":{{"fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.name"}}}}}}],"#,
            r#""resources":{{"limits":{{"cpu":"{cpu2}","memory":"{mem2}"}},"requests":{{"cpu":"{cpu}m","memory":"{mem}Mi"}}}},"volumeMounts":[{mount}],"#,
            r#""readinessProbe":{{"httpGet":{{"path":"/healthz","port":{port},"scheme":"HTTP"}},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3}},"#,
            r#""terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}},"#,
            r#"{{"name":"log-shipper","image":"registry.k8s.io/pause:3.10","resources":{{"limits":{{"memory":"64Mi"}},"requests":{{"cpu":"10m","memory":"32Mi"}}}},"volumeMounts":[{mount}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"#,
            r#""restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"{node}","securityContext":{{}},"schedulerName":"default-scheduler","#,
            r#""tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}},{{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],"#,
            r#""priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"#,
            r#""status":{{"phase":"Running","conditions":[{c1},{c2},{c3},{c4},{c5}],"hostIP":"{host_ip}","hostIPs":[{{"ip":"{host_ip}"}}],"podIP":"{pod_ip}","podIPs":[{{"ip":"{pod_ip}"}}],"startTime":"{created}","#,
            r#""containerStatuses":[{{"name":"{app}","state":{{"running":{{"startedAt":"{started}"}}}},"lastState":{{}},"ready":true,"restartCount":{restarts},"image":"{image}","imageID":"{image_id}","containerID":"containerd://{app_cid}","started":true}},"#,
            r#"{{"name":"log-shipper","state":{{"running":{{"startedAt":"{started}"}}}},"lastState":{{}},"ready":true,"restartCount":0,"image":"registry.k8s.io/pause:3.10","imageID":"{pause_id}","containerID":"containerd://{side_cid}","started":true}}],"#,
            r#""qosClass":"Burstable"}}}}"#
        ),
        write_key = WRITE_ANNOTATION,
        name = name,
        app = app,
        hash = hash,
        namespace = namespace,
        uid = uid,
        rv = rv,
        created = created,
        tier = tier,
        write = write,
        owner_uid = owner_uid,
        volume = volume,
        image = image,
        port = port,
        cpu = cpu,
        mem = mem,
        mount = mount,
        node = node,
        host_ip = host_ip,
        pod_ip = pod_ip,
        started = started,
        restarts = restarts,
        image_id = image_id,
        app_cid = app_cid,
        pause_id = pause_id,
        side_cid = side_cid,
        // In their canonical form, as the apiserver stores quantities.
        cpu2 = if cpu * 2 % 1000 == 0 {
            format!("{}", cpu * 2 / 1000)
        } else {
            format!("{}m", cpu * 2)
        },
        mem2 = if mem * 2 % 1024 == 0 {
            format!("{}Gi", mem * 2 / 1024)
        } else {
            format!("{}Mi", mem * 2)
        },
        c1 = condition("PodReadyToStartContainers", &started),
        c2 = condition("Initialized", &created),
        c3 = condition("Ready", &started),
        c4 = condition("ContainersReady", &started),
        c5 = condition("PodScheduled", &created),
    )
}

/// The protobuf the apiserver stores for a pod's JSON.
pub fn protobuf(json: &str) -> anyhow::Result<Vec<u8>> {
    let map: Map<String, Value> = serde_json::from_str(json)?;
    herald_kube::proto::encode(&map).map_err(|e| anyhow::anyhow!("a pod's protobuf: {e}"))
}

/// One pod's stored value in one encoding, its write counter settable in
/// place.
#[derive(Debug, Clone)]
pub struct Stored {
    bytes: Vec<u8>,
    /// Where the counter's digits are.
    at: usize,
}

impl Stored {
    /// The pod at `at` (drawn from `seed`) in `encoding`.
    pub fn new(at: &Placement, seed: u64, encoding: Encoding) -> anyhow::Result<Stored> {
        let json = pod_text(at, seed, WRITE_MARK, None);
        let bytes = match encoding {
            Encoding::Json => json.into_bytes(),
            Encoding::Protobuf => protobuf(&json)?,
        };
        let mark = WRITE_MARK.as_bytes();
        let mut found = bytes
            .windows(mark.len())
            .enumerate()
            .filter(|(_, w)| *w == mark)
            .map(|(i, _)| i);
        let at = found
            .next()
            .ok_or_else(|| anyhow::anyhow!("the write counter is not in the value"))?;
        anyhow::ensure!(
            found.next().is_none(),
            "the write counter's mark is in the value twice"
        );
        Ok(Stored { bytes, at })
    }

    /// The value with its counter set to `write` (mod 10^10).
    pub fn with_write(&self, write: u64) -> Vec<u8> {
        let mut v = self.bytes.clone();
        let digits = format!("{:0WRITE_DIGITS$}", write % 10u64.pow(WRITE_DIGITS as u32));
        v[self.at..self.at + WRITE_DIGITS].copy_from_slice(digits.as_bytes());
        v
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it is empty (never).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement() -> Placement {
        Placement::spread(12_345, 50, 1_000)
    }

    /// Every field of the JSON is a field of the v1 Pod schema with a
    /// value of its type: encoded to protobuf and decoded back, the JSON
    /// is the same (a field the schema does not have would be dropped; a
    /// value of the wrong type would not encode).
    #[test]
    fn the_pod_is_a_valid_pod_and_survives_protobuf() {
        let at = placement();
        let json = pod_json(&at, 99, 42);
        let original: Value = serde_json::from_str(&json).unwrap();
        let pb = protobuf(&json).unwrap();
        assert!(pb.starts_with(b"k8s\0"));
        let back = Value::Object(herald_kube::proto::decode(&pb).unwrap());
        assert_eq!(back, original, "{back}\n{original}");
        assert!(pb.len() < json.len(), "{} {}", pb.len(), json.len());
    }

    #[test]
    fn a_template_renders_the_pod_with_its_version_and_node() {
        let at = placement();
        let t = Template::new(&at, 5);
        let v: Value = serde_json::from_str(&t.render("node-9", 42)).unwrap();
        let mut want: Value = serde_json::from_str(&pod_json(&at, 5, 0)).unwrap();
        want["metadata"]["resourceVersion"] = "42".into();
        want["spec"]["nodeName"] = "node-9".into();
        assert_eq!(v, want);
        // The encoder takes it (the apiserver's JSON, version and all).
        protobuf(&t.render("node-9", 42)).unwrap();
    }

    #[test]
    fn names_are_distinct() {
        let names: std::collections::HashSet<(String, String)> = (0..200_000)
            .map(|i| {
                let at = Placement::spread(i, 50, 1_000);
                (at.namespace, at.name)
            })
            .collect();
        assert_eq!(names.len(), 200_000);
    }

    #[test]
    fn pods_differ_and_counters_are_set_in_place() {
        let (a, b) = (
            Placement::spread(1, 50, 1_000),
            Placement::spread(2, 50, 1_000),
        );
        assert_ne!(a.name, b.name);
        assert_ne!(pod_json(&a, 1, 0), pod_json(&a, 2, 0));
        for encoding in [Encoding::Json, Encoding::Protobuf] {
            let s = Stored::new(&a, 1, encoding).unwrap();
            let v = s.with_write(7);
            assert_eq!(v.len(), s.len());
            let json = match encoding {
                Encoding::Json => serde_json::from_slice::<Value>(&v).unwrap(),
                Encoding::Protobuf => Value::Object(herald_kube::proto::decode(&v).unwrap()),
            };
            assert_eq!(
                json["metadata"]["annotations"][WRITE_ANNOTATION],
                "0000000007"
            );
            assert_eq!(
                json,
                serde_json::from_str::<Value>(&pod_json(&a, 1, 7)).unwrap()
            );
        }
    }
}
