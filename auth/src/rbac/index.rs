//! A snapshot of the cluster's RBAC objects and the decision over it.
//!
//! The apiserver's resolver (`DefaultRuleResolver.VisitRulesFor`) visits
//! every ClusterRoleBinding, then, for a namespaced request, the
//! RoleBindings of its namespace; a binding applies when one of its
//! subjects is the user (`User`), one of its groups (`Group`) or its
//! service account (`ServiceAccount`, the namespace defaulting to the
//! binding's); its role's rules are tried in turn, and the first that
//! allows decides. A binding whose role is missing is an error that
//! only shows in the reason of a refusal. RBAC never denies: without an
//! allowing rule it has no opinion, and the request is refused.
//!
//! Here the bindings are indexed by subject (`User` and `ServiceAccount`
//! subjects by the user name they match, `Group` subjects by group), so
//! that a decision looks at the bindings of its user and groups only,
//! whatever the number of bindings in the cluster; bindings are visited
//! in name order (the apiserver's order is its informer's, unordered,
//! so only which binding an allow names can differ).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::model::{Binding, PolicyRule, Role, Subject};
use super::rules::allows;
use crate::request::RequestInfo;
use crate::user::{MASTERS, User};

/// An authorizer's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// Why (`RBAC: allowed by ...`), or what went wrong on the way to a
    /// refusal, named by the authorizer as the apiserver's union of
    /// authorizers names it (`rbac: RBAC: clusterrole.rbac.authorization.k8s.io
    /// "x" not found`); empty when there is nothing to say.
    pub reason: String,
}

/// What a binding is, for the reason an allow gives.
#[derive(Debug)]
struct Bound {
    binding: Binding,
    /// `true` for a ClusterRoleBinding.
    cluster: bool,
}

/// A snapshot of the RBAC objects, indexed for decisions.
#[derive(Debug, Default)]
pub struct Rbac {
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    bindings: Vec<Bound>,
    /// ClusterRoleBindings by subject key (`u:<user>`, `g:<group>`):
    /// indices into `bindings`, ascending.
    cluster_by_subject: HashMap<String, Vec<usize>>,
    /// RoleBindings by (namespace, subject key).
    namespaced_by_subject: HashMap<(String, String), Vec<usize>>,
    undecodable: u64,
}

/// Collects RBAC objects into an [`Rbac`].
#[derive(Debug, Default)]
pub struct RbacBuilder {
    cluster_roles: Vec<Role>,
    roles: Vec<Role>,
    cluster_bindings: Vec<Binding>,
    bindings: Vec<Binding>,
    undecodable: u64,
}

impl RbacBuilder {
    /// An empty builder.
    pub fn new() -> RbacBuilder {
        RbacBuilder::default()
    }

    fn decode<T: serde::de::DeserializeOwned>(&mut self, json: &[u8]) -> Option<T> {
        let decoded = serde_json::from_slice(json).ok();
        if decoded.is_none() {
            self.undecodable += 1;
        }
        decoded
    }

    /// Adds a ClusterRole's JSON (one that does not decode is counted,
    /// and grants nothing).
    pub fn cluster_role(&mut self, json: &[u8]) -> &mut Self {
        if let Some(r) = self.decode(json) {
            self.cluster_roles.push(r);
        }
        self
    }

    /// Adds a Role's JSON.
    pub fn role(&mut self, json: &[u8]) -> &mut Self {
        if let Some(r) = self.decode(json) {
            self.roles.push(r);
        }
        self
    }

    /// Adds a ClusterRoleBinding's JSON.
    pub fn cluster_role_binding(&mut self, json: &[u8]) -> &mut Self {
        if let Some(b) = self.decode(json) {
            self.cluster_bindings.push(b);
        }
        self
    }

    /// Adds a RoleBinding's JSON.
    pub fn role_binding(&mut self, json: &[u8]) -> &mut Self {
        if let Some(b) = self.decode(json) {
            self.bindings.push(b);
        }
        self
    }

