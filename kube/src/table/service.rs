//! Services and their endpoints, as `pkg/printers/internalversion/
//! printers.go` prints them: `printService`, `printEndpoints` and
//! discovery.k8s.io's `printEndpointSlice`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, format_labels, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Service",
        group: "",
        row: service,
    },
    BuiltIn {
        kind: "Endpoints",
        group: "",
        row: endpoints,
    },
    BuiltIn {
        kind: "EndpointSlice",
        group: "discovery.k8s.io",
        row: endpoint_slice,
    },
];

/// `getServiceExternalIP` (always wide: the apiserver asks for every
/// column, so load-balancer addresses are not shortened).
fn external_ip(o: &Value) -> String {
    let external: Vec<&str> = items(o, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match string(o, &["spec", "type"]) {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let lb: BTreeSet<&str> = items(o, &["status", "loadBalancer", "ingress"])
                .iter()
                .filter_map(|i| match (string(i, &["ip"]), string(i, &["hostname"])) {
                    ("", "") => None,
                    ("", host) => Some(host),
                    (ip, _) => Some(ip),
                })
                .collect();
            let mut all: Vec<&str> = lb.into_iter().collect();
            if all.is_empty() && external.is_empty() {
                return "<pending>".into();
            }
            all.extend(external);
            all.join(",")
        }
        "ExternalName" => string(o, &["spec", "externalName"]).into(),
        _ => "<unknown>".into(),
    }
}

/// `printService`.
fn service(o: &Value, now: Nanos) -> Row {
    let cluster_ip = items(o, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports: Vec<String> = items(o, &["spec", "ports"])
        .iter()
        .map(|p| {
            let (port, protocol) = (int(p, &["port"]), string(p, &["protocol"]));
            match int(p, &["nodePort"]) {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    };
    Row::from(vec![
        name(o),
        string(o, &["spec", "type"]).into(),
        cluster_ip.into(),
        external_ip(o).into(),
        ports.into(),
        age(o, now),
        format_labels(at(o, &["spec", "selector"])).into(),
    ])
}

/// `listWithMoreString`: the first three, and how many more.
fn with_more(list: &[String], count: usize) -> String {
    let shown = list.join(",");
    if count > 3 {
        format!("{shown} + {} more...", count - 3)
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

/// `formatEndpoints`: the first three `address:port`s of every port (or
/// bare addresses of a subset without ports), and how many more.
fn endpoints(o: &Value, now: Nanos) -> Row {
    let subsets = items(o, &["subsets"]);
    let text = if subsets.is_empty() {
        "<none>".to_owned()
    } else {
        let (mut list, mut count, mut more) = (Vec::new(), 0, false);
        for ss in subsets {
            let addresses = items(ss, &["addresses"]);
            let ports = items(ss, &["ports"]);
            let mut add = |text: &dyn Fn(&Value) -> String| {
                count += addresses.len();
                for a in addresses {
                    if list.len() == 3 {
                        more = true;
                        break;
                    }
                    list.push(text(a));
                }
            };
            if ports.is_empty() {
                add(&|a| string(a, &["ip"]).to_owned());
            }
            for p in ports {
                let port = int(p, &["port"]);
                add(&|a| match string(a, &["ip"]) {
                    ip if ip.contains(':') => format!("[{ip}]:{port}"),
                    ip => format!("{ip}:{port}"),
                });
            }
        }
        if more {
            format!("{} + {} more...", list.join(","), count - 3)
        } else {
            list.join(",")
        }
    };
    Row::from(vec![name(o), text.into(), age(o, now)])
}

/// `printEndpointSlice`: `formatDiscoveryPorts` and
/// `formatDiscoveryEndpoints`.
fn endpoint_slice(o: &Value, now: Nanos) -> Row {
    let ports = items(o, &["ports"]);
    let shown: Vec<String> = ports
        .iter()
        .take(3)
        .map(|p| match (at(p, &["port"]), at(p, &["name"])) {
            (port, _) if port.is_i64() => port.to_string(),
            (_, Value::String(name)) => name.clone(),
            _ => "*".into(),
        })
        .collect();
    let addresses: Vec<&Value> = items(o, &["endpoints"])
        .iter()
        .flat_map(|e| items(e, &["addresses"]))
        .collect();
    let listed: Vec<String> = addresses
        .iter()
        .take(3)
        .map(|a| a.as_str().unwrap_or_default().to_owned())
        .collect();
    Row::from(vec![
        name(o),
        string(o, &["addressType"]).into(),
        with_more(&shown, ports.len()).into(),
        with_more(&listed, addresses.len()).into(),
        age(o, now),
    ])
}
