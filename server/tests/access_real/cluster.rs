//! The cluster `access_real.rs` decides against: etcd, the real
//! kube-apiserver, `herald-server --etcd ... --resources all` with TLS,
//! the same token file, the same client CA and the apiserver's
//! service-account key, and the identities both know.

#![allow(unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_testkit::apiserver::{ApiserverOptions, LocalApiserver};
use herald_testkit::etcd::{LocalEtcd, etcd_binary};
use serde_json::{Value, json};

/// The apiserver's service-account issuer (the fixture's).
pub const ISSUER: &str = "https://kubernetes.default.svc";

/// An identity, as curl presents it and as a `SubjectAccessReview` names it.
#[derive(Debug, Clone)]
pub struct Who {
    pub name: String,
    pub token: Option<String>,
    /// `<stem>.crt` and `<stem>.key` in the cluster's directory.
    pub cert: Option<String>,
    /// The user and groups the apiserver authenticates it as.
    pub user: String,
    pub groups: Vec<String>,
}

impl Who {
    pub fn token(name: &str, token: &str) -> Who {
        Who {
            name: name.into(),
            token: Some(token.into()),
            cert: None,
            user: String::new(),
            groups: vec![],
        }
    }

    pub fn cert(name: &str, stem: &str) -> Who {
        Who {
            name: name.into(),
            token: None,
            cert: Some(stem.into()),
            user: String::new(),
            groups: vec![],
        }
    }

    fn curl_args(&self, dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(t) = &self.token {
            out.extend(["-H".to_owned(), format!("Authorization: Bearer {t}")]);
        }
        if let Some(stem) = &self.cert {
            let p = |ext: &str| dir.join(format!("{stem}.{ext}")).display().to_string();
            out.extend(["--cert".to_owned(), p("crt"), "--key".to_owned(), p("key")]);
        }
        out
    }
}

pub struct Cluster {
    dir: PathBuf,
    _etcd: LocalEtcd,
    apiserver: LocalApiserver,
    /// Herald on etcd, deciding itself: the token file, the
    /// service-account keys, RBAC.
    herald: Child,
    herald_url: String,
    /// Herald on the apiserver (`--kubeconfig`), delegating: tokens to
    /// TokenReviews, decisions to SubjectAccessReviews.
    delegating: Child,
    delegating_url: String,
    /// Herald on the apiserver (`--kubeconfig`), deciding itself as the
    /// one on etcd does (its token file, keys and RBAC).
    upstream_rbac: Child,
    upstream_rbac_url: String,
    bot_token: String,
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`<name>-ca.crt`/`.key`) and a client certificate `<stem>` of it.
fn client_cert(dir: &Path, ca: &str, stem: &str, subject: &str) {
    let ca_crt = format!("{ca}-ca.crt");
    let ca_key = format!("{ca}-ca.key");
    if !dir.join(&ca_crt).exists() {
        run(
            dir,
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &ca_key,
                "-out",
                &ca_crt,
                "-days",
                "2",
                "-subj",
                &format!("/CN={ca}"),
            ],
        );
    }
    let (key, csr, crt) = (
        format!("{stem}.key"),
        format!("{stem}.csr"),
        format!("{stem}.crt"),
    );
    run(
        dir,
        "openssl",
        &[
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", subject,
        ],
    );
    run(
        dir,
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "2",
        ],
    );
}

