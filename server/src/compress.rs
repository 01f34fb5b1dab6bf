//! Response compression, as the apiserver does it: a response of at
//! least [`GZIP_THRESHOLD`] bytes (128 KiB) to a client whose
//! `Accept-Encoding` takes gzip is sent gzipped at level 1 (the
//! apiserver's `APIResponseCompression`: fast, most of the gain on
//! JSON). Watches are never compressed (each event must reach the client
//! as it is written).

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// The smallest body worth compressing (the apiserver's
/// `defaultGzipThresholdBytes`).
pub const GZIP_THRESHOLD: usize = 128 * 1024;

/// Whether an `Accept-Encoding` value takes gzip: a `gzip` (or `*`)
/// coding whose quality is not zero.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(value) = accept_encoding else {
        return false;
    };
    value.split(',').any(|coding| {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or("").trim();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
    })
}

/// `body` gzipped, if it is at least [`GZIP_THRESHOLD`] bytes.
pub fn gzip_if_large(body: &[u8]) -> Option<Vec<u8>> {
    if body.len() < GZIP_THRESHOLD {
        return None;
    }
    let mut z = GzEncoder::new(Vec::with_capacity(body.len() / 4), Compression::new(1));
    z.write_all(body).ok()?;
    z.finish().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn gzip_is_taken_as_clients_say_it() {
        for yes in ["gzip", "deflate, gzip", "GZIP;q=0.5", "*", "br, gzip ;q=1"] {
            assert!(accepts_gzip(Some(yes)), "{yes}");
        }
        for no in [
            "",
            "identity",
            "gzip;q=0",
            "deflate",
            "gzipx",
            "gzip; q=0.0",
        ] {
            assert!(!accepts_gzip(Some(no)), "{no}");
        }
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn only_large_bodies_are_compressed_and_they_round_trip() {
        assert!(gzip_if_large(&vec![b'a'; GZIP_THRESHOLD - 1]).is_none());
        let body: Vec<u8> = (0..GZIP_THRESHOLD * 2)
            .map(|i| b"{\"kind\":\"Pod\"}"[i % 14])
            .collect();
        let z = gzip_if_large(&body).unwrap();
        assert!(z.len() < body.len() / 10);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&z[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
    }
}
