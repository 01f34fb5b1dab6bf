//! What a watcher may see: its key scope and selectors (`selector/`) as
//! one [`Filter`], and the Added/Modified/Deleted decision on an object's
//! current and previous state.

use crate::event::{ChangeKind, EventKind};
use crate::object::Object;
use crate::selector::{FieldOperator, FieldSelector, KeyScope, LabelSelector, ShardSelector};

/// The scope and selector setters of a request ([`WatchRequest`],
/// [`ListRequest`]), written once so the two cannot drift apart. The
/// type must have `scope`, `labels`, `fields` and `shard` fields.
///
/// [`WatchRequest`]: crate::WatchRequest
/// [`ListRequest`]: crate::read::ListRequest
macro_rules! selection_setters {
    ($routed:literal) => {
        /// Which keys (default: all).
        pub fn scope(mut self, scope: $crate::selector::KeyScope) -> Self {
            self.scope = scope;
            self
        }

        /// The label selector (default: everything).
        pub fn labels(mut self, selector: $crate::selector::LabelSelector) -> Self {
            self.labels = selector;
            self
        }

        /// The field selector (default: everything).
        #[doc = $routed]
        pub fn fields(mut self, selector: $crate::selector::FieldSelector) -> Self {
            self.fields = selector;
            self
        }

        /// The shard selector (KEP-5866; default: everything): only
        /// objects whose hashed uid or namespace falls in one of its
        /// ranges (see [`ShardSelector`]($crate::selector::ShardSelector)).
        pub fn shard(mut self, selector: $crate::selector::ShardSelector) -> Self {
            self.shard = selector;
            self
        }
    };
}
pub(crate) use selection_setters;

/// The verdict of a filter on one change; encoded in the two low bits of a
/// queue handle (see `watcher/shared.rs`), so 0 is reserved for "nothing".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Verdict {
    Added = 1,
    Modified = 2,
    Deleted = 3,
}

impl Verdict {
    #[inline]
    pub(crate) fn from_bits(bits: u64) -> Verdict {
        match bits & 3 {
            1 => Verdict::Added,
            2 => Verdict::Modified,
            _ => Verdict::Deleted,
        }
    }

    pub(crate) fn event_kind(self) -> EventKind {
        match self {
            Verdict::Added => EventKind::Added,
            Verdict::Modified => EventKind::Modified,
            Verdict::Deleted => EventKind::Deleted,
        }
    }
}

/// [`KeyScope`]'s kind, kept apart from its key so that it packs with
/// the filter's other byte (a `KeyScope` is 24 bytes: its tag takes a
/// word of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum ScopeKind {
    #[default]
    All,
    Exact,
    Prefix,
}

/// A watcher's whole filter. Every watcher holds one (72 bytes: the
/// assertion below keeps it so).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// The scope's key (empty for [`KeyScope::All`]); its kind is
    /// `scope_kind`.
    scope_key: Box<str>,
    labels: LabelSelector,
    fields: FieldSelector,
    shard: ShardSelector,
    scope_kind: ScopeKind,
    /// Admits every object (no scope, no selectors): the verdict then
    /// needs no evaluation at all, the common case of "all" watchers.
    everything: bool,
    /// Its one condition is one `field=value` term (a kubelet's node
    /// watcher): a change routed to it by that field's value is judged
    /// on the values the route read ([`Filter::verdict_routed`]).
    one_exact: bool,
}

#[cfg(all(not(herald_loom), target_pointer_width = "64"))]
const _: () = assert!(std::mem::size_of::<Filter>() == 72);

/// What a route read of a change to find its watchers: the routed
/// `field`, its value in the object (`cur`) and in the previous one
/// (`old`, `None` without one). A missing field reads as `""`, as
/// selectors read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed<'a> {
    pub(crate) field: &'a str,
    pub(crate) cur: &'a str,
    pub(crate) old: Option<&'a str>,
}

impl Filter {
    pub(crate) fn new(
        scope: KeyScope,
        labels: LabelSelector,
        fields: FieldSelector,
        shard: ShardSelector,
    ) -> Filter {
        let everything = scope == KeyScope::All
            && labels.is_everything()
            && fields.is_everything()
            && shard.is_everything();
        let one_exact = scope == KeyScope::All
            && labels.is_everything()
            && shard.is_everything()
            && matches!(fields.terms(), [t] if t.operator() == FieldOperator::Equals);
        let (scope_kind, scope_key) = match scope {
            KeyScope::All => (ScopeKind::All, Box::default()),
            KeyScope::Exact(k) => (ScopeKind::Exact, k),
            KeyScope::Prefix(p) => (ScopeKind::Prefix, p),
        };
        Filter {
            scope_key,
            scope_kind,
            labels,
            fields,
            shard,
            everything,
            one_exact,
        }
    }

    /// Admits every object: a replay from the ring delivers every change.
    pub(crate) fn is_everything(&self) -> bool {
        self.everything
    }

    /// The field selector (a route's value is read from it: see
    /// `index.rs`).
    pub(crate) fn fields(&self) -> &FieldSelector {
        &self.fields
    }

