//! A lock-free latency histogram a server can export, and the plain snapshot
//! it is read into.
//!
//! # Bucket layout
//!
//! Samples are nanoseconds (`u64`). The buckets are log-linear, 122 in all:
//!
//! - bucket 0 holds `0..=63` ns (one linear bucket, upper bound 63 ns);
//! - buckets 1 to 120 split each power of two `[2^e, 2^(e+1))`, for `e` in
//!   `6..=35`, into 4 equal sub-buckets of width `2^(e-2)` ns, so the first is
//!   `64..=79` ns and the last `51_539_607_552..=68_719_476_735` ns;
//! - bucket 121 holds everything from `2^36` ns (about 68.7 s) up to
//!   `u64::MAX`; its upper bound is `+Inf`.
//!
//! A bucket's upper bound is the largest nanosecond value it holds, so it
//! reads as Prometheus' inclusive `le`. The bucket index is computed from
//! `leading_zeros` with a few integer operations: no loop, no floating
//! point.
//!
//! # Error bound
//!
//! Above the linear range, a bucket starting at `lo` ends at
//! `lo + 2^(e-2) - 1 < 1.25 * lo`, so a bucket's upper bound is less than 25%
//! above any sample in it. In the linear range the error is absolute: the
//! bound is 63 ns whatever the sample below 64 ns was. Samples from 2^36 ns
//! on only tell that they were that slow.
//!
//! # Consistency
//!
//! `AtomicHistogram::record` is wait-free: three `Relaxed` `fetch_add`s
//! (the bucket, the count, the sum). A snapshot reads the counters one by
//! one, also `Relaxed`, so a snapshot taken while samples are being recorded
//! has no cross-counter consistency: it may see a sample in its bucket but
//! not yet in the sum, or the other way round. Each counter is exact on its
//! own, and a snapshot taken after the recorders are done (and synchronized
//! with, e.g. joined) is exact. The sum wraps modulo 2^64 ns (about 584
//! years of accumulated latency).

use std::time::Duration;

// Statistics, never a synchronisation point: `std` atomics even under
// `herald_loom` (see `sync.rs`).
use std::sync::atomic::{AtomicU64, Ordering};

/// Samples below this share the linear bucket 0.
const LINEAR_LIMIT: u64 = 1 << FIRST_EXP;
/// The exponent of the first logarithmic range (`2^6 = 64` ns).
const FIRST_EXP: u32 = 6;
/// The exponent from which samples overflow (`2^36` ns, about 68.7 s).
const OVERFLOW_EXP: u32 = 36;
/// Each power of two is split into `2^SUB_BITS` sub-buckets.
const SUB_BITS: u32 = 2;
/// Sub-buckets per power of two.
const SUBS: u32 = 1 << SUB_BITS;
/// The index of the overflow (`+Inf`) bucket; the last one.
const OVERFLOW: u32 = 1 + (OVERFLOW_EXP - FIRST_EXP) * SUBS;
/// The number of buckets: linear, logarithmic, overflow.
const BUCKETS: usize = OVERFLOW as usize + 1;

/// The bucket a sample of `nanos` nanoseconds goes to.
fn bucket_index(nanos: u64) -> u32 {
    if nanos < LINEAR_LIMIT {
        return 0;
    }
    // floor(log2(nanos)), in FIRST_EXP..=63 since nanos >= 64 (this is
    // what `ilog2` computes, spelled out: no panic path for zero).
    let leading = nanos.leading_zeros();
    let exp = 63 - leading;
    if exp >= OVERFLOW_EXP {
        return OVERFLOW;
    }
    // The two bits below the leading one pick the sub-bucket. Both tests are
    // plain bit tests, so the result is in 0..SUBS without a narrowing cast.
    let high = (nanos >> (exp - 1)) & 1 != 0;
    let low = (nanos >> (exp - 2)) & 1 != 0;
    let sub = u32::from(high) * 2 + u32::from(low);
    1 + (exp - FIRST_EXP) * SUBS + sub
}

/// The largest sample (nanoseconds) bucket `index` holds; `None` for the
/// overflow bucket (`+Inf`) and anything past it.
fn bucket_upper_nanos(index: u32) -> Option<u64> {
    if index == 0 {
        return Some(LINEAR_LIMIT - 1);
    }
    if index >= OVERFLOW {
        return None;
    }
    let k = index - 1;
    let exp = FIRST_EXP + k / SUBS;
    let width = 1u64 << (exp - SUB_BITS);
    let lo = (1u64 << exp) + u64::from(k % SUBS) * width;
    Some(lo + width - 1)
}

