//! The registry: every encoding a response can be, one line each.

use super::encoder::Format;
use super::{json, protobuf, table, yaml};

/// Every encoding a response can be, in the order the apiserver names
/// them when it refuses a request's `Accept` (406).
pub static FORMATS: [&dyn Format; 4] = [
    &json::Json,
    &yaml::Yaml,
    &protobuf::Protobuf,
    &table::Tables,
];
