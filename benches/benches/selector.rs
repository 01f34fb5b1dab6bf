//! Group `selector`: Kubernetes label and field selectors, parsed and
//! evaluated.
//!
//! `selector/labels` and `selector/fields`, Throughput = 128 objects
//! judged per iteration (a mix: about a third of them match):
//! - `herald`: `LabelSelector::matches` / `FieldSelector::matches` for
//!   `app=web,tier in (a,b),!canary` and
//!   `spec.nodeName=node-7,metadata.namespace!=kube-system` against
//!   `herald::Object`s (labels and fields in sorted slices, looked up by
//!   binary search), as the dispatcher does per candidate watcher.
//! - `herald-over-hashmap`: the same herald selectors reading the naive
//!   peer's `HashMap` objects: the selector's cost apart from the object's.
//! - `naive`: what an idiomatic hand-rolled matcher does: objects as
//!   `HashMap<String, String>`, the selector as a
//!   `Vec<(String, Op, Vec<String>)>` requirement list, `Vec::contains` for
//!   set membership.
//!
//! `selector/parse`, Throughput = 1 selector: `LabelSelector::parse` and
//! `FieldSelector::parse` of the strings above (full Kubernetes grammar and
//! validation of keys and values, canonical sorting) vs a naive parser
//! into the peer's requirement list (split at top-level commas, find the
//! operator, no validation): the lower bound on parsing at all.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, Throughput};
use herald::Object;
use herald::selector::{FieldSelector, LabelSelector};

const LABELS: &str = "app=web,tier in (a,b),!canary";
const FIELDS: &str = "spec.nodeName=node-7,metadata.namespace!=kube-system";
const OBJECTS: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    NotEq,
    In,
    NotIn,
    Exists,
    NotExists,
}

type Requirement = (String, Op, Vec<String>);

/// Splits at the commas outside parentheses, then reads each term.
fn naive_parse(input: &str) -> Vec<Requirement> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&input[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(naive_term)
        .collect()
}

fn naive_term(t: &str) -> Requirement {
    let set = |rest: &str| {
        rest.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|v| v.trim().to_owned())
            .collect()
    };
    if let Some(key) = t.strip_prefix('!') {
        return (key.trim().to_owned(), Op::NotExists, Vec::new());
    }
    if let Some((k, v)) = t.split_once(" notin ") {
        return (k.trim().to_owned(), Op::NotIn, set(v));
    }
    if let Some((k, v)) = t.split_once(" in ") {
        return (k.trim().to_owned(), Op::In, set(v));
    }
    if let Some((k, v)) = t.split_once("!=") {
        return (k.trim().to_owned(), Op::NotEq, vec![v.trim().to_owned()]);
    }
    if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
        return (k.trim().to_owned(), Op::Eq, vec![v.trim().to_owned()]);
    }
    (t.to_owned(), Op::Exists, Vec::new())
}

/// Labels: a missing key fails `=`/`in`, passes `!=`/`notin`.
fn naive_labels_match(reqs: &[Requirement], labels: &HashMap<String, String>) -> bool {
    reqs.iter().all(|(key, op, values)| {
        let v = labels.get(key);
        let has = || v.is_some_and(|v| values.contains(v));
        match op {
            Op::Eq | Op::In => has(),
            Op::NotEq | Op::NotIn => !has(),
            Op::Exists => v.is_some(),
            Op::NotExists => v.is_none(),
        }
    })
}

/// Fields: a missing field reads as "".
fn naive_fields_match(reqs: &[Requirement], fields: &HashMap<String, String>) -> bool {
    reqs.iter().all(|(key, op, values)| {
        let v = fields.get(key).map_or("", String::as_str);
        let equal = values.first().is_some_and(|x| x == v);
        match op {
            Op::Eq => equal,
            Op::NotEq => !equal,
            _ => false,
        }
    })
}

struct Pod {
    object: Object,
    labels: HashMap<String, String>,
    fields: HashMap<String, String>,
}

