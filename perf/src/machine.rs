//! What the machine was doing while a case ran: the CPU time this process
//! took, the CPU time everything else took, and which of this process's
//! threads were busy. Read from `/proc` (Linux); elsewhere every figure is
//! absent rather than made up.
//!
//! A shared 2-core machine swings a run 2-10x: a figure without the load
//! beside it cannot be judged. Each round records the other processes' CPU
//! time (the machine's busy time from `/proc/stat`, steal included, minus
//! this process's from `/proc/self/stat`), and a round in which they took
//! more than [`NOISY_CORES`] of a core on average is marked noisy.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;

/// A round is noisy when other processes (or the hypervisor, as steal)
/// took more than this many cores on average while it ran.
pub const NOISY_CORES: f64 = 0.25;

/// A thread counts as busy in a round when it ran for at least this share
/// of the round's wall time.
pub const BUSY_SHARE: f64 = 0.2;

/// Clock ticks per second of `/proc/stat` and `/proc/self/stat` (`USER_HZ`,
/// 100 on every Linux ABI in use).
const TICKS_PER_S: f64 = 100.0;

/// CPU use over one round.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuUse {
    /// Wall time the window covered (s).
    pub wall_s: f64,
    /// Cores this process used on average (its CPU time / wall time).
    pub process_cores: Option<f64>,
    /// Cores every other process (and steal) used on average.
    pub others_cores: Option<f64>,
    /// Cores the whole machine was busy on average (`/proc/stat`), every
    /// process counted, this one and its children included: what is left
    /// of the machine's cores is what was idle.
    pub machine_cores: Option<f64>,
    /// Ticks (1/100 s) other processes took: the raw count behind
    /// `others_cores`.
    pub others_ticks: Option<u64>,
    /// This process's threads that ran for at least [`BUSY_SHARE`] of the
    /// window, as `name` or `name xN`, busiest first.
    pub busy: Vec<String>,
    /// How many threads that is.
    pub busy_threads: usize,
    /// Cores a peer process measured with the round (etcd, in
    /// etcd-fanout) used on average; taken out of `others_cores`.
    pub peer_cores: Option<f64>,
    /// Cores this process's child processes that exited and were reaped
    /// in the window (the etcd servers of etcd-fanout, each stopped after
    /// its case; fleet-restart's replicas) used on average within it;
    /// taken out of `others_cores`. What a child used before the window
    /// opened is not counted (see [`CpuWindow`]).
    pub children_cores: Option<f64>,
}

impl CpuUse {
    /// Books `cpu_ns` of CPU time as a peer process's (a server the round
    /// drives, such as etcd), not as other load: it is taken out of the
    /// other processes' figures, which judge whether the round was noisy.
    pub fn attribute_peer(&mut self, cpu_ns: u64) {
        let ticks = cpu_ns as f64 / 1e9 * TICKS_PER_S;
        let wall = self.wall_s.max(1e-6);
        if let Some(t) = &mut self.others_ticks {
            *t = (*t as f64 - ticks).max(0.0).round() as u64;
            self.others_cores = Some(*t as f64 / TICKS_PER_S / wall);
        }
        self.peer_cores = Some(cpu_ns as f64 / 1e9 / wall);
    }

    /// Whether other load makes this round suspect: other processes took
    /// more than [`NOISY_CORES`] on average, beyond the tick counts' own
    /// error (the kernel samples CPU time per tick on each CPU: up to two
    /// ticks per CPU either way over a window).
    pub fn noisy(&self) -> bool {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        self.others_ticks
            .is_some_and(|t| t as f64 - 2.0 * cpus > NOISY_CORES * self.wall_s * TICKS_PER_S)
    }
}

/// A thread's CPU time so far, read by the thread itself (for threads that
/// exit before the window closes: the consumers).
#[derive(Debug, Clone)]
pub struct ThreadCpu {
    tid: Option<u32>,
    name: String,
    start_ns: Option<u64>,
}

impl ThreadCpu {
    /// Starts counting the calling thread's CPU time.
    pub fn start() -> ThreadCpu {
        let tid = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name()?.to_str()?.parse().ok());
        ThreadCpu {
            tid,
            name: std::thread::current().name().unwrap_or("?").to_owned(),
            start_ns: schedstat_ns("/proc/thread-self/schedstat"),
        }
    }

    /// The calling thread's CPU time since [`start`](ThreadCpu::start).
    pub fn finish(self) -> Option<(u32, String, u64)> {
        let end = schedstat_ns("/proc/thread-self/schedstat")?;
        Some((self.tid?, self.name, end.saturating_sub(self.start_ns?)))
    }
}

/// A window over which CPU use is measured.
///
/// The kernel books a child's whole life's CPU to its parent when the
/// parent reaps it (`cutime`, `cstime`). So the window records each live
/// child's CPU as it opens, and takes that back out for the children
/// reaped before it closes: what is left is their CPU within the window.
#[derive(Debug)]
pub struct CpuWindow {
    at: Instant,
    machine_ticks: Option<u64>,
    process_ticks: Option<u64>,
    children_ticks: Option<u64>,
    children: HashMap<ChildId, u64>,
    threads: HashMap<u32, (String, u64)>,
}