impl Cluster {
    pub fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!("herald-access-real-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        client_cert(&dir, "clients", "carol", "/CN=carol/O=devs");
        client_cert(&dir, "elsewhere", "mallory", "/CN=mallory/O=system:masters");
        run(
            &dir,
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "tls.key",
                "-out",
                "tls.crt",
                "-days",
                "2",
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
        );

        // Both servers audit every request at Metadata (the test picks
        // its own by their Audit-ID).
        std::fs::write(
            dir.join("audit-policy.yaml"),
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n",
        )
        .unwrap();
        let etcd = LocalEtcd::start(&etcd_binary().expect("etcd (scripts/ensure-etcd.sh)"))
            .expect("start etcd");
        let bin = LocalApiserver::binary()
            .expect("the kube-apiserver (scripts/ensure-kube-apiserver.sh)");
        let options = ApiserverOptions {
            token_lines: vec![
                "alice-token,alice,uid-alice".into(),
                "bob-token,bob,uid-bob,\"devs,qa\"".into(),
            ],
            args: vec![
                format!("--client-ca-file={}", dir.join("clients-ca.crt").display()),
                format!(
                    "--audit-policy-file={}",
                    dir.join("audit-policy.yaml").display()
                ),
                format!(
                    "--audit-log-path={}",
                    dir.join("audit-apiserver.log").display()
                ),
            ],
        };
        let apiserver =
            LocalApiserver::start_with(&bin, &etcd.endpoint(), &["root-token"], options)
                .expect("start the kube-apiserver");
        std::fs::copy(apiserver.dir().join("tokens.csv"), dir.join("tokens.csv")).unwrap();

        let mut c = Cluster {
            dir,
            _etcd: etcd,
            apiserver,
            herald: Command::new("true").spawn().unwrap(),
            herald_url: String::new(),
            delegating: Command::new("true").spawn().unwrap(),
            delegating_url: String::new(),
            upstream_rbac: Command::new("true").spawn().unwrap(),
            upstream_rbac_url: String::new(),
            bot_token: String::new(),
        };
        c.objects();
        let d = |f: &str| c.dir.join(f).display().to_string();
        let mut own: Vec<String> = [
            "--etcd",
            &c._etcd.endpoint(),
            "--token-auth-file",
            &d("tokens.csv"),
        ]
        .map(str::to_owned)
        .to_vec();
        own.extend([
            "--service-account-key-file".to_owned(),
            c.apiserver.sa_key().display().to_string(),
            "--service-account-issuer".to_owned(),
            ISSUER.to_owned(),
            "--audit-policy-file".to_owned(),
            d("audit-policy.yaml"),
            "--audit-log-path".to_owned(),
            d("audit-herald.log"),
        ]);
        (c.herald, c.herald_url) = c.spawn_herald("herald", &own);
        let kubeconfig = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": c.apiserver.url(),
                "certificate-authority": c.apiserver.ca()}}],
            "users": [{"name": "u", "user": {"token": "root-token"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        });
        std::fs::write(c.dir.join("upstream.kubeconfig"), kubeconfig.to_string()).unwrap();
        let delegating = [
            "--kubeconfig",
            &d("upstream.kubeconfig"),
            "--delegate-authentication",
            "--authorization-mode",
            "Webhook",
        ]
        .map(str::to_owned);
        (c.delegating, c.delegating_url) = c.spawn_herald("delegating", &delegating);
        let mut upstream_rbac = vec!["--kubeconfig".to_owned(), d("upstream.kubeconfig")];
        // The token file, the keys and the issuer; no audit log of its own.
        upstream_rbac.extend(own[2..8].iter().cloned());
        (c.upstream_rbac, c.upstream_rbac_url) = c.spawn_herald("upstream-rbac", &upstream_rbac);
        c
    }

    /// The namespaces, the custom resource, the roles and bindings.
    fn objects(&mut self) {
        for ns in ["ns-a", "ns-b"] {
            self.create("/api/v1/namespaces", json!({"metadata": {"name": ns}}));
        }
        self.create(
            "/api/v1/namespaces/ns-b/serviceaccounts",
            json!({"metadata": {"name": "bot"}}),
        );
        self.create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json!({"metadata": {"name": "widgets.example.com"}, "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        );
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        self.create(&format!("{rbac}/clusterroles"), json!({"metadata": {"name": "pod-reader"},
            "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}]}));
        self.create(&format!("{rbac}/clusterroles"), json!({"metadata": {"name": "widget-watcher"},
            "rules": [{"verbs": ["list", "watch"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}));
        self.create(&format!("{rbac}/clusterrolebindings"), json!({"metadata": {"name": "devs-read-pods"},
            "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"kind": "ClusterRole", "name": "pod-reader", "apiGroup": "rbac.authorization.k8s.io"}}));
        self.create(&format!("{rbac}/namespaces/ns-a/roles"), json!({"metadata": {"name": "secret-one"},
            "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["token"]}]}));
        self.create(&format!("{rbac}/namespaces/ns-a/rolebindings"), json!({"metadata": {"name": "alice-secret"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"kind": "Role", "name": "secret-one", "apiGroup": "rbac.authorization.k8s.io"}}));
        self.create(&format!("{rbac}/namespaces/ns-b/rolebindings"), json!({"metadata": {"name": "bot-widgets"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "ns-b"}],
            "roleRef": {"kind": "ClusterRole", "name": "widget-watcher", "apiGroup": "rbac.authorization.k8s.io"}}));
        // A binding to a role that does not exist: its error is the
        // reason of carol's refusals in ns-a.
        self.create(&format!("{rbac}/namespaces/ns-a/rolebindings"), json!({"metadata": {"name": "carol-missing"},
            "subjects": [{"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"kind": "ClusterRole", "name": "missing", "apiGroup": "rbac.authorization.k8s.io"}}));
        // The CRD established: its resources served by the apiserver.
        let start = Instant::now();
        while self
            .apiserver
            .curl("GET", "/apis/example.com/v1/namespaces/ns-b/widgets", None)
            .unwrap()
            .0
            != 200
        {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the CRD not served within 60 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        self.bot_token = self.token_request(None);
    }

    fn token_request(&self, audience: Option<&str>) -> String {
        let mut spec = json!({"expirationSeconds": 3600});
        if let Some(a) = audience {
            spec["audiences"] = json!([a]);
        }
        let (code, body) = self
            .apiserver
            .curl(
                "POST",
                "/api/v1/namespaces/ns-b/serviceaccounts/bot/token",
                Some(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}).to_string()),
            )
            .unwrap();
        assert_eq!(code, 201, "TokenRequest: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["status"]["token"].as_str().unwrap().to_owned()
    }

    /// A token for bot with another audience.
    pub fn audience_token(&self, audience: &str) -> String {
        self.token_request(Some(audience))
    }

    pub fn service_account_uid(&self, ns: &str, name: &str) -> String {
        let (_, body) = self
            .apiserver
            .curl(
                "GET",
                &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}"),
                None,
            )
            .unwrap();
        serde_json::from_str::<Value>(&body).unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A JWT with `claims`, signed RS256 with the apiserver's own key.
    pub fn mint(&self, claims: &Value) -> String {
        let enc = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        let signed = format!("{}.{}", enc(&json!({"alg": "RS256"})), enc(claims));
        let input = self.dir.join("jwt.in");
        std::fs::write(&input, &signed).unwrap();
        let out = Command::new("openssl")
            .args(["dgst", "-sha256", "-sign"])
            .arg(self.apiserver.sa_key())
            .arg(&input)
            .output()
            .unwrap();
        assert!(out.status.success());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(&out.stdout))
    }

    /// Starts a herald-server with `args` plus TLS, the client CA and
    /// anonymous requests (`name.log` its output) and waits until it is
    /// ready: (the process, its URL).
    fn spawn_herald(&self, name: &str, args: &[String]) -> (Child, String) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log_path = self.dir.join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path).unwrap();
        let d = |f: &str| self.dir.join(f).display().to_string();
        // `HERALD_SERVER`: another build under test (an older one, to see
        // the suite fail on what it guards against).
        let bin = std::env::var("HERALD_SERVER")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_herald-server").to_owned());
        let child = Command::new(bin)
            .args(args)
            .args(["--resources", "all"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args([
                "--tls-cert-file",
                &d("tls.crt"),
                "--tls-private-key-file",
                &d("tls.key"),
                "--client-ca-file",
                &d("clients-ca.crt"),
                "--anonymous-auth",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start herald-server");
        let url = format!("https://127.0.0.1:{port}");
        let start = Instant::now();
        loop {
            let out = Command::new("curl")
                .args([
                    "-sk",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "--max-time",
                    "5",
                ])
                .arg(format!("{url}/readyz"))
                .output()
                .unwrap();
            if out.stdout == b"200" {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "herald-server ({name}) not ready within 90 s: {}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        (child, url)
    }

    /// Creates an object through the apiserver (as system:masters).
    pub fn create(&self, path: &str, body: Value) {
        let (code, out) = self
            .apiserver
            .curl("POST", path, Some(&body.to_string()))
            .unwrap();
        assert!(code == 201 || code == 200, "POST {path}: {code} {out}");
    }

    pub fn delete(&self, path: &str) {
        let (code, out) = self.apiserver.curl("DELETE", path, None).unwrap();
        assert_eq!(code, 200, "DELETE {path}: {out}");
    }

    pub fn identities(&self) -> Vec<Who> {
        let g = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        vec![
            Who {
                user: "carol".into(),
                groups: g(&["devs", "system:authenticated"]),
                ..Who::cert("carol", "carol")
            },
            Who {
                user: "alice".into(),
                groups: g(&["system:authenticated"]),
                ..Who::token("alice", "alice-token")
            },
            Who {
                user: "bob".into(),
                groups: g(&["devs", "qa", "system:authenticated"]),
                ..Who::token("bob", "bob-token")
            },
            Who {
                user: "system:serviceaccount:ns-b:bot".into(),
                groups: g(&[
                    "system:serviceaccounts",
                    "system:serviceaccounts:ns-b",
                    "system:authenticated",
                ]),
                ..Who::token("bot", &self.bot_token)
            },
            Who {
                name: "anonymous".into(),
                token: None,
                cert: None,
                user: "system:anonymous".into(),
                groups: g(&["system:unauthenticated"]),
            },
        ]
    }

    /// The apiserver's `SubjectAccessReview` answer for `who`.
    pub fn review(
        &self,
        who: &Who,
        verb: &str,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> bool {
        let review = json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": who.user, "groups": who.groups, "resourceAttributes": {
                "namespace": ns, "verb": verb, "group": group, "resource": resource, "name": name}},
        });
        let (code, body) = self
            .apiserver
            .curl(
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                Some(&review.to_string()),
            )
            .unwrap();
        assert_eq!(code, 201, "SubjectAccessReview: {body}");
        serde_json::from_str::<Value>(&body).unwrap()["status"]["allowed"] == json!(true)
    }

    fn curl(&self, base: &str, ca: &Path, who: &Who, path: &str) -> (u16, String) {
        self.curl_with(base, ca, who, path, &[])
    }

    fn curl_with(
        &self,
        base: &str,
        ca: &Path,
        who: &Who,
        path: &str,
        headers: &[&str],
    ) -> (u16, String) {
        self.curl_method(base, ca, who, "GET", path, headers)
    }

    /// `method` of `path` sent as it is (no dot-segment folding, no
    /// globbing), with `headers`; a response still streaming after 3 s
    /// (a watch) is cut there, its code and what came kept.
    fn curl_method(
        &self,
        base: &str,
        ca: &Path,
        who: &Who,
        method: &str,
        path: &str,
        headers: &[&str],
    ) -> (u16, String) {
        let out = Command::new("curl")
            .args([
                "-s",
                "--path-as-is",
                "-g",
                "--max-time",
                "5",
                "-w",
                "\n%{http_code}",
            ])
            .args(if method == "HEAD" {
                vec!["-I"]
            } else {
                vec!["-X", method]
            })
            .arg("--cacert")
            .arg(ca)
            .args(who.curl_args(&self.dir))
            .args(headers.iter().flat_map(|h| ["-H", h]))
            .arg(format!("{base}{path}"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    pub fn apiserver_get(&self, who: &Who, path: &str) -> (u16, String) {
        self.curl(&self.apiserver.url(), &self.apiserver.ca(), who, path)
    }

    pub fn herald_get(&self, who: &Who, path: &str) -> (u16, String) {
        self.curl(&self.herald_url, &self.dir.join("tls.crt"), who, path)
    }

    /// A GET of `path` as `who` on `server` with more `headers`.
    pub fn get_with(&self, server: &str, who: &Who, path: &str, headers: &[&str]) -> (u16, String) {
        match server {
            "apiserver" => self.curl_with(
                &self.apiserver.url(),
                &self.apiserver.ca(),
                who,
                path,
                headers,
            ),
            _ => self.curl_with(
                self.url(server),
                &self.dir.join("tls.crt"),
                who,
                path,
                headers,
            ),
        }
    }

    /// `method` of `path` (sent as it is) as `who` on `server`
    /// (`apiserver`, `herald`, `delegating`) with more `headers`.
    pub fn send(
        &self,
        server: &str,
        who: &Who,
        method: &str,
        path: &str,
        headers: &[&str],
    ) -> (u16, String) {
        match server {
            "apiserver" => self.curl_method(
                &self.apiserver.url(),
                &self.apiserver.ca(),
                who,
                method,
                path,
                headers,
            ),
            _ => self.curl_method(
                self.url(server),
                &self.dir.join("tls.crt"),
                who,
                method,
                path,
                headers,
            ),
        }
    }

    /// The audit log `server` wrote (`apiserver` or `herald`): its
    /// events, one per line.
    pub fn audit_events(&self, server: &str) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join(format!("audit-{server}.log")))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub fn get_as(&self, server: &str, who: &Who, path: &str) -> (u16, String) {
        self.get_with(server, who, path, &[])
    }

    /// A Herald's URL (`herald`, `delegating` or `upstream-rbac`).
    pub fn url(&self, server: &str) -> &str {
        match server {
            "delegating" => &self.delegating_url,
            "upstream-rbac" => &self.upstream_rbac_url,
            _ => &self.herald_url,
        }
    }

    /// The cluster's directory (certificates, keys, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A watch on Herald read to its end on a thread: its lines and when
    /// it ended.
    pub fn herald_stream(&self, who: &Who, path: &str) -> JoinHandle<(Vec<String>, Instant)> {
        let mut cmd = Command::new("curl");
        cmd.args(["-sN", "--max-time", "60", "--cacert"])
            .arg(self.dir.join("tls.crt"))
            .args(who.curl_args(&self.dir))
            .arg(format!("{}{path}", self.herald_url))
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let lines: Vec<String> = std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect();
            let ended = Instant::now();
            let _ = child.wait();
            (lines, ended)
        })
    }

    /// A kubeconfig holding `who`'s credentials for `server`.
    pub fn kubeconfig(&self, server: &str, who: &Who) -> PathBuf {
        let (url, ca) = match server {
            "apiserver" => (self.apiserver.url(), self.apiserver.ca()),
            _ => (self.url(server).to_owned(), self.dir.join("tls.crt")),
        };
        let mut user = json!({});
        if let Some(t) = &who.token {
            user["token"] = json!(t);
        }
        if let Some(stem) = &who.cert {
            user["client-certificate"] = json!(self.dir.join(format!("{stem}.crt")));
            user["client-key"] = json!(self.dir.join(format!("{stem}.key")));
        }
        let config = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority": ca}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        });
        let path = self.dir.join(format!("kubeconfig-{server}-{}", who.name));
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }

    /// kubectl with a kubeconfig of `who` against `server`: (succeeded,
    /// stderr).
    pub fn kubectl(&self, server: &str, who: &Who, args: &[&str]) -> (bool, String) {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig(server, who))
            .args(args)
            .output()
            .expect("kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        )
    }

    /// client-go as `who` against `server` (`testkit/client-go/cmd/identity`,
    /// built once into the cluster's directory): a JSON line per read.
    pub fn client_go(&self, server: &str, who: &Who) -> Vec<Value> {
        let bin = self.dir.join("identity");
        if !bin.exists() {
            let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testkit/client-go");
            let out = Command::new("go")
                .args(["build", "-o"])
                .arg(&bin)
                .arg("./cmd/identity")
                .current_dir(&module)
                .output()
                .expect("go (the test command installs it)");
            assert!(
                out.status.success(),
                "go build ./cmd/identity: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let out = Command::new(&bin)
            .arg("--kubeconfig")
            .arg(self.kubeconfig(server, who))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "identity as {} on {server}: {}",
            who.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in [
            &mut self.herald,
            &mut self.delegating,
            &mut self.upstream_rbac,
        ] {
            let _ = child.kill();
            let _ = child.wait();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
