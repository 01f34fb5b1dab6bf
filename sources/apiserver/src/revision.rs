//! The apiserver's current resource version, asked once for every reader
//! waiting: a consistent read needs a version read after it began, so a
//! reader that arrives while a request is out waits for the next one
//! (which starts after it arrived) rather than take the one in flight;
//! every reader that arrived meanwhile shares that next one. Under load,
//! one request is out at a time, whatever the number of readers (the
//! apiserver's cacher does the same with etcd).

use std::sync::{Condvar, Mutex};

/// One request at a time, shared by the readers that arrived before it.
#[derive(Debug)]
pub(crate) struct Coalesced<T: Clone> {
    state: Mutex<State<T>>,
    done: Condvar,
}

#[derive(Debug)]
struct State<T> {
    /// A request is out.
    running: bool,
    /// Requests started so far.
    started: u64,
    /// The last finished request's number and answer.
    finished: u64,
    last: Option<T>,
}

impl<T> Default for State<T> {
    fn default() -> State<T> {
        State {
            running: false,
            started: 0,
            finished: 0,
            last: None,
        }
    }
}

impl<T: Clone> Default for Coalesced<T> {
    fn default() -> Coalesced<T> {
        Coalesced {
            state: Mutex::default(),
            done: Condvar::new(),
        }
    }
}

impl<T: Clone> Coalesced<T> {
    /// The answer of a `fetch` started after this call began: made here,
    /// or by another caller whose request started after this one arrived.
    pub(crate) fn get(&self, fetch: impl FnOnce() -> T) -> T {
        let mut fetch = Some(fetch);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // The first request to start after now answers this call.
        let wanted = state.started + 1;
        loop {
            if let Some(answer) = state.last.as_ref().filter(|_| state.finished >= wanted) {
                return answer.clone();
            }
            if !state.running {
                state.running = true;
                state.started += 1;
                let mine = state.started;
                drop(state);
                let answer = match fetch.take() {
                    Some(f) => f(),
                    None => unreachable!("a caller starts at most one request"),
                };
                state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.running = false;
                state.finished = mine;
                state.last = Some(answer.clone());
                self.done.notify_all();
                return answer;
            }
            state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Requests made so far.
    pub(crate) fn requests(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).started
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn readers_share_a_request_that_started_after_they_arrived() {
        let c = Arc::new(Coalesced::<u64>::default());
        let source = Arc::new(AtomicU64::new(0));
        let fetch = |source: &AtomicU64| {
            // The answer is the count of fetches begun: a reader must get
            // one that began after it arrived.
            let n = source.fetch_add(1, Ordering::SeqCst) + 1;
            std::thread::sleep(Duration::from_millis(50));
            n
        };
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (c, source) = (c.clone(), source.clone());
                std::thread::spawn(move || {
                    let before = source.load(Ordering::SeqCst);
                    let got = c.get(|| fetch(&source));
                    assert!(
                        got > before,
                        "an answer from a request begun before the call"
                    );
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // 16 readers, far fewer requests.
        let made = c.requests();
        assert!((1..16).contains(&made), "{made} requests");
        assert_eq!(c.get(|| 99), 99, "a lone reader makes its own");
    }
}
