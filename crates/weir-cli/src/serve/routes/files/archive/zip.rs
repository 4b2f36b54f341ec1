//! The zip format a folder is streamed as: entries stored (method 0, no compression), each
//! file's CRC-32 computed while its bytes go out and written after them in a data descriptor
//! (general purpose flag bit 3: the local header carries zeros), names in UTF-8 (bit 11), and
//! the central directory at the end. Zip64 (APPNOTE 6.3.x, 4.5.3) where a field overflows:
//! a file of 4 GiB or more gets a zip64 extra field in its local header and 8-byte sizes in
//! its data descriptor; the central directory gives sizes and offsets of 4 GiB or more in a
//! zip64 extra field; an archive of 65,535 entries or more, or whose central directory starts
//! or ends past 4 GiB, ends with the zip64 end of central directory record and locator.
//! `Zip64::Always` writes every zip64 structure whatever the sizes (the tests' way to check
//! readers on small archives).
//!
//! Memory: the central directory needs every entry's name, CRC, size, offset and time, so a
//! zip stream holds [`CentralEntry`] per entry (its name plus 32 bytes): O(entries × name
//! length). The route bounds both before the first byte (`archive/mod.rs`).

/// The data descriptor's signature.
const DESCRIPTOR_SIG: u32 = 0x0807_4b50;
/// A 32-bit field that says "see the zip64 extra field".
const OVER: u32 = u32::MAX;
/// Version needed to extract: 2.0 (stored, directories), 4.5 (zip64).
const V20: u16 = 20;
const V45: u16 = 45;
/// Flags: sizes and CRC in a data descriptor; names in UTF-8.
const FLAG_DESCRIPTOR: u16 = 1 << 3;
const FLAG_UTF8: u16 = 1 << 11;

/// When to write zip64 structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Zip64 {
    /// Only where a field overflows.
    Needed,
    /// Everywhere (tests).
    Always,
}

/// What the central directory keeps of an entry.
#[derive(Debug)]
pub(super) struct CentralEntry {
    pub(super) name: String,
    pub(super) dir: bool,
    pub(super) crc: u32,
    pub(super) size: u64,
    /// Where its local header starts.
    pub(super) offset: u64,
    /// MS-DOS date and time.
    pub(super) dos_time: u32,
    /// The local header had a zip64 extra field (8-byte sizes in its descriptor).
    pub(super) zip64_local: bool,
}

