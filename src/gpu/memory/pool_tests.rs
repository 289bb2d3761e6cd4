//! The pool's tests: waits in turn and their deadlines, a thread's and a task's, wakers
//! dropped and panicking, classes within the device's caps.

use super::*;
use crate::error::MsmError;
use crate::gpu::memory::workspace::size_class;
use std::sync::mpsc;
use std::task::Waker;

/// What a call of `bytes` (a power of two, at least the smallest class) reserves.
fn needs(bytes: u64) -> Vec<(Slot, u64)> {
    vec![(Slot::Buckets, bytes)]
}

/// Waits until `waiters` calls are queued (failing, not hanging, if they never are).
fn queued(pool: &Pool, waiters: usize) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while pool.lock().queue.len() < waiters {
        assert!(Instant::now() < give_up, "{waiters} waiters never queued");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A large call waiting for room is served before a small one that came after it, even
/// though the small one fits at once; a call that would have to wait is not admitted
/// ahead of the queue; a wait past its deadline is `Timeout` and leaves nothing behind.
#[test]
fn waiters_are_served_in_order_and_each_wait_has_a_deadline() {
    let pool = Pool::new(1024, SizeCaps::NONE);
    let long = Duration::from_secs(60);
    let first = pool.take(&needs(512), true, long).unwrap().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for (name, bytes, ahead) in [("large", 1024, 0), ("small", 256, 1)] {
            let (pool, tx) = (&pool, tx.clone());
            queued(pool, ahead);
            s.spawn(move || {
                let lease = pool.take(&needs(bytes), true, long).unwrap().unwrap();
                tx.send(name).unwrap();
                drop(lease);
            });
        }
        queued(&pool, 2);
        assert!(pool.take(&needs(256), false, long).unwrap().is_none());
        let late = pool.take(&needs(256), true, Duration::from_millis(50));
        assert!(
            matches!(late, Err(MsmError::Timeout(_))),
            "{:?}",
            late.err()
        );
        assert_eq!(pool.lock().queue.len(), 2);
        assert!(rx.try_recv().is_err(), "admitted ahead of its turn");
        drop(first);
        assert_eq!(rx.recv().unwrap(), "large");
        assert_eq!(rx.recv().unwrap(), "small");
    });
    let u = pool.usage();
    assert_eq!((u.in_flight, u.waits), (0, 3), "{u:?}");
    assert!(u.peak <= 1024);
    // What cannot fit with nothing in flight is refused at once, not waited for.
    let too_big = pool.take(&needs(2048), true, long);
    assert!(matches!(too_big, Err(MsmError::InputTooLarge(_))));
    assert!(pool.lock().queue.is_empty());
}

/// One poll of `f` with a waker that does nothing.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

/// One poll of `f` with the waker of `task`.
fn poll_with<F: Future + Unpin, W: std::task::Wake + Send + Sync + 'static>(
    f: &mut F,
    task: &Arc<W>,
) -> Poll<F::Output> {
    let waker = Waker::from(Arc::clone(task));
    Pin::new(f).poll(&mut Context::from_waker(&waker))
}