    /// The snapshot.
    pub fn build(self) -> Rbac {
        let mut rbac = Rbac {
            undecodable: self.undecodable,
            ..Rbac::default()
        };
        for r in self.cluster_roles {
            rbac.cluster_roles.insert(r.metadata.name, r.rules.into());
        }
        for r in self.roles {
            rbac.roles
                .insert((r.metadata.namespace, r.metadata.name), r.rules.into());
        }
        let mut cluster = self.cluster_bindings;
        cluster.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut namespaced = self.bindings;
        namespaced.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for (binding, is_cluster) in cluster
            .into_iter()
            .map(|b| (b, true))
            .chain(namespaced.into_iter().map(|b| (b, false)))
        {
            let at = rbac.bindings.len();
            let ns = binding.metadata.namespace.clone();
            let keys: BTreeSet<String> = binding
                .subjects
                .iter()
                .filter_map(|s| subject_key(s, if is_cluster { "" } else { &ns }))
                .collect();
            for key in keys {
                if is_cluster {
                    rbac.cluster_by_subject.entry(key).or_default().push(at);
                } else {
                    rbac.namespaced_by_subject
                        .entry((ns.clone(), key))
                        .or_default()
                        .push(at);
                }
            }
            rbac.bindings.push(Bound {
                binding,
                cluster: is_cluster,
            });
        }
        rbac
    }
}

/// The key a subject is found by: `u:<user name>` for a user or a
/// service account (`system:serviceaccount:<ns>:<name>`), `g:<group>`
/// for a group; `None` for a subject that matches nobody.
fn subject_key(s: &Subject, binding_namespace: &str) -> Option<String> {
    match s.kind.as_str() {
        "User" => Some(format!("u:{}", s.name)),
        "Group" => Some(format!("g:{}", s.name)),
        "ServiceAccount" => {
            let ns = if s.namespace.is_empty() {
                binding_namespace
            } else {
                &s.namespace
            };
            (!ns.is_empty() && !s.name.is_empty())
                .then(|| format!("u:system:serviceaccount:{ns}:{}", s.name))
        }
        _ => None,
    }
}

/// Whether `s` is `user` (or one of its groups).
fn applies(s: &Subject, user: &User, binding_namespace: &str) -> bool {
    match subject_key(s, binding_namespace) {
        Some(key) => match key.split_once(':') {
            Some(("u", name)) => name == user.name,
            Some(("g", group)) => user.in_group(group),
            _ => false,
        },
        None => false,
    }
}

impl Rbac {
    /// RBAC objects that did not decode (each grants nothing).
    pub fn undecodable(&self) -> u64 {
        self.undecodable
    }

    /// How many bindings the snapshot holds.
    pub fn bindings(&self) -> usize {
        self.bindings.len()
    }

    /// The decision for `user` asking for `info`: `system:masters`
    /// first, then RBAC.
    pub fn authorize(&self, user: &User, info: &RequestInfo) -> Decision {
        if user.in_group(MASTERS) {
            return Decision {
                allowed: true,
                reason: String::new(),
            };
        }
        let mut keys = Vec::with_capacity(user.groups.len() + 1);
        keys.push(format!("u:{}", user.name));
        keys.extend(user.groups.iter().map(|g| format!("g:{g}")));
        let mut errors: Vec<String> = Vec::new();
        let cluster = self.matching(keys.iter().filter_map(|k| self.cluster_by_subject.get(k)));
        if let Some(reason) = self.visit(&cluster, user, info, &mut errors) {
            return Decision {
                allowed: true,
                reason,
            };
        }
        if !info.namespace.is_empty() {
            let ns = info.namespace.clone();
            let namespaced = self.matching(
                keys.into_iter()
                    .filter_map(|k| self.namespaced_by_subject.get(&(ns.clone(), k))),
            );
            if let Some(reason) = self.visit(&namespaced, user, info, &mut errors) {
                return Decision {
                    allowed: true,
                    reason,
                };
            }
        }
        let mut seen = BTreeSet::new();
        errors.retain(|e| seen.insert(e.clone()));
        // The union of authorizers names the one that had no opinion
        // (kube-apiserver 1.37: `rbac: RBAC: ...`).
        let reason = match errors.len() {
            0 => String::new(),
            1 => format!("rbac: RBAC: {}", errors[0]),
            _ => format!("rbac: RBAC: [{}]", errors.join(", ")),
        };
        Decision {
            allowed: false,
            reason,
        }
    }

