//! What every harness test does: run the real `herald-perf` binary at the
//! smoke size, strictly, and read the JSON it writes.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// A `herald-perf` run's output and its JSON document; its directory is
/// removed on drop.
pub(crate) struct Run {
    /// Where its JSON (and plots, if asked for) are.
    pub(crate) dir: PathBuf,
    /// Its standard output (the tables).
    pub(crate) stdout: String,
    /// Its JSON document.
    pub(crate) doc: serde_json::Value,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Run {
    /// The rows of `scenario`.
    pub(crate) fn rows(&self, scenario: &str) -> Vec<&serde_json::Value> {
        self.doc["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .filter(|r| r["scenario"] == scenario)
            .collect()
    }
}

/// `herald-perf --profile smoke --strict <args> --json <dir>/<name>.json`,
/// in a directory of its own (`args` may name it through `dir` below);
/// fails the test if the run fails.
pub(crate) fn smoke(name: &str, args: &[&str]) -> Run {
    smoke_with(name, |_| args.iter().map(|a| (*a).to_owned()).collect())
}

/// [`smoke`] with arguments that may name the run's directory.
pub(crate) fn smoke_with(name: &str, args: impl FnOnce(&PathBuf) -> Vec<String>) -> Run {
    let dir = std::env::temp_dir().join(format!("herald-perf-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join(format!("{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_herald-perf"))
        .args(["--profile", "smoke", "--strict"])
        .args(args(&dir))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run herald-perf");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "herald-perf failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    Run { dir, stdout, doc }
}
