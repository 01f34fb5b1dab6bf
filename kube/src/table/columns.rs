//! The built-in kinds' column definitions, as the real kube-apiserver
//! v1.37.2 serves them: read from `kube/schema/served-v1.37.2.json`
//! (generated from that apiserver by `kube/schema/served/`: each listable
//! resource's `columns`, its Table's `columnDefinitions`), parsed once.
//! Only the row functions are written by hand.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::cells::{items, string};

/// The generated schema of the resources v1.37.2 serves.
const SERVED: &str = include_str!("../../schema/served-v1.37.2.json");

/// The column definitions of each kind that has them, by group and kind.
fn all() -> &'static HashMap<(String, String), Value> {
    static COLUMNS: OnceLock<HashMap<(String, String), Value>> = OnceLock::new();
    COLUMNS.get_or_init(|| {
        let served: Value = serde_json::from_str(SERVED).unwrap_or_default();
        items(&served, &["resources"])
            .iter()
            .filter_map(|r| {
                let columns = r.get("columns")?.clone();
                let key = (
                    string(r, &["group"]).to_owned(),
                    string(r, &["kind"]).to_owned(),
                );
                Some((key, columns))
            })
            .collect()
    })
}

/// The column definitions' JSON of `group`'s `kind` (each `name`, `type`,
/// `format`, `description` and `priority`), none for a kind the schema
/// gives none.
pub(crate) fn of(group: &str, kind: &str) -> Option<&'static Value> {
    all().get(&(group.to_owned(), kind.to_owned()))
}

/// Each listable kind of the schema with its columns: its group, kind and
/// column definitions.
#[cfg(test)]
pub(crate) fn listed() -> impl Iterator<Item = (&'static str, &'static str, &'static Value)> {
    all()
        .iter()
        .map(|((group, kind), columns)| (group.as_str(), kind.as_str(), columns))
}
