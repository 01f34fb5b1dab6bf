//! A member's health and status, asked over etcd's JSON gateway with one
//! plain HTTP/1.0 request (no client library, no async runtime).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// `http://127.0.0.1:port`.
pub(crate) fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// One HTTP/1.0 request to `127.0.0.1:port`: the status and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> io::Result<(u16, String)> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    // HTTP/1.0: the server closes the connection after a plain, unchunked body.
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = Vec::new();
    stream.take(1 << 20).read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response);
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed HTTP response");
    let (head, body) = response.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    Ok((status, body.to_owned()))
}

/// Whether the member at `port` answers `GET /health` with `"health":"true"`.
pub(crate) fn healthy(port: u16) -> bool {
    match http(port, "GET", "/health", "") {
        Ok((200, body)) => serde_json::from_str::<serde_json::Value>(&body)
            .map(|v| v["health"] == "true")
            .unwrap_or(false),
        _ => false,
    }
}

/// A uint64 of etcd's JSON gateway: a decimal string (or a number).
fn json_u64(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::String(s) => s.parse().ok(),
        v => v.as_u64(),
    }
}

/// The member at `port`'s (member id, the leader's member id; 0 for none),
/// from the gateway's `POST /v3/maintenance/status`.
pub(crate) fn status(port: u16) -> Result<(u64, u64), String> {
    let (code, body) =
        http(port, "POST", "/v3/maintenance/status", "{}").map_err(|e| e.to_string())?;
    if code != 200 {
        return Err(format!("HTTP {code}: {body}"));
    }
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let member = json_u64(&v["header"]["member_id"]);
    // An unset leader is omitted from the JSON.
    let leader = if v["leader"].is_null() {
        Some(0)
    } else {
        json_u64(&v["leader"])
    };
    match (member, leader) {
        (Some(member), Some(leader)) => Ok((member, leader)),
        _ => Err(format!("unexpected status response {body}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gateway_uint64s() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a":"1381540707029590151","b":7,"c":"x"}"#).unwrap();
        assert_eq!(json_u64(&v["a"]), Some(1381540707029590151));
        assert_eq!(json_u64(&v["b"]), Some(7));
        assert_eq!(json_u64(&v["c"]), None);
    }
}
