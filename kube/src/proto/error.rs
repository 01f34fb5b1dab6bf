//! [`ProtoError`], and the magic every stored protobuf value starts with.

use std::fmt;

use super::schema::RELEASE;

/// The four bytes the apiserver puts before every protobuf value.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtoError {
    /// The value does not start with `k8s\0`.
    Magic,
    /// A field runs past the end of its message.
    Truncated,
    /// Bytes that are not the protobuf wire format (a bad wire type, an
    /// overlong varint, field number 0) or not the type's.
    Wire(String),
    /// The envelope names a kind this release's schema does not have.
    UnknownKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
    /// The envelope says the raw bytes are compressed or not protobuf.
    Encoding(String),
    /// A value the apiserver would refuse to read or print (a bad time,
    /// a quantity `resource.ParseQuantity` refuses, an IntOrString of no
    /// type, embedded JSON that is not JSON, too deep),
    /// or, encoding, JSON its Go types would refuse to read (a string
    /// where a number belongs, an `int32` out of range, a bad time or
    /// quantity, no `kind`), with the field's path.
    Value(String),
    /// A form the apiserver reads that this reader does not yet.
    Unsupported(String),
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Magic => write!(f, "no k8s\\0 magic"),
            ProtoError::Truncated => write!(f, "truncated"),
            ProtoError::Wire(why) => write!(f, "not protobuf: {why}"),
            ProtoError::UnknownKind { api_version, kind } => {
                write!(
                    f,
                    "kind {api_version}/{kind} is not in the {RELEASE} schema"
                )
            }
            ProtoError::Encoding(why) => write!(f, "envelope: {why}"),
            ProtoError::Value(why) => write!(f, "bad value: {why}"),
            ProtoError::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

impl std::error::Error for ProtoError {}