fn u16le(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn u32le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn u64le(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Whether a file of `size` gets zip64 in its local header (and descriptor).
pub(super) fn local_zip64(size: u64, mode: Zip64) -> bool {
    mode == Zip64::Always || size >= u64::from(OVER)
}

/// Appends the local header of an entry. A file's CRC and sizes follow its bytes in the data
/// descriptor ([`descriptor`]); a directory has none (zeros, no descriptor).
pub(super) fn local_header(out: &mut Vec<u8>, e: &CentralEntry) {
    u32le(out, 0x0403_4b50);
    u16le(out, if e.zip64_local { V45 } else { V20 });
    let flags = if e.dir {
        FLAG_UTF8
    } else {
        FLAG_UTF8 | FLAG_DESCRIPTOR
    };
    u16le(out, flags);
    u16le(out, 0); // stored
    u32le(out, e.dos_time);
    u32le(out, 0); // CRC: in the descriptor
    let size = if e.zip64_local { OVER } else { 0 };
    u32le(out, size);
    u32le(out, size);
    u16le(out, e.name.len() as u16);
    u16le(out, if e.zip64_local { 20 } else { 0 });
    out.extend_from_slice(e.name.as_bytes());
    if e.zip64_local {
        // Sizes, zero here: the descriptor carries them (APPNOTE 4.3.9.2).
        u16le(out, 0x0001);
        u16le(out, 16);
        u64le(out, 0);
        u64le(out, 0);
    }
}

/// Appends the data descriptor after a file's bytes.
pub(super) fn descriptor(out: &mut Vec<u8>, e: &CentralEntry) {
    u32le(out, DESCRIPTOR_SIG);
    u32le(out, e.crc);
    if e.zip64_local {
        u64le(out, e.size);
        u64le(out, e.size);
    } else {
        u32le(out, e.size as u32);
        u32le(out, e.size as u32);
    }
}

/// Appends an entry's central directory header.
pub(super) fn central_header(out: &mut Vec<u8>, e: &CentralEntry, mode: Zip64) {
    let big_size = mode == Zip64::Always || e.size >= u64::from(OVER);
    let big_offset = mode == Zip64::Always || e.offset >= u64::from(OVER);
    let extra_len = 8 * (2 * u16::from(big_size) + u16::from(big_offset));
    u32le(out, 0x0201_4b50);
    // Made by: Unix (3), spec 4.5.
    u16le(out, (3 << 8) | V45);
    u16le(
        out,
        if big_size || big_offset || e.zip64_local {
            V45
        } else {
            V20
        },
    );
    let flags = if e.dir {
        FLAG_UTF8
    } else {
        FLAG_UTF8 | FLAG_DESCRIPTOR
    };
    u16le(out, flags);
    u16le(out, 0);
    u32le(out, e.dos_time);
    u32le(out, e.crc);
    let size = if big_size { OVER } else { e.size as u32 };
    u32le(out, size);
    u32le(out, size);
    u16le(out, e.name.len() as u16);
    u16le(out, if extra_len > 0 { extra_len + 4 } else { 0 });
    u16le(out, 0); // comment
    u16le(out, 0); // disk
    u16le(out, 0); // internal attributes
    // External attributes: the Unix mode above, the MS-DOS directory bit below.
    let attrs = if e.dir {
        (0o040_755 << 16) | 0x10
    } else {
        0o100_644 << 16
    };
    u32le(out, attrs);
    u32le(out, if big_offset { OVER } else { e.offset as u32 });
    out.extend_from_slice(e.name.as_bytes());
    if extra_len > 0 {
        u16le(out, 0x0001);
        u16le(out, extra_len);
        if big_size {
            u64le(out, e.size);
            u64le(out, e.size);
        }
        if big_offset {
            u64le(out, e.offset);
        }
    }
}

/// Appends the end of the archive: the zip64 end record and locator when needed, then the
/// end of central directory record. `start` and `size`: the central directory's.
pub(super) fn end(out: &mut Vec<u8>, entries: u64, start: u64, size: u64, mode: Zip64) {
    let zip64 = mode == Zip64::Always
        || entries >= 0xFFFF
        || start >= u64::from(OVER)
        || size >= u64::from(OVER)
        || start + size >= u64::from(OVER);
    if zip64 {
        let record = start + size;
        u32le(out, 0x0606_4b50);
        u64le(out, 44);
        u16le(out, (3 << 8) | V45);
        u16le(out, V45);
        u32le(out, 0);
        u32le(out, 0);
        u64le(out, entries);
        u64le(out, entries);
        u64le(out, size);
        u64le(out, start);
        // Locator.
        u32le(out, 0x0706_4b50);
        u32le(out, 0);
        u64le(out, record);
        u32le(out, 1);
    }
    u32le(out, 0x0605_4b50);
    u16le(out, 0);
    u16le(out, 0);
    let count = if zip64 { 0xFFFF } else { entries as u16 };
    u16le(out, count);
    u16le(out, count);
    u32le(out, if zip64 { OVER } else { size as u32 });
    u32le(out, if zip64 { OVER } else { start as u32 });
    u16le(out, 0);
}

/// MS-DOS date and time (local time has no meaning here: UTC) of `secs` since the epoch;
/// before 1980 (the format's first year) is 1980-01-01, after 2107 is its last second.
pub(super) fn dos_time(secs: u64) -> u32 {
    const MIN: u64 = 315_532_800; // 1980-01-01
    let secs = secs.max(MIN);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    if y > 2107 {
        return (127 << 25) | (12 << 21) | (31 << 16) | (23 << 11) | (59 << 5) | 29;
    }
    let (h, min, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    (((y - 1980) as u32) << 25)
        | ((m as u32) << 21)
        | ((d as u32) << 16)
        | ((h as u32) << 11)
        | ((min as u32) << 5)
        | (s as u32 / 2)
}

/// Howard Hinnant's `civil_from_days`: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(size: u64, offset: u64, mode: Zip64) -> CentralEntry {
        CentralEntry {
            name: "d/big.bin".into(),
            dir: false,
            crc: 0xDEAD_BEEF,
            size,
            offset,
            dos_time: dos_time(1_700_000_000),
            zip64_local: local_zip64(size, mode),
        }
    }

    fn u16_at(b: &[u8], i: usize) -> u16 {
        u16::from_le_bytes(b[i..i + 2].try_into().unwrap())
    }
    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
    }
    fn u64_at(b: &[u8], i: usize) -> u64 {
        u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
    }

    #[test]
    fn small_entries_have_no_zip64() {
        let e = entry(10, 100, Zip64::Needed);
        let mut out = Vec::new();
        local_header(&mut out, &e);
        assert_eq!(out.len(), 30 + 9);
        assert_eq!(u16_at(&out, 6), FLAG_UTF8 | FLAG_DESCRIPTOR);
        assert_eq!(u16_at(&out, 28), 0);
        out.clear();
        descriptor(&mut out, &e);
        assert_eq!(out.len(), 16);
        assert_eq!((u32_at(&out, 4), u32_at(&out, 8)), (0xDEAD_BEEF, 10));
        out.clear();
        central_header(&mut out, &e, Zip64::Needed);
        assert_eq!(out.len(), 46 + 9);
        assert_eq!((u32_at(&out, 20), u32_at(&out, 24)), (10, 10));
        assert_eq!(u32_at(&out, 42), 100);
    }

    #[test]
    fn sizes_and_offsets_past_4_gib_go_to_zip64_fields() {
        let size = (5 << 30) + 7;
        let offset = (6 << 30) + 3;
        let e = entry(size, offset, Zip64::Needed);
        assert!(e.zip64_local);
        let mut out = Vec::new();
        local_header(&mut out, &e);
        assert_eq!(u16_at(&out, 4), V45);
        assert_eq!((u32_at(&out, 18), u32_at(&out, 22)), (OVER, OVER));
        assert_eq!(u16_at(&out, 28), 20);
        assert_eq!((u16_at(&out, 39), u16_at(&out, 41)), (1, 16));
        out.clear();
        descriptor(&mut out, &e);
        assert_eq!(out.len(), 24);
        assert_eq!((u64_at(&out, 8), u64_at(&out, 16)), (size, size));
        out.clear();
        central_header(&mut out, &e, Zip64::Needed);
        assert_eq!((u32_at(&out, 20), u32_at(&out, 24)), (OVER, OVER));
        assert_eq!(u32_at(&out, 42), OVER);
        assert_eq!(u16_at(&out, 30), 28);
        let extra = 46 + 9;
        assert_eq!((u16_at(&out, extra), u16_at(&out, extra + 2)), (1, 24));
        assert_eq!(u64_at(&out, extra + 4), size);
        assert_eq!(u64_at(&out, extra + 12), size);
        assert_eq!(u64_at(&out, extra + 20), offset);

        // A small file at a large offset: only the offset in the extra field.
        let e = entry(10, offset, Zip64::Needed);
        out.clear();
        central_header(&mut out, &e, Zip64::Needed);
        assert_eq!(u32_at(&out, 20), 10);
        assert_eq!(u16_at(&out, 46 + 9 + 2), 8);
        assert_eq!(u64_at(&out, 46 + 9 + 4), offset);
    }

    #[test]
    fn the_end_records() {
        let mut out = Vec::new();
        end(&mut out, 3, 1000, 200, Zip64::Needed);
        assert_eq!(out.len(), 22);
        assert_eq!(u16_at(&out, 10), 3);
        let start = (5u64 << 30) + 1;
        out.clear();
        end(&mut out, 70_000, start, 200, Zip64::Needed);
        assert_eq!(out.len(), 56 + 20 + 22);
        assert_eq!(u32_at(&out, 0), 0x0606_4b50);
        assert_eq!(u64_at(&out, 24), 70_000);
        assert_eq!(u64_at(&out, 40), 200);
        assert_eq!(u64_at(&out, 48), start);
        assert_eq!(u32_at(&out, 56), 0x0706_4b50);
        assert_eq!(u64_at(&out, 64), start + 200);
        assert_eq!(u16_at(&out, 76 + 10), 0xFFFF);
        assert_eq!(u32_at(&out, 76 + 16), OVER);
    }

    #[test]
    fn dos_times() {
        // 2023-11-14 22:13:20 UTC.
        let t = dos_time(1_700_000_000);
        assert_eq!(t >> 25, 2023 - 1980);
        assert_eq!((t >> 21) & 0xF, 11);
        assert_eq!((t >> 16) & 0x1F, 14);
        assert_eq!((t >> 11) & 0x1F, 22);
        assert_eq!((t >> 5) & 0x3F, 13);
        assert_eq!(t & 0x1F, 10);
        assert_eq!(dos_time(0), (1 << 21) | (1 << 16));
    }
}
