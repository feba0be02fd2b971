//! [`IdSlots`]: where each live object ID of a mutable scene lives, the lookup every removal,
//! patch and insertion makes. IDs are the application's, usually dense (`0..n`, node indices,
//! table rows): while every ID stays below a bound proportional to the capacity the map is a
//! vector indexed by ID (one memory access per lookup, no hashing); the first ID past the bound
//! turns it into an Fx hash map for good.

use rustc_hash::FxHashMap;

/// The vector's "no slot" entry (a slot is below the capacity, so never `u32::MAX`).
const ABSENT: u32 = u32::MAX;

/// Object ID → slot (see the module doc).
#[derive(Clone, Debug)]
pub(crate) enum IdSlots {
    /// `slots[id]`, [`ABSENT`] where no record has the ID; `len` live IDs; IDs below `limit`.
    Dense {
        slots: Vec<u32>,
        len: usize,
        limit: u32,
    },
    /// Any IDs.
    Sparse(FxHashMap<u32, u32>),
}

impl IdSlots {
    /// An empty map for a scene of `capacity` slots: dense for IDs below
    /// `max(2 × capacity, 4096)` (4 bytes per possible ID).
    pub(crate) fn new(capacity: u32) -> Self {
        Self::Dense {
            slots: Vec::new(),
            len: 0,
            limit: capacity.saturating_mul(2).max(4096),
        }
    }

    /// The slot of `id`.
    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<u32> {
        match self {
            Self::Dense { slots, .. } => slots.get(id as usize).copied().filter(|&s| s != ABSENT),
            Self::Sparse(map) => map.get(&id).copied(),
        }
    }

    /// Sets the slot of `id`; the previous one, if any.
    pub(crate) fn insert(&mut self, id: u32, slot: u32) -> Option<u32> {
        if let Self::Dense { slots, len, limit } = self {
            if id < *limit {
                let i = id as usize;
                if i >= slots.len() {
                    // Grow geometrically, never past the limit.
                    let want = (i + 1).max(slots.len() * 2).min(*limit as usize);
                    slots.resize(want, ABSENT);
                }
                let old = std::mem::replace(&mut slots[i], slot);
                if old == ABSENT {
                    *len += 1;
                    return None;
                }
                return Some(old);
            }
            self.make_sparse();
        }
        let Self::Sparse(map) = self else {
            unreachable!("made sparse above")
        };
        map.insert(id, slot)
    }

    /// Forgets `id`; its slot, if it was live.
    pub(crate) fn remove(&mut self, id: u32) -> Option<u32> {
        match self {
            Self::Dense { slots, len, .. } => {
                let entry = slots.get_mut(id as usize)?;
                let old = std::mem::replace(entry, ABSENT);
                (old != ABSENT).then(|| {
                    *len -= 1;
                    old
                })
            }
            Self::Sparse(map) => map.remove(&id),
        }
    }

    /// Live IDs.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Dense { len, .. } => *len,
            Self::Sparse(map) => map.len(),
        }
    }

    fn make_sparse(&mut self) {
        if let Self::Dense { slots, len, .. } = self {
            let mut map = FxHashMap::with_capacity_and_hasher(*len, Default::default());
            for (id, &s) in slots.iter().enumerate() {
                if s != ABSENT {
                    map.insert(id as u32, s);
                }
            }
            *self = Self::Sparse(map);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Random inserts, overwrites and removals against a std map, across the switch to sparse.
    #[test]
    fn follows_a_hash_map_across_the_switch() {
        let mut ids = IdSlots::new(100);
        let mut model: HashMap<u32, u32> = HashMap::new();
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..20_000u32 {
            let r = next();
            // IDs mostly dense; past step 15,000 some beyond the dense bound.
            let id = if step > 15_000 && r % 7 == 0 {
                (r >> 8) as u32 % u32::MAX
            } else {
                (r >> 8) as u32 % 5000
            };
            if r % 3 == 0 {
                assert_eq!(ids.remove(id), model.remove(&id), "step {step}");
            } else {
                let slot = (r >> 40) as u32 % 1000;
                assert_eq!(ids.insert(id, slot), model.insert(id, slot), "step {step}");
            }
            assert_eq!(ids.len(), model.len());
            let probe = (next() >> 8) as u32 % 6000;
            assert_eq!(ids.get(probe), model.get(&probe).copied());
        }
        assert!(matches!(ids, IdSlots::Sparse(_)));
        for (&id, &slot) in &model {
            assert_eq!(ids.get(id), Some(slot));
        }
    }
}
