//! [`LocalApiserver`]: the real kube-apiserver on loopback, on an etcd of
//! the caller's, restartable on the same port and certificates; its
//! binary from `HERALD_KUBE_APISERVER` (what
//! `scripts/ensure-kube-apiserver.sh` prints), never a stand-in.
//!
//! It authenticates static bearer tokens (`--token-auth-file`, each
//! `system:masters`, read at start: a restart with other tokens rotates
//! them), authorizes with RBAC, and serves TLS with the certificate it
//! generates in its `--cert-dir` (the CA beside it, [`LocalApiserver::ca`]).
//! Requests to it go through `curl` (on every image this project runs on).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable naming the kube-apiserver binary.
pub const APISERVER_ENV: &str = "HERALD_KUBE_APISERVER";

/// How long a start may take to answer `/readyz` (a cold start on a busy
/// 2-core machine takes 10-40 s).
const READY_WITHIN: Duration = Duration::from_secs(180);

/// A kube-apiserver process and its files; killed and its files removed
/// when dropped.
#[derive(Debug)]
pub struct LocalApiserver {
    bin: PathBuf,
    dir: PathBuf,
    etcd: String,
    port: u16,
    tokens: Vec<String>,
    options: ApiserverOptions,
    child: Option<Child>,
}

/// What a start adds to the defaults.
#[derive(Debug, Clone, Default)]
pub struct ApiserverOptions {
    /// More `--token-auth-file` lines (`token,user,uid,"g1,g2"`): users
    /// of the test's choosing, after the `system:masters` tokens.
    pub token_lines: Vec<String>,
    /// More flags (`--client-ca-file=/path`).
    pub args: Vec<String>,
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

impl LocalApiserver {
    /// The binary `HERALD_KUBE_APISERVER` names, or why there is none.
    pub fn binary() -> Result<PathBuf, String> {
        let path = std::env::var_os(APISERVER_ENV)
            .map(PathBuf::from)
            .ok_or_else(|| {
                format!(
                    "{APISERVER_ENV} is not set: eval \"$(scripts/ensure-kube-apiserver.sh)\" \
                 (builds the real kube-apiserver; the test command does it)"
                )
            })?;
        if !path.is_file() {
            return Err(format!("{APISERVER_ENV}={}: no such file", path.display()));
        }
        Ok(path)
    }

    /// Starts it on `etcd` (a client URL) accepting `tokens`, on a free
    /// port, and waits until it is ready.
    pub fn start(etcd: &str, tokens: &[&str]) -> Result<LocalApiserver, String> {
        LocalApiserver::start_binary(&LocalApiserver::binary()?, etcd, tokens)
    }

    /// [`LocalApiserver::start`] of the binary at `bin`.
    pub fn start_binary(bin: &Path, etcd: &str, tokens: &[&str]) -> Result<LocalApiserver, String> {
        LocalApiserver::start_with(bin, etcd, tokens, ApiserverOptions::default())
    }

    /// [`LocalApiserver::start_binary`] with `options` added.
    pub fn start_with(
        bin: &Path,
        etcd: &str,
        tokens: &[&str],
        options: ApiserverOptions,
    ) -> Result<LocalApiserver, String> {
        let bin = bin.to_path_buf();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port: {e}"))?
            .port();
        let dir = std::env::temp_dir().join(format!("herald-kas-{}-{port}", std::process::id()));
        std::fs::create_dir_all(dir.join("certs"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        run(&dir, "openssl", &["genrsa", "-out", "sa.key", "2048"])?;
        let mut server = LocalApiserver {
            bin,
            dir,
            etcd: etcd.to_owned(),
            port,
            tokens: tokens.iter().map(|t| (*t).to_owned()).collect(),
            options,
            child: None,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> Result<(), String> {
        let mut tokens: String = self
            .tokens
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{t},user-{i},uid-{i},system:masters\n"))
            .collect();
        for line in &self.options.token_lines {
            tokens.push_str(line);
            tokens.push('\n');
        }
        std::fs::write(self.dir.join("tokens.csv"), tokens).map_err(|e| e.to_string())?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| e.to_string())?;
        let child = Command::new(&self.bin)
            .current_dir(&self.dir)
            .args([
                "--etcd-servers",
                &self.etcd,
                "--bind-address=127.0.0.1",
                &format!("--secure-port={}", self.port),
                "--cert-dir=certs",
                "--service-account-key-file=sa.key",
                "--service-account-signing-key-file=sa.key",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--token-auth-file=tokens.csv",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
            ])
            .args(&self.options.args)
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("start {}: {e}", self.bin.display()))?;
        self.child = Some(child);
        let since = Instant::now();
        loop {
            if let Ok((200, _)) = self.curl("GET", "/readyz", None) {
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(format!(
                    "kube-apiserver exited ({status}); its log: {}",
                    self.log_path().display()
                ));
            }
            if since.elapsed() > READY_WITHIN {
                return Err(format!(
                    "kube-apiserver not ready within {READY_WITHIN:?}; its log: {}",
                    self.log_path().display()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The key it signs service-account tokens with (`--service-account-key-file`).
    pub fn sa_key(&self) -> PathBuf {
        self.dir.join("sa.key")
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The certificate it serves with, and the CA that signed it (a PEM
    /// file): what a client verifies it against.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("certs").join("apiserver.crt")
    }

    /// Its log (stdout and stderr, across restarts).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("kube-apiserver.log")
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A directory of its own for the caller's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills it (`SIGKILL`) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Restarts it on the same port and certificates, accepting `tokens`
    /// from now on (every other is refused: a rotation), and waits until
    /// it is ready.
    pub fn restart_with(&mut self, tokens: &[&str]) -> Result<(), String> {
        self.kill();
        self.tokens = tokens.iter().map(|t| (*t).to_owned()).collect();
        self.launch()
    }

    /// `curl` of `path` with `method` (and a JSON `body`), as the first
    /// token: (status, body).
    pub fn curl(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), String> {
        let token = self.tokens.first().cloned().unwrap_or_default();
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "--max-time", "30", "--cacert"])
            .arg(self.ca())
            .args(["-w", "\n%{http_code}", "-X", method, "-H"])
            .arg(format!("Authorization: Bearer {token}"));
        if let Some(body) = body {
            cmd.args([
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                body,
            ]);
        }
        let out = cmd
            .arg(format!("{}{path}", self.url()))
            .output()
            .map_err(|e| format!("run curl: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        Ok((code.trim().parse().unwrap_or(0), body.to_owned()))
    }
}

impl Drop for LocalApiserver {
    fn drop(&mut self) {
        self.kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
