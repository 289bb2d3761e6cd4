//! The engine's own threads for its parallel host work: packing bases for upload, checking
//! them, signed digits and bucket lists, SRE's merged points, the CPU paths' MSMs. Every
//! rayon parallel iterator of the crate runs inside [`install`], on this pool, never on the
//! caller's (rayon's global pool, or another).
//!
//! Why: a call holds room in a device's memory budget while it packs its bases (and a batch
//! while it plans its next vector). Were that work on the caller's pool, rayon workers
//! blocked in other calls, waiting for that very room, would be the threads it needs: no
//! call would move until their `gpu_timeout`. This pool's threads run nothing but such
//! work, which waits for nothing, so it always finishes.
//!
//! A rayon worker of another pool that called the engine does not wait in `install` itself
//! (rayon would have it run its own pool's jobs meanwhile, among them calls that wait for
//! the room this work must free): a plain thread of the call's waits instead.

use std::panic::resume_unwind;
use std::sync::OnceLock;

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// The pool: `RAYON_NUM_THREADS` threads (default: one per core), made on first use; `None`
/// if its threads cannot start (the work then runs on the caller's pool, as before).
fn pool() -> Option<&'static rayon::ThreadPool> {
    let made = POOL.get_or_init(|| {
        let built = rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("gpu-msm host {i}"))
            .build();
        if let Err(e) = &built {
            tracing::warn!(target: "gpu_msm", error = %e, "cannot start the host pool");
        }
        built.ok()
    });
    made.as_ref()
}

/// `f`, its parallel iterators on the engine's host pool, the calling thread waiting for
/// it without running anyone else's work meanwhile (module doc). `f` must not wait for
/// anything but its own work: no GPU, no memory budget, no lock another call holds.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let Some(pool) = pool() else { return f() };
    if pool.current_thread_index().is_some() {
        return f();
    }
    if rayon::current_thread_index().is_none() {
        return pool.install(f);
    }
    // A worker of another pool: a thread of the call's own waits for the pool (or, where
    // none can start, this one, as before there was a pool).
    let work = std::sync::Mutex::new(Some(f));
    let take = || work.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|s| {
        let waiter = std::thread::Builder::new()
            .name("gpu-msm host wait".into())
            .spawn_scoped(s, || take().map(|f| pool.install(f)));
        let done = match waiter {
            Ok(w) => w.join().unwrap_or_else(|panic| resume_unwind(panic)),
            Err(_) => None,
        };
        done.unwrap_or_else(|| pool.install(take().expect("not taken by a thread")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    /// The work runs on the host pool's threads, from a plain thread and from a worker of
    /// another pool alike, and a panic in it reaches the caller.
    #[test]
    fn work_runs_on_the_host_pool_from_any_caller() {
        let on_host = || {
            install(|| {
                (0..64)
                    .into_par_iter()
                    .all(|_| pool().unwrap().current_thread_index().is_some())
            })
        };
        assert!(on_host());
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert!(other.install(on_host));
        let panicked = std::panic::catch_unwind(|| install(|| panic!("in the pool")));
        assert!(panicked.is_err());
        assert_eq!(install(|| 7), 7);
    }
}
