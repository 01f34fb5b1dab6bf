//! The audit policy, as kube-apiserver's `--audit-policy-file` reads it
//! (`audit.k8s.io/v1` `Policy`), and its decision: the level and the
//! stages a request is logged at (`k8s.io/apiserver/pkg/audit/policy`'s
//! `ruleMatches`: the first rule that matches decides; none: `None`).
//!
//! Herald serves reads, which carry no request body, so `Request` logs
//! exactly what the apiserver logs at that level. It does not copy
//! response bodies into the log: a `RequestResponse` rule is logged at
//! `Request`, and [`Policy::downgraded`] names those rules so that the
//! server says so when it loads the file.

use serde::Deserialize;

use crate::request::RequestInfo;
use crate::user::User;

/// How much of a request is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Nothing.
    None,
    /// Who asked what, and the answer's status.
    Metadata,
    /// Also the request's body (reads have none).
    Request,
    /// Also the response's body (logged at `Request` here).
    RequestResponse,
}

impl Level {
    /// The level's name, as in the policy and the event.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request's life an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    /// As soon as the request is authenticated.
    RequestReceived,
    /// When a long-running request (a watch) has sent its headers.
    ResponseStarted,
    /// When the response is complete.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// The stage's name, as in the policy and the event.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

/// A group's resources a rule names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group (`""`: the core group).
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*`, `*/status`, `pods/*`); empty:
    /// all of the group's.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; empty: any.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of the policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rule {
    /// The level of the requests it matches.
    pub level: Level,
    /// User names it applies to; empty: all.
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups it applies to (any of the user's); empty: all.
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Verbs it applies to; empty: all.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources it applies to; empty: all (resource requests only when
    /// set).
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces it applies to (`""`: cluster scope); empty: all.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource paths (`/healthz`, a `*` suffix for a prefix).
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not logged for the requests it matches (with the policy's).
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether managed fields are left out of logged bodies (none are
    /// logged here).
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

/// A policy file that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "audit policy: {}", self.0)
    }
}

impl std::error::Error for PolicyError {}

/// An audit policy.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<Stage>,
}

/// What the policy decided for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// The level (`None`: not logged).
    pub level: Level,
    /// The stages not logged.
    pub omit_stages: Vec<Stage>,
}

impl Decided {
    /// Whether `stage` is logged.
    pub fn logs(&self, stage: Stage) -> bool {
        self.level != Level::None && !self.omit_stages.contains(&stage)
    }
}

impl Policy {
    /// Reads a policy (YAML or JSON), checked as the apiserver's
    /// validation checks it.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let f: File = serde_yaml::from_str(text).map_err(|e| PolicyError(e.to_string()))?;
        let _ = (f.metadata, f.omit_managed_fields);
        if f.api_version != "audit.k8s.io/v1" {
            return Err(PolicyError(format!(
                "apiVersion {:?} is not audit.k8s.io/v1",
                f.api_version
            )));
        }
        if f.kind != "Policy" {
            return Err(PolicyError(format!("kind {:?} is not Policy", f.kind)));
        }
        if f.rules.is_empty() {
            return Err(PolicyError("it has no rules".into()));
        }
        for (i, r) in f.rules.iter().enumerate() {
            let bad = |why: String| PolicyError(format!("rules[{i}]: {why}"));
            if !r.non_resource_urls.is_empty()
                && (!r.resources.is_empty() || !r.namespaces.is_empty())
            {
                return Err(bad(
                    "rules cannot apply to both regular resources and non-resource URLs".into(),
                ));
            }
            for url in &r.non_resource_urls {
                let star = url.find('*');
                if url != "*" && !url.starts_with('/') {
                    return Err(bad(format!(
                        "nonResourceURLs {url:?} must start with \"/\""
                    )));
                }
                if star.is_some_and(|at| at != url.len() - 1) {
                    return Err(bad(format!(
                        "nonResourceURLs {url:?}: \"*\" may only end a path"
                    )));
                }
            }
            for g in &r.resources {
                if !g.resource_names.is_empty() && g.resources.is_empty() {
                    return Err(bad(
                        "resourceNames require a non-empty resources list".into()
                    ));
                }
                for res in &g.resources {
                    if res.is_empty() {
                        return Err(bad("a resource may not be empty".into()));
                    }
                }
            }
        }
        Ok(Policy {
            rules: f.rules,
            omit_stages: f.omit_stages,
        })
    }

    /// The rules (by index) whose `RequestResponse` level is logged as
    /// `Request`.
    pub fn downgraded(&self) -> Vec<usize> {
        (self.rules.iter().enumerate())
            .filter(|(_, r)| r.level == Level::RequestResponse)
            .map(|(i, _)| i)
            .collect()
    }

    /// The level and omitted stages of `info` asked by `user` (`None`: a
    /// request whose credentials were refused).
    pub fn decide(&self, user: Option<&User>, info: &RequestInfo) -> Decided {
        match self.rules.iter().find(|r| matches(r, user, info)) {
            None => Decided {
                level: Level::None,
                omit_stages: Vec::new(),
            },
            Some(r) => {
                let mut omit = self.omit_stages.clone();
                for s in &r.omit_stages {
                    if !omit.contains(s) {
                        omit.push(*s);
                    }
                }
                Decided {
                    level: r.level.min(Level::Request),
                    omit_stages: omit,
                }
            }
        }
    }
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

/// `ruleMatches`.
fn matches(r: &Rule, user: Option<&User>, info: &RequestInfo) -> bool {
    if !r.users.is_empty() && !user.is_some_and(|u| has(&r.users, &u.name)) {
        return false;
    }
    if !r.user_groups.is_empty()
        && !user.is_some_and(|u| u.groups.iter().any(|g| has(&r.user_groups, g)))
    {
        return false;
    }
    if !r.verbs.is_empty() && !has(&r.verbs, &info.verb) {
        return false;
    }
    if !r.namespaces.is_empty() || !r.resources.is_empty() {
        return matches_resource(r, info);
    }
    if !r.non_resource_urls.is_empty() {
        return !info.is_resource
            && r.non_resource_urls.iter().any(|spec| {
                spec == "*"
                    || *spec == info.path
                    || spec
                        .strip_suffix('*')
                        .is_some_and(|p| info.path.starts_with(p))
            });
    }
    true
}

/// `ruleMatchesResource`.
fn matches_resource(r: &Rule, info: &RequestInfo) -> bool {
    if !info.is_resource {
        return false;
    }
    if !r.namespaces.is_empty() && !has(&r.namespaces, &info.namespace) {
        return false;
    }
    if r.resources.is_empty() {
        return true;
    }
    let (resource, sub) = (&info.resource, &info.subresource);
    let combined = if sub.is_empty() {
        resource.clone()
    } else {
        format!("{resource}/{sub}")
    };
    r.resources.iter().any(|g| {
        g.group == info.api_group
            && (g.resources.is_empty()
                || g.resources.iter().any(|res| {
                    (g.resource_names.is_empty() || has(&g.resource_names, &info.name))
                        && (*res == combined
                            || res == "*"
                            || (!sub.is_empty()
                                && res.strip_prefix("*/").is_some_and(|s| s == sub))
                            || res.strip_suffix("/*").is_some_and(|p| p == resource))
                }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..User::default()
        }
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
      - group: ""
        resources: ["endpoints", "services"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
  - level: RequestResponse
    userGroups: ["auditors"]
    namespaces: ["kube-system"]
    omitStages: ["ResponseStarted"]
  - level: Request
    resources:
      - group: "apps"
        resources: ["deployments/*"]
      - group: ""
        resources: ["pods"]
        resourceNames: ["special"]
  - level: Metadata
"#;

    #[test]
    fn the_first_matching_rule_decides() {
        let p = Policy::parse(POLICY).unwrap();
        let proxy = user("system:kube-proxy", &["system:authenticated"]);
        let alice = user("alice", &["auditors"]);
        let get = |path: &str| RequestInfo::new("GET", path, &herald_kube::Query::parse(None));
        let watch =
            |path: &str| RequestInfo::new("GET", path, &herald_kube::Query::parse(Some("watch=1")));
        let level = |u: Option<&User>, i: &RequestInfo| p.decide(u, i).level;
        assert_eq!(level(Some(&proxy), &watch("/api/v1/services")), Level::None);
        // Not a watch: the catch-all.
        assert_eq!(
            level(Some(&proxy), &get("/api/v1/services")),
            Level::Metadata
        );
        assert_eq!(level(None, &get("/healthz/ping")), Level::None);
        assert_eq!(level(None, &get("/version")), Level::None);
        assert_eq!(level(None, &get("/versions")), Level::Metadata);
        // RequestResponse is logged as Request; its stages with the policy's.
        let d = p.decide(Some(&alice), &get("/api/v1/namespaces/kube-system/pods"));
        assert_eq!(d.level, Level::Request);
        assert_eq!(
            d.omit_stages,
            vec![Stage::RequestReceived, Stage::ResponseStarted]
        );
        assert!(d.logs(Stage::ResponseComplete) && !d.logs(Stage::RequestReceived));
        assert_eq!(p.downgraded(), vec![3]);
        // resource/*, resourceNames.
        assert_eq!(
            level(
                Some(&proxy),
                &get("/apis/apps/v1/namespaces/a/deployments/x/scale")
            ),
            Level::Request
        );
        assert_eq!(
            level(Some(&proxy), &get("/api/v1/namespaces/a/pods/special")),
            Level::Request
        );
        assert_eq!(
            level(Some(&proxy), &get("/api/v1/namespaces/a/pods/other")),
            Level::Metadata
        );
        // No rule matched: None.
        let only = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata, users: [bob]}]",
        )
        .unwrap();
        assert_eq!(
            only.decide(Some(&alice), &get("/api/v1/pods")).level,
            Level::None
        );
        assert!(
            !only
                .decide(Some(&alice), &get("/api/v1/pods"))
                .logs(Stage::ResponseComplete)
        );
    }

    #[test]
    fn bad_policies_are_refused_with_the_reason() {
        let bad = |text: &str| Policy::parse(text).unwrap_err().to_string();
        let head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";
        assert!(bad("").contains("audit policy"));
        assert!(
            bad("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]")
                .contains("not audit.k8s.io/v1")
        );
        assert!(bad(head).contains("no rules"));
        assert!(bad(&format!("{head}rules: [{{level: Loud}}]")).contains("Loud"));
        assert!(bad(&format!("{head}rules: [{{level: None, verb: [get]}}]")).contains("verb"));
        assert!(
            bad(&format!(
                "{head}rules: [{{level: None, namespaces: [a], nonResourceURLs: [/x]}}]"
            ))
            .contains("both")
        );
        assert!(
            bad(&format!(
                "{head}rules: [{{level: None, nonResourceURLs: [x]}}]"
            ))
            .contains("must start")
        );
        assert!(
            bad(&format!(
                "{head}rules: [{{level: None, nonResourceURLs: [/a*b]}}]"
            ))
            .contains("may only end")
        );
        assert!(
            bad(&format!(
                "{head}rules: [{{level: None, resources: [{{group: '', resourceNames: [x]}}]}}]"
            ))
            .contains("resourceNames")
        );
        assert!(
            bad(&format!(
                "{head}omitStages: [Sometime]\nrules: [{{level: None}}]"
            ))
            .contains("Sometime")
        );
    }
}
