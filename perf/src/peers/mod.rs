//! The systems under test: Herald and its peers.

pub mod crossbeam_cacher;
pub mod disruptor;
pub mod event;
pub mod herald;
pub mod kubelet_reference;
pub mod reference;
pub mod tokio_broadcast;
