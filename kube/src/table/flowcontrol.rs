//! The flowcontrol.apiserver.k8s.io/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printFlowSchema` (a list's rows in matching order, as
//! `printFlowSchemaList` sorts them) and `printPriorityLevelConfiguration`.

use serde_json::Value;

use super::cells::{BuiltIn, Row, age, at, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "FlowSchema",
        group: "flowcontrol.apiserver.k8s.io",
        row: flow_schema,
    },
    BuiltIn {
        kind: "PriorityLevelConfiguration",
        group: "flowcontrol.apiserver.k8s.io",
        row: priority_level,
    },
];

/// `printFlowSchema`: the `Dangling` condition's status as `MissingPL`
/// (`?` without one).
fn flow_schema(o: &Value, now: Nanos) -> Row {
    let method = at(o, &["spec", "distinguisherMethod"]);
    let method = if method.is_object() {
        string(method, &["type"])
    } else {
        "<none>"
    };
    let missing = items(o, &["status", "conditions"])
        .iter()
        .find(|c| string(c, &["type"]) == "Dangling")
        .map_or("?", |c| string(c, &["status"]));
    Row::from(vec![
        name(o),
        string(o, &["spec", "priorityLevelConfiguration", "name"]).into(),
        int(o, &["spec", "matchingPrecedence"]).into(),
        method.into(),
        age(o, now),
        missing.into(),
    ])
}

/// `printFlowSchemaList`: the rows in `apihelpers.FlowSchemaSequence`
/// order (by matching precedence, then by name); `order` gives, for each
/// row in that order, the index of its object in `objects`.
pub(crate) fn flow_schema_order(objects: &[Value]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| {
            let o = &objects[i];
            (
                int(o, &["spec", "matchingPrecedence"]),
                string(o, &["metadata", "name"]),
            )
        };
        key(a).cmp(&key(b))
    });
    order
}

/// `printPriorityLevelConfiguration`: a limited level's shares and
/// queuing, `<none>` for what it lacks.
fn priority_level(o: &Value, now: Nanos) -> Row {
    let none = || Value::from("<none>");
    let limited = at(o, &["spec", "limited"]);
    let (mut shares, mut queues, mut hand, mut length) = (none(), none(), none(), none());
    if limited.is_object() {
        shares = int(limited, &["nominalConcurrencyShares"]).into();
        let q = at(limited, &["limitResponse", "queuing"]);
        if q.is_object() {
            queues = int(q, &["queues"]).into();
            hand = int(q, &["handSize"]).into();
            length = int(q, &["queueLengthLimit"]).into();
        }
    }
    Row::from(vec![
        name(o),
        string(o, &["spec", "type"]).into(),
        shares,
        queues,
        hand,
        length,
        age(o, now),
    ])
}
