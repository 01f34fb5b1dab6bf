//! An audit event as the apiserver writes it to its log backend: one
//! `audit.k8s.io/v1` `Event` per line, fields in the Go struct's order,
//! empty ones left out as its `omitempty` leaves them out, timestamps as
//! `metav1.MicroTime`.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Serialize;

use super::policy::{Level, Stage};
use crate::request::RequestInfo;
use crate::user::User;

/// The annotation naming the authorizer's decision (`allow`, `forbid`).
pub const DECISION: &str = "authorization.k8s.io/decision";
/// The annotation carrying the authorizer's reason.
pub const REASON: &str = "authorization.k8s.io/reason";

/// A request's status as the event shows it: the code, and for a
/// `Status` answer its status, message, reason and details.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResponseStatus {
    metadata: Empty,
    #[serde(skip_serializing_if = "String::is_empty")]
    status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "is_zero")]
    code: u16,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Empty {}

fn is_zero(c: &u16) -> bool {
    *c == 0
}

impl ResponseStatus {
    /// A response with `code` whose body is no `Status`.
    pub fn code(code: u16) -> ResponseStatus {
        ResponseStatus {
            code,
            ..ResponseStatus::default()
        }
    }

    /// A `Status` answer (`status` is `Failure` for any code from 300).
    pub fn of(e: &herald_kube::ApiError) -> ResponseStatus {
        ResponseStatus {
            status: if e.code >= 300 { "Failure" } else { "Success" }.into(),
            message: e.message.clone(),
            reason: e.reason.into(),
            details: e.details.as_deref().cloned(),
            code: e.code,
            ..ResponseStatus::default()
        }
    }
}

#[derive(Serialize)]
struct UserInfo<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extra: &'a BTreeMap<String, Vec<String>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    resource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    api_group: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    api_version: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    subresource: &'a str,
}

/// One request's audit record, written once per logged stage.
#[derive(Debug, Clone)]
pub struct Event {
    /// The level the policy chose.
    pub level: Level,
    /// The request's ID (a UUID, or the client's `Audit-ID`).
    pub audit_id: String,
    /// The request URI, query included.
    pub request_uri: String,
    /// What the request asked.
    pub info: RequestInfo,
    /// Who asked (`None`: credentials refused, or access control off).
    pub user: Option<User>,
    /// Whom it impersonates, once that is allowed (`impersonatedUser`).
    pub impersonated_user: Option<User>,
    /// The client's address.
    pub source_ips: Vec<String>,
    /// The client's `User-Agent`.
    pub user_agent: String,
    /// The answer, once there is one.
    pub response_status: Option<ResponseStatus>,
    /// When the request was received.
    pub received: SystemTime,
    /// The authorizer's annotations (sorted, as Go's map marshals).
    pub annotations: BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: &'static str,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: &'static str,
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: &'a str,
    user: UserInfo<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<UserInfo<'a>>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "<[String]>::is_empty")]
    source_ips: &'a [String],
    #[serde(skip_serializing_if = "str::is_empty")]
    user_agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<ObjectRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<&'a ResponseStatus>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<&'static str, String>,
}

impl Event {
    /// The event at `stage`, written `at`, as one JSON line (with its
    /// newline).
    pub fn line(&self, stage: Stage, at: SystemTime) -> Vec<u8> {
        let none = BTreeMap::new();
        let no_annotations = BTreeMap::new();
        let user = self.user.as_ref();
        let i = &self.info;
        let line = Line {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: self.level.as_str(),
            audit_id: &self.audit_id,
            stage: stage.as_str(),
            request_uri: &self.request_uri,
            verb: &i.verb,
            user: UserInfo {
                username: user.map_or("", |u| &u.name),
                uid: user.map_or("", |u| &u.uid),
                groups: user.map_or(&[], |u| &u.groups),
                extra: user.map_or(&none, |u| &u.extra),
            },
            impersonated_user: self.impersonated_user.as_ref().map(|u| UserInfo {
                username: &u.name,
                uid: &u.uid,
                groups: &u.groups,
                extra: &u.extra,
            }),
            source_ips: &self.source_ips,
            user_agent: &self.user_agent,
            object_ref: i.is_resource.then_some(ObjectRef {
                resource: &i.resource,
                namespace: &i.namespace,
                name: &i.name,
                api_group: &i.api_group,
                api_version: &i.api_version,
                subresource: &i.subresource,
            }),
            // The apiserver's RequestReceived event has no status yet.
            response_status: self
                .response_status
                .as_ref()
                .filter(|_| stage != Stage::RequestReceived),
            request_received_timestamp: herald_kube::table::micro_time(self.received),
            stage_timestamp: herald_kube::table::micro_time(at),
            annotations: if stage == Stage::RequestReceived {
                &no_annotations
            } else {
                &self.annotations
            },
        };
        let mut out = serde_json::to_vec(&line).unwrap_or_default();
        out.push(b'\n');
        out
    }
}

/// A new audit ID: a random (version 4) UUID.
pub fn new_id() -> String {
    let mut b = [0u8; 16];
    // The system's generator does not fail on Linux; a zero ID would
    // still be a well-formed one.
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_the_apiservers_line() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_795_000_000, 5_000);
        let mut e = Event {
            impersonated_user: None,
            level: Level::Metadata,
            audit_id: "a4c6d7e2-0000-4000-8000-000000000001".into(),
            request_uri: "/api/v1/namespaces/a/pods?limit=500".into(),
            info: RequestInfo::new(
                "GET",
                "/api/v1/namespaces/a/pods",
                &herald_kube::Query::parse(Some("limit=500")),
            ),
            user: Some(User {
                name: "bob".into(),
                groups: vec!["devs".into(), "system:authenticated".into()],
                ..User::default()
            }),
            source_ips: vec!["127.0.0.1".into()],
            user_agent: "kubectl/v1.37.2".into(),
            response_status: Some(ResponseStatus::code(200)),
            received: t,
            annotations: BTreeMap::from([(DECISION, "allow".into()), (REASON, String::new())]),
        };
        let line = String::from_utf8(e.line(Stage::ResponseComplete, t)).unwrap();
        assert_eq!(
            line,
            concat!(
                r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","#,
                r#""auditID":"a4c6d7e2-0000-4000-8000-000000000001","stage":"ResponseComplete","#,
                r#""requestURI":"/api/v1/namespaces/a/pods?limit=500","verb":"list","#,
                r#""user":{"username":"bob","groups":["devs","system:authenticated"]},"#,
                r#""sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.2","#,
                r#""objectRef":{"resource":"pods","namespace":"a","apiVersion":"v1"},"#,
                r#""responseStatus":{"metadata":{},"code":200},"#,
                r#""requestReceivedTimestamp":"2026-11-18T11:06:40.000005Z","#,
                r#""stageTimestamp":"2026-11-18T11:06:40.000005Z","#,
                r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#,
                "\n"
            )
        );
        // RequestReceived: no status, no annotations yet.
        let first = String::from_utf8(e.line(Stage::RequestReceived, t)).unwrap();
        assert!(!first.contains("responseStatus") && !first.contains("annotations"));
        // A refused credential: no user, the 401's status.
        e.user = None;
        e.response_status = Some(ResponseStatus::of(&crate::unauthorized()));
        let refused = String::from_utf8(e.line(Stage::ResponseStarted, t)).unwrap();
        assert!(refused.contains(r#""user":{}"#), "{refused}");
        assert!(refused.contains(
            r#""responseStatus":{"metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#
        ), "{refused}");
    }

    #[test]
    fn ids_are_version_4_uuids_and_differ() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!("89ab".contains(&a[19..20]));
    }
}
