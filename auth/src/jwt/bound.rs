//! Bound tokens (the TokenRequest API's, issuer one of
//! `--service-account-issuer`), checked as the apiserver's `validator`
//! checks them at v1.37's feature-gate defaults: `claims.go`,
//! `Validate`.

use serde_json::{Map, Value};

use super::claims::{self, Public};
use super::lookup::{JwtError, LEEWAY, Lookup, sa_user};
use super::object::Object;
use crate::user::{CREDENTIAL_ID, User};

/// A `ref` claim: a bound object's name and UID.
#[derive(Debug, Default, Clone, Copy)]
struct Ref<'a> {
    name: &'a str,
    uid: &'a str,
}

impl<'a> Ref<'a> {
    /// The ref `key` of `k` (the `kubernetes.io` claim): `None` if absent
    /// or `null` (a nil `*ref` in Go; `{}` is a ref, with no name).
    fn read(k: &'a Map<String, Value>, key: &str) -> Result<Option<Ref<'a>>, JwtError> {
        let claim = format!("kubernetes.io.{key}");
        let Some(r) = claims::object(k, key, &claim)? else {
            return Ok(None);
        };
        Ok(Some(Ref {
            name: claims::string(r, "name", &format!("{claim}.name"))?,
            uid: claims::string(r, "uid", &format!("{claim}.uid"))?,
        }))
    }
}

/// The `kubernetes.io` claim (Go's `privateClaims`).
#[derive(Debug, Default)]
struct Private<'a> {
    namespace: &'a str,
    sa: Ref<'a>,
    pod: Option<Ref<'a>>,
    secret: Option<Ref<'a>>,
    node: Option<Ref<'a>>,
    webhook: bool,
}

impl<'a> Private<'a> {
    fn read(claims: &'a Map<String, Value>) -> Result<Private<'a>, JwtError> {
        let Some(k) = claims::object(claims, "kubernetes.io", "kubernetes.io")? else {
            return Ok(Private::default());
        };
        let validating = Ref::read(k, "validatingwebhookconfiguration")?;
        let mutating = Ref::read(k, "mutatingwebhookconfiguration")?;
        if let Some(a) = claims::object(k, "attestations", "kubernetes.io.attestations")? {
            for (name, values) in a {
                let claim = format!("kubernetes.io.attestations.{name}");
                match values {
                    Value::Null => {}
                    Value::Array(values) => {
                        for v in values {
                            if !matches!(v, Value::Null | Value::String(_)) {
                                return Err(JwtError(format!(
                                    "claim {claim:?}: json: cannot unmarshal into Go value of \
                                     type string"
                                )));
                            }
                        }
                    }
                    _ => {
                        return Err(JwtError(format!(
                            "claim {claim:?}: json: cannot unmarshal into Go value of type \
                             []string"
                        )));
                    }
                }
            }
        }
        claims::date(k, "warnafter", "kubernetes.io.warnafter")?;
        Ok(Private {
            namespace: claims::string(k, "namespace", "kubernetes.io.namespace")?,
            sa: Ref::read(k, "serviceaccount")?.unwrap_or_default(),
            pod: Ref::read(k, "pod")?,
            secret: Ref::read(k, "secret")?,
            node: Ref::read(k, "node")?,
            webhook: validating.is_some() || mutating.is_some(),
        })
    }
}

/// Whether `object` has been being deleted for longer than the leeway
/// (`invalidIfDeletedBefore`: now less `jwt.DefaultLeeway`).
fn deleted(object: &Object, now: u64) -> bool {
    object
        .deletion
        .is_some_and(|at| i128::from(at) < i128::from(now) - i128::from(LEEWAY))
}

/// Checks the Pod, Secret or Node `r` a token is bound to
/// (`kind`: `pod`, `secret`, `node`), where the server can look it up.
fn check_bound(
    lookup: &dyn Lookup,
    kind: &str,
    ns: &str,
    r: Ref<'_>,
    now: u64,
) -> Result<(), JwtError> {
    let what = if ns.is_empty() {
        format!("{kind} {}", r.name)
    } else {
        format!("{kind} {ns}/{}", r.name)
    };
    let invalidated = |why: &str| {
        JwtError(format!(
            "service account token has been invalidated: {what} {why}"
        ))
    };
    match lookup.get(&format!("{kind}s"), ns, r.name) {
        None => Ok(()),
        Some(None) => Err(invalidated("not found")),
        Some(Some(o)) if o.uid != r.uid => Err(JwtError(format!(
            "{kind} UID ({}) does not match service account {kind} ref claim ({})",
            o.uid, r.uid
        ))),
        Some(Some(o)) if deleted(&o, now) => Err(invalidated(&format!(
            "is being deleted, for over {LEEWAY}s"
        ))),
        Some(Some(_)) => Ok(()),
    }
}

/// The user of a bound token whose payload is `claims`, at `now`.
pub(super) fn validate(
    public: &Public<'_>,
    claims: &Map<String, Value>,
    lookup: &dyn Lookup,
    now: u64,
) -> Result<User, JwtError> {
    let k = Private::read(claims)?;
    let (ns, sa) = (k.namespace, k.sa);
    // The apiserver's lookup of an empty name or namespace fails.
    if ns.is_empty() || sa.name.is_empty() {
        return Err(JwtError("service account claims are missing".into()));
    }
    if public.sub != format!("system:serviceaccount:{ns}:{}", sa.name) {
        return Err(JwtError("sub claim is invalid".into()));
    }
    match lookup.get("serviceaccounts", ns, sa.name) {
        None => {}
        Some(None) => {
            return Err(JwtError(format!("serviceaccounts {:?} not found", sa.name)));
        }
        Some(Some(account)) => {
            if account.uid != sa.uid {
                return Err(JwtError(format!(
                    "service account UID ({}) does not match claim ({})",
                    account.uid, sa.uid
                )));
            }
            if deleted(&account, now) {
                return Err(JwtError(format!(
                    "service account {ns}/{} has been deleted",
                    sa.name
                )));
            }
        }
    }
    if let Some(secret) = k.secret {
        check_bound(lookup, "secret", ns, secret, now)?;
    }
    if let Some(pod) = k.pod {
        check_bound(lookup, "pod", ns, pod, now)?;
    }
    // A pod-bound token's node is only read (ServiceAccountTokenPodNodeInfo,
    // GA); a node-bound one's is checked (ServiceAccountTokenNodeBindingValidation,
    // GA).
    if let (Some(node), None) = (k.node, k.pod) {
        check_bound(lookup, "node", "", node, now)?;
    }
    if k.webhook {
        return Err(JwtError(
            "feature gate \"APIServerWebhookAuthenticationToken\" is disabled, but token is \
             webhook bound"
                .into(),
        ));
    }
    let mut user = sa_user(ns, sa.name, sa.uid);
    if let Some(pod) = k.pod.filter(|p| !p.name.is_empty() && !p.uid.is_empty()) {
        user.extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            vec![pod.name.into()],
        );
        user.extra.insert(
            "authentication.kubernetes.io/pod-uid".into(),
            vec![pod.uid.into()],
        );
    }
    if let Some(node) = k.node.filter(|n| !n.name.is_empty()) {
        user.extra.insert(
            "authentication.kubernetes.io/node-name".into(),
            vec![node.name.into()],
        );
        if !node.uid.is_empty() {
            user.extra.insert(
                "authentication.kubernetes.io/node-uid".into(),
                vec![node.uid.into()],
            );
        }
    }
    if !public.jti.is_empty() {
        user.extra
            .insert(CREDENTIAL_ID.into(), vec![format!("JTI={}", public.jti)]);
    }
    Ok(user)
}
