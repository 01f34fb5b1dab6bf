//! Finding an etcd binary ([`etcd_binary`], [`old_etcd_binary`]) and
//! reading its version and flags ([`EtcdBinary`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::LocalError;
use super::install::{ETCD_ENV, MIN_ETCD_VERSION, OLD_ETCD_ENV};

/// The version in `etcd --version` output ("etcd Version: 3.5.16").
fn parse_version(output: &str) -> Option<(u32, u32, u32)> {
    let line = output
        .lines()
        .find_map(|line| line.trim().strip_prefix("etcd Version:"))?;
    let mut parts = line.trim().splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    // The patch may carry a suffix ("3.6.0-rc.1", "3.5.16+dev").
    let patch = parts.next()?;
    let digits = patch
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(patch.len());
    let patch = patch[..digits].parse().ok()?;
    Some((major, minor, patch))
}

/// An etcd server binary and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdBinary {
    path: PathBuf,
    version: (u32, u32, u32),
    /// Whether it has `--unsafe-no-fsync` (added in etcd 3.5).
    pub(crate) no_fsync_flag: bool,
}

impl EtcdBinary {
    /// The binary at `path`, with its version read from `etcd --version`.
    /// No minimum version is required.
    pub fn at(path: impl Into<PathBuf>) -> Result<EtcdBinary, LocalError> {
        EtcdBinary::probe(path.into(), "")
    }

    /// [`EtcdBinary::at`], with where the path came from for errors.
    fn probe(path: PathBuf, origin: &str) -> Result<EtcdBinary, LocalError> {
        let unusable = |detail: String| LocalError::Unusable {
            path: path.clone(),
            detail: format!("{detail}{origin}"),
        };
        if !path.is_file() {
            return Err(unusable("no such file".to_owned()));
        }
        let run = |flag: &str| {
            Command::new(&path)
                .arg(flag)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| unusable(format!("cannot run `{} {flag}`: {e}", path.display())))
        };
        let out = run("--version")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(unusable(format!(
                "`{} --version` failed ({}): {}{}",
                path.display(),
                out.status,
                stdout.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let version = parse_version(&stdout).ok_or_else(|| {
            unusable(format!(
                "no \"etcd Version: X.Y.Z\" line in `--version` output {:?}",
                stdout.trim()
            ))
        })?;
        let help = run("--help")?;
        let no_fsync_flag = [&help.stdout, &help.stderr]
            .iter()
            .any(|text| String::from_utf8_lossy(text).contains("--unsafe-no-fsync"));
        Ok(EtcdBinary {
            path,
            version,
            no_fsync_flag,
        })
    }

    /// The binary's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its version, as (major, minor, patch).
    pub fn version(&self) -> (u32, u32, u32) {
        self.version
    }
}

/// The workspace root (this crate is `<root>/testkit`).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `name` in a directory of `$PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The binary named by `$var`, else the one under `target/tools/<tools_dir>`,
/// else (if `use_path`) `etcd` on `$PATH`.
fn locate(var: &str, tools_dir: &str, use_path: bool) -> Result<EtcdBinary, LocalError> {
    let mut searched = Vec::new();
    match std::env::var_os(var) {
        Some(path) if !path.is_empty() => {
            return EtcdBinary::probe(PathBuf::from(path), &format!(" (from ${var})"));
        }
        _ => searched.push(format!("${var} (unset)")),
    }
    let tools = workspace_root()
        .join("target/tools")
        .join(tools_dir)
        .join("usr/bin/etcd");
    if tools.is_file() {
        return EtcdBinary::probe(tools, "");
    }
    searched.push(tools.display().to_string());
    if use_path {
        if let Some(path) = on_path("etcd") {
            return EtcdBinary::probe(path, " (etcd on $PATH)");
        }
        searched.push("etcd on $PATH".to_owned());
    }
    Err(LocalError::NotFound { searched })
}

/// The etcd binary for tests and benchmarks: `$HERALD_ETCD`, else
/// `<workspace>/target/tools/etcd-3.5/usr/bin/etcd` (where
/// `scripts/ensure-etcd.sh` puts it), else `etcd` on `$PATH`.
///
/// Fails if none is found, if it cannot be run, or if it is older than
/// [`MIN_ETCD_VERSION`].
pub fn etcd_binary() -> Result<EtcdBinary, LocalError> {
    let bin = locate(ETCD_ENV, "etcd-3.5", true)?;
    if bin.version < MIN_ETCD_VERSION {
        return Err(LocalError::TooOld {
            path: bin.path,
            version: bin.version,
            minimum: MIN_ETCD_VERSION,
        });
    }
    Ok(bin)
}

/// The old etcd binary (3.4, with etcd bug #15220): `$HERALD_ETCD_OLD`, else
/// `<workspace>/target/tools/etcd-3.4/usr/bin/etcd` (where
/// `scripts/ensure-etcd.sh` puts it). No minimum version.
pub fn old_etcd_binary() -> Result<EtcdBinary, LocalError> {
    locate(OLD_ETCD_ENV, "etcd-3.4", false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions() {
        let v35 = "etcd Version: 3.5.16\nGit SHA: Not provided\nGo Version: go1.24.0\n";
        assert_eq!(parse_version(v35), Some((3, 5, 16)));
        assert_eq!(parse_version("etcd Version: 3.4.23\n"), Some((3, 4, 23)));
        assert_eq!(parse_version("etcd Version: 3.6.0-rc.1\n"), Some((3, 6, 0)));
        assert_eq!(parse_version("etcd Version: 3.5\n"), None);
        assert_eq!(parse_version("something else\n"), None);
        assert!((3, 4, 23) < MIN_ETCD_VERSION);
        assert!((3, 5, 12) < MIN_ETCD_VERSION);
        assert!((3, 5, 13) >= MIN_ETCD_VERSION);
        assert!((3, 6, 0) >= MIN_ETCD_VERSION);
    }

    #[test]
    fn errors_say_how_to_install() {
        let e = EtcdBinary::at("/nonexistent/herald/etcd").unwrap_err();
        assert!(e.to_string().contains("scripts/ensure-etcd.sh"), "{e}");
        let e = LocalError::NotFound {
            searched: vec!["$HERALD_ETCD (unset)".to_owned()],
        };
        assert!(e.to_string().contains("scripts/ensure-etcd.sh"), "{e}");
    }
}
