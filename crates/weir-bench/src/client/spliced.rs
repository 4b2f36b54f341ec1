//! The upload body sent without the client's own copy: `vmsplice` of the body buffer into a
//! pipe, then `splice` from the pipe to the socket (Linux).
//!
//! Why: with `write`, the client copies every byte into the kernel, and on loopback it also
//! runs the receiving side's TCP work in its own system calls. Its CPU per GiB is then above
//! a lean server's own, so every row of a fast sink runs at the client's pace and the servers
//! compare as a tie, whatever each costs. Spliced, the pages of the (never modified) body
//! buffer go into the socket by reference and the only copy left is the server's read. What
//! remains of the client's CPU is TCP's work, waking the reader included, so a server that
//! wakes less often costs the client less too. The bytes sent are exactly those of the
//! `write` client.

use std::io::{self, Write};
use std::os::fd::AsFd;

/// Writes `size` bytes of `chunk` repeated (as the `write` client does) to `sock`. An error
/// where the kernel refuses (or this is not Linux): a run asked to splice does not quietly
/// measure the `write` client instead.
///
/// The socket carries references to `chunk`'s pages, not copies, until the peer has read the
/// bytes: the caller must not change `chunk` before then (the uploader's buffer is immutable),
/// or the peer reads the new bytes.
pub fn send<S: AsFd + Write>(sock: &mut S, chunk: &[u8], size: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        linux::send(sock, chunk, size)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (sock, chunk, size);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "--client-send splice needs Linux's vmsplice",
        ))
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use rustix::pipe::{IoSliceRaw, PipeFlags, SpliceFlags, fcntl_setpipe_size, pipe_with};
    use std::io::{self, Write};
    use std::os::fd::AsFd;

    /// The pipe's capacity asked for: `/proc/sys/fs/pipe-max-size`'s default. A smaller grant
    /// only means more system calls.
    const PIPE_SIZE: usize = 1 << 20;

    pub fn send<S: AsFd + Write>(sock: &mut S, chunk: &[u8], size: u64) -> io::Result<()> {
        let (r, w) = pipe_with(PipeFlags::CLOEXEC)?;
        let cap = fcntl_setpipe_size(&w, PIPE_SIZE).unwrap_or(64 << 10);
        let mut left = size;
        let mut at = 0usize;
        while left > 0 {
            let n = (cap as u64).min(left).min((chunk.len() - at) as u64) as usize;
            let piece = [IoSliceRaw::from_slice(&chunk[at..at + n])];
            // SAFETY: `w` is the pipe's write end, so the kernel only reads `chunk`'s pages,
            // never writes them (what makes `vmsplice` unsafe is its other direction, which
            // writes into the buffers). No GIFT: it takes references to the pages, it does
            // not take them over, so the buffer stays the caller's. (That the bytes stay the
            // same until the server has read them is `send`'s contract, not memory safety.)
            let moved = unsafe { rustix::pipe::vmsplice(&w, &piece, SpliceFlags::empty()) }?;
            // `MORE` (hold a partial segment for what follows) except for the last bytes,
            // which would otherwise wait in the socket for the cork timer.
            let flags = if left > moved as u64 {
                SpliceFlags::MOVE | SpliceFlags::MORE
            } else {
                SpliceFlags::MOVE
            };
            let mut in_pipe = moved;
            while in_pipe > 0 {
                let out = rustix::pipe::splice(&r, None, sock.as_fd(), None, in_pipe, flags)?;
                if out == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                in_pipe -= out;
            }
            left -= moved as u64;
            at = (at + moved) % chunk.len();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    /// The spliced client sends exactly the bytes the `write` client does, across the wrap of
    /// the buffer and a pipe-sized tail.
    #[test]
    #[cfg(target_os = "linux")]
    fn sends_the_buffer_repeated_byte_for_byte() {
        let chunk = super::super::upload::body_pattern(3 << 20);
        let size = (7u64 << 20) + 12_345;
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        send(&mut a, &chunk, size).unwrap();
        drop(a);
        let got = reader.join().unwrap();
        let want: Vec<u8> = chunk.iter().copied().cycle().take(size as usize).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "spliced bytes differ from the buffer repeated");
    }
}
