//! [`Converter`]: custom resources' JSON converted to the version a
//! request names, as the apiserver converts them on the way out
//! (k8s.io/apiextensions-apiserver v0.37.2,
//! `pkg/apiserver/conversion/converter.go`): each object from the version
//! it was stored at, only those at another version; with `strategy:
//! None` the `apiVersion` rewritten (`nop_converter.go`), with `Webhook`
//! the objects of one answer sent in one `ConversionReview`
//! (`webhook_converter.go`; a list's in one, a GET's and a watch
//! event's alone).
//!
//! ## Failure
//!
//! A webhook that fails (unreachable, an error answer, a malformed or
//! partial review, a converted object that is not its original) fails
//! the answer as the apiserver's does: a list or GET is a 500 `Status`
//! with no reason, its message `conversion webhook for <group/version,
//! Kind=kind> failed: <why>` (`ErrorToAPIStatus` of the codec's error);
//! a watch ends (the apiserver's watch handler returns when an event
//! cannot be encoded).

use bytes::Bytes;
use herald_kube::ApiError;
use serde_json::Value;

use super::client::{Client, ServiceIps};
use super::custom::Custom;
use super::nop::{api_version, with_api_version};
use super::review;
use super::spec::{ConversionSpec, WebhookSpec};

/// How one custom resource's objects convert between its versions.
#[derive(Debug)]
pub struct Converter {
    group: String,
    kind: String,
    list_kind: String,
    /// The version objects are read at (the storage version), which the
    /// apiserver names as a GET's source in its errors.
    storage: String,
    webhook: Option<(WebhookSpec, Client)>,
}

impl Converter {
    /// The converter `custom`'s CRD asks for; a webhook's service found
    /// through `ips` if Herald serves services. Fails on a webhook Herald
    /// cannot call (no `https` URL, a CA bundle without a certificate).
    pub fn new(custom: &Custom, ips: Option<ServiceIps>) -> Result<Converter, String> {
        let webhook = match &custom.conversion {
            ConversionSpec::None => None,
            ConversionSpec::Webhook(spec) => Some((spec.clone(), Client::new(spec, ips)?)),
        };
        Ok(Converter {
            group: custom.info.group.clone(),
            kind: custom.info.kind.clone(),
            list_kind: custom.info.list_kind.clone(),
            storage: custom.info.version.clone(),
            webhook,
        })
    }

    /// Whether objects go through a webhook (an answer waits for it).
    pub fn calls_webhook(&self) -> bool {
        self.webhook.is_some()
    }

    /// `group/version`.
    fn api_version(&self, version: &str) -> String {
        format!("{}/{version}", self.group)
    }

    /// Whether `payload` is at another version than `version`.
    pub fn needs(&self, payload: &[u8], version: &str) -> bool {
        api_version(payload).is_none_or(|v| v != self.api_version(version))
    }

    /// With `strategy: None`, `payload` at `version` (the same bytes if
    /// it is there); `None` for a webhook's resource.
    pub fn nop(&self, payload: &Bytes, version: &str) -> Option<Bytes> {
        if self.webhook.is_some() {
            return None;
        }
        if !self.needs(payload, version) {
            return Some(payload.clone());
        }
        Some(with_api_version(payload, &self.api_version(version)))
    }

    /// `objects` at `version`, those already there kept as they are;
    /// `list` says whether they are a list's items (one review, the
    /// list's kind in an error) or one object.
    pub async fn convert(
        &self,
        objects: Vec<Bytes>,
        version: &str,
        list: bool,
    ) -> Result<Vec<Bytes>, ApiError> {
        let desired = self.api_version(version);
        let Some((spec, client)) = &self.webhook else {
            return Ok(objects
                .iter()
                .map(|o| self.nop(o, version).unwrap_or_else(|| o.clone()))
                .collect());
        };
        let what = if list {
            format!("{desired}, Kind={}", self.list_kind)
        } else {
            format!("{}, Kind={}", self.api_version(&self.storage), self.kind)
        };
        let failed = |why: String| {
            ApiError::unclassified(format!("conversion webhook for {what} failed: {why}"))
        };
        let at: Vec<usize> = (0..objects.len())
            .filter(|&i| self.needs(&objects[i], version))
            .collect();
        if at.is_empty() {
            return Ok(objects);
        }
        let Some(review_version) = spec.review_version() else {
            return Err(ApiError::unclassified(
                "no supported conversion review versions",
            ));
        };
        let originals: Vec<Value> = at
            .iter()
            .map(|&i| serde_json::from_slice(&objects[i]).unwrap_or(Value::Null))
            .collect();
        let uid = review::uid();
        let body = review::request(review_version, &uid, &desired, &originals);
        let answer = client.post(body).await.map_err(failed)?;
        let converted = review::converted(review_version, &uid, &answer).map_err(failed)?;
        if converted.len() != originals.len() {
            return Err(ApiError::unclassified(format!(
                "conversion webhook for {what} returned {} objects, expected {}",
                converted.len(),
                originals.len()
            )));
        }
        let mut out = objects;
        for (n, (converted, original)) in converted.into_iter().zip(&originals).enumerate() {
            let object = review::checked(original, converted, &desired).map_err(|why| {
                let noun = if list { "converted object" } else { "object" };
                ApiError::unclassified(format!(
                    "conversion webhook for {what} returned invalid {noun} at index {n}: {why}"
                ))
            })?;
            out[at[n]] = Bytes::from(serde_json::to_vec(&object).unwrap_or_default());
        }
        Ok(out)
    }

    /// [`Converter::convert`] on a thread the runtime's blocking pool
    /// runs (a read's), waiting for the webhook there.
    pub fn convert_blocking(
        &self,
        objects: Vec<Bytes>,
        version: &str,
        list: bool,
    ) -> Result<Vec<Bytes>, ApiError> {
        if self.webhook.is_none() {
            return Ok(objects
                .iter()
                .map(|o| self.nop(o, version).unwrap_or_else(|| o.clone()))
                .collect());
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle.block_on(self.convert(objects, version, list)),
            Err(e) => Err(ApiError::internal(format!("no runtime to convert on: {e}"))),
        }
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
