//! A conversion webhook on loopback, over TLS, for the tests of custom
//! resources' conversion: it answers each `ConversionReview` (`v1` or
//! `v1beta1`) by calling a function on each object, echoing the review's
//! `uid` and version, as a webhook the apiserver calls must. Its
//! certificate is signed by a CA of its own ([`ConversionWebhook::ca_pem`],
//! the CRD's `caBundle`), for `127.0.0.1`, `localhost` and the service
//! name `conv.webhooks.svc`.
//!
//! A plain thread per connection (rustls over `std::net`), HTTP/1.1 with
//! a `Content-Length` body, one request per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

/// What a webhook does with one object: the object converted to the
/// desired `apiVersion`, or the failure's message.
pub type Convert = dyn Fn(&Value, &str) -> Result<Value, String> + Send + Sync;

/// A conversion webhook serving until dropped.
pub struct ConversionWebhook {
    addr: SocketAddr,
    ca_pem: String,
    reviews: Arc<AtomicUsize>,
    failing: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for ConversionWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversionWebhook")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ConversionWebhook {
    /// Starts a webhook that converts each object with `convert`.
    pub fn start(
        convert: impl Fn(&Value, &str) -> Result<Value, String> + Send + Sync + 'static,
    ) -> ConversionWebhook {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "herald test webhook CA");
        let ca =
            CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a key")).expect("the CA");
        let key = KeyPair::generate().expect("a key");
        let names = ["127.0.0.1", "localhost", "conv.webhooks.svc"].map(str::to_owned);
        let cert = CertificateParams::new(names.to_vec())
            .expect("server params")
            .signed_by(&key, &ca)
            .expect("the server certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("the server's TLS config");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the webhook");
        let addr = listener.local_addr().expect("its address");
        let convert: Arc<Convert> = Arc::new(convert);
        let reviews = Arc::new(AtomicUsize::new(0));
        let failing = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, f, s) = (reviews.clone(), failing.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (config, convert, r, f) =
                    (config.clone(), convert.clone(), r.clone(), f.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, config, &*convert, &r, &f);
                });
            }
        });
        ConversionWebhook {
            addr,
            ca_pem: ca.pem(),
            reviews,
            failing,
            stop,
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its URL: `https://127.0.0.1:<port>/convert`.
    pub fn url(&self) -> String {
        format!("https://{}/convert", self.addr)
    }

    /// Its CA's certificate (PEM): the CRD's `caBundle`, once base64'd.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Reviews answered so far.
    pub fn reviews(&self) -> usize {
        self.reviews.load(Ordering::Relaxed)
    }

    /// From now on, answers every review with `result.status: Failure`
    /// (message `conversion refused`), or again converts.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::Relaxed);
    }
}

impl Drop for ConversionWebhook {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Serves one connection: one review.
fn serve(
    conn: TcpStream,
    config: Arc<rustls::ServerConfig>,
    convert: &Convert,
    reviews: &AtomicUsize,
    failing: &AtomicBool,
) -> std::io::Result<()> {
    let tls = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(tls, conn);
    let mut reader = BufReader::new(&mut stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let mut result = json!({"status": "Success"});
    let mut converted = Vec::new();
    if failing.load(Ordering::Relaxed) {
        result = json!({"status": "Failure", "message": "conversion refused"});
    } else {
        for object in request["objects"].as_array().into_iter().flatten() {
            match convert(object, desired) {
                Ok(o) => converted.push(o),
                Err(message) => {
                    result = json!({"status": "Failure", "message": message});
                    converted.clear();
                    break;
                }
            }
        }
    }
    reviews.fetch_add(1, Ordering::Relaxed);
    let answer = serde_json::to_vec(&json!({
        "kind": "ConversionReview",
        "apiVersion": review["apiVersion"],
        "response": {"uid": request["uid"], "result": result, "convertedObjects": converted},
    }))
    .unwrap_or_default();
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    )?;
    stream.write_all(&answer)?;
    stream.flush()?;
    stream.conn.send_close_notify();
    let _ = stream.flush();
    Ok(())
}
