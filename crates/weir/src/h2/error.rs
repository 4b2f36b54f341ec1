//! What an `h2` error on a stream means to a handler: a disconnect, or a protocol error in the
//! request body.

use crate::Error;
use h2::Reason;

/// Maps an `h2` error on a stream to what a handler sees. The client resetting the stream, a
/// GOAWAY or a broken connection are disconnects; a body that broke HTTP/2's rules (h2 reset
/// the stream with PROTOCOL_ERROR, e.g. more data than its content-length) is a protocol error.
pub(crate) fn stream_error(e: h2::Error) -> Error {
    if e.is_io() {
        return match e.into_io() {
            Some(io) => Error::from_conn_io(io),
            None => Error::disconnect(None),
        };
    }
    if e.reason() == Some(Reason::PROTOCOL_ERROR) && !e.is_remote() && e.is_reset() {
        return Error::protocol(weir_proto::ProtoError::InvalidContentLength);
    }
    Error::disconnect(Some(std::io::Error::other(e)))
}
