//! Test support shared by the `integration` and `conformance` test binaries (each includes
//! this file with `#[path]`; each uses part of it).

use weir::Exchange;

/// A response as read off the wire.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The number in `key=N` of the request's query, if there is one.
pub fn query_u64(ex: &Exchange<'_>, key: &str) -> Option<u64> {
    ex.request().query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}