/// Waits for room that block no thread keep the same order as blocked threads: a task
/// queued before a thread is admitted first, one dropped while it waits leaves the
/// queue (the next in line goes on), and one past its deadline is `Timeout` (woken by
/// the deadline's timer, its reservation nothing).
#[test]
fn waits_without_a_thread_keep_the_order_and_their_deadlines() {
    let pool = Pool::new(1024, SizeCaps::NONE);
    let long = Duration::from_secs(60);
    let first = pool.take(&needs(512), true, long).unwrap().unwrap();
    let large = needs(1024);
    let mut task = pool.take_async(&large, long);
    assert!(poll_once(&mut task).is_pending());
    assert_eq!(pool.lock().queue.len(), 1);
    // A thread that would wait is not admitted ahead of the task, even where it fits.
    assert!(pool.take(&needs(256), false, long).unwrap().is_none());
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let (pool, tx) = (&pool, tx.clone());
        s.spawn(move || {
            let lease = pool.take(&needs(256), true, long).unwrap().unwrap();
            tx.send("thread").unwrap();
            drop(lease);
        });
        queued(pool, 2);
        drop(first);
        let lease = match poll_once(&mut task) {
            Poll::Ready(l) => l.unwrap(),
            Poll::Pending => panic!("the task is first in line and there is room"),
        };
        assert!(rx.try_recv().is_err(), "the thread went ahead of the task");
        drop(lease);
        assert_eq!(rx.recv().unwrap(), "thread");
    });
    // Dropped while it waits: it leaves the queue and the one behind it goes on.
    let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
    let mut dropped = pool.take_async(&large, long);
    assert!(poll_once(&mut dropped).is_pending());
    drop(dropped);
    assert!(pool.lock().queue.is_empty() && pool.lock().wakers.is_empty());
    // Past its deadline, woken by the timer: `Timeout`, and nothing held.
    let short = pool.take_async(&large, Duration::from_millis(50));
    #[allow(clippy::disallowed_methods)] // a test's own thread
    let late = pollster::block_on(short);
    assert!(
        matches!(late, Err(MsmError::Timeout(_))),
        "{:?}",
        late.err()
    );
    assert!(pool.lock().queue.is_empty());
    drop(holder);
    let u = pool.usage();
    assert_eq!(u.in_flight, 0, "{u:?}");
}

/// A future at the head of the queue that its executor never polls again holds the
/// waiters behind it up only until its deadline: the first of them to look takes it out
/// of the queue, and they are then served in their order; polled at last, the head is
/// `Timeout`, holding nothing.
#[test]
fn a_head_never_polled_again_holds_no_one_up_past_its_deadline() {
    let pool = Pool::new(1024, SizeCaps::NONE);
    let (timeout, long) = (Duration::from_secs(1), Duration::from_secs(60));
    let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
    let large = needs(1024);
    let mut stuck = pool.take_async(&large, timeout);
    assert!(poll_once(&mut stuck).is_pending());
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for (name, ahead) in [("first", 1), ("second", 2)] {
            let (pool, tx) = (&pool, tx.clone());
            queued(pool, ahead);
            s.spawn(move || {
                let lease = pool.take(&needs(1024), true, long);
                // Told while it holds the room: the next is admitted only after.
                tx.send((name, matches!(lease, Ok(Some(_))))).unwrap();
                drop(lease);
            });
        }
        queued(&pool, 3);
        // Room for the head, which is not polled again.
        drop(holder);
        for name in ["first", "second"] {
            let behind = rx.recv_timeout(Duration::from_secs(30));
            let (served, admitted) = behind.expect("waited behind a head past its deadline");
            assert_eq!(served, name, "served out of order");
            assert!(admitted, "{name}: not admitted");
        }
    });
    let late = poll_once(&mut stuck).map(|l| l.err());
    assert!(
        matches!(late, Poll::Ready(Some(MsmError::Timeout(_)))),
        "{late:?}"
    );
    drop(stuck);
    assert!(pool.lock().queue.is_empty());
    assert_eq!(pool.usage().in_flight, 0);
}

/// A wait ends `timeout` after the budget last moved, not after it began: a call that
/// waits longer than its timeout while calls in flight keep giving room back is
/// admitted, not `Timeout`.
#[test]
fn a_wait_outlasts_its_timeout_while_room_keeps_coming_back() {
    let pool = Pool::new(4096, SizeCaps::NONE);
    let long = Duration::from_secs(60);
    let mut holders: Vec<_> = (0..16)
        .map(|_| pool.take(&needs(256), true, long).unwrap().unwrap())
        .collect();
    let timeout = Duration::from_millis(500);
    std::thread::scope(|s| {
        let pool = &pool;
        let waiter = s.spawn(move || pool.take(&needs(4096), true, timeout));
        queued(pool, 1);
        let began = Instant::now();
        while let Some(holder) = holders.pop() {
            std::thread::sleep(Duration::from_millis(50));
            drop(holder);
        }
        assert!(
            began.elapsed() > timeout,
            "room came back within the timeout: the test shows nothing"
        );
        let admitted = waiter.join().unwrap().map(|l| l.is_some());
        assert!(admitted.unwrap(), "no room");
    });
    assert_eq!(pool.usage().in_flight, 0);
}

