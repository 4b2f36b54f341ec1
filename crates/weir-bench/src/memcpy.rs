//! The floor: copying the same number of bytes once, in this process.
//!
//! Receiving over a socket costs at least one copy (kernel → user); a server that makes more
//! shows a CPU cost per byte that grows by about one memcpy per extra copy. Both buffers are
//! allocated and touched before the timing, so page faults are not counted.

use crate::clock;

/// Two buffers of the largest size to copy.
pub struct Memcpy {
    src: Vec<u8>,
    dst: Vec<u8>,
}

impl Memcpy {
    /// Allocates and touches both buffers.
    pub fn new(max: usize) -> Self {
        Self {
            src: (0..max).map(|i| i as u8).collect(),
            dst: vec![1; max],
        }
    }

    /// Copies `n` bytes; returns `(wall ns, CPU ns of this thread)`.
    pub fn run(&mut self, n: usize) -> (u64, u64) {
        let (w0, c0) = (clock::monotonic_ns(), clock::thread_cpu_ns());
        self.dst[..n].copy_from_slice(&self.src[..n]);
        std::hint::black_box(&self.dst);
        (clock::monotonic_ns() - w0, clock::thread_cpu_ns() - c0)
    }
}
