//! A small, short-lived cache of access decisions, keyed by a digest of the credential (the
//! credential itself is never kept). Entries live `ttl`; at most `capacity` are kept: when
//! full, expired entries go first, then the oldest.

use crate::runtime::memory::locked::locked;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A SHA-256 digest of a credential.
pub(crate) type Digest = [u8; 32];

pub(crate) struct ReviewCache<V> {
    entries: Mutex<HashMap<Digest, (V, Instant)>>,
    ttl: Duration,
    capacity: usize,
}

impl<V: Copy> ReviewCache<V> {
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            entries: Mutex::default(),
            ttl,
            capacity,
        }
    }

    /// The decision made for `key` less than `ttl` ago.
    pub(crate) fn get(&self, key: &Digest) -> Option<V> {
        let mut entries = locked(&self.entries);
        match entries.get(key) {
            Some((value, at)) if at.elapsed() < self.ttl => Some(*value),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    pub(crate) fn insert(&self, key: Digest, value: V) {
        let mut entries = locked(&self.entries);
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, at)| at.elapsed() < self.ttl);
            if entries.len() >= self.capacity {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(k, _)| *k);
                if let Some(oldest) = oldest {
                    entries.remove(&oldest);
                }
            }
        }
        entries.insert(key, (value, Instant::now()));
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        locked(&self.entries).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Digest {
        [n; 32]
    }

    #[tokio::test(start_paused = true)]
    async fn entries_expire_after_the_ttl() {
        let cache = ReviewCache::new(Duration::from_secs(10), 4);
        cache.insert(key(1), true);
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(cache.get(&key(1)), Some(true));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(cache.get(&key(1)), None);
        assert_eq!(cache.len(), 0, "an expired entry is dropped when seen");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_expired_entries_then_the_oldest() {
        let cache = ReviewCache::new(Duration::from_secs(10), 3);
        cache.insert(key(1), 1);
        tokio::time::advance(Duration::from_secs(6)).await;
        cache.insert(key(2), 2);
        cache.insert(key(3), 3);
        tokio::time::advance(Duration::from_secs(1)).await;
        // Full, none expired: the oldest (1) goes.
        cache.insert(key(4), 4);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&key(1)), None);
        assert_eq!(cache.get(&key(2)), Some(2));
        tokio::time::advance(Duration::from_secs(10)).await;
        // Full, all expired: they all go.
        cache.insert(key(5), 5);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&key(5)), Some(5));
    }
}
