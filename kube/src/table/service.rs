//! Services and their endpoints, as `pkg/printers/internalversion/
//! printers.go` prints them: `printService`, `printEndpoints` and
//! discovery.k8s.io's `printEndpointSlice`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::cells::{
    BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, format_labels, int, items, name, string,
};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "Service",
        columns: SERVICES,
        row: service,
    },
    BuiltIn {
        kind: "Endpoints",
        columns: ENDPOINTS,
        row: endpoints,
    },
    BuiltIn {
        kind: "EndpointSlice",
        columns: ENDPOINTSLICES,
        row: endpoint_slice,
    },
];

const SERVICES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Type",
        "string",
        "",
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
        0,
    ),
    Col::new(
        "Cluster-IP",
        "string",
        "",
        "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        0,
    ),
    Col::new(
        "External-IP",
        "string",
        "",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
        0,
    ),
    Col::new(
        "Port(s)",
        "string",
        "",
        "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
    Col::new(
        "Selector",
        "string",
        "",
        "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
        1,
    ),
];

const ENDPOINTS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Endpoints",
        "string",
        "",
        "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
];

const ENDPOINTSLICES: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "AddressType",
        "string",
        "",
        "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.",
        0,
    ),
    Col::new(
        "Ports",
        "string",
        "",
        "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.",
        0,
    ),
    Col::new(
        "Endpoints",
        "string",
        "",
        "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
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
