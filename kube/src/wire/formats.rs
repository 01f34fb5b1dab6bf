//! The registry: every encoding a response can be, one line each.

use super::encoder::Format;
use super::metadata::METADATA;
use super::{json, protobuf, table, yaml};

/// Every encoding a response can be, in the order the apiserver names
/// them when it refuses a request's `Accept` (406; the metadata formats
/// are not named); no media range is taken by two.
pub static FORMATS: [&dyn Format; 16] = [
    &json::Json,
    &yaml::Yaml,
    &protobuf::Protobuf,
    &table::Tables,
    &METADATA[0],
    &METADATA[1],
    &METADATA[2],
    &METADATA[3],
    &METADATA[4],
    &METADATA[5],
    &METADATA[6],
    &METADATA[7],
    &METADATA[8],
    &METADATA[9],
    &METADATA[10],
    &METADATA[11],
];
