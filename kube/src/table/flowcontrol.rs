//! The flowcontrol.apiserver.k8s.io/v1 printers, as
//! `pkg/printers/internalversion/printers.go` prints them:
//! `printFlowSchema` (a list's rows in matching order, as
//! `printFlowSchemaList` sorts them) and `printPriorityLevelConfiguration`.

use serde_json::Value;

use super::cells::{BuiltIn, CREATED_DOC, Col, NAME_DOC, Row, age, at, int, items, name, string};
use super::time::Nanos;

/// The printers of this module's kinds.
pub(crate) const PRINTERS: &[BuiltIn] = &[
    BuiltIn {
        kind: "FlowSchema",
        columns: FLOW_SCHEMAS,
        row: flow_schema,
    },
    BuiltIn {
        kind: "PriorityLevelConfiguration",
        columns: PRIORITY_LEVELS,
        row: priority_level,
    },
];

const FLOW_SCHEMAS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "PriorityLevel",
        "string",
        "",
        "`name` is the name of the priority level configuration being referenced Required.",
        0,
    ),
    Col::new(
        "MatchingPrecedence",
        "string",
        "",
        "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.",
        0,
    ),
    Col::new(
        "DistinguisherMethod",
        "string",
        "",
        "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
    Col::new(
        "MissingPL",
        "string",
        "",
        "references a broken or non-existent PriorityLevelConfiguration",
        0,
    ),
];

const PRIORITY_LEVELS: &[Col] = &[
    Col::new("Name", "string", "name", NAME_DOC, 0),
    Col::new(
        "Type",
        "string",
        "",
        "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.",
        0,
    ),
    Col::new(
        "NominalConcurrencyShares",
        "string",
        "",
        "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)",
        0,
    ),
    Col::new(
        "Queues",
        "string",
        "",
        "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.",
        0,
    ),
    Col::new(
        "HandSize",
        "string",
        "",
        "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.",
        0,
    ),
    Col::new(
        "QueueLengthLimit",
        "string",
        "",
        "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.",
        0,
    ),
    Col::new("Age", "string", "", CREATED_DOC, 0),
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
