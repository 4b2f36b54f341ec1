//! The HTTP/2 settings of the servers under test: weir's defaults, which the hyper peer copies so
//! that the HTTP/2 rows compare servers, not window sizes.
//!
//! weir's receive window per stream, once its handler reads, is its pause threshold (1 MiB by
//! default; a stream starts at 64 KiB until then), its connection window four times that
//! (unless configured), its largest accepted frame `Http2Config::max_frame_size` (256 KiB); its
//! adaptive window is off by default (`weir::Config::http2_windows` works them out). hyper gets
//! the same numbers through `http2::Builder` (a stream's window from the start: it has no
//! window that opens on read) with its own adaptive window off. The HTTP/2 rows run weir with
//! its default configuration, so these are the values both servers advertise.

use std::fmt;

/// What a server advertises to its HTTP/2 clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct H2Settings {
    /// Initial receive window of each stream.
    pub stream_window: u32,
    /// Receive window of the connection.
    pub connection_window: u32,
    /// Largest DATA frame payload the server accepts (the client frames at this size).
    pub max_frame_size: u32,
    /// Streams a client may have open at once.
    pub max_concurrent_streams: u32,
    /// Largest decoded header list.
    pub max_header_list_size: u32,
}

impl H2Settings {
    /// weir's settings with its default `Config`.
    pub fn weir_defaults() -> Self {
        let config = weir::Config::default();
        let h2 = &config.http2;
        let windows = config.http2_windows();
        Self {
            stream_window: windows.stream,
            connection_window: windows.connection,
            max_frame_size: h2.max_frame_size.clamp(16_384, 16_777_215),
            max_concurrent_streams: h2.max_concurrent_streams.max(1),
            max_header_list_size: h2.max_header_list_size,
        }
    }
}

impl fmt::Display for H2Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::scenario::size_label;
        write!(
            f,
            "stream window {}, connection window {}, frames up to {}, adaptive window off",
            size_label(self.stream_window.into()),
            size_label(self.connection_window.into()),
            size_label(self.max_frame_size.into()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_weirs_config_as_weir_does() {
        let config = weir::Config::default();
        let s = H2Settings::weir_defaults();
        assert_eq!(s.stream_window as usize, config.pause_threshold);
        assert_eq!(s.connection_window, config.http2_windows().connection);
        assert_eq!(s.max_frame_size, config.http2.max_frame_size);
        // The report says the adaptive window is off: so must weir's default be.
        assert!(!config.http2.adaptive_window);
        let shown = H2Settings {
            stream_window: 1 << 20,
            connection_window: 100 << 20,
            max_frame_size: 256 << 10,
            max_concurrent_streams: 100,
            max_header_list_size: 32 << 10,
        };
        assert_eq!(
            shown.to_string(),
            "stream window 1 MiB, connection window 100 MiB, frames up to 256 KiB, \
             adaptive window off"
        );
    }
}
