//! The tar format a folder is streamed as: POSIX.1-2001 (pax) over ustar, written by hand
//! (a header is 512 bytes of fixed fields; the `tar` crate's builder wants `Read`ers and
//! `Write` and would add nothing a stream can use).
//!
//! An entry is a ustar header block, then the file's bytes raw, then zeros to the next 512
//! (so the bytes of a file can go out with `sendfile`: nothing in them is transformed). A
//! pax extended header (typeflag `x`) comes first when ustar cannot say it: a name that is
//! not ASCII or longer than 100 bytes (`path`, UTF-8 as pax defines it), a size of 8 GiB or
//! more (`size`: ustar's field holds 11 octal digits). Directories are entries of their own
//! (typeflag `5`, name ending in `/`), so empty folders survive. The archive ends with two
//! zero blocks. Owner and group are 0 with no names; modes 0644 and 0755.

/// A tar block.
pub(super) const BLOCK: usize = 512;
/// The end of an archive: two zero blocks.
pub(super) const END: [u8; 2 * BLOCK] = [0; 2 * BLOCK];
/// The largest size ustar's 12-byte field holds (11 octal digits).
const USTAR_MAX_SIZE: u64 = 0o777_7777_7777;

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
}

/// Zeros after `size` bytes of data, to the next block.
pub(super) fn padding(size: u64) -> usize {
    let rest = (size % BLOCK as u64) as usize;
    if rest == 0 { 0 } else { BLOCK - rest }
}

/// Appends the header(s) of an entry named `name` (relative, `/`-separated; a directory's
/// ends with `/`) to `out`: one block, or a pax header and its records first (see the module
/// doc). `mtime` in seconds since the epoch.
pub(super) fn header(out: &mut Vec<u8>, name: &str, kind: Kind, size: u64, mtime: u64) {
    let long_name = name.len() > 100 || !name.is_ascii();
    let big = size > USTAR_MAX_SIZE;
    if long_name || big {
        // ALLOCATION: the pax records (a name and a number: small, per entry that needs them).
        let mut records = Vec::new();
        if long_name {
            record(&mut records, "path", name);
        }
        if big {
            record(&mut records, "size", &size.to_string());
        }
        out.extend_from_slice(&ustar(
            "PaxHeader",
            b'x',
            records.len() as u64,
            mtime,
            0o644,
        ));
        out.extend_from_slice(&records);
        out.resize(out.len() + padding(records.len() as u64), 0);
    }
    let (typeflag, mode) = match kind {
        Kind::File => (b'0', 0o644),
        Kind::Dir => (b'5', 0o755),
    };
    // The field keeps what fits: a reader takes the pax `path`/`size` instead.
    let short = truncated(name, 100);
    let size_field = if big { 0 } else { size };
    out.extend_from_slice(&ustar(short, typeflag, size_field, mtime, mode));
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn truncated(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One pax record: `"<len> <key>=<value>\n"`, where `len` counts the whole record, itself
/// included.
fn record(out: &mut Vec<u8>, key: &str, value: &str) {
    let base = key.len() + value.len() + 3;
    let mut len = base + 1;
    while len != base + digits(len) {
        len = base + digits(len);
    }
    // ALLOCATION: the record's text, only for entries that need pax records.
    out.extend_from_slice(format!("{len} {key}={value}\n").as_bytes());
}

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// A ustar header block. `name` at most 100 bytes.
fn ustar(name: &str, typeflag: u8, size: u64, mtime: u64, mode: u32) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut b[100..108], u64::from(mode));
    octal(&mut b[108..116], 0);
    octal(&mut b[116..124], 0);
    octal(&mut b[124..136], size);
    octal(&mut b[136..148], mtime.min(0o777_7777_7777));
    b[156] = typeflag;
    b[257..263].copy_from_slice(b"ustar\0");
    b[263..265].copy_from_slice(b"00");
    // The checksum: the sum of the block's bytes with its own field as spaces.
    b[148..156].fill(b' ');
    let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
    octal(&mut b[148..155], u64::from(sum));
    b[155] = b' ';
    b
}

/// `value` in octal, zero-padded, filling `field` but its last byte (NUL).
fn octal(field: &mut [u8], mut value: u64) {
    let n = field.len() - 1;
    for i in (0..n).rev() {
        field[i] = b'0' + (value & 7) as u8;
        value >>= 3;
    }
    field[n] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_octal(field: &[u8]) -> u64 {
        let text = std::str::from_utf8(field).unwrap();
        let text = text.trim_end_matches(['\0', ' ']);
        u64::from_str_radix(text, 8).unwrap()
    }

    fn checksum_ok(b: &[u8]) -> bool {
        let mut copy = b.to_vec();
        copy[148..156].fill(b' ');
        let sum: u64 = copy.iter().map(|&x| u64::from(x)).sum();
        sum == parse_octal(&b[148..155])
    }

    #[test]
    fn a_short_ascii_name_is_one_block() {
        let mut out = Vec::new();
        header(&mut out, "d/a.txt", Kind::File, 1234, 1_700_000_000);
        assert_eq!(out.len(), BLOCK);
        assert_eq!(&out[..7], b"d/a.txt");
        assert_eq!(parse_octal(&out[124..136]), 1234);
        assert_eq!(parse_octal(&out[136..148]), 1_700_000_000);
        assert_eq!(out[156], b'0');
        assert_eq!(&out[257..265], b"ustar\x0000");
        assert!(checksum_ok(&out));
    }

    #[test]
    fn long_or_unicode_names_and_huge_sizes_get_pax_records() {
        let long = format!("d/{}", "é".repeat(80));
        let size = 9 << 30;
        let mut out = Vec::new();
        header(&mut out, &long, Kind::File, size, 0);
        // pax header, its records (one block), then the entry's header.
        assert_eq!(out.len(), 3 * BLOCK);
        assert_eq!(out[156], b'x');
        assert!(checksum_ok(&out[..BLOCK]));
        let len = parse_octal(&out[124..136]) as usize;
        let records = std::str::from_utf8(&out[BLOCK..BLOCK + len]).unwrap();
        for line in records.lines() {
            let (n, _) = line.split_once(' ').unwrap();
            assert_eq!(n.parse::<usize>().unwrap(), line.len() + 1, "{line}");
        }
        assert!(records.contains(&format!(" path={long}\n")));
        assert!(records.contains(&format!(" size={size}\n")));
        let entry = &out[2 * BLOCK..];
        assert!(checksum_ok(entry));
        assert_eq!(entry[156], b'0');
        assert_eq!(parse_octal(&entry[124..136]), 0);
        assert!(std::str::from_utf8(&entry[..100]).is_ok());
    }

    #[test]
    fn record_lengths_count_themselves() {
        for value_len in 0..200 {
            let mut out = Vec::new();
            record(&mut out, "path", &"x".repeat(value_len));
            let text = std::str::from_utf8(&out).unwrap();
            let (n, _) = text.split_once(' ').unwrap();
            assert_eq!(n.parse::<usize>().unwrap(), out.len());
        }
    }

    #[test]
    fn padding_to_blocks() {
        assert_eq!(padding(0), 0);
        assert_eq!(padding(1), 511);
        assert_eq!(padding(512), 0);
        assert_eq!(padding(513), 511);
    }
}