impl CpuWindow {
    /// Opens a window now.
    pub fn open() -> CpuWindow {
        CpuWindow {
            at: Instant::now(),
            machine_ticks: machine_busy_ticks(),
            process_ticks: process_ticks(),
            children_ticks: children_ticks(),
            children: live_children(),
            threads: threads(),
        }
    }

    /// Closes the window. `exited` are threads that measured themselves
    /// ([`ThreadCpu`]) and may have exited: (tid, name, CPU ns in the
    /// window).
    pub fn close(self, exited: &[(u32, String, u64)]) -> CpuUse {
        let wall = self.at.elapsed().max(Duration::from_micros(1));
        let wall_s = wall.as_secs_f64();
        let cores = |ticks: u64| ticks as f64 / TICKS_PER_S / wall_s;
        let process = process_ticks()
            .zip(self.process_ticks)
            .map(|(b, a)| b.saturating_sub(a));
        // Children reaped in the window: what they had used before it.
        let live = live_children();
        let before: u64 = self
            .children
            .iter()
            .filter(|(id, _)| !live.contains_key(id))
            .map(|(_, ticks)| ticks)
            .sum();
        let children = children_ticks()
            .zip(self.children_ticks)
            .map(|(b, a)| b.saturating_sub(a).saturating_sub(before));
        let all_busy = machine_busy_ticks()
            .zip(self.machine_ticks)
            .map(|(b, a)| b.saturating_sub(a));
        // This process's and its reaped children's (their share of the
        // window): neither is other load.
        let machine = all_busy.map(|b| b.saturating_sub(children.unwrap_or(0)));
        let mut used: HashMap<u32, (String, u64)> = HashMap::new();
        for (tid, (name, ns)) in threads() {
            let before = self.threads.get(&tid).map_or(0, |t| t.1);
            used.insert(tid, (name, ns.saturating_sub(before)));
        }
        for (tid, name, ns) in exited {
            used.insert(*tid, (name.clone(), *ns));
        }
        let mut busy: Vec<(String, u64)> = used
            .into_values()
            .filter(|(_, ns)| *ns as f64 / 1e9 >= BUSY_SHARE * wall_s)
            .collect();
        busy.sort_by_key(|b| std::cmp::Reverse(b.1));
        let busy_threads = busy.len();
        let mut named: Vec<(String, usize)> = Vec::new();
        for (name, _) in busy {
            match named.iter_mut().find(|(n, _)| *n == name) {
                Some((_, k)) => *k += 1,
                None => named.push((name, 1)),
            }
        }
        CpuUse {
            wall_s,
            process_cores: process.map(cores),
            others_cores: machine
                .zip(process)
                .map(|(m, p)| cores(m.saturating_sub(p))),
            others_ticks: machine.zip(process).map(|(m, p)| m.saturating_sub(p)),
            machine_cores: all_busy.map(cores),
            busy: named
                .into_iter()
                .map(|(n, k)| if k == 1 { n } else { format!("{n} x{k}") })
                .collect(),
            busy_threads,
            peer_cores: None,
            children_cores: children.map(cores),
        }
    }
}

/// Another process's CPU time so far (ns): the sum of its threads'
/// `schedstat` (ns precision; a thread that exited is no longer counted:
/// read it before and after a window only for a process whose threads
/// live as long as it, as etcd's Go runtime threads do), or, where that
/// cannot be read, its user + system ticks.
pub fn process_cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok();
    let sum: Option<u64> = tasks.map(|dir| {
        dir.flatten()
            .filter_map(|e| schedstat_ns(&e.path().join("schedstat").to_string_lossy()))
            .sum()
    });
    match sum {
        Some(ns) if ns > 0 => Some(ns),
        _ => {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ticks = stat_ticks(&stat)?;
            Some((ticks as f64 / TICKS_PER_S * 1e9) as u64)
        }
    }
}

/// Another process's resident memory (`VmRSS`), in bytes.
pub fn process_rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Asks the kernel to wake the calling thread's sleeps within 1 µs of their
/// deadline (the default slack is 50 µs), so a paced publisher or an idle
/// poller can sleep instead of spinning. Best effort: unchanged where
/// `/proc/thread-self/timerslack_ns` is not writable.
pub fn tight_timer_slack() {
    let _ = std::fs::write("/proc/thread-self/timerslack_ns", "1000");
}

/// The first field of a `schedstat` file: CPU time on the CPU, in ns.
fn schedstat_ns(path: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Every live thread of this process: tid -> (name, CPU ns so far).
pub(crate) fn threads() -> HashMap<u32, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let path = entry.path();
        let Some(ns) = schedstat_ns(&path.join("schedstat").to_string_lossy()) else {
            continue;
        };
        let name = std::fs::read_to_string(path.join("comm"))
            .map(|s| s.trim().to_owned())
            .unwrap_or_default();
        out.insert(tid, (name, ns));
    }
    out
}

