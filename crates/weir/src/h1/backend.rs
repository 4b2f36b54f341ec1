//! `h1::Conn` as an exchange [`Backend`]: each operation is one of the connection's own
//! methods (in `body.rs` and `response.rs`), called as the exchange asks.

use super::conn::Conn;
use crate::error::Misuse;
use crate::exchange::backend::{Backend, HeadFlags};
use crate::exchange::body::BodyPolicy;
use crate::exchange::extra_headers::ExtraHeaders;
use crate::exchange::lifecycle::ResponseLifecycle;
use crate::transport::PeerAddr;
use crate::{Error, Request};
use bytes::Bytes;
use http::StatusCode;
use std::fs::File;

impl Backend for Conn {
    fn request(&self) -> &Request {
        &self.head
    }

    fn peer_addr(&self) -> PeerAddr {
        self.peer
    }

    fn body_policy(&self) -> &BodyPolicy {
        &self.body.policy
    }

    fn body_policy_mut(&mut self) -> &mut BodyPolicy {
        &mut self.body.policy
    }

    fn response(&self) -> &ResponseLifecycle {
        &self.resp
    }

    fn extra_headers_mut(&mut self) -> &mut ExtraHeaders {
        &mut self.extra_headers
    }

    async fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        Conn::read_body(self, buf).await
    }

    async fn wait_body(&mut self) -> Result<bool, Error> {
        Conn::wait_body(self).await
    }

    fn try_read_body(&mut self, buf: &mut [u8]) -> Option<Result<usize, Error>> {
        Conn::try_read_body(self, buf)
    }

    async fn read_body_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        Conn::read_body_chunk(self).await
    }

    async fn body_to_file(&mut self, file: &mut File, limit: u64) -> Result<u64, Error> {
        Conn::body_to_file(self, file, limit).await
    }

    fn set_pause_threshold(&mut self, bytes: usize) {
        self.body.policy.set_pause_threshold(bytes);
    }

    fn pause_threshold(&self) -> usize {
        self.body.policy.pause_threshold()
    }

    fn is_body_complete(&self) -> bool {
        self.body.decoder.is_done()
    }

    fn body_at_hand(&self) -> u64 {
        Conn::body_at_hand(self)
    }

    fn take_passed_fd(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.io.passed_fd.take()
    }

    async fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error> {
        Conn::send_informational(self, status, headers).await
    }

    fn start_head(&mut self, status: StatusCode) -> Result<usize, Error> {
        Conn::start_head(self, status)
    }

    fn push_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), Error> {
        Conn::push_header(self, name, value, flags)
            .map_err(|_| Error::invalid_response(Misuse::InvalidHeader))
    }

    #[cfg(feature = "tower")]
    fn push_valid_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), Error> {
        Conn::push_valid_header(self, name, value, flags);
        Ok(())
    }

    fn abort_head(&mut self, mark: usize) {
        Conn::abort_head(self, mark);
    }

    fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
    ) -> Result<(), Error> {
        Conn::finish_head(self, status, len, flags);
        Ok(())
    }

    async fn write_body(&mut self, data: &[u8]) -> Result<(), Error> {
        Conn::write_body(self, data).await
    }

    fn finish_body(&mut self, trailers: Option<&http::HeaderMap>) -> Result<(), Error> {
        Conn::finish_body(self, trailers)
    }

    async fn flush_response(&mut self) -> Result<(), Error> {
        Conn::flush_response(self).await
    }

    async fn send_file(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        Conn::send_file(self, file, offset, len).await
    }

    async fn send_file_in_body(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        Conn::send_file_in_body(self, file, offset, len).await
    }

    async fn forward_body(
        &mut self,
        src: &tokio::net::TcpStream,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        Conn::forward_body(self, src, len, src_timeout).await
    }
}