/// A latency histogram written by any number of threads without locks.
///
/// See the [module documentation](self) for the bucket layout, the error
/// bound and what a concurrent reader sees.
#[derive(Debug)]
pub(crate) struct AtomicHistogram {
    /// Per-bucket sample counts, indexed by [`bucket_index`].
    buckets: [AtomicU64; BUCKETS],
    /// Samples recorded.
    count: AtomicU64,
    /// Sum of the samples, in nanoseconds, wrapping.
    sum: AtomicU64,
}

impl AtomicHistogram {
    /// An empty histogram: 124 counters inline (about 1 KiB), no allocation.
    pub(crate) fn new() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }

    /// Records one sample of `nanos` nanoseconds. Wait-free; never panics.
    pub(crate) fn record(&self, nanos: u64) {
        // `bucket_index` returns at most OVERFLOW == BUCKETS - 1 (u32 to
        // usize is lossless on every target std supports).
        self.buckets[bucket_index(nanos) as usize].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        // fetch_add wraps on overflow.
        self.sum.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Reads the counters, one by one, into a [`Histogram`] holding only the
    /// non-empty buckets (an idle histogram's snapshot does not allocate).
    pub(crate) fn snapshot(&self) -> Histogram {
        let mut buckets = Vec::new();
        let mut cumulative = 0u64;
        for (index, counter) in (0u32..).zip(&self.buckets) {
            let n = counter.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            cumulative = cumulative.saturating_add(n);
            buckets.push(Bucket {
                le: bucket_upper_nanos(index).map(Duration::from_nanos),
                cumulative,
            });
        }
        // Read after the buckets. Under concurrent recording the count may
        // still trail them; keeping it at least the buckets' total lets an
        // exporter use it as the `+Inf` bucket without breaking monotonicity.
        let count = self.count.load(Ordering::Relaxed).max(cumulative);
        let sum = Duration::from_nanos(self.sum.load(Ordering::Relaxed));
        Histogram {
            count,
            sum,
            buckets,
        }
    }
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// A snapshot of a latency histogram: the sample count, their sum, and the
/// non-empty buckets with cumulative counts, ready for a Prometheus-style
/// export (`_count`, `_sum`, `_bucket{le=...}`).
///
/// Buckets are log-linear: one bucket for 0 to 63 ns, then each power of two
/// split into 4, up to 2^36 ns (about 68.7 s), then an overflow bucket whose
/// upper bound is `+Inf`. A bucket's upper bound is less than 25% above any
/// sample in it (from 64 ns on). The snapshot's fields were read one by one
/// while samples may have been recorded, so they need not agree exactly with
/// each other; [`count`](Self::count) is never below the last bucket's
/// cumulative count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Histogram {
    /// Samples recorded (at least the buckets' total).
    count: u64,
    /// Sum of the samples (wrapping at 2^64 ns).
    sum: Duration,
    /// The non-empty buckets, in increasing order, cumulative.
    buckets: Vec<Bucket>,
}

impl Histogram {
    /// The number of samples recorded.
    ///
    /// Never less than the last bucket's cumulative count, so an exporter can
    /// emit it both as `_count` and as the `le="+Inf"` bucket.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the samples recorded (wrapping at 2^64 ns, about 584
    /// years).
    #[must_use]
    pub fn sum(&self) -> Duration {
        self.sum
    }

    /// The non-empty buckets, in increasing order of upper bound, each with
    /// the cumulative count of samples at or below its bound, as Prometheus
    /// `le` buckets expect. Empty buckets are left out (their cumulative
    /// count is the previous bucket's). The overflow bucket, if non-empty,
    /// comes last with `le: None` (`+Inf`); otherwise an exporter adds the
    /// `+Inf` bucket itself, with [`count`](Self::count).
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        self.buckets.iter().copied()
    }

    /// The upper bound of the bucket holding the `q`-quantile: the sample of
    /// rank `ceil(q * n)` (at least 1) among the `n` samples in the buckets.
    ///
    /// `q` is clamped to `[0, 1]` (NaN counts as 0), so `0` gives the lowest
    /// non-empty bucket and `1` the highest. The result is never below the
    /// true sample quantile, and (from 64 ns on) less than 25% above it.
    /// `None` when the histogram is empty; [`Duration::MAX`] when the
    /// quantile falls in the overflow bucket.
    #[must_use]
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let total = self.buckets.last()?.cumulative;
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        // q as a fixed-point fraction of 2^32. The product is an integer in
        // [0, 2^32] after rounding, exactly representable in both f64 and
        // u64, so the cast neither truncates nor loses the sign.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let q32 = (q * 4_294_967_296.0).round() as u64;
        // rank = ceil(total * q32 / 2^32) <= total, computed exactly.
        let rank = (u128::from(total) * u128::from(q32) + 0xFFFF_FFFF) >> 32;
        let rank = u64::try_from(rank).unwrap_or(total).max(1);
        let bucket = self.buckets.iter().find(|b| b.cumulative >= rank)?;
        Some(bucket.le.unwrap_or(Duration::MAX))
    }

    /// The upper bound of the highest non-empty bucket: a bound on the
    /// slowest sample, less than 25% above it from 64 ns on. `None` when the
    /// histogram is empty; [`Duration::MAX`] when a sample overflowed.
    #[must_use]
    pub fn max_bound(&self) -> Option<Duration> {
        let last = self.buckets.last()?;
        Some(last.le.unwrap_or(Duration::MAX))
    }
}

