//! [`WatchProbe`]: where a watch stands, for an operator's view
//! ([`WatchStopper::probe`](crate::watch::WatchStopper::probe)).

/// Where a watch stands, as [`WatchStopper::probe`](crate::watch::WatchStopper::probe) saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchProbe {
    /// Its state.
    pub state: WatchState,
    /// Changes dispatched to it that its receiver has not taken (its
    /// queue and its overflow; nothing while parked, when the receiver
    /// replays from the ring instead).
    pub queued: u64,
}

/// A watch's state ([`WatchProbe::state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchState {
    /// Not yet registered by the dispatcher.
    Starting,
    /// Registered, and nothing waits for its receiver.
    Following,
    /// Registered, with changes waiting for its receiver.
    Queued,
    /// Its queue filled: the dispatcher passes it by while its receiver
    /// replays from the ring (`SlowWatchers::Park`).
    Parked,
    /// Ended (its receiver may not have taken the end yet).
    Ended,
}

impl WatchState {
    /// The state's name in lower case (`following`, `parked`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            WatchState::Starting => "starting",
            WatchState::Following => "following",
            WatchState::Queued => "queued",
            WatchState::Parked => "parked",
            WatchState::Ended => "ended",
        }
    }
}
