//! `includeObject`: what each row of a table embeds of its object
//! (`metav1.TableOptions`, checked as `ValidateTableOptions` checks it).

/// What each row of a table embeds of its object (`includeObject`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// `None`: a null `object`.
    None,
    /// `Metadata` (the default, also for an empty value): the object's
    /// metadata as a `meta.k8s.io/v1` `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// `Object`: the whole object, with its `apiVersion` and `kind`.
    Object,
}

impl IncludeObject {
    /// The policy `value` names (none or empty: the default), or the
    /// message of the apiserver's 400 for another value.
    pub fn parse(value: Option<&str>) -> Result<IncludeObject, String> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                crate::quote::go_quote(other)
            )),
        }
    }
}
