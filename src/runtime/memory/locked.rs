//! Locking the operator's in-memory maps (backoff, expectations, written statuses).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, going on with its data if a holder panicked: every update of these maps is
/// a single insert or remove, so a poisoned map is still a consistent one.
pub(crate) fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