/// This process's user + system time (ticks), threads that exited
/// included.
fn process_ticks() -> Option<u64> {
    stat_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// User + system ticks of this process's children that exited and were
/// waited for.
fn children_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 16 and 17 of the file (cutime, cstime) are 13 and 14 here.
    Some(f.get(13)?.parse::<u64>().ok()? + f.get(14)?.parse::<u64>().ok()?)
}

/// A process, named so that a reused pid is another: (pid, start time
/// in ticks since boot).
type ChildId = (u32, u64);

/// This process's children not yet reaped (zombies included), each with
/// what the kernel adds to this process's `cutime` + `cstime` when it
/// reaps it: its own user + system ticks and those of the children it
/// reaped.
fn live_children() -> HashMap<ChildId, u64> {
    let me = std::process::id();
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
        // Fields 4 (ppid), 14-17 (utime, stime, cutime, cstime) and 22
        // (starttime) of the file are 1, 11-14 and 19 here.
        if num(1) != Some(u64::from(me)) {
            continue;
        }
        let (Some(u), Some(s), Some(cu), Some(cs), Some(start)) =
            (num(11), num(12), num(13), num(14), num(19))
        else {
            continue;
        };
        out.insert((pid, start), u + s + cu + cs);
    }
    out
}

/// User + system ticks from a `/proc/<pid>/stat` line.
fn stat_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the file (utime, stime) are 11 and 12 here.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The machine's busy time (ticks): user, nice, system, irq, softirq and
/// steal of the `cpu` line of `/proc/stat` (guest time is inside user).
fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal ...
    Some(
        [0, 1, 2, 5, 6, 7]
            .iter()
            .map(|&i| f.get(i).copied().unwrap_or(0))
            .sum(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU (ticks) `pid` has used and whether it is asleep.
    fn stat_of(pid: u32) -> (u64, bool) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        (stat_ticks(&stat).unwrap(), rest.starts_with('S'))
    }

    #[test]
    fn a_child_reaped_in_the_window_counts_only_its_cpu_within_it() {
        // Spins until it has used 0.6 s of CPU (by its own /proc stat's
        // utime + stime, fields 14 and 15: CPU, not wall time, so a loaded
        // machine only makes it slower), then sleeps half a second and
        // exits.
        let mut child = std::process::Command::new("bash")
            .args([
                "-c",
                "while :; do read -ra f < /proc/$$/stat; (( f[13] + f[14] >= 60 )) && break; done; sleep 0.5",
            ])
            .spawn()
            .unwrap();
        let pid = child.id();
        // Asleep, its spinning done (`sleep` is its own process: bash waits).
        let deadline = Instant::now() + Duration::from_secs(120);
        let spun = loop {
            let (ticks, asleep) = stat_of(pid);
            if asleep && ticks >= 50 {
                break ticks;
            }
            assert!(
                Instant::now() < deadline,
                "the child did not spin, then sleep"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let window = CpuWindow::open();
        child.wait().unwrap();
        let used = window.close(&[]);
        let in_window = used.children_cores.unwrap() * used.wall_s * TICKS_PER_S;
        // The spin (at least half a second) was before the window; inside
        // it the child slept. The kernel booked its whole life on reaping.
        assert!(
            in_window < 15.0,
            "{in_window:.0} ticks booked to the window of a child that spun {spun} ticks before it"
        );
    }

    #[test]
    fn a_spinning_thread_is_counted_busy_and_a_sleeping_one_is_not() {
        let window = CpuWindow::open();
        let spin = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(|| {
                let cpu = ThreadCpu::start();
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
                cpu.finish()
            })
            .unwrap();
        let sleeper = std::thread::Builder::new()
            .name("sleeper".into())
            .spawn(|| {
                let cpu = ThreadCpu::start();
                std::thread::sleep(Duration::from_millis(300));
                cpu.finish()
            })
            .unwrap();
        let exited: Vec<_> = [spin.join().unwrap(), sleeper.join().unwrap()]
            .into_iter()
            .flatten()
            .collect();
        let used = window.close(&exited);
        if exited.len() < 2 {
            eprintln!("no /proc/thread-self/schedstat here: nothing to check");
            return;
        }
        // The spinner is busy if it got its share of a core: on a machine
        // other processes load, it may not have (the rule is what is
        // checked, either way).
        let spun = exited.iter().find(|t| t.1 == "spinner").map_or(0, |t| t.2);
        let slept = exited.iter().find(|t| t.1 == "sleeper").map_or(0, |t| t.2);
        assert!(spun > slept, "{spun} {slept}");
        let got_its_share = spun as f64 / 1e9 >= BUSY_SHARE * used.wall_s;
        assert_eq!(
            used.busy.iter().any(|b| b == "spinner"),
            got_its_share,
            "{used:?}"
        );
        assert!(!used.busy.iter().any(|b| b == "sleeper"), "{used:?}");
        assert!(used.process_cores.is_some(), "{used:?}");
    }
}
