//! Generation-checked handles: what C holds instead of pointers.
//!
//! A handle is a `u64`: the kind of object in the top 8 bits, the slot's
//! generation in the next 24, the slot's index in the low 32. Looking one
//! up checks all three, so 0 (no kind), a number C made up, a handle of
//! another kind, and one already freed (its slot's generation moved on)
//! are each an error, never a dangling pointer. A slot is reused after a
//! free with the next generation; a stale handle would alias a new object
//! only after 2^24 reuses of the same slot, which is documented.

use std::sync::{Arc, Mutex, RwLock};

/// What a handle names; part of the handle, so kinds never mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Engine = 1,
    Writer = 2,
    Watch = 3,
    WatchSet = 4,
    List = 5,
}

const GENERATION_BITS: u32 = 24;
const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;

#[derive(Debug)]
struct Slot<T> {
    /// Bumped at every free: earlier handles to the slot go stale.
    generation: u32,
    value: Option<Arc<T>>,
}

/// The live objects of one kind.
#[derive(Debug)]
pub(crate) struct Registry<T> {
    kind: Kind,
    slots: RwLock<Vec<Slot<T>>>,
    free: Mutex<Vec<u32>>,
}

/// Why a handle names nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stale {
    /// 0: no handle at all.
    Null,
    /// A handle of another kind, one never issued, or one freed.
    Unknown,
}

impl<T> Registry<T> {
    pub(crate) const fn new(kind: Kind) -> Registry<T> {
        Registry {
            kind,
            slots: RwLock::new(Vec::new()),
            free: Mutex::new(Vec::new()),
        }
    }

    fn handle(&self, index: u32, generation: u32) -> u64 {
        (u64::from(self.kind as u8) << 56) | (u64::from(generation) << 32) | u64::from(index)
    }

    /// (index, generation) of a handle of this kind.
    fn split(&self, handle: u64) -> Result<(usize, u32), Stale> {
        if handle == 0 {
            return Err(Stale::Null);
        }
        if (handle >> 56) as u8 != self.kind as u8 {
            return Err(Stale::Unknown);
        }
        let generation = ((handle >> 32) as u32) & GENERATION_MASK;
        Ok((handle as u32 as usize, generation))
    }

    /// Registers `value`; its handle is never 0.
    pub(crate) fn insert(&self, value: T) -> u64 {
        let value = Arc::new(value);
        let reuse = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        match reuse {
            Some(index) => {
                let slot = &mut slots[index as usize];
                slot.value = Some(value);
                self.handle(index, slot.generation)
            }
            None => {
                let index = u32::try_from(slots.len()).expect("fewer than 2^32 live handles");
                slots.push(Slot {
                    generation: 0,
                    value: Some(value),
                });
                self.handle(index, 0)
            }
        }
    }

    /// The object `handle` names.
    pub(crate) fn get(&self, handle: u64) -> Result<Arc<T>, Stale> {
        let (index, generation) = self.split(handle)?;
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        match slots.get(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation => Ok(v.clone()),
            _ => Err(Stale::Unknown),
        }
    }

    /// Unregisters the object `handle` names and returns it (it lives on
    /// while a call that looked it up before still holds it).
    pub(crate) fn remove(&self, handle: u64) -> Result<Arc<T>, Stale> {
        let (index, generation) = self.split(handle)?;
        let value = {
            let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
            let slot = slots
                .get_mut(index)
                .filter(|s| s.generation == generation && s.value.is_some())
                .ok_or(Stale::Unknown)?;
            slot.generation = (slot.generation + 1) & GENERATION_MASK;
            slot.value.take().ok_or(Stale::Unknown)?
        };
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(index as u32);
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_handle_and_its_reused_slot_are_told_apart() {
        let r: Registry<&str> = Registry::new(Kind::Watch);
        let a = r.insert("a");
        assert_eq!(*r.get(a).unwrap(), "a");
        assert_eq!(*r.remove(a).unwrap(), "a");
        assert_eq!(r.get(a).unwrap_err(), Stale::Unknown);
        assert_eq!(r.remove(a).unwrap_err(), Stale::Unknown);
        let b = r.insert("b");
        assert_ne!(a, b, "the slot is reused under a new generation");
        assert_eq!(a as u32, b as u32, "the same slot");
        assert_eq!(r.get(a).unwrap_err(), Stale::Unknown);
        assert_eq!(*r.get(b).unwrap(), "b");
    }

    #[test]
    fn null_foreign_and_other_kinds_are_refused() {
        let watches: Registry<u8> = Registry::new(Kind::Watch);
        let lists: Registry<u8> = Registry::new(Kind::List);
        let w = watches.insert(1);
        assert_eq!(watches.get(0).unwrap_err(), Stale::Null);
        assert_eq!(lists.get(w).unwrap_err(), Stale::Unknown);
        assert_eq!(watches.get(w + 1).unwrap_err(), Stale::Unknown);
        assert_eq!(watches.get(u64::MAX).unwrap_err(), Stale::Unknown);
        assert_eq!(watches.get(0xdead_beef).unwrap_err(), Stale::Unknown);
    }
}
