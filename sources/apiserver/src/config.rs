//! How to reach the apiserver: a kubeconfig (a file, `KUBECONFIG`, or
//! `~/.kube/config`; its current context or a named one), or the pod's
//! service account when run in a cluster; and the reflector's settings.

use std::path::PathBuf;
use std::time::Duration;

/// Where the credentials and the cluster come from, and how resources
/// are listed and watched.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApiServerConfig {
    /// A kubeconfig file; `None`: `KUBECONFIG`, then `~/.kube/config`,
    /// then the in-cluster service account (kubectl's order).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context; `None`: its current context.
    pub context: Option<String>,
    /// Objects per page of a list (client-go's reflector: 500).
    pub page_size: u32,
    /// A watch asks the apiserver to end it after a random time between
    /// this and twice this (client-go's reflector: 5 to 10 minutes), then
    /// resumes from its last version.
    pub watch_timeout: Duration,
    /// Ask for protobuf where the resource has it (the built-in kinds):
    /// smaller, cheaper for the apiserver to encode.
    pub protobuf: bool,
    /// List as a watch-list (`sendInitialEvents=true`, client-go's
    /// default), whose stream then goes on as the watch; `false`, or an
    /// apiserver that refuses it: paged lists.
    pub watch_list: bool,
    /// The longest body read (a list's page, a watch event).
    pub max_body: usize,
    /// How long a request, other than a watch, may take; and a
    /// watch-list's initial events, up to its end bookmark.
    pub request_timeout: Duration,
}

impl Default for ApiServerConfig {
    fn default() -> ApiServerConfig {
        ApiServerConfig {
            kubeconfig: None,
            context: None,
            page_size: 500,
            watch_timeout: Duration::from_secs(300),
            protobuf: true,
            watch_list: true,
            max_body: 1 << 30,
            request_timeout: Duration::from_secs(60),
        }
    }
}

impl ApiServerConfig {
    /// The default settings, credentials from `kubeconfig`.
    pub fn kubeconfig(path: impl Into<PathBuf>) -> ApiServerConfig {
        ApiServerConfig {
            kubeconfig: Some(path.into()),
            ..ApiServerConfig::default()
        }
    }

    /// The same, with `context` instead of the current one.
    pub fn context(mut self, context: impl Into<String>) -> ApiServerConfig {
        self.context = Some(context.into());
        self
    }

    /// The same, asking for JSON only (`false`) or protobuf where there
    /// is one (`true`, the default).
    pub fn protobuf(mut self, protobuf: bool) -> ApiServerConfig {
        self.protobuf = protobuf;
        self
    }

    /// The same, listing with watch-lists (`true`, the default) or with
    /// paged lists only.
    pub fn watch_list(mut self, watch_list: bool) -> ApiServerConfig {
        self.watch_list = watch_list;
        self
    }

    /// The same, with watches ended by the apiserver after between
    /// `timeout` and twice it.
    pub fn watch_timeout(mut self, timeout: Duration) -> ApiServerConfig {
        self.watch_timeout = timeout;
        self
    }
}

/// The apiserver could not be reached or its configuration read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConnectError {
    /// The kubeconfig (or in-cluster configuration) could not be read or
    /// names no usable cluster or user.
    Config(String),
    /// The apiserver did not answer `/version`, or refused: why.
    Unreachable(String),
    /// The tokio runtime could not start.
    Runtime(std::io::Error),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Config(why) => write!(f, "the apiserver's configuration: {why}"),
            ConnectError::Unreachable(why) => write!(f, "the apiserver: {why}"),
            ConnectError::Runtime(e) => write!(f, "a tokio runtime: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {}
