//! Kubernetes' order of API version names
//! (`k8s.io/apimachinery/pkg/version.CompareKubeAwareVersionStrings`):
//! which version a group prefers, and which of a custom resource's
//! versions a deprecation warning points to.

use std::cmp::Ordering;

/// Kubernetes' order of version names (`CompareKubeAwareVersionStrings`):
/// `v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1` > any other name;
/// among other names, the one first in byte order ranks higher.
pub fn compare_kube_aware(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (kube_version(a), kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

/// (stability: alpha 0, beta 1, GA 2; major; minor) of a kube-like
/// version name (`^v(\d+)((alpha|beta)(\d+))?$`), or `None`.
fn kube_version(v: &str) -> Option<(u8, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let major = number(&rest[..digits])?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = match (tail.strip_prefix("alpha"), tail.strip_prefix("beta")) {
        (Some(m), _) => (0, m),
        (_, Some(m)) => (1, m),
        _ => return None,
    };
    Some((stability, major, number(minor)?))
}

/// A run of ASCII digits as a number (Go's `strconv.Atoi` of `[\d]+`).
fn number(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_rank_as_kubernetes_ranks_them() {
        let mut names = vec![
            "v1alpha1", "foo", "v1", "v2beta1", "v1beta2", "v10", "bar", "v1beta1", "v2",
        ];
        names.sort_by(|a, b| compare_kube_aware(b, a));
        assert_eq!(
            names,
            [
                "v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"
            ]
        );
        assert_eq!(compare_kube_aware("v1beta", "v1"), Ordering::Less);
    }
}
