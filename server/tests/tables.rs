//! `kubectl get`'s tables from the real `herald-server` binary: each row
//! embeds what the request's `includeObject` asks for, on a list, a get
//! and a watch, as the apiserver's `asTable` does (`PartialObjectMetadata`
//! by default, the whole object with its `apiVersion` and `kind`, or
//! null), and an unknown value is the apiserver's 400.

#[path = "support/proc.rs"]
mod proc;

use std::io::BufRead;

use proc::{Proc, open_stream};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// `GET path` asking for a table.
fn table(p: &Proc, path: &str) -> (u16, String) {
    p.raw(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {TABLE}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
}

#[test]
fn table_rows_embed_what_include_object_asks_for() {
    let p = Proc::start(&["--demo", "3", "--demo-rate", "0"]);
    let whole = r#""object":{"kind":"Pod","apiVersion":"v1","metadata":"#;
    for path in ["/api/v1/pods", "/api/v1/namespaces/demo-1/pods/pod-00001"] {
        let sep = if path.contains('?') { '&' } else { '?' };
        let (code, body) = table(&p, path);
        assert_eq!(code, 200, "{path}: {body}");
        assert!(
            body.contains(r#""kind":"PartialObjectMetadata""#),
            "{path}: {body}"
        );
        for value in ["Metadata", ""] {
            let (code, body) = table(&p, &format!("{path}{sep}includeObject={value}"));
            assert_eq!(code, 200, "{path} {value}: {body}");
            assert!(
                body.contains(r#""kind":"PartialObjectMetadata""#),
                "{path} {value}"
            );
        }
        let (code, body) = table(&p, &format!("{path}{sep}includeObject=Object"));
        assert_eq!(code, 200, "{path}: {body}");
        assert!(body.contains(whole), "{path}: {body}");
        assert!(!body.contains("PartialObjectMetadata"), "{path}: {body}");
        let (code, body) = table(&p, &format!("{path}{sep}includeObject=None"));
        assert_eq!(code, 200, "{path}: {body}");
        assert!(body.contains(r#""object":null"#), "{path}: {body}");
        let (code, body) = table(&p, &format!("{path}{sep}includeObject=Everything"));
        assert_eq!(code, 400, "{path}: {body}");
        assert!(
            body.contains(r#"Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty"#),
            "{path}: {body}"
        );
    }
    // A plain GET ignores the parameter, as the apiserver does.
    let (code, body) = p.get("/api/v1/namespaces/demo-1/pods/pod-00001?includeObject=Everything");
    assert_eq!(code, 200, "{body}");

    let mut watch = open_stream(
        p.addr,
        "/api/v1/pods?watch=true&includeObject=Object",
        &format!("Accept: {TABLE}\r\n"),
    );
    let mut line = String::new();
    while !line.contains(r#""type":"ADDED""#) {
        line.clear();
        watch.read_line(&mut line).unwrap();
    }
    assert!(line.contains(whole), "{line}");
}
