//! Objects' JSON as a resource serves them at the version a request
//! names: the stored payload ([`object_json`]), converted by the
//! resource's [`Converter`](crate::crds::Converter) where it has one (a
//! custom resource's objects, each from the version it was stored at).
//! Runs on a read's blocking thread: a webhook is waited for there.

use herald::object::Item;
use herald_kube::ApiError;
use herald_kube::encode::{ObjectJson, object_json};

use crate::resource::Resource;

/// The JSON of a list's `items`, in order (one conversion review for
/// the list, as the apiserver sends one). A converted object's JSON is
/// the conversion's, not the stored payload.
pub(crate) fn items(r: &Resource, items: &[Item]) -> Result<Vec<ObjectJson>, ApiError> {
    let json = items
        .iter()
        .map(|i| object_json(&r.info, &i.object, i.resource_version));
    match &r.converter {
        None => Ok(json.collect()),
        Some(c) => {
            let json = json.map(|j| j.bytes().clone()).collect();
            let converted = c.convert_blocking(json, &r.info.version, true)?;
            Ok(converted.into_iter().map(ObjectJson::Described).collect())
        }
    }
}

/// The JSON of one object (a GET's).
pub(crate) fn item(r: &Resource, item: &Item) -> Result<ObjectJson, ApiError> {
    let json = object_json(&r.info, &item.object, item.resource_version);
    match &r.converter {
        None => Ok(json),
        Some(c) => {
            let mut out = c.convert_blocking(vec![json.bytes().clone()], &r.info.version, false)?;
            Ok(ObjectJson::Described(out.pop().unwrap_or_default()))
        }
    }
}
