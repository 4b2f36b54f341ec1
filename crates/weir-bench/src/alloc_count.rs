//! A counting global allocator: the heap allocations a server process makes, as a real count.
//!
//! Every process started from this binary (the bench itself and every server child) allocates
//! through [`Counting`], which forwards to [`System`] and counts each `alloc`, `alloc_zeroed` and
//! `realloc`. A server child reports [`allocations`] over its control pipe before and after a
//! measured window; allocations per request is the delta over the requests served in it.
//!
//! The count must be cheap enough not to change what it measures: each thread increments its own
//! cache-line-sized slot (a relaxed atomic add on a line no other thread writes, unless more than
//! [`SLOTS`] threads exist), and [`allocations`] sums the slots. The slot index lives in a
//! const-initialised thread-local `Cell`, which neither allocates nor registers a destructor, so
//! it is safe to touch from inside the allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Number of counter slots. Threads beyond this share slots, which stays correct (the adds are
/// atomic) and only costs contention.
const SLOTS: usize = 64;

#[repr(align(64))]
struct Slot(AtomicU64);

static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicU64::new(0)) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The allocator installed as `#[global_allocator]` in `main.rs`.
pub struct Counting;

fn count_one() {
    // `try_with` fails only while the thread is being torn down; count those on slot 0.
    let slot = MY_SLOT
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
                s.set(i);
            }
            i
        })
        .unwrap_or(0);
    COUNTS[slot].0.fetch_add(1, Ordering::Relaxed);
}

/// Heap allocations made by this process so far, on every thread.
pub fn allocations() -> u64 {
    COUNTS.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; counting touches no memory the allocator hands out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: same contract as ours, passed through.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: same contract as ours, passed through.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: same contract as ours, passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours, passed through.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_allocations_on_this_thread() {
        let before = allocations();
        let v: Vec<u8> = Vec::with_capacity(100);
        std::hint::black_box(&v);
        assert!(allocations() > before);
    }
}
