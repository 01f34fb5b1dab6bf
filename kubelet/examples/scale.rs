//! Is a change's cost flat in the number of per-object watches?
//!
//! For N = 1,000, 10,000 and 100,000 objects, each referenced (so one
//! watch of `metadata.name=<name>` each), a writer applies changes flat
//! out to objects drawn at random, and the run waits until the manager
//! serves every object's last version. Printed: the seconds to open and sync the N
//! watches (a `get` of each), and changes absorbed per second (changes / time
//! from the first write to the manager's last update), median [min-max]
//! over the rounds, the N interleaved within each round.
//!
//! ```sh
//! cargo run --release -p herald-kubelet --example scale [ROUNDS] [CHANGES] [N,N,...]
//! ```

use std::time::{Duration, Instant};

use herald::{Change, Config, Engine, Object, Relist};
use herald_kubelet::{EngineUpstream, ManagerConfig, ObjectManager};

fn object(i: usize, v: u64) -> Object {
    let name = format!("s-{i:06}");
    let payload = format!(
        r#"{{"kind":"Secret","metadata":{{"name":"{name}","namespace":"ns"}},"data":{{"v":"{v}"}}}}"#
    );
    Object::builder("ns", &name).payload(payload).build()
}

/// One run with `n` per-object watches: the seconds to open and sync them
/// all, the changes absorbed per second, and the watches that ended (fell
/// out of the history and were opened again).
fn run(n: usize, changes: u64) -> Result<(f64, f64, u64), Box<dyn std::error::Error>> {
    let (engine, mut writer) = Engine::new(Config::default())?;
    writer.replace(Relist::new((0..n).map(|i| object(i, 0)), 1.into()))?;
    let manager = ObjectManager::new(
        EngineUpstream::new(engine.clone()),
        ManagerConfig::default(),
    )?;
    let setup = Instant::now();
    for i in 0..n {
        manager.add_reference("ns", &name(i), "pod")?;
    }
    // Every watch synced before the clock starts.
    for i in 0..n {
        manager.get("ns", &name(i))?;
    }
    let setup = setup.elapsed().as_secs_f64();
    // Versions made up front (object k carries `v` = k), so the writer
    // costs an engine write and no formatting.
    let versions: Vec<(usize, Object)> = (1..=4096)
        .map(|k| {
            let i = k * 7919 % n;
            (i, object(i, k as u64))
        })
        .collect();
    let mut last = vec![0u64; n];
    let t0 = Instant::now();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for rv in 2..2 + changes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x as usize) % versions.len();
        let (i, o) = &versions[k];
        writer.apply(Change::modified(o.clone(), rv.into()))?;
        last[*i] = k as u64 + 1;
    }
    // Absorbed: the manager serves every object's last version.
    let give_up = Instant::now() + Duration::from_secs(120);
    let mut pending: Vec<usize> = (0..n).filter(|&i| last[i] > 0).collect();
    while !pending.is_empty() {
        pending.retain(|&i| {
            let got = manager.get("ns", &name(i)).ok().flatten();
            got.and_then(|o| version(&o)) != Some(last[i])
        });
        if Instant::now() > give_up {
            return Err(format!("n={n}: {} behind: {:?}", pending.len(), manager.stats()).into());
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let rate = changes as f64 / t0.elapsed().as_secs_f64();
    let ends = manager.stats().watch_ends;
    drop(manager);
    engine.stop();
    Ok((setup, rate, ends))
}

fn name(i: usize) -> String {
    format!("s-{i:06}")
}

/// The `v` an object carries.
fn version(o: &Object) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(o.payload()).ok()?;
    v["data"]["v"].as_str()?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let changes: u64 = args.next().map_or(Ok(1_000_000), |a| a.parse())?;
    let sizes: Vec<usize> = match args.next() {
        Some(list) => list.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None => vec![1_000, 10_000, 100_000],
    };
    let mut runs = vec![Vec::new(); sizes.len()];
    for round in 0..rounds {
        for k in 0..sizes.len() {
            let i = (k + round) % sizes.len();
            runs[i].push(run(sizes[i], changes)?);
        }
    }
    let spread = |mut v: Vec<f64>, f: &dyn Fn(f64) -> String| {
        v.sort_by(f64::total_cmp);
        format!("{} [{}-{}]", f(v[v.len() / 2]), f(v[0]), f(v[v.len() - 1]))
    };
    println!(
        "| per-object watches | open and sync them all | changes absorbed/s | ÷ {} watches, per round | watches re-opened |",
        sizes[0]
    );
    println!("| --- | --- | --- | --- | --- |");
    for (i, n) in sizes.iter().enumerate() {
        let ratios: Vec<String> = runs[i]
            .iter()
            .zip(&runs[0])
            .map(|(a, b)| format!("{:.2}", a.1 / b.1))
            .collect();
        println!(
            "| {n} | {} | {} | {} | {} |",
            spread(runs[i].iter().map(|r| r.0).collect(), &|v| format!(
                "{v:.2} s"
            )),
            spread(runs[i].iter().map(|r| r.1).collect(), &|v| format!(
                "{:.2} M",
                v / 1e6
            )),
            ratios.join(", "),
            spread(runs[i].iter().map(|r| r.2 as f64).collect(), &|v| format!(
                "{v:.0}"
            )),
        );
    }
    Ok(())
}
