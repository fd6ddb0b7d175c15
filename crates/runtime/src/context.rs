//! The calling thread's context: which ranks' user callback it is running.
//!
//! Shared, low-level state: the execution layer marks and reads it (a synchronous call made
//! from inside a callback must not wait for that callback), the SDK layer marks it for the
//! callbacks it runs itself, and the clock reads it (a callback's clock starts where its
//! ranks' work ends). It depends on nothing else in the crate.

use std::cell::RefCell;

thread_local! {
    /// Ranks whose queue the current thread is executing a callback for: a synchronous call
    /// made from inside that callback must not wait for the callback itself.
    static INSIDE_CALLBACK: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` marked as being inside a callback of `ranks`.
pub(crate) fn as_callback_of<T>(ranks: &[u32], f: impl FnOnce() -> T) -> T {
    let before = INSIDE_CALLBACK.with(|c| {
        let mut c = c.borrow_mut();
        let n = c.len();
        c.extend_from_slice(ranks);
        n
    });
    // Unmark even when `f` panics (the panic is caught further up, on a thread that lives on).
    struct Unmark(usize);
    impl Drop for Unmark {
        fn drop(&mut self) {
            INSIDE_CALLBACK.with(|c| c.borrow_mut().truncate(self.0));
        }
    }
    let _unmark = Unmark(before);
    f()
}

/// True when this thread runs a callback of rank `id`.
pub(crate) fn inside_callback_of(id: u32) -> bool {
    INSIDE_CALLBACK.with(|c| c.borrow().contains(&id))
}

/// True when this thread runs a callback of any rank.
pub(crate) fn inside_any_callback() -> bool {
    INSIDE_CALLBACK.with(|c| !c.borrow().is_empty())
}

/// Runs `f` on the ranks whose callbacks this thread is running (none while the list is
/// being changed: `f` may run in a signal handler, see `timeline::program_now`).
pub(crate) fn with_callback_ranks<T>(f: impl FnOnce(&[u32]) -> T) -> T {
    let ranks = INSIDE_CALLBACK.try_with(|c| c.try_borrow().map(|r| r.clone()).ok());
    f(ranks.ok().flatten().as_deref().unwrap_or(&[]))
}
