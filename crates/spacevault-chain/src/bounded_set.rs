//! A set that keeps its newest members only: what the caches of checks
//! made (signatures, slot outputs) remember, within a bound.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;

/// Members in the order they came; past the capacity the oldest leaves.
pub(crate) struct BoundedSet<K> {
    keys: HashSet<K>,
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Hash + Eq + Clone> BoundedSet<K> {
    pub(crate) fn new(capacity: usize) -> BoundedSet<K> {
        BoundedSet {
            keys: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    pub(crate) fn contains(&self, key: &K) -> bool {
        self.keys.contains(key)
    }

    /// Adds `key` (a member already keeps its place); past the capacity
    /// the oldest member leaves.
    pub(crate) fn insert(&mut self, key: K) {
        if self.keys.insert(key.clone()) {
            self.order.push_back(key);
            if self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.keys.remove(&old);
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_member_leaves_first_and_a_second_insert_keeps_its_place() {
        let mut set = BoundedSet::new(2);
        set.insert(1);
        set.insert(2);
        set.insert(1);
        set.insert(3);
        assert!(!set.contains(&1));
        assert!(set.contains(&2) && set.contains(&3));
        assert_eq!(set.len(), 2);
    }
}
