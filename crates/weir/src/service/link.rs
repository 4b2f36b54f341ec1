//! The link between a request's body handles ([`Body`](super::Body),
//! [`ExchangeHandle`](super::ExchangeHandle)) and the [`Exchange`] they read from.
//!
//! A tower request must be `'static`, but an `Exchange` borrows its connection, so the body
//! cannot hold the exchange. Instead a body read is an *order* placed in this link; the adapter
//! (`drive`), which owns the exchange and polls the service's future on the connection's task,
//! takes the order, runs it on the exchange (the same `read_body_chunk`, `read_body`,
//! `body_to_file`, `send_informational` a native handler calls) while it keeps polling the
//! service's future, and hands the answer back. Nothing is read from the socket unless an order
//! asks for it, so the pause threshold and TCP backpressure hold as for a native handler.
//!
//! Invariants:
//! - at most one order is in the link at a time (a second requester waits for the slot);
//! - an order taken by the driver is answered, or (if the service's future finished first)
//!   put back (a chunk read) or answered with [`ended`];
//! - bytes read for a requester that went away are kept (`leftover`) and given to the next read,
//!   so dropping a read future loses no body bytes;
//! - after the response, while the request's [`Body`](super::Body) is alive elsewhere and the
//!   body is not complete, the adapter keeps carrying out its orders (`after_response`); it
//!   stops when that body is dropped (its drop wakes the adapter: `body_dropped`), is
//!   complete, or a read fails;
//! - once the exchange is over (`end`), every order is answered at once: the end of the body if
//!   it was complete, else [`ended`];
//! - a wake goes only to another task: an order placed inside `drive`'s poll of the service is
//!   taken when that poll returns, and an answer to a requester polled with the driver's own
//!   waker is reached by the driver's next poll of the service.
//!
//! The state sits behind a `std::sync::Mutex`: uncontended (the body is polled on the
//! connection's task unless the application moves it to another task), it costs an atomic
//! operation per order.

use super::handle::{Current, is_current, within};
use crate::{Error, Exchange};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use std::fs::File;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker, ready};

/// What a body handle asks of the exchange.
pub(crate) enum Order {
    /// The next piece of the body, sharing the connection's buffer.
    Chunk,
    /// Body bytes read into `buf[..]` (its length, not its capacity: initialized memory the
    /// caller reuses), straight from the socket when nothing is buffered and `buf` is large.
    ReadInto(Vec<u8>),
    /// At most `limit` body bytes written to the file (`splice` where the transport allows).
    ToFile(File, u64),
    /// An informational response.
    Informational(StatusCode, HeaderMap),
}

/// The exchange's answer to an [`Order`].
pub(crate) enum Answer {
    Chunk(Result<Option<Bytes>, Error>),
    /// The body ended; its trailer fields, if the client sent some.
    End(Option<HeaderMap>),
    /// The buffer back, and how many bytes were read into its front.
    ReadInto(Vec<u8>, Result<usize, Error>),
    ToFile(Result<u64, Error>),
    Informational(Result<(), Error>),
}

/// The error of an order that can no longer be carried out: the exchange is over (the response
/// was sent, and the request's body was dropped, completed or failed), or the service's future
/// finished while it ran.
pub(crate) fn ended() -> Error {
    Error::from(std::io::Error::other(
        "the exchange is over: its request body can no longer be read",
    ))
}

/// Per-request settings a handle changed, applied to the exchange before its next read.
#[derive(Default)]
struct Settings {
    max_body_size: Option<Option<u64>>,
    pause_threshold: Option<usize>,
}

#[derive(Default)]
struct State {
    /// Placed and not yet taken by the driver.
    order: Option<Order>,
    /// Taken by the driver, not yet answered.
    running: bool,
    answer: Option<Answer>,
    /// The requester of the order in the link, woken by its answer.
    owner: Option<Waker>,
    /// The requester of the running order went away: its answer's bytes become `leftover`.
    abandoned: bool,
    /// Requesters waiting for the slot (two at once: rare; the vector allocates only then).
    waiting: Vec<Waker>,
    /// The adapter's task, woken by a new order or setting.
    driver: Option<Waker>,
    settings: Settings,
    leftover: Option<Bytes>,
    body_complete: bool,
    ended: bool,
    /// Locked since the last reset: every change is made under the lock, so a state never
    /// locked is still as new (most requests: no body handle is ever polled).
    touched: bool,
}

