//! A CRD's `spec.conversion` (`apiextensions.k8s.io/v1`), read: the
//! strategy, and for `Webhook` where the webhook is and how to trust it.

use serde_json::Value;

/// How a CRD's objects convert between its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConversionSpec {
    /// `None`: only `apiVersion` changes (the apiserver's
    /// `nopConverter`).
    None,
    /// `Webhook`: a `ConversionReview` to the CRD's webhook.
    Webhook(WebhookSpec),
}

/// Where a conversion webhook is (`spec.conversion.webhook`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSpec {
    /// `clientConfig.url`, or the service it names.
    pub target: WebhookTarget,
    /// `clientConfig.caBundle`, decoded (PEM); empty: the system's roots.
    pub ca_bundle: Vec<u8>,
    /// `conversionReviewVersions`, in the CRD's order.
    pub review_versions: Vec<String>,
}

/// A webhook's address (`clientConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookTarget {
    /// `url`: `https://host[:port]/path`.
    Url(String),
    /// `service`: `https://<name>.<namespace>.svc:<port><path>`.
    Service {
        /// The service's namespace.
        namespace: String,
        /// The service's name.
        name: String,
        /// The path (`""`: `/`).
        path: String,
        /// The port (443 by default).
        port: u16,
    },
}

impl ConversionSpec {
    /// `spec.conversion` read (absent: `None`, its default), or why not.
    pub fn of(conversion: &Value) -> Result<ConversionSpec, String> {
        match conversion["strategy"].as_str().unwrap_or("None") {
            "None" => Ok(ConversionSpec::None),
            "Webhook" => WebhookSpec::of(&conversion["webhook"]).map(ConversionSpec::Webhook),
            other => Err(format!("conversion strategy {other:?}")),
        }
    }
}

impl WebhookSpec {
    /// `spec.conversion.webhook` read, or why not.
    fn of(webhook: &Value) -> Result<WebhookSpec, String> {
        use base64::Engine as _;
        let config = &webhook["clientConfig"];
        let target = if let Some(url) = config["url"].as_str() {
            WebhookTarget::Url(url.to_owned())
        } else if config["service"].is_object() {
            let s = &config["service"];
            let port = s["port"].as_u64().unwrap_or(443);
            WebhookTarget::Service {
                namespace: s["namespace"].as_str().unwrap_or_default().to_owned(),
                name: s["name"].as_str().unwrap_or_default().to_owned(),
                path: s["path"].as_str().unwrap_or_default().to_owned(),
                port: u16::try_from(port).map_err(|_| format!("webhook port {port}"))?,
            }
        } else {
            return Err("a Webhook conversion without clientConfig".into());
        };
        let ca_bundle = match config["caBundle"].as_str() {
            Some(b) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("webhook caBundle: {e}"))?,
            None => Vec::new(),
        };
        let review_versions = webhook["conversionReviewVersions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(WebhookSpec {
            target,
            ca_bundle,
            review_versions,
        })
    }

    /// The `ConversionReview` version to send: the first of the CRD's
    /// that Herald speaks (`v1`, `v1beta1`), as the apiserver picks.
    pub fn review_version(&self) -> Option<&'static str> {
        self.review_versions.iter().find_map(|v| match v.as_str() {
            "v1" => Some("v1"),
            "v1beta1" => Some("v1beta1"),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conversion_specs_read_as_the_crd_says() {
        assert_eq!(ConversionSpec::of(&Value::Null), Ok(ConversionSpec::None));
        assert_eq!(
            ConversionSpec::of(&json!({"strategy": "None"})),
            Ok(ConversionSpec::None)
        );
        let got = ConversionSpec::of(&json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "ns", "name": "conv", "path": "/c"}, "caBundle": "Y2E="},
            "conversionReviewVersions": ["v2", "v1beta1", "v1"]}}))
        .unwrap();
        let ConversionSpec::Webhook(w) = got else {
            panic!("{got:?}")
        };
        assert_eq!(w.ca_bundle, b"ca");
        assert_eq!(w.review_version(), Some("v1beta1"));
        assert_eq!(
            w.target,
            WebhookTarget::Service {
                namespace: "ns".into(),
                name: "conv".into(),
                path: "/c".into(),
                port: 443
            }
        );
        assert!(ConversionSpec::of(&json!({"strategy": "Webhook"})).is_err());
        assert!(ConversionSpec::of(&json!({"strategy": "Magic"})).is_err());
    }
}
