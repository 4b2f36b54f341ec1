//! `Counting` (weir-bench's allocator) counts every thread's allocations, marked or not: guards
//! the allocations-per-request column against a counter that cannot count.

use weir_testkit::alloc::{Counting, allocations};

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn every_thread_is_counted() {
    let before = allocations();
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(100));
    drop(std::hint::black_box(v));
    assert!(allocations() > before, "this thread was not counted");
    // Measured inside the other thread: spawning and joining it allocate on this one.
    let counted = std::thread::spawn(|| {
        let before = allocations();
        let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(100));
        drop(std::hint::black_box(v));
        allocations() > before
    })
    .join()
    .unwrap();
    assert!(counted, "another thread was not counted");
}