impl State {
    fn busy(&self) -> bool {
        self.order.is_some() || self.running || self.answer.is_some()
    }

    fn release_slot(&mut self) {
        self.owner = None;
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    /// Keeps the body bytes of an answer nobody will collect.
    fn keep_leftover(&mut self, answer: Answer) {
        match answer {
            Answer::Chunk(Ok(Some(bytes))) => self.leftover = Some(bytes),
            Answer::ReadInto(mut buf, Ok(n)) if n > 0 => {
                // No copy: the Vec becomes the Bytes' storage.
                buf.truncate(n);
                self.leftover = Some(Bytes::from(buf));
            }
            _ => {}
        }
    }
}

/// The link of one exchange (its `Arc` is kept per thread for the next request: `pool`).
#[derive(Default)]
pub(crate) struct Link {
    state: Mutex<State>,
    /// The request's [`Body`](super::Body) was dropped. Outside the lock: every request's body
    /// is dropped, and this costs it an atomic store, not a lock.
    body_dropped: AtomicBool,
    /// The adapter waits for that drop after the response (`after_response`): the drop wakes
    /// it. Set after the adapter's waker is in the state, read after `body_dropped` is set,
    /// both sequentially consistent, so either the drop sees it or the adapter sees the drop.
    lingering: AtomicBool,
}

impl Link {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent state (every field is set in one
        // step), so a poisoned lock is used as is.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.touched = true;
        state
    }

    // ---- requester side ----

