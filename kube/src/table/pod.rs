//! The pod printer, as `pkg/printers/internalversion/printers.go`'s
//! `printPod` prints a pod: ready containers (sidecars included), the
//! status a person reads (`Init:1/2`, `CrashLoopBackOff`, `Completed`,
//! `Terminating`, ...), restarts with the last one's age, and, for `-o
//! wide`, its IP, node, nominated node and readiness gates.

use serde_json::{Value, json};

use super::cells::{BuiltIn, Row, age, at, int, items, name, string};
use super::time::{self, Nanos};

/// The pod printer.
pub(crate) const PRINTERS: &[BuiltIn] = &[BuiltIn {
    kind: "Pod",
    group: "",
    row: pod,
}];

/// A container status's last termination time (`lastState.terminated
/// .finishedAt`), `None` for none (or Go's zero time, which no time is
/// before).
fn last_terminated(status: &Value) -> Option<Nanos> {
    time::at(at(status, &["lastState", "terminated", "finishedAt"]))
}

/// Whether `t` is set (Go's `!= nil` for the state's pointer).
fn set(v: &Value) -> bool {
    v.is_object()
}

/// The terminated state's reason: its own, else its signal or exit code.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    match (string(t, &["reason"]), int(t, &["signal"])) {
        ("", 0) => format!("{prefix}ExitCode:{}", int(t, &["exitCode"])),
        ("", signal) => format!("{prefix}Signal:{signal}"),
        (reason, _) => format!("{prefix}{reason}"),
    }
}

fn condition_true(o: &Value, ty: &str) -> bool {
    items(o, &["status", "conditions"])
        .iter()
        .any(|c| string(c, &["type"]) == ty && string(c, &["status"]) == "True")
}

/// `printPod`.
fn pod(o: &Value, now: Nanos) -> Row {
    let mut restarts = 0;
    let mut restartable_restarts = 0;
    let mut total = items(o, &["spec", "containers"]).len();
    let mut ready = 0;
    // Go's zero time sorts before every time: `None` here.
    let mut last_restart: Option<Nanos> = None;
    let mut last_restartable_restart: Option<Nanos> = None;
    let later = |a: Option<Nanos>, b: Option<Nanos>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };

    let phase = string(o, &["status", "phase"]);
    let mut reason = match string(o, &["status", "reason"]) {
        "" => phase.to_owned(),
        r => r.to_owned(),
    };
    if items(o, &["status", "conditions"]).iter().any(|c| {
        string(c, &["type"]) == "PodScheduled" && string(c, &["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".into();
    }
    let conditions = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };

    let init_specs = items(o, &["spec", "initContainers"]);
    let restartable = |name: &str| {
        init_specs
            .iter()
            .find(|c| string(c, &["name"]) == name)
            .is_some_and(|c| string(c, &["restartPolicy"]) == "Always")
    };
    total += init_specs
        .iter()
        .filter(|c| string(c, &["restartPolicy"]) == "Always")
        .count();

    let mut initializing = false;
    for (i, c) in items(o, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let count = int(c, &["restartCount"]);
        restarts += count;
        last_restart = later(last_restart, last_terminated(c));
        let is_restartable = restartable(string(c, &["name"]));
        if is_restartable {
            restartable_restarts += count;
            last_restartable_restart = later(last_restartable_restart, last_terminated(c));
        }
        let terminated = at(c, &["state", "terminated"]);
        let waiting = string(c, &["state", "waiting", "reason"]);
        if set(terminated) && int(terminated, &["exitCode"]) == 0 {
            continue;
        }
        if is_restartable && at(c, &["started"]).as_bool() == Some(true) {
            if at(c, &["ready"]).as_bool() == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if set(terminated) {
            terminated_reason(terminated, "Init:")
        } else if set(at(c, &["state", "waiting"]))
            && !waiting.is_empty()
            && waiting != "PodInitializing"
        {
            format!("Init:{waiting}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || init_condition_true(o) {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        let mut error_reason = String::new();
        for c in items(o, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(c, &["restartCount"]);
            last_restart = later(last_restart, last_terminated(c));
            let waiting = at(c, &["state", "waiting"]);
            let terminated = at(c, &["state", "terminated"]);
            if set(waiting) && !string(waiting, &["reason"]).is_empty() {
                reason = string(waiting, &["reason"]).to_owned();
            } else if set(terminated) {
                reason = terminated_reason(terminated, "");
                if int(terminated, &["exitCode"]) != 0 {
                    error_reason.clone_from(&reason);
                }
            } else if at(c, &["ready"]).as_bool() == Some(true) && set(at(c, &["state", "running"]))
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" {
            if has_running && condition_true(o, "Ready") {
                reason = "Running".into();
            } else if !error_reason.is_empty() {
                reason = error_reason;
            } else if has_running {
                reason = "NotReady".into();
            }
        }
    }

    if !at(o, &["metadata", "deletionTimestamp"]).is_null() {
        if string(o, &["status", "reason"]) == "NodeLost" {
            reason = "Unknown".into();
        } else if phase != "Failed" && phase != "Succeeded" {
            reason = "Terminating".into();
        }
    }

    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", time::since(Some(t), now)),
        _ => restarts.to_string(),
    };

    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_owned()
        } else {
            s.to_owned()
        }
    };
    let ip = items(o, &["status", "podIPs"])
        .first()
        .map_or("", |ip| string(ip, &["ip"]));
    let gates = items(o, &["spec", "readinessGates"]);
    let gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let statuses = items(o, &["status", "conditions"]);
        let met = gates
            .iter()
            .filter(|g| {
                let ty = string(g, &["conditionType"]);
                statuses
                    .iter()
                    .find(|c| string(c, &["type"]) == ty)
                    .is_some_and(|c| string(c, &["status"]) == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    Row {
        cells: vec![
            name(o),
            format!("{ready}/{total}").into(),
            reason.into(),
            restarts.into(),
            age(o, now),
            or_none(ip).into(),
            or_none(string(o, &["spec", "nodeName"])).into(),
            or_none(string(o, &["status", "nominatedNodeName"])).into(),
            gates.into(),
        ],
        conditions,
    }
}

/// `isPodInitializedConditionTrue`: the first `Initialized` condition's.
fn init_condition_true(o: &Value) -> bool {
    items(o, &["status", "conditions"])
        .iter()
        .find(|c| string(c, &["type"]) == "Initialized")
        .is_some_and(|c| string(c, &["status"]) == "True")
}
