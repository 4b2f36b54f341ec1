//! [`ExtraHeaders`]: header fields a handler asked to add to the response of its exchange,
//! whichever code ends up sending it (`Exchange::add_response_header`). For cross-cutting
//! fields decided once per request, such as CORS's `Access-Control-Allow-Origin`, so that
//! every route's answer (errors too) carries them without each route knowing.
//!
//! Stored as one byte buffer and a list of ranges, both kept across the requests of a
//! connection (cleared, not freed): no allocation per request in steady state. Names and
//! values are checked when the head is built, like any header (`push_header`).

/// The fields, in the order they were added.
#[derive(Debug, Default)]
pub(crate) struct ExtraHeaders {
    bytes: Vec<u8>,
    /// Per field: where its name ends and its value ends in `bytes` (each starts where the one
    /// before it ended).
    ends: Vec<(usize, usize)>,
}

impl ExtraHeaders {
    pub(crate) fn add(&mut self, name: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(name);
        let name_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((name_end, self.bytes.len()));
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The fields as (name, value).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&(name_end, value_end)| {
            let field = (
                &self.bytes[start..name_end],
                &self.bytes[name_end..value_end],
            );
            start = value_end;
            field
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_back_in_order_and_clear_keeps_the_capacity() {
        let mut extra = ExtraHeaders::default();
        assert!(extra.is_empty());
        extra.add(b"vary", b"origin");
        extra.add(b"x-empty", b"");
        extra.add(b"access-control-allow-origin", b"https://a.example");
        let fields: Vec<_> = extra.iter().collect();
        assert_eq!(
            fields,
            [
                (&b"vary"[..], &b"origin"[..]),
                (b"x-empty", b""),
                (b"access-control-allow-origin", b"https://a.example"),
            ]
        );
        let capacity = extra.bytes.capacity();
        extra.clear();
        assert!(extra.is_empty() && extra.iter().next().is_none());
        assert_eq!(extra.bytes.capacity(), capacity);
    }
}