    /// Places `slot`'s order (once, when the link is free) or collects its answer. `placed`
    /// is the requester's own flag; a requester dropped while `placed` must call
    /// [`Link::abandon`].
    pub(crate) fn poll_call(
        &self,
        placed: &mut bool,
        slot: &mut Option<Order>,
        cx: &mut Context<'_>,
    ) -> Poll<Answer> {
        let mut state = self.lock();
        if *placed {
            return match state.answer.take() {
                Some(answer) => {
                    *placed = false;
                    state.release_slot();
                    Poll::Ready(answer)
                }
                None => {
                    set_waker(&mut state.owner, cx.waker());
                    Poll::Pending
                }
            };
        }
        let Some(order) = slot.take() else {
            return Poll::Ready(Answer::Informational(Err(ended())));
        };
        if let Some(answer) = Self::answer_at_once(&mut state, order, slot) {
            return Poll::Ready(answer);
        }
        if state.busy() {
            if !state.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                state.waiting.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        state.order = slot.take();
        *placed = true;
        set_waker(&mut state.owner, cx.waker());
        // Polled inside `drive` for this link (the common case: the service awaits its body),
        // the driver takes the order as soon as the service's future returns: waking it would
        // only wake this very task, which tokio then polls again for nothing, after waking an
        // idle worker to steal it (a futex call per socket wait, measured in the upload rows).
        if !is_current(self) {
            if let Some(driver) = &state.driver {
                driver.wake_by_ref();
            }
        }
        Poll::Pending
    }

    /// Answers without the exchange when that is possible: from bytes kept for a requester
    /// that went away, or after the exchange ended. Otherwise puts `order` back in `slot`.
    fn answer_at_once(state: &mut State, order: Order, slot: &mut Option<Order>) -> Option<Answer> {
        if let Some(mut bytes) = state.leftover.take() {
            match order {
                Order::Chunk => return Some(Answer::Chunk(Ok(Some(bytes)))),
                Order::ReadInto(mut buf) => {
                    let n = bytes.len().min(buf.len());
                    // COPY: bytes read for a requester that went away, handed to this one.
                    buf[..n].copy_from_slice(&bytes.split_to(n));
                    if !bytes.is_empty() {
                        state.leftover = Some(bytes);
                    }
                    return Some(Answer::ReadInto(buf, Ok(n)));
                }
                other => {
                    state.leftover = Some(bytes);
                    *slot = Some(other);
                }
            }
        } else {
            *slot = Some(order);
        }
        if !state.ended {
            return None;
        }
        let order = slot.take()?;
        let complete = state.body_complete;
        Some(match order {
            Order::Chunk if complete => Answer::End(None),
            Order::Chunk => Answer::Chunk(Err(ended())),
            Order::ReadInto(buf) if complete => Answer::ReadInto(buf, Ok(0)),
            Order::ReadInto(buf) => Answer::ReadInto(buf, Err(ended())),
            Order::ToFile(..) if complete => Answer::ToFile(Ok(0)),
            Order::ToFile(..) => Answer::ToFile(Err(ended())),
            Order::Informational(..) => Answer::Informational(Err(ended())),
        })
    }

    /// The requester of the order in the link went away.
    pub(crate) fn abandon(&self) {
        let mut state = self.lock();
        if state.order.take().is_none() {
            if let Some(answer) = state.answer.take() {
                state.keep_leftover(answer);
            } else if state.running {
                state.abandoned = true;
            }
        }
        state.release_slot();
    }

    /// Records a change of a per-request setting for the driver to apply.
    pub(crate) fn set_max_body_size(&self, max: Option<u64>) {
        let mut state = self.lock();
        state.settings.max_body_size = Some(max);
        if let Some(driver) = &state.driver {
            driver.wake_by_ref();
        }
    }

    pub(crate) fn set_pause_threshold(&self, bytes: usize) {
        let mut state = self.lock();
        state.settings.pause_threshold = Some(bytes);
        if let Some(driver) = &state.driver {
            driver.wake_by_ref();
        }
    }

    /// The request's body is dropped: an adapter waiting for that after the response is woken.
    pub(crate) fn body_dropped(&self) {
        self.body_dropped.store(true, Ordering::SeqCst);
        if self.lingering.load(Ordering::SeqCst) {
            if let Some(driver) = &self.lock().driver {
                driver.wake_by_ref();
            }
        }
    }

    // ---- driver side ----

    /// Applies changed settings and takes the order in the link, if any; otherwise remembers
    /// the driver's waker.
    fn take_order(&self, exchange: &mut Exchange<'_>, cx: &mut Context<'_>) -> Option<Order> {
        let mut state = self.lock();
        let settings = std::mem::take(&mut state.settings);
        if let Some(max) = settings.max_body_size {
            exchange.set_max_body_size(max);
        }
        if let Some(bytes) = settings.pause_threshold {
            exchange.set_pause_threshold(bytes);
        }
        let order = state.order.take();
        if order.is_some() {
            state.running = true;
        } else {
            set_waker(&mut state.driver, cx.waker());
        }
        order
    }

    /// After the response: the order in the link, or `None` once the body is dropped
    /// (otherwise the driver's waker is kept, and the drop or the next order wakes it).
    fn poll_order_after_response(
        &self,
        exchange: &mut Exchange<'_>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Order>> {
        if let Some(order) = self.take_order(exchange, cx) {
            return Poll::Ready(Some(order));
        }
        // The waker is in the state (`take_order`) before the flag is set.
        self.lingering.store(true, Ordering::SeqCst);
        if self.body_dropped.load(Ordering::SeqCst) {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// Records that the body is complete, for the orders answered after the end.
    fn note_complete(&self) {
        self.lock().body_complete = true;
    }

    /// Hands `answer` to the order's requester. `driver` is the waker of the task running
    /// `drive`, which polls the service's future again right after this: a requester polled
    /// with that same waker (a body awaited by the service on the connection's task) is reached
    /// by that poll, so it is not woken (a self-wake costs tokio a needless poll and a futex
    /// call to wake an idle worker).
    fn answer(&self, answer: Answer, driver: &Waker) {
        let mut state = self.lock();
        state.running = false;
        if matches!(answer, Answer::End(_)) {
            state.body_complete = true;
        }
        if std::mem::take(&mut state.abandoned) {
            state.keep_leftover(answer);
            state.release_slot();
            return;
        }
        state.answer = Some(answer);
        if let Some(owner) = &state.owner {
            if !owner.will_wake(driver) {
                owner.wake_by_ref();
            }
        }
    }

    /// The service's future finished while `order` ran: a chunk read is put back for the next
    /// drive (nothing was taken: exchange body reads give up nothing when dropped), anything
    /// else is answered with [`ended`].
    fn interrupt(&self, was_chunk: bool) {
        let mut state = self.lock();
        state.running = false;
        if was_chunk {
            state.order = Some(Order::Chunk);
            return;
        }
        if std::mem::take(&mut state.abandoned) {
            state.release_slot();
            return;
        }
        state.answer = Some(Answer::ToFile(Err(ended())));
        if let Some(owner) = &state.owner {
            owner.wake_by_ref();
        }
    }

    /// The exchange is over: answers the order in the link and every later one at once.
    pub(crate) fn end(&self) {
        let mut state = self.lock();
        state.ended = true;
        state.driver = None;
        if let Some(order) = state.order.take() {
            let mut slot = None;
            let answer = Self::answer_at_once(&mut state, order, &mut slot);
            state.answer = answer;
            if let Some(owner) = &state.owner {
                owner.wake_by_ref();
            }
        }
        for w in state.waiting.drain(..) {
            w.wake();
        }
    }

    /// Makes a link held by nobody else ready for the next request (`pool`): its state as new
    /// (already so if it was never locked), the waiting list's capacity kept.
    pub(crate) fn reset(&mut self) {
        *self.body_dropped.get_mut() = false;
        *self.lingering.get_mut() = false;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if !state.touched {
            return;
        }
        let mut waiting = std::mem::take(&mut state.waiting);
        waiting.clear();
        *state = State {
            waiting,
            ..State::default()
        };
    }
}

fn set_waker(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(w) if w.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

/// Polls `fut` once on the caller's task, with `current` as the thread's current exchange:
/// its output, or `Pending` as a value. The adapter's common case (a service that answers
/// without waiting, a response body whose frame is ready) ends here, without building
/// [`drive`]'s future: that one has room for the largest exchange call an order runs, and
/// building it (moving it into the caller's future) costs more than the poll.
pub(crate) fn poll_within<'a, F: Future>(
    current: &'a Current,
    mut fut: Pin<&'a mut F>,
) -> impl Future<Output = Poll<F::Output>> + 'a {
    poll_fn(move |cx| Poll::Ready(within(current, || fut.as_mut().poll(cx))))
}

/// Polls `fut` (the service's future, or the response body) to completion on the exchange's
/// task, carrying out the orders its body handles place meanwhile. An order runs while `fut`
/// is still polled, so a timeout inside the service fires during a long body read; if `fut`
/// finishes first the order is dropped (exchange body reads give nothing up when dropped).
///
/// `fut` was just polled by [`poll_within`] and was pending, in this same poll of the task (the
/// caller awaits this right after it, with no await between): its wakers are registered, so the
/// first turn only takes the order it may have placed, without polling it again.
///
/// The service runs with `current` (this exchange) as the thread's current one, for its
/// handles.
pub(crate) async fn drive<F: Future>(
    exchange: &mut Exchange<'_>,
    current: &Current,
    mut fut: Pin<&mut F>,
) -> F::Output {
    let link = &current.link;
    let mut just_polled = true;
    loop {
        let step = poll_fn(|cx| {
            if !std::mem::take(&mut just_polled) {
                if let Poll::Ready(out) = within(current, || fut.as_mut().poll(cx)) {
                    return Poll::Ready(Err(out));
                }
            }
            match link.take_order(exchange, cx) {
                Some(order) => Poll::Ready(Ok(order)),
                None => Poll::Pending,
            }
        })
        .await;
        let order = match step {
            Ok(order) => order,
            Err(out) => return out,
        };
        let was_chunk = matches!(order, Order::Chunk);
        let mut run = pin!(run(exchange, order));
        let outcome = poll_fn(|cx| {
            if let Poll::Ready(out) = within(current, || fut.as_mut().poll(cx)) {
                return Poll::Ready(Err(out));
            }
            let answer = ready!(run.as_mut().poll(cx));
            link.answer(answer, cx.waker());
            Poll::Ready(Ok(()))
        })
        .await;
        if let Err(out) = outcome {
            link.interrupt(was_chunk);
            return out;
        }
    }
}

/// After a complete response: while the request's body is alive elsewhere (the service moved
/// it to a task of its own, to read after answering, as hyper allows) and not complete, carries
/// out its orders on the exchange, as a native handler that reads its body after responding
/// does. The response is flushed first, so the client has it while the body is still read.
///
/// The common case costs an atomic load: the body was dropped with the service's future. Ends
/// when the body is dropped, complete, or a read of it fails; a body kept and never read holds
/// its connection (HTTP/1.1) or stream (HTTP/2) until it is dropped, as a native handler that
/// waits before reading does (the server's shutdown grace still ends it).
pub(crate) async fn after_response(exchange: &mut Exchange<'_>, link: &Link) -> Result<(), Error> {
    if link.body_dropped.load(Ordering::Acquire) {
        return Ok(());
    }
    if !exchange.is_body_complete() {
        exchange.flush_response().await?;
        while let Some(order) = poll_fn(|cx| link.poll_order_after_response(exchange, cx)).await {
            let answer = run(exchange, order).await;
            let failed = matches!(
                answer,
                Answer::Chunk(Err(_)) | Answer::ReadInto(_, Err(_)) | Answer::ToFile(Err(_))
            );
            // The requester is on another task: the no-op waker is never its own.
            link.answer(answer, Waker::noop());
            if failed || exchange.is_body_complete() {
                break;
            }
        }
    }
    if exchange.is_body_complete() {
        link.note_complete();
    }
    Ok(())
}

/// Carries out one order on the exchange: each is one `Exchange` call, the path a native
/// handler takes.
async fn run(exchange: &mut Exchange<'_>, order: Order) -> Answer {
    match order {
        Order::Chunk => match exchange.read_body_chunk().await {
            Ok(None) => Answer::End(exchange.trailers().cloned()),
            other => Answer::Chunk(other),
        },
        Order::ReadInto(mut buf) => {
            let read = exchange.read_body(&mut buf).await;
            Answer::ReadInto(buf, read)
        }
        Order::ToFile(mut file, limit) => {
            Answer::ToFile(exchange.body_to_file_at_most(&mut file, limit).await)
        }
        Order::Informational(status, headers) => {
            // ALLOCATION (1xx only): the fields as the pairs `send_informational` takes.
            let fields: Vec<(&str, &[u8])> = headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes()))
                .collect();
            Answer::Informational(exchange.send_informational(status, &fields).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Waker;

    fn cx() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    /// The driver's side without an exchange: takes the order in the link.
    fn take(link: &Link) -> Option<Order> {
        let mut state = link.lock();
        let order = state.order.take();
        state.running = order.is_some();
        order
    }

    #[test]
    fn bytes_read_for_a_requester_that_went_away_go_to_the_next_read() {
        let link = Link::default();
        let mut placed = false;
        let mut slot = Some(Order::Chunk);
        assert!(
            link.poll_call(&mut placed, &mut slot, &mut cx())
                .is_pending()
        );
        assert!(placed);
        assert!(matches!(take(&link), Some(Order::Chunk)));
        // The requester goes away while the read runs; its bytes arrive afterwards.
        link.abandon();
        link.answer(
            Answer::Chunk(Ok(Some(Bytes::from_static(b"kept")))),
            Waker::noop(),
        );
        // A read into a buffer gets them first (copied), the rest stays for the next read.
        let mut placed = false;
        let mut slot = Some(Order::ReadInto(vec![0; 3]));
        match link.poll_call(&mut placed, &mut slot, &mut cx()) {
            Poll::Ready(Answer::ReadInto(buf, Ok(3))) => assert_eq!(buf, b"kep"),
            _ => panic!("not answered from the kept bytes"),
        }
        let mut slot = Some(Order::Chunk);
        match link.poll_call(&mut placed, &mut slot, &mut cx()) {
            Poll::Ready(Answer::Chunk(Ok(Some(b)))) => assert_eq!(&b[..], b"t"),
            _ => panic!("not answered from the kept bytes"),
        }
        assert!(!placed);
    }

    #[test]
    fn one_order_at_a_time_and_every_order_answered_after_the_end() {
        let link = Link::default();
        let (mut first, mut second) = (false, false);
        let mut a = Some(Order::Chunk);
        let mut b = Some(Order::ToFile(tempfile_like(), 10));
        assert!(link.poll_call(&mut first, &mut a, &mut cx()).is_pending());
        // The slot is taken: the second requester waits without placing its order.
        assert!(link.poll_call(&mut second, &mut b, &mut cx()).is_pending());
        assert!(!second && b.is_some());
        // The exchange ends before the body did: the placed chunk read fails, the waiting
        // order is refused when it tries again.
        link.end();
        assert!(matches!(
            link.poll_call(&mut first, &mut a, &mut cx()),
            Poll::Ready(Answer::Chunk(Err(_)))
        ));
        assert!(matches!(
            link.poll_call(&mut second, &mut b, &mut cx()),
            Poll::Ready(Answer::ToFile(Err(_)))
        ));
    }

    #[test]
    fn after_a_complete_body_the_end_is_answered_as_the_end() {
        let link = Link::default();
        let mut placed = false;
        let mut slot = Some(Order::Chunk);
        assert!(
            link.poll_call(&mut placed, &mut slot, &mut cx())
                .is_pending()
        );
        take(&link);
        link.answer(Answer::End(None), Waker::noop());
        assert!(matches!(
            link.poll_call(&mut placed, &mut slot, &mut cx()),
            Poll::Ready(Answer::End(None))
        ));
        link.end();
        let mut slot = Some(Order::Chunk);
        assert!(matches!(
            link.poll_call(&mut placed, &mut slot, &mut cx()),
            Poll::Ready(Answer::End(None))
        ));
    }

    #[test]
    fn a_reset_link_is_as_new() {
        let mut link = Link::default();
        // Ended, with bytes kept for a requester that went away.
        let (mut placed, mut slot) = (false, Some(Order::Chunk));
        assert!(
            link.poll_call(&mut placed, &mut slot, &mut cx())
                .is_pending()
        );
        take(&link);
        link.abandon();
        link.answer(
            Answer::Chunk(Ok(Some(Bytes::from_static(b"kept")))),
            Waker::noop(),
        );
        link.end();
        link.reset();
        // A read waits for the driver again: no kept bytes, not ended.
        let (mut placed, mut slot) = (false, Some(Order::Chunk));
        assert!(
            link.poll_call(&mut placed, &mut slot, &mut cx())
                .is_pending()
        );
        assert!(placed);
        assert!(matches!(take(&link), Some(Order::Chunk)));
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    impl Wakes {
        fn count(&self) -> usize {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    /// A body awaited by the service on the connection's task places its order and collects
    /// its answer without waking that task (the driver takes the order, and polls the service
    /// again, on its own); a body read from another task is woken both ways.
    #[test]
    fn a_body_read_on_the_drivers_own_task_wakes_nobody() {
        let link = Arc::new(Link::default());
        let task = Arc::new(Wakes::default());
        let task_waker = Waker::from(Arc::clone(&task));
        let mut task_cx = Context::from_waker(&task_waker);
        // The driver found no order and waits with the task's waker.
        link.lock().driver = Some(task_waker.clone());
        let current = super::super::handle::Current::new(Arc::clone(&link), peer());

        let (mut placed, mut slot) = (false, Some(Order::Chunk));
        let polled = within(&current, || {
            link.poll_call(&mut placed, &mut slot, &mut task_cx)
        });
        assert!(polled.is_pending() && placed);
        assert!(matches!(take(&link), Some(Order::Chunk)));
        link.answer(
            Answer::Chunk(Ok(Some(Bytes::from_static(b"x")))),
            &task_waker,
        );
        assert_eq!(task.count(), 0, "the task woke itself");
        let polled = within(&current, || {
            link.poll_call(&mut placed, &mut slot, &mut task_cx)
        });
        assert!(matches!(polled, Poll::Ready(Answer::Chunk(Ok(Some(_))))));

        // The body moved to another task: the driver is woken for the order, the other task
        // for the answer.
        let other = Arc::new(Wakes::default());
        let other_waker = Waker::from(Arc::clone(&other));
        let mut slot = Some(Order::Chunk);
        let polled = link.poll_call(
            &mut placed,
            &mut slot,
            &mut Context::from_waker(&other_waker),
        );
        assert!(polled.is_pending());
        assert_eq!(
            task.count(),
            1,
            "the driver was not woken for an order from elsewhere"
        );
        take(&link);
        link.answer(Answer::End(None), &task_waker);
        assert_eq!(
            other.count(),
            1,
            "the other task was not woken for its answer"
        );
    }

    fn peer() -> crate::transport::PeerAddr {
        crate::transport::PeerAddr::Tcp(([127, 0, 0, 1], 1).into())
    }

    fn tempfile_like() -> File {
        File::open("/dev/null").expect("/dev/null")
    }
}
