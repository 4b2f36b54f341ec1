//! Pacing the parts of one local multipart upload that arrive at once, written in place.
//!
//! The object's SHA-256 must see its bytes in order (`ahead.rs`): a part is worth more to the
//! hash the earlier it lies in the object. When a client sends several large parts at once
//! and the server, not the network, is what limits them, taking them evenly lands them all
//! together at the end, and the whole hash is left for the completion while a CPU idles. Two
//! rules, checked by the body's loop before each piece it moves ([`PartPace::before_piece`]),
//! take them in order instead:
//! - **Earliest first.** A part waits while a part before it in the object is *pressing*: it
//!   found at least [`PRESSING`] bytes at hand (its socket filled faster than it was read) when
//!   it began its last piece, less than [`HOLD`] ago. A part the network holds back finds little
//!   at hand, so parts sent over a slow or distant link are never held for one another; a
//!   pressing part that stops reading (its disk, its client) stops pressing after [`HOLD`].
//! - **Within reach of the hash.** A piece starting more than [`REACH`] past the bytes hashed
//!   waits while the hash thread runs (`Ahead::caught_up`): the receiving would otherwise take
//!   the CPUs the hash needs, and the hash would be left for the completion again.
//!
//! # Invariants
//! - Neither rule is needed for correctness, and neither can hold a part for ever: the earliest
//!   part in flight never waits for another, a pressing mark lasts [`HOLD`] unless renewed by
//!   the part's next piece, and the hash's wait ends as soon as its thread stops.
//! - A part is in flight from its slot's claim (`LocalMultiparts::begin_in_place`) until its
//!   body ends ([`PartPace::ended`]) or its upload is dropped, whichever comes first; every
//!   change that can end a wait (a mark dropped, a part gone) wakes the waiters.

use super::ahead::{Ahead, Lead};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::Notify;
use tokio::time::{Duration, Instant};

/// Bytes at hand at the start of a piece that make a part pressing: a quarter of the pieces'
/// size (`SPLICE_PIECE`, 8 MiB), far above what a link that holds the part back leaves queued
/// between two reads, and below what a full loopback socket holds.
pub(crate) const PRESSING: u64 = 2 << 20;

/// How long a pressing mark lasts without a new piece: several pieces' time at the speeds where
/// the order matters (a piece takes a few milliseconds when the server is the limit).
pub(crate) const HOLD: Duration = Duration::from_millis(50);

/// How far past the bytes hashed a piece may start while the hash runs: two of the large parts
/// that need the order (128 MiB), so that the next part arrives while one is hashed.
pub(crate) const REACH: u64 = 256 << 20;

/// One upload's parts in flight, in place (shared by its [`PartPace`]s).
#[derive(Debug, Default)]
pub(crate) struct UploadPace {
    state: Mutex<State>,
    /// Signalled when a pressing mark is dropped or a part leaves.
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// The parts in flight: (offset in the object, pressing until). A handful: one per
    /// connection the client sends parts on.
    flying: Vec<(u64, Option<Instant>)>,
    /// The upload's hash, once its part 1 is recorded.
    ahead: Weak<Ahead>,
}

impl UploadPace {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A part starting at `offset` is in flight until the returned pace is ended or dropped.
    pub(crate) fn join(self: &Arc<Self>, offset: u64) -> PartPace {
        self.lock().flying.push((offset, None));
        PartPace {
            upload: Arc::clone(self),
            offset,
        }
    }

    /// The hash the parts' pieces keep within [`REACH`] of.
    pub(super) fn hashed_by(&self, ahead: &Arc<Ahead>) {
        self.lock().ahead = Arc::downgrade(ahead);
    }

    /// Sets the mark of the part at `offset`; wakes the waiters if one was dropped.
    fn mark(&self, offset: u64, pressing: Option<Instant>) {
        let mut state = self.lock();
        let Some(part) = state.flying.iter_mut().find(|(o, _)| *o == offset) else {
            return;
        };
        let dropped = part.1.is_some() && pressing.is_none();
        part.1 = pressing;
        drop(state);
        if dropped {
            self.changed.notify_waiters();
        }
    }

