//! Objects' JSON as a resource serves them at the version a request
//! names: the stored payload ([`object_json`]), converted by the
//! resource's [`Converter`](crate::crds::Converter) where it has one (a
//! custom resource's objects, each from the version it was stored at).
//! Runs on a read's blocking thread: a webhook is waited for there.

use bytes::Bytes;
use herald::object::Item;
use herald::read::ListResponse;
use herald_kube::ApiError;
use herald_kube::encode::object_json;

use crate::resource::Resource;

/// The JSON of a list's `items`, in order (one conversion review for
/// the list, as the apiserver sends one).
pub(crate) fn items(r: &Resource, items: &[Item]) -> Result<Vec<Bytes>, ApiError> {
    let json = items
        .iter()
        .map(|i| {
            object_json(&r.info, &i.object, i.resource_version)
                .bytes()
                .clone()
        })
        .collect();
    match &r.converter {
        None => Ok(json),
        Some(c) => c.convert_blocking(json, &r.info.version, true),
    }
}

/// The JSON of one object (a GET's).
pub(crate) fn item(r: &Resource, item: &Item) -> Result<Bytes, ApiError> {
    let json = object_json(&r.info, &item.object, item.resource_version)
        .bytes()
        .clone();
    match &r.converter {
        None => Ok(json),
        Some(c) => {
            let mut out = c.convert_blocking(vec![json], &r.info.version, false)?;
            Ok(out.pop().unwrap_or_default())
        }
    }
}

/// A list's `metadata` as a `Table` of it carries it: its version, the
/// next page's token and how many objects follow, when there are more.
pub(crate) fn list_metadata(page: &ListResponse, token: Option<&str>) -> serde_json::Value {
    let mut metadata =
        serde_json::json!({"resourceVersion": page.resource_version.get().to_string()});
    if let Some(t) = token {
        metadata["continue"] = serde_json::json!(t);
    }
    if let Some(n) = page.remaining_item_count {
        metadata["remainingItemCount"] = serde_json::json!(n);
    }
    metadata
}