fn pods() -> Vec<Pod> {
    (0..OBJECTS)
        .map(|i| {
            let ns = if i % 5 == 0 { "kube-system" } else { "default" };
            let name = format!("pod-{i}");
            let mut labels = vec![
                ("app", ["web", "api", "db"][i % 3].to_owned()),
                ("tier", ["a", "b", "c"][i % 4 % 3].to_owned()),
                ("pod-template-hash", format!("{:x}", i * 7919)),
                ("team", "payments".to_owned()),
                ("version", format!("v{}", i % 4)),
            ];
            if i % 7 == 0 {
                labels.push(("canary", "true".to_owned()));
            }
            let fields = [
                ("spec.nodeName", format!("node-{}", i % 2 * 7 + i % 3)),
                ("status.phase", "Running".to_owned()),
            ];
            let mut b = Object::builder(ns, &name);
            for (k, v) in &labels {
                b = b.label(k, v);
            }
            for (k, v) in &fields {
                b = b.field(k, v);
            }
            let own = |kv: &[(&str, String)]| {
                kv.iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect::<HashMap<_, _>>()
            };
            let mut field_map = own(&fields);
            field_map.insert("metadata.namespace".to_owned(), ns.to_owned());
            field_map.insert("metadata.name".to_owned(), name);
            Pod {
                object: b.build(),
                labels: own(&labels),
                fields: field_map,
            }
        })
        .collect()
}

fn matching(c: &mut Criterion) {
    let pods = pods();
    let labels = LabelSelector::parse(LABELS).expect("labels");
    let fields = FieldSelector::parse(FIELDS).expect("fields");
    let naive_labels = naive_parse(LABELS);
    let naive_fields = naive_parse(FIELDS);
    // The peers agree with the engine on every object.
    for p in &pods {
        assert_eq!(
            labels.matches(|k| p.object.label(k)),
            naive_labels_match(&naive_labels, &p.labels)
        );
        assert_eq!(
            fields.matches(|f| p.object.field(f)),
            naive_fields_match(&naive_fields, &p.fields)
        );
    }
    let hits = pods
        .iter()
        .filter(|p| labels.matches(|k| p.object.label(k)))
        .count();
    assert!(hits > 0 && hits < OBJECTS, "a mix of hits and misses");

    let mut group = c.benchmark_group("selector/labels");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    group.bench_function("herald", |b| {
        b.iter(|| {
            pods.iter()
                .filter(|p| labels.matches(|k| p.object.label(k)))
                .count()
        })
    });
    group.bench_function("herald-over-hashmap", |b| {
        b.iter(|| {
            pods.iter()
                .filter(|p| labels.matches(|k| p.labels.get(k).map(String::as_str)))
                .count()
        })
    });
    group.bench_function("naive", |b| {
        b.iter(|| {
            pods.iter()
                .filter(|p| naive_labels_match(&naive_labels, &p.labels))
                .count()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("selector/fields");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    group.bench_function("herald", |b| {
        b.iter(|| {
            pods.iter()
                .filter(|p| fields.matches(|f| p.object.field(f)))
                .count()
        })
    });
    group.bench_function("herald-over-hashmap", |b| {
        b.iter(|| {
            pods.iter()
                .filter(|p| fields.matches(|f| p.fields.get(f).map(String::as_str)))
                .count()
        })
    });
    group.bench_function("naive", |b| {
        b.iter(|| {
            pods.iter()
                .filter(|p| naive_fields_match(&naive_fields, &p.fields))
                .count()
        })
    });
    group.finish();
}

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("selector/parse");
    group.throughput(Throughput::Elements(1));
    group.bench_function("herald-labels", |b| {
        b.iter(|| LabelSelector::parse(black_box(LABELS)).expect("labels"))
    });
    group.bench_function("naive-labels", |b| {
        b.iter(|| naive_parse(black_box(LABELS)))
    });
    group.bench_function("herald-fields", |b| {
        b.iter(|| FieldSelector::parse(black_box(FIELDS)).expect("fields"))
    });
    group.bench_function("naive-fields", |b| {
        b.iter(|| naive_parse(black_box(FIELDS)))
    });
    group.finish();
}

// By hand rather than `criterion_group!`, whose `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    matching(&mut c);
    parse(&mut c);
    c.final_summary();
}