    /// The bindings in `lists`, once each, in the snapshot's order.
    fn matching<'a>(&self, lists: impl Iterator<Item = &'a Vec<usize>>) -> Vec<usize> {
        let mut all: Vec<usize> = lists.flatten().copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Visits `bindings`' rules; the allow's reason if one allows.
    fn visit(
        &self,
        bindings: &[usize],
        user: &User,
        info: &RequestInfo,
        errors: &mut Vec<String>,
    ) -> Option<String> {
        for &at in bindings {
            let Bound { binding, cluster } = &self.bindings[at];
            let ns = &binding.metadata.namespace;
            let rules = match binding.role_ref.kind.as_str() {
                "ClusterRole" => self
                    .cluster_roles
                    .get(&binding.role_ref.name)
                    .ok_or_else(|| {
                        format!(
                            "clusterrole.rbac.authorization.k8s.io {} not found",
                            herald_kube::quote::go_quote(&binding.role_ref.name)
                        )
                    }),
                "Role" if !*cluster => self
                    .roles
                    .get(&(ns.clone(), binding.role_ref.name.clone()))
                    .ok_or_else(|| {
                        format!(
                            "role.rbac.authorization.k8s.io {} not found",
                            herald_kube::quote::go_quote(&binding.role_ref.name)
                        )
                    }),
                // A ClusterRoleBinding to a Role looks the Role up in the
                // namespace "" (where none can be).
                "Role" => Err(format!(
                    "role.rbac.authorization.k8s.io {} not found",
                    herald_kube::quote::go_quote(&binding.role_ref.name)
                )),
                other => Err(format!(
                    "unsupported role reference kind: {}",
                    herald_kube::quote::go_quote(other)
                )),
            };
            let rules = match rules {
                Ok(r) => r,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            if rules.iter().any(|r| allows(r, info)) {
                let applying = binding
                    .subjects
                    .iter()
                    .find(|s| applies(s, user, if *cluster { "" } else { ns }));
                if let Some(subject) = applying {
                    return Some(format!(
                        "RBAC: allowed by {}",
                        describe(binding, *cluster, subject)
                    ));
                }
            }
        }
        None
    }
}

/// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`, as the
/// apiserver's describers word it.
fn describe(b: &Binding, cluster: bool, s: &Subject) -> String {
    use herald_kube::quote::go_quote as q;
    let ns = if cluster {
        ""
    } else {
        b.metadata.namespace.as_str()
    };
    let subject = if s.kind == "ServiceAccount" {
        let sa_ns = if s.namespace.is_empty() {
            ns
        } else {
            &s.namespace
        };
        format!("{} {}", s.kind, q(&format!("{}/{sa_ns}", s.name)))
    } else {
        format!("{} {}", s.kind, q(&s.name))
    };
    if cluster {
        format!(
            "ClusterRoleBinding {} of {} {} to {subject}",
            q(&b.metadata.name),
            b.role_ref.kind,
            q(&b.role_ref.name)
        )
    } else {
        format!(
            "RoleBinding {} of {} {} to {subject}",
            q(&format!("{}/{}", b.metadata.name, b.metadata.namespace)),
            b.role_ref.kind,
            q(&b.role_ref.name)
        )
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