    fn leave(&self, offset: u64) {
        let mut state = self.lock();
        if let Some(i) = state.flying.iter().position(|(o, _)| *o == offset) {
            state.flying.swap_remove(i);
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// Until when a part before `offset` presses, if one does at `now`.
    fn pressed_until(&self, offset: u64, now: Instant) -> Option<Instant> {
        self.lock()
            .flying
            .iter()
            .filter(|(o, _)| *o < offset)
            .filter_map(|(_, until)| until.filter(|t| *t > now))
            .max()
    }
}

/// A part in flight in its upload's [`UploadPace`] (see the module doc).
#[derive(Debug)]
pub(crate) struct PartPace {
    upload: Arc<UploadPace>,
    offset: u64,
}

impl PartPace {
    /// Before the piece that starts `written` bytes into the part: marks the part pressing if
    /// `at_hand` (the body's bytes a read would get without waiting) is [`PRESSING`] or more,
    /// then waits while an earlier part presses, then while the piece is out of the hash's
    /// reach.
    pub(crate) async fn before_piece(&self, at_hand: u64, written: u64) {
        let mut now = Instant::now();
        let pressing = (at_hand >= PRESSING).then(|| now + HOLD);
        self.upload.mark(self.offset, pressing);
        loop {
            // Registered before the check: a mark dropped in between wakes it.
            let mut changed = std::pin::pin!(self.upload.changed.notified());
            changed.as_mut().enable();
            let Some(until) = self.upload.pressed_until(self.offset, now) else {
                break;
            };
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(until) => {}
            }
            now = Instant::now();
        }
        let ahead = self.upload.lock().ahead.upgrade();
        if let Some(ahead) = ahead {
            let reach = Lead {
                within: REACH,
                at_most: u64::MAX,
            };
            ahead.caught_up(self.offset + written, reach).await;
        }
    }

    /// The part's body ended: it presses no more (what follows, its read back and its record,
    /// is no reason for the parts after it to wait).
    pub(crate) fn ended(&self) {
        self.upload.mark(self.offset, None);
    }
}

impl Drop for PartPace {
    fn drop(&mut self) {
        self.upload.leave(self.offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::{Context, Waker};

    fn pending<F: Future>(fut: std::pin::Pin<&mut F>) -> bool {
        fut.poll(&mut Context::from_waker(Waker::noop()))
            .is_pending()
    }

    const MIB: u64 = 1 << 20;

    /// `N` parts of one upload in flight, 128 MiB apart.
    fn in_flight<const N: usize>() -> [PartPace; N] {
        let upload = Arc::new(UploadPace::default());
        std::array::from_fn(|i| upload.join(i as u64 * 128 * MIB))
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_part_waits_while_an_earlier_one_presses_and_goes_when_it_stops() {
        let [first, second] = in_flight();
        first.before_piece(PRESSING, 0).await;
        let mut later = std::pin::pin!(second.before_piece(0, 0));
        assert!(pending(later.as_mut()), "held while part 1 presses");
        // Part 1 finds little at hand at its next piece: the network holds it back.
        first.before_piece(PRESSING - 1, 8 * MIB).await;
        assert!(!pending(later.as_mut()), "goes once part 1 presses no more");
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_part_is_never_held_by_a_later_one() {
        let [first, second] = in_flight();
        second.before_piece(64 * MIB, 0).await;
        let mut earlier = std::pin::pin!(first.before_piece(0, 0));
        assert!(!pending(earlier.as_mut()));
    }

    #[tokio::test(start_paused = true)]
    async fn parts_that_the_network_holds_back_never_wait_for_one_another() {
        let parts: [_; 8] = in_flight();
        for (i, part) in parts.iter().enumerate() {
            let mut piece = std::pin::pin!(part.before_piece(PRESSING - 1, i as u64));
            assert!(!pending(piece.as_mut()), "part {} held", i + 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_pressing_mark_lasts_its_hold_unless_renewed() {
        let [first, second] = in_flight();
        first.before_piece(PRESSING, 0).await;
        // Part 1 stops reading (its disk, its client) while marked: part 2 waits out the mark
        // (paused time, advanced by hand), then goes.
        {
            let mut held = std::pin::pin!(second.before_piece(0, 0));
            assert!(pending(held.as_mut()));
            tokio::time::advance(HOLD - Duration::from_millis(1)).await;
            assert!(pending(held.as_mut()), "within the hold");
            tokio::time::advance(Duration::from_millis(1)).await;
            assert!(!pending(held.as_mut()), "the hold is over");
        }
        // Renewed by each piece, the mark holds part 2 past one hold.
        first.before_piece(PRESSING, 8 * MIB).await;
        let mut held = std::pin::pin!(second.before_piece(0, 8 * MIB));
        assert!(pending(held.as_mut()));
        tokio::time::advance(HOLD / 2).await;
        first.before_piece(PRESSING, 16 * MIB).await;
        tokio::time::advance(HOLD / 2).await;
        assert!(pending(held.as_mut()), "the renewed mark still holds");
        tokio::time::advance(HOLD / 2).await;
        assert!(!pending(held.as_mut()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_part_that_ends_or_leaves_releases_the_parts_after_it() {
        let [first, second, third] = in_flight();
        // Part 2 first: marked after part 1, it would wait part 1's mark out.
        second.before_piece(PRESSING, 0).await;
        first.before_piece(PRESSING, 0).await;
        let mut held = std::pin::pin!(third.before_piece(0, 0));
        assert!(pending(held.as_mut()));
        first.ended();
        assert!(pending(held.as_mut()), "part 2 still presses");
        drop(second);
        assert!(!pending(held.as_mut()));
    }
}
