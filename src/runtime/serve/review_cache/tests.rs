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
