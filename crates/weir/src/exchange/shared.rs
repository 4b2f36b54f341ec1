//! [`Shared`]: what every connection of a server shares (configuration, counters, the shutdown
//! flag). Created by the accept layer (`server.rs`) and handed down to the protocol drivers,
//! which read it; nothing here knows about listeners or protocols.

use crate::buffer_pool::BufferPool;
use crate::config::Config;
use crate::stats::Stats;
use std::sync::atomic::{AtomicBool, Ordering};

/// What every connection of a server shares.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) stats: Stats,
    /// The HTTP/1.1 connections' buffers, held only while a connection has bytes to work on.
    pub(crate) buffers: BufferPool,
    /// Set once shutdown starts: responses written from then on announce `Connection: close`.
    /// (The watch channel wakes waiting connections; this flag is the cheap check per response.)
    shutting_down: AtomicBool,
    /// The connection window HTTP/2 connections share (`Http2Config::total_connection_window`).
    #[cfg(feature = "http2")]
    pub(crate) h2_window_budget: std::sync::Arc<crate::h2::WindowBudget>,
}

impl Shared {
    pub(crate) fn new(config: Config) -> Self {
        #[cfg(feature = "http2")]
        let h2_window_budget = {
            let connection = config.http2_windows().connection;
            let total = config.http2.total_connection_window_for(connection);
            std::sync::Arc::new(crate::h2::WindowBudget::new(total))
        };
        Self {
            #[cfg(feature = "http2")]
            h2_window_budget,
            buffers: BufferPool::new(config.read_buffer_size),
            config,
            stats: Stats::default(),
            shutting_down: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    /// Marks the server as shutting down (the accept layer also wakes waiting connections).
    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Relaxed);
    }
}
