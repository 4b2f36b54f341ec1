//! The server-wide bound on what HTTP/2 connections buffer: their connection windows share one
//! budget ([`Http2Config::total_connection_window`](crate::Http2Config::total_connection_window)).
//!
//! A connection's receive window is the most its streams together can hold unread, and every
//! connection has at least the 65,535 bytes HTTP/2 starts it with (RFC 9113 §6.9.2: the
//! connection window cannot be lowered by SETTINGS). Everything beyond that comes from the
//! budget: a connection takes what it wants (up to its configured window) at its handshake, as
//! much as is left, so that the client sees its window before it sends DATA; if it got less,
//! it tries again at each turn of its task while it has streams (cheap: one atomic load while
//! the budget is empty), and it gives all of it back when it ends. A grant cannot be taken back
//! earlier: the client holds it as credit. So idle connections hold budget too, until their
//! keep-alive timeout closes them; the budget bounds memory, not who gets the widest window. So, whatever
//! clients do, all HTTP/2 connections together hold at most the budget plus 64 KiB each.
//!
//! Invariant: the sum of every live [`ConnectionWindow`]'s grant plus the budget's remainder is
//! the configured total; a grant is given back exactly once, on drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The connection window every HTTP/2 connection starts with (RFC 9113 §6.9.2).
pub(crate) const INITIAL_CONNECTION_WINDOW: u32 = 65_535;

/// What is left of the server's budget of connection window beyond the initial one.
#[derive(Debug)]
pub(crate) struct WindowBudget {
    remaining: AtomicU64,
}

impl WindowBudget {
    pub(crate) fn new(total: u64) -> Self {
        Self {
            remaining: AtomicU64::new(total),
        }
    }

    /// Takes up to `wanted` bytes: what was left, if less.
    fn take(&self, wanted: u64) -> u64 {
        if wanted == 0 {
            return 0;
        }
        let mut left = self.remaining.load(Ordering::Relaxed);
        loop {
            let got = left.min(wanted);
            if got == 0 {
                return 0;
            }
            match self.remaining.compare_exchange_weak(
                left,
                left - got,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return got,
                Err(now) => left = now,
            }
        }
    }

    fn give(&self, bytes: u64) {
        self.remaining.fetch_add(bytes, Ordering::Relaxed);
    }

    /// What no connection holds now.
    #[cfg(test)]
    fn remaining(&self) -> u64 {
        self.remaining.load(Ordering::Relaxed)
    }
}

/// One connection's window: the initial 65,535 bytes plus its grant from the budget.
#[derive(Debug)]
pub(crate) struct ConnectionWindow {
    budget: Arc<WindowBudget>,
    /// The window this connection would have with an unlimited budget.
    wanted: u32,
    /// Taken from the budget, beyond [`INITIAL_CONNECTION_WINDOW`].
    granted: u64,
}

impl ConnectionWindow {
    /// A new connection's window: the initial one, nothing taken yet ([`Self::top_up`] takes
    /// it, up to `wanted`).
    pub(crate) fn idle(budget: Arc<WindowBudget>, wanted: u32) -> Self {
        Self {
            budget,
            wanted: wanted.max(INITIAL_CONNECTION_WINDOW),
            granted: 0,
        }
    }

    /// The window granted now.
    pub(crate) fn size(&self) -> u32 {
        // `granted` never exceeds `wanted - INITIAL_CONNECTION_WINDOW`, a u32.
        INITIAL_CONNECTION_WINDOW + self.granted as u32
    }

    /// The connection now wants `wanted` (the adaptive window grew). Returns the new size if
    /// the budget gave more.
    pub(crate) fn want(&mut self, wanted: u32) -> Option<u32> {
        self.wanted = self.wanted.max(wanted);
        self.top_up()
    }

    /// Takes more from the budget if this connection has less than it wants and the budget
    /// has some left: the new size, if it grew.
    pub(crate) fn top_up(&mut self) -> Option<u32> {
        let missing = u64::from(self.wanted - INITIAL_CONNECTION_WINDOW) - self.granted;
        let more = self.budget.take(missing);
        if more == 0 {
            return None;
        }
        self.granted += more;
        Some(self.size())
    }
}

impl Drop for ConnectionWindow {
    fn drop(&mut self) {
        self.budget.give(self.granted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u32 = 1 << 20;

    #[test]
    fn connections_share_the_budget_and_give_it_back() {
        let budget = Arc::new(WindowBudget::new(u64::from(6 * MIB)));
        let open = |wanted| {
            let mut window = ConnectionWindow::idle(budget.clone(), wanted);
            assert_eq!(
                window.size(),
                INITIAL_CONNECTION_WINDOW,
                "nothing taken while idle"
            );
            window.top_up();
            window
        };
        let first = open(4 * MIB);
        assert_eq!(first.size(), 4 * MIB);
        let mut second = open(4 * MIB);
        let left = 6 * MIB - (4 * MIB - INITIAL_CONNECTION_WINDOW);
        assert_eq!(second.size(), INITIAL_CONNECTION_WINDOW + left);
        let mut third = open(4 * MIB);
        assert_eq!(third.size(), INITIAL_CONNECTION_WINDOW);
        assert_eq!(budget.remaining(), 0);
        assert_eq!(third.top_up(), None);

        drop(first);
        assert_eq!(second.top_up(), Some(4 * MIB));
        assert_eq!(third.top_up(), Some(INITIAL_CONNECTION_WINDOW + left));
        assert_eq!(second.top_up(), None, "it has all it wants");
        drop((second, third));
        assert_eq!(budget.remaining(), u64::from(6 * MIB));
    }

    #[test]
    fn a_growing_window_takes_only_the_difference() {
        let budget = Arc::new(WindowBudget::new(u64::from(8 * MIB)));
        let mut window = ConnectionWindow::idle(budget.clone(), MIB);
        assert_eq!(window.top_up(), Some(MIB));
        assert_eq!(window.want(3 * MIB), Some(3 * MIB));
        assert_eq!(window.want(2 * MIB), None, "it never shrinks");
        assert_eq!(
            budget.remaining(),
            u64::from(8 * MIB - 3 * MIB + INITIAL_CONNECTION_WINDOW)
        );
        drop(window);
        assert_eq!(budget.remaining(), u64::from(8 * MIB));
    }

    #[test]
    fn a_window_below_the_initial_one_takes_nothing() {
        let budget = Arc::new(WindowBudget::new(0));
        let mut window = ConnectionWindow::idle(budget.clone(), 1000);
        assert_eq!(window.top_up(), None);
        assert_eq!(window.size(), INITIAL_CONNECTION_WINDOW);
        drop(window);
        assert_eq!(budget.remaining(), 0);
    }
}