    /// The key scope, packed again (a watch's initial events narrow the
    /// store's walk with it).
    pub(crate) fn key_scope(&self) -> KeyScope {
        match self.scope_kind {
            ScopeKind::All => KeyScope::All,
            ScopeKind::Exact => KeyScope::Exact(self.scope_key.clone()),
            ScopeKind::Prefix => KeyScope::Prefix(self.scope_key.clone()),
        }
    }

    /// The shard selector (a shard route's range is read from it).
    pub(crate) fn shard(&self) -> &ShardSelector {
        &self.shard
    }

    /// Whether the watcher may see `obj` at all.
    #[inline]
    pub(crate) fn admits(&self, obj: &Object) -> bool {
        self.everything || self.admits_slow(obj)
    }

    #[inline(never)]
    fn admits_slow(&self, obj: &Object) -> bool {
        self.scope_contains(obj.key())
            && self.labels.matches(|k| obj.label(k))
            && self.fields.matches(|f| obj.field(f))
            && self.shard.admits(obj)
    }

    /// [`KeyScope::contains`], on the unpacked scope.
    #[inline]
    fn scope_contains(&self, key: &str) -> bool {
        let k = &*self.scope_key;
        match self.scope_kind {
            ScopeKind::All => true,
            ScopeKind::Exact => k == key,
            ScopeKind::Prefix => key
                .strip_prefix(k)
                .is_some_and(|rest| rest.starts_with('/')),
        }
    }

    /// The Added/Modified/Deleted decision of the reference
    /// (`cacheWatcher.convertToWatchEvent`, seeds/004 l.1373):
    /// cur passes (and the change is not a deletion) and prev passes ->
    /// Modified; cur passes only -> Added; prev passes only -> Deleted
    /// (carrying prev); neither -> nothing.
    #[inline]
    pub(crate) fn verdict(
        &self,
        kind: ChangeKind,
        cur: &Object,
        prev: Option<&Object>,
    ) -> Option<Verdict> {
        let cur_passes = kind != ChangeKind::Deleted && self.admits(cur);
        let prev_passes = prev.is_some_and(|p| self.admits(p));
        Verdict::of(cur_passes, prev_passes)
    }

    /// [`Filter::verdict`] for a watcher a route found by its field's
    /// value, on the values that route read (`routed`): for a filter of
    /// one `field=value` term, neither object is read again. The route's
    /// field is this filter's term's: a watcher is filed under the field
    /// its selector requires exactly.
    #[inline]
    pub(crate) fn verdict_routed(
        &self,
        kind: ChangeKind,
        cur: &Object,
        prev: Option<&Object>,
        routed: Option<Routed<'_>>,
    ) -> Option<Verdict> {
        match (routed, self.fields.terms()) {
            (Some(r), [t]) if self.one_exact => {
                debug_assert_eq!(t.field(), r.field, "routed by another field");
                let cur_passes = kind != ChangeKind::Deleted && r.cur == t.value();
                let prev_passes = r.old.is_some_and(|o| o == t.value());
                Verdict::of(cur_passes, prev_passes)
            }
            _ => self.verdict(kind, cur, prev),
        }
    }
}

