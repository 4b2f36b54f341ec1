//! The counting allocators see allocations: guards every "allocates nothing" assertion made
//! with them against a counter that cannot count.

use weir_testkit::alloc::{CountingMarked, allocations, count_this_thread};

#[global_allocator]
static ALLOC: CountingMarked = CountingMarked;

#[test]
fn marked_threads_are_counted_and_others_not() {
    let before = allocations();
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(100));
    drop(std::hint::black_box(v));
    assert_eq!(allocations(), before, "an unmarked thread was counted");

    count_this_thread(true);
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(100));
    drop(std::hint::black_box(v));
    count_this_thread(false);
    assert!(
        allocations() > before,
        "a marked thread's allocation was not counted"
    );
}
