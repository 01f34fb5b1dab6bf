//! A token's claims read as go-jose (v2.6.3) unmarshals them into the
//! apiserver's claim structs: a claim of the wrong JSON type refuses the
//! token (`tok.Claims` fails, `jwt.go`), `null` reads as absent, keys
//! the structs do not name are ignored.

use serde_json::{Map, Value};

use super::lookup::JwtError;

/// The JSON type of `v`, as Go's `json.UnmarshalTypeError` names it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn mistyped(claim: &str, v: &Value, go_type: &str) -> JwtError {
    JwtError(format!(
        "claim {claim:?}: json: cannot unmarshal {} into Go value of type {go_type}",
        kind(v)
    ))
}

/// A string claim `key` of `object` (`claim` names it in errors): `""`
/// if absent or `null`.
pub(super) fn string<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    claim: &str,
) -> Result<&'a str, JwtError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(mistyped(claim, v, "string")),
    }
}

/// A `NumericDate` claim (`exp`, `nbf`, `iat`, `warnafter`): any JSON
/// number, truncated to whole seconds as Go's `NumericDate(f)`.
pub(super) fn date(
    object: &Map<String, Value>,
    key: &str,
    claim: &str,
) -> Result<Option<f64>, JwtError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64().map(f64::trunc)),
        Some(_) => Err(JwtError(format!(
            "claim {claim:?}: go-jose/go-jose/jwt: expected number value to unmarshal NumericDate"
        ))),
    }
}

/// An object claim (a struct in Go): `None` if absent or `null`.
pub(super) fn object<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    claim: &str,
) -> Result<Option<&'a Map<String, Value>>, JwtError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(v) => Err(mistyped(claim, v, "struct")),
    }
}

/// The registered claims (go-jose's `jwt.Claims`).
#[derive(Debug, Default)]
pub(super) struct Public<'a> {
    /// `sub`.
    pub sub: &'a str,
    /// `aud`: a string or an array of strings (absent: none; `null` is
    /// refused, as go-jose's `Audience` refuses it).
    pub aud: Vec<&'a str>,
    /// `exp`.
    pub exp: Option<f64>,
    /// `nbf`.
    pub nbf: Option<f64>,
    /// `iat`.
    pub iat: Option<f64>,
    /// `jti`.
    pub jti: &'a str,
}

impl<'a> Public<'a> {
    /// The registered claims of `claims`, the token's payload.
    pub(super) fn read(claims: &'a Map<String, Value>) -> Result<Public<'a>, JwtError> {
        string(claims, "iss", "iss")?;
        let aud = match claims.get("aud") {
            None => Vec::new(),
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<&str>>>()
                .ok_or_else(bad_audience)?,
            Some(_) => return Err(bad_audience()),
        };
        Ok(Public {
            sub: string(claims, "sub", "sub")?,
            aud,
            exp: date(claims, "exp", "exp")?,
            nbf: date(claims, "nbf", "nbf")?,
            iat: date(claims, "iat", "iat")?,
            jti: string(claims, "jti", "jti")?,
        })
    }
}

fn bad_audience() -> JwtError {
    JwtError(
        "claim \"aud\": go-jose/go-jose/jwt: expected string or array value to unmarshal to \
         Audience"
            .into(),
    )
}
