//! Counting global allocators: heap allocations as a real count, for the allocation-free claims
//! of weir's tests and the allocations-per-request column of weir-bench.
//!
//! A global allocator is declared once per binary, by the binary: each test binary or program that
//! counts writes one line,
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: weir_testkit::alloc::Counting = weir_testkit::alloc::Counting;
//! ```
//!
//! [`Counting`] counts every thread of the process (weir-bench: a server child reports
//! [`allocations`] before and after a measured window). [`CountingMarked`] counts only the
//! threads that called [`count_this_thread`] (a test marks its server's runtime threads, so the
//! client on the test thread is not counted). Both forward every operation to [`System`] and
//! count each `alloc`, `alloc_zeroed` and `realloc`.
//!
//! The count must be cheap enough not to change what it measures: each thread increments its own
//! cache-line-sized slot (a relaxed atomic add on a line no other thread writes, unless more than
//! [`SLOTS`] threads exist), and [`allocations`] sums the slots. The slot index and the mark live
//! in const-initialised thread-local `Cell`s, which neither allocate nor register a destructor,
//! so they are safe to touch from inside the allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// Number of counter slots. Threads beyond this share slots, which stays correct (the adds are
/// atomic) and only costs contention.
pub const SLOTS: usize = 64;

#[repr(align(64))]
struct Slot(AtomicU64);

static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicU64::new(0)) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    static MARKED: Cell<bool> = const { Cell::new(false) };
}

/// Counts the allocations of every thread.
pub struct Counting;

/// Counts the allocations of the threads marked with [`count_this_thread`] only.
pub struct CountingMarked;

/// Whether [`CountingMarked`] counts this thread's allocations from now on (e.g. in tokio's
/// `on_thread_start` of the server's runtime).
pub fn count_this_thread(counted: bool) {
    MARKED.with(|m| m.set(counted));
}

// Inlined into the allocator of the binary that declares it, as it was when the counter lived in
// that binary: moving it here must not change what weir-bench measures.
/// Allocations of at least this many bytes are also counted apart ([`large_allocations`]): a
/// frame-sized buffer allocated per frame shows there, among the small ones of setup.
pub const LARGE: usize = 64 << 10;

static LARGE_COUNT: AtomicU64 = AtomicU64::new(0);

/// Allocations of at least [`LARGE`] bytes counted so far (on the threads [`allocations`]
/// counts).
pub fn large_allocations() -> u64 {
    LARGE_COUNT.load(Ordering::Relaxed)
}

#[inline]
fn count_one(size: usize) {
    if size >= LARGE {
        LARGE_COUNT.fetch_add(1, Ordering::Relaxed);
    }
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

#[inline]
fn count_if_marked(size: usize) {
    // `try_with`: during thread teardown the thread-local may be gone; such a thread is not
    // counted.
    if MARKED.try_with(Cell::get).unwrap_or(false) {
        count_one(size);
    }
}

/// Heap allocations counted so far, on every thread.
pub fn allocations() -> u64 {
    COUNTS.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
}

/// The `GlobalAlloc` impl of a counting allocator: `System`, plus `$count` on each allocation.
macro_rules! forward_to_system {
    ($allocator:ty, $count:ident) => {
        // SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
        // `System`'s guarantees are ours; counting touches no memory the allocator hands out.
        unsafe impl GlobalAlloc for $allocator {
            #[inline]
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                $count(layout.size());
                // SAFETY: same contract as ours, passed through.
                unsafe { System.alloc(layout) }
            }

            #[inline]
            unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
                $count(layout.size());
                // SAFETY: same contract as ours, passed through.
                unsafe { System.alloc_zeroed(layout) }
            }

            #[inline]
            unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
                $count(new_size);
                // SAFETY: same contract as ours, passed through.
                unsafe { System.realloc(ptr, layout, new_size) }
            }

            #[inline]
            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                // SAFETY: same contract as ours, passed through.
                unsafe { System.dealloc(ptr, layout) }
            }
        }
    };
}

forward_to_system!(Counting, count_one);
forward_to_system!(CountingMarked, count_if_marked);

/// Counts the bytes live on the heap, allocated and freed by the threads marked with
/// [`count_this_thread`]: what a server's idle connections hold is the difference of two
/// [`live_bytes`] readings (weir's idle-memory test), while a client on unmarked threads adds
/// nothing. Each thread adds and subtracts on its own slot (a block freed on another marked
/// thread than the one that allocated it makes the two slots' figures cancel in the sum), so
/// the count costs no shared cache line. A block a marked thread allocates and an unmarked one
/// frees stays counted: the error can only make the figure larger. The requested sizes are
/// counted, not `malloc`'s rounding or its per-block header.
pub struct LiveBytes;

static LIVE: [SlotI; SLOTS] = [const { SlotI(AtomicI64::new(0)) }; SLOTS];

#[repr(align(64))]
struct SlotI(AtomicI64);

#[inline]
fn my_slot() -> usize {
    MY_SLOT
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
                s.set(i);
            }
            i
        })
        .unwrap_or(0)
}

#[inline]
fn add_live(delta: i64) {
    if MARKED.try_with(Cell::get).unwrap_or(false) {
        LIVE[my_slot()].0.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Bytes live on the heap now, as [`LiveBytes`] counts them (0 under another allocator).
pub fn live_bytes() -> i64 {
    LIVE.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; counting touches no memory the allocator hands out.
unsafe impl GlobalAlloc for LiveBytes {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours, passed through.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add_live(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours, passed through.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add_live(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as ours, passed through.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add_live(new_size as i64 - layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add_live(-(layout.size() as i64));
        // SAFETY: same contract as ours, passed through.
        unsafe { System.dealloc(ptr, layout) }
    }
}