/// A wait for room dropped before its deadline keeps nothing of its task: neither the
/// queue nor the deadline's timer holds its waker (with a long `gpu_timeout`, the timer
/// held it for that long), nor does one that was admitted.
#[test]
fn a_dropped_wait_keeps_no_waker() {
    use crate::gpu::device::foreign::tests::Flaky;
    let pool = Pool::new(1024, SizeCaps::NONE);
    let long = Duration::from_secs(3600);
    let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
    let large = needs(1024);
    let task = Flaky::new(0);
    let mut dropped = pool.take_async(&large, long);
    assert!(poll_with(&mut dropped, &task).is_pending());
    // Polled again with another waker: the deadline is set again, the first taken off.
    let other = Flaky::new(0);
    assert!(poll_with(&mut dropped, &other).is_pending());
    assert_eq!(Arc::strong_count(&task), 1, "the first waker is still held");
    assert!(Arc::strong_count(&other) > 1, "no deadline armed");
    drop(dropped);
    assert_eq!(
        Arc::strong_count(&other),
        1,
        "a dropped wait's waker is still held"
    );
    let mut admitted = pool.take_async(&large, long);
    assert!(poll_with(&mut admitted, &task).is_pending());
    holder.keep();
    let Poll::Ready(lease) = poll_with(&mut admitted, &task) else {
        panic!("first in line, with room, and not admitted")
    };
    assert_eq!(
        Arc::strong_count(&task),
        1,
        "an admitted wait's waker is still held"
    );
    drop((lease, admitted));
}

/// A task's waker that panics does not unwind through a reservation given back: the
/// reservation is counted back, the workspace kept, and the other waiters still woken.
#[test]
fn a_panicking_waker_loses_no_reservation_and_no_wakeup() {
    use crate::gpu::device::foreign::tests::Flaky;
    let pool = Pool::new(1024, SizeCaps::NONE);
    let long = Duration::from_secs(60);
    let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
    let (flaky, steady) = (Flaky::new(usize::MAX), Flaky::new(0));
    let (large, small) = (needs(1024), needs(256));
    let mut first = pool.take_async(&large, long);
    let mut second = pool.take_async(&small, long);
    assert!(poll_with(&mut first, &flaky).is_pending());
    assert!(poll_with(&mut second, &steady).is_pending());
    holder.keep();
    assert_eq!((flaky.woken(), steady.woken()), (1, 1), "a task not woken");
    let u = pool.usage();
    assert_eq!((u.in_flight, pool.idle()), (0, 1), "{u:?}");
    let Poll::Ready(lease) = poll_once(&mut first) else {
        panic!("first in line, with room, and not admitted")
    };
    drop(lease.unwrap());
    assert!(poll_once(&mut second).is_ready());
}

/// Under limits that are not powers of two, a buffer never exceeds the buffer cap nor
/// falls short of its request, and a binding stops at the binding cap (a multiple of 4).
#[test]
fn classes_stay_within_the_device_caps() {
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: (64 << 10) + 6,
        max_buffer_size: (96 << 10) + 100,
        ..wgpu::Limits::default()
    };
    let caps = SizeCaps::of(&limits);
    assert_eq!((caps.buffer, caps.binding), (96 << 10, (64 << 10) + 4));
    for b in [
        0u64,
        4,
        1000,
        64 << 10,
        (64 << 10) + 4,
        (64 << 10) + 8,
        96 << 10,
    ] {
        let c = caps.class(b);
        assert!(
            c >= b && c <= caps.buffer && c.is_multiple_of(4),
            "{b} -> {c}"
        );
        assert!(c == size_class(b) || c == caps.buffer, "{b} -> {c}");
    }
    assert_eq!(caps.class(1000), 1024);
    assert_eq!(caps.class((64 << 10) + 4), 96 << 10);
    let nvidia = SizeCaps::of(&wgpu::Limits {
        max_storage_buffer_binding_size: (1 << 31) - 1,
        max_buffer_size: 1 << 40,
        ..wgpu::Limits::default()
    });
    assert_eq!(nvidia.binding, (1 << 31) - 4);
}