impl Verdict {
    /// Whether the object passes now and passed before, as a verdict.
    #[inline]
    fn of(cur_passes: bool, prev_passes: bool) -> Option<Verdict> {
        match (cur_passes, prev_passes) {
            (true, false) => Some(Verdict::Added),
            (true, true) => Some(Verdict::Modified),
            (false, true) => Some(Verdict::Deleted),
            (false, false) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ns: &str, name: &str, app: &str, node: &str) -> Object {
        Object::builder(ns, name)
            .label("app", app)
            .field("spec.nodeName", node)
            .build()
    }

    fn web_filter() -> Filter {
        Filter::new(
            KeyScope::All,
            "app=web".parse().unwrap(),
            FieldSelector::default(),
            ShardSelector::default(),
        )
    }

    #[test]
    fn a_routed_verdict_is_the_full_one() {
        let filter = |fields: &str, labels: &str| {
            Filter::new(
                KeyScope::All,
                labels.parse().unwrap(),
                fields.parse().unwrap(),
                ShardSelector::default(),
            )
        };
        let filters = [
            filter("spec.nodeName=n1", ""),
            filter("spec.nodeName=", ""),
            filter("spec.nodeName=n1,status.phase=Running", ""),
            filter("spec.nodeName=n1", "app=web"),
            filter("spec.nodeName!=n1", ""),
        ];
        assert!(filters[0].one_exact && filters[1].one_exact);
        assert!(!filters[2].one_exact && !filters[3].one_exact && !filters[4].one_exact);
        let on = |node: Option<&str>, phase: &str| {
            let b = Object::builder("ns", "a")
                .label("app", "web")
                .field("status.phase", phase);
            match node {
                Some(n) => b.field("spec.nodeName", n),
                None => b,
            }
            .build()
        };
        let mut objects = Vec::new();
        for node in [Some("n1"), Some("n2"), Some(""), None] {
            for phase in ["Running", "Pending"] {
                objects.push(on(node, phase));
            }
        }
        fn node(o: &Object) -> &str {
            o.field("spec.nodeName").unwrap_or("")
        }
        for f in &filters {
            for kind in [ChangeKind::Added, ChangeKind::Modified, ChangeKind::Deleted] {
                for cur in &objects {
                    for prev in objects.iter().map(Some).chain([None]) {
                        let routed = Routed {
                            field: "spec.nodeName",
                            cur: node(cur),
                            old: prev.map(node),
                        };
                        assert_eq!(
                            f.verdict_routed(kind, cur, prev, Some(routed)),
                            f.verdict(kind, cur, prev),
                            "{f:?} {kind:?} {cur:?} {prev:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_four_transitions() {
        let f = web_filter();
        let web = pod("ns", "a", "web", "n1");
        let db = pod("ns", "a", "db", "n1");
        // cur passes, no prev: Added.
        assert_eq!(
            f.verdict(ChangeKind::Added, &web, None),
            Some(Verdict::Added)
        );
        // cur passes, prev does not: Added (the object entered the view).
        assert_eq!(
            f.verdict(ChangeKind::Modified, &web, Some(&db)),
            Some(Verdict::Added)
        );
        // both pass: Modified.
        assert_eq!(
            f.verdict(ChangeKind::Modified, &web, Some(&web)),
            Some(Verdict::Modified)
        );
        // prev passes, cur does not: Deleted (the object left the view).
        assert_eq!(
            f.verdict(ChangeKind::Modified, &db, Some(&web)),
            Some(Verdict::Deleted)
        );
        // a deletion never passes on cur.
        assert_eq!(
            f.verdict(ChangeKind::Deleted, &web, Some(&web)),
            Some(Verdict::Deleted)
        );
        // neither: nothing.
        assert_eq!(f.verdict(ChangeKind::Modified, &db, Some(&db)), None);
        assert_eq!(f.verdict(ChangeKind::Deleted, &db, Some(&db)), None);
    }

    #[test]
    fn scope_and_fields_combine() {
        let f = Filter::new(
            KeyScope::prefix("ns/"),
            LabelSelector::default(),
            "spec.nodeName=n1".parse().unwrap(),
            ShardSelector::default(),
        );
        assert!(f.admits(&pod("ns", "a", "web", "n1")));
        assert!(!f.admits(&pod("ns", "a", "web", "n2")));
        assert!(!f.admits(&pod("other", "a", "web", "n1")));
        assert!(!KeyScope::exact("ns/a").contains("ns/ab"));
        assert_eq!(KeyScope::prefix("/"), KeyScope::All);
    }

    #[test]
    fn a_filter_without_conditions_admits_everything() {
        let all = Filter::new(
            KeyScope::All,
            LabelSelector::default(),
            FieldSelector::default(),
            ShardSelector::default(),
        );
        assert!(all.everything);
        let o = pod("ns", "a", "web", "n1");
        assert!(all.admits(&o));
        assert_eq!(
            all.verdict(ChangeKind::Added, &o, None),
            Some(Verdict::Added)
        );
        assert_eq!(
            all.verdict(ChangeKind::Modified, &o, Some(&o)),
            Some(Verdict::Modified)
        );
        assert_eq!(
            all.verdict(ChangeKind::Deleted, &o, Some(&o)),
            Some(Verdict::Deleted)
        );
        // Any condition at all turns the shortcut off.
        assert!(!web_filter().everything);
        let scoped = Filter::new(
            KeyScope::exact("ns/b"),
            LabelSelector::default(),
            FieldSelector::default(),
            ShardSelector::default(),
        );
        assert!(!scoped.everything && !scoped.admits(&o));
        let none: ShardSelector = "shardRange(object.metadata.uid, '0x0', '0x1')"
            .parse()
            .unwrap();
        let sharded = Filter::new(
            KeyScope::All,
            LabelSelector::default(),
            FieldSelector::default(),
            none,
        );
        assert!(!sharded.everything && !sharded.admits(&o));
    }

    /// The filter's unpacked scope decides as `KeyScope::contains` does.
    #[test]
    fn the_unpacked_scope_is_key_scope() {
        let scopes = [
            KeyScope::All,
            KeyScope::exact("ns/a"),
            KeyScope::prefix("ns"),
            KeyScope::prefix("ns/a"),
        ];
        let keys = ["ns/a", "ns/ab", "ns/a/b", "ns", "nsx/a", "other", ""];
        for scope in scopes {
            let f = Filter::new(
                scope.clone(),
                LabelSelector::default(),
                FieldSelector::default(),
                ShardSelector::default(),
            );
            for key in keys {
                assert_eq!(
                    f.scope_contains(key),
                    scope.contains(key),
                    "{scope:?} {key}"
                );
            }
        }
    }

    #[test]
    fn verdict_bits_round_trip() {
        for v in [Verdict::Added, Verdict::Modified, Verdict::Deleted] {
            assert_eq!(Verdict::from_bits(v as u64), v);
        }
    }
}