/// One non-empty bucket of a [`Histogram`], as Prometheus exports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bucket {
    /// The bucket's inclusive upper bound (`le`); `None` is `+Inf`, the
    /// overflow bucket for samples of 2^36 ns (about 68.7 s) and more.
    pub le: Option<Duration>,
    /// Samples at or below `le`: this bucket's and every lower bucket's.
    pub cumulative: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interesting values: 0, 1, 63, 64, every power of two and its
    /// neighbours up to 2^40, the top of the range, sorted and unique.
    fn sweep() -> Vec<u64> {
        let mut v = vec![0, 1, 63, 64, 65, u64::MAX - 1, u64::MAX, 1 << 63];
        for k in 0..=40 {
            let p = 1u64 << k;
            v.extend([p - 1, p, p + 1]);
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The reference mapping: the first bucket whose bound holds the value.
    fn naive_index(nanos: u64) -> u32 {
        (0..OVERFLOW)
            .find(|&i| bucket_upper_nanos(i).is_some_and(|hi| nanos <= hi))
            .unwrap_or(OVERFLOW)
    }

    #[test]
    fn layout_constants() {
        assert_eq!(OVERFLOW, 121);
        assert_eq!(BUCKETS, 122);
        assert_eq!(bucket_upper_nanos(0), Some(63));
        assert_eq!(bucket_upper_nanos(1), Some(79));
        assert_eq!(bucket_upper_nanos(OVERFLOW - 1), Some((1 << 36) - 1));
        assert_eq!(bucket_upper_nanos(OVERFLOW), None);
        assert_eq!(bucket_index((1 << 36) - 1), OVERFLOW - 1);
        assert_eq!(bucket_index(1 << 36), OVERFLOW);
    }

    #[test]
    fn index_is_monotone_and_bounds_hold_the_value() {
        let values = sweep();
        let mut prev = 0;
        for &v in &values {
            let i = bucket_index(v);
            assert!(i >= prev, "index not monotone at {v}: {i} < {prev}");
            assert!(i <= OVERFLOW, "index out of range at {v}: {i}");
            match bucket_upper_nanos(i) {
                Some(hi) => assert!(hi >= v, "bound {hi} below value {v}"),
                None => assert_eq!(i, OVERFLOW),
            }
            // And the value is above the previous bucket's bound.
            if i > 0 {
                let below = bucket_upper_nanos(i - 1).unwrap();
                assert!(v > below, "value {v} belongs below bucket {i}");
            }
            assert_eq!(i, naive_index(v), "index of {v}");
            prev = i;
        }
    }

    #[test]
    fn index_matches_reference_on_a_dense_range_and_pseudo_random_values() {
        // Scaled down under miri, which interprets every step.
        let (dense, random) = if cfg!(miri) {
            (1 << 8, 200)
        } else {
            (1 << 14, 20_000)
        };
        for v in 0..=dense {
            assert_eq!(bucket_index(v), naive_index(v), "index of {v}");
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..random {
            // xorshift64, then a random shift to cover every magnitude.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (x % 64);
            assert_eq!(bucket_index(v), naive_index(v), "index of {v}");
        }
    }

    #[test]
    fn every_logarithmic_bucket_is_within_25_percent() {
        for i in 1..OVERFLOW {
            let lo = bucket_upper_nanos(i - 1).unwrap() + 1;
            let hi = bucket_upper_nanos(i).unwrap();
            assert!(lo >= LINEAR_LIMIT);
            assert_eq!(bucket_index(lo), i, "lowest value of bucket {i}");
            assert_eq!(bucket_index(hi), i, "highest value of bucket {i}");
            assert_eq!(bucket_index(hi + 1), i + 1, "value past bucket {i}");
            // hi <= 1.25 * lo, in integers.
            assert!(
                u128::from(hi) * 4 <= u128::from(lo) * 5,
                "bucket {i}: {lo}..={hi}"
            );
        }
    }

    #[test]
    fn count_and_sum() {
        let h = AtomicHistogram::new();
        for v in [0, 5, 64, 1_000, 1_000_000] {
            h.record(v);
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(s.sum(), Duration::from_nanos(1_001_069));
    }

    #[test]
    fn extremes_record_without_panicking() {
        let h = AtomicHistogram::default();
        h.record(u64::MAX);
        h.record(1);
        let s = h.snapshot();
        assert_eq!(s.count(), 2);
        // The sum wrapped.
        assert_eq!(s.sum(), Duration::ZERO);
        let b: Vec<Bucket> = s.buckets().collect();
        assert_eq!(
            b,
            [
                Bucket {
                    le: Some(Duration::from_nanos(63)),
                    cumulative: 1
                },
                Bucket {
                    le: None,
                    cumulative: 2
                },
            ]
        );
        assert_eq!(s.max_bound(), Some(Duration::MAX));
        assert_eq!(s.quantile(1.0), Some(Duration::MAX));
        assert_eq!(s.quantile(0.0), Some(Duration::from_nanos(63)));
    }

    #[test]
    fn buckets_are_cumulative_and_non_empty() {
        let h = AtomicHistogram::new();
        // 3 in the linear bucket, 2 in 64..=79, 1 in 96..=111, 4 at 1 ms.
        for v in [
            0, 10, 63, 64, 79, 100, 1_000_000, 1_000_000, 1_000_000, 1_000_000,
        ] {
            h.record(v);
        }
        let s = h.snapshot();
        let b: Vec<(Option<u64>, u64)> = s
            .buckets()
            .map(|b| {
                (
                    b.le.map(|d| u64::try_from(d.as_nanos()).unwrap()),
                    b.cumulative,
                )
            })
            .collect();
        let ms = bucket_upper_nanos(bucket_index(1_000_000)).unwrap();
        assert_eq!(
            b,
            [(Some(63), 3), (Some(79), 5), (Some(111), 6), (Some(ms), 10)]
        );
        assert!((1_000_000..1_250_000).contains(&ms));
        assert_eq!(s.count(), 10);
        assert_eq!(s.max_bound(), Some(Duration::from_nanos(ms)));
        // Strictly increasing bounds, non-decreasing counts.
        assert!(b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let h = AtomicHistogram::new();
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 1000);
        assert_eq!(s.sum(), Duration::from_micros(500_500));

        let bound =
            |nanos: u64| Duration::from_nanos(bucket_upper_nanos(bucket_index(nanos)).unwrap());
        // The median is the 500th sample, 500 µs.
        let median = s.quantile(0.5).unwrap();
        assert_eq!(median, bound(500_000));
        assert!(median >= Duration::from_micros(500));
        assert!(median < Duration::from_micros(625));
        // p99: the 990th sample; p0 and p100: the extremes.
        assert_eq!(s.quantile(0.99), Some(bound(990_000)));
        assert_eq!(s.quantile(0.0), Some(bound(1_000)));
        assert_eq!(s.quantile(1.0), Some(bound(1_000_000)));
        assert_eq!(s.max_bound(), Some(bound(1_000_000)));
        // Out-of-range q is clamped; NaN counts as 0.
        assert_eq!(s.quantile(-3.0), s.quantile(0.0));
        assert_eq!(s.quantile(7.5), s.quantile(1.0));
        assert_eq!(s.quantile(f64::NAN), s.quantile(0.0));
        assert_eq!(s.quantile(f64::INFINITY), s.quantile(1.0));
        // Every quantile is monotone in q.
        let mut prev = Duration::ZERO;
        for i in 0..=100 {
            let d = s.quantile(f64::from(i) / 100.0).unwrap();
            assert!(d >= prev);
            prev = d;
        }
    }

    #[test]
    fn empty_histogram() {
        let s = AtomicHistogram::new().snapshot();
        assert_eq!(s, Histogram::default());
        assert_eq!(s.count(), 0);
        assert_eq!(s.sum(), Duration::ZERO);
        assert_eq!(s.buckets().count(), 0);
        assert_eq!(s.quantile(0.5), None);
        assert_eq!(s.max_bound(), None);
    }

    #[test]
    fn concurrent_recording_is_exact() {
        const THREADS: u64 = 4;
        const PER_THREAD: u64 = 10_000;
        let h = AtomicHistogram::new();
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let h = &h;
                scope.spawn(move || {
                    for i in 0..PER_THREAD {
                        // Spread over many buckets: up to ~2^35 ns.
                        h.record((t * PER_THREAD + i) << (i % 22));
                    }
                });
            }
        });
        let expected_sum: u64 = (0..THREADS)
            .flat_map(|t| (0..PER_THREAD).map(move |i| (t * PER_THREAD + i) << (i % 22)))
            .sum();
        let s = h.snapshot();
        assert_eq!(s.count(), THREADS * PER_THREAD);
        assert_eq!(s.sum(), Duration::from_nanos(expected_sum));
        assert_eq!(s.buckets().last().unwrap().cumulative, THREADS * PER_THREAD);
    }
}
