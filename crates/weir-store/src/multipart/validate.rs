//! A completion's part list judged against the recorded parts: pure functions, the same for
//! every store.
//!
//! S3's rules, in the order S3 applies them: the list names parts in strictly ascending order
//! (`InvalidPartOrder`); each named part was uploaded, with the ETag named (`InvalidPart`); every
//! part but the last holds at least 5 MiB (`EntityTooSmall`). Parts uploaded but not named are
//! left out of the object (and removed with the upload).

use super::{CompletePart, MIN_PART_SIZE, MultipartError, PartRecord, check_part_number};
use crate::ObjectChecksum;

/// The recorded parts a completion's list names, in order, or why the list is refused.
/// `recorded(n)` is part `n`'s record, if one was uploaded.
pub fn select_parts(
    listed: &[CompletePart],
    mut recorded: impl FnMut(u32) -> Option<PartRecord>,
) -> Result<Vec<PartRecord>, MultipartError> {
    if listed.is_empty() {
        return Err(MultipartError::NoParts);
    }
    if listed.windows(2).any(|w| w[0].number >= w[1].number) {
        return Err(MultipartError::InvalidPartOrder);
    }
    // ALLOCATION: one record per part named (at most 10,000), kept for the assembly.
    let mut parts = Vec::with_capacity(listed.len());
    for entry in listed {
        check_part_number(entry.number).map_err(|_| MultipartError::InvalidPart(entry.number))?;
        let part = recorded(entry.number).ok_or(MultipartError::InvalidPart(entry.number))?;
        if !part.tag.is_named_by(&entry.etag) {
            return Err(MultipartError::InvalidPart(entry.number));
        }
        parts.push(part);
    }
    if let Some(small) = parts[..parts.len() - 1]
        .iter()
        .find(|p| p.size < MIN_PART_SIZE)
    {
        return Err(MultipartError::EntityTooSmall { part: small.number });
    }
    Ok(parts)
}

/// Whether `parts` (as [`select_parts`] found them) are those `checksum` was formed from: as
/// many, each recorded with that checksum of that algorithm (`InvalidPart` naming the first
/// that is not: a part replaced since the S3 API judged the completion). Without a checksum,
/// nothing to check.
pub fn check_part_checksums(
    parts: &[PartRecord],
    checksum: Option<&ObjectChecksum>,
) -> Result<(), MultipartError> {
    let Some(checksum) = checksum else {
        return Ok(());
    };
    for (i, part) in parts.iter().enumerate() {
        let same = checksum.parts.get(i).is_some_and(|claimed| {
            part.checksums.iter().any(|(name, value)| {
                name.eq_ignore_ascii_case(&checksum.algorithm) && value == claimed
            })
        });
        if !same {
            return Err(MultipartError::InvalidPart(part.number));
        }
    }
    match parts.last() {
        Some(last) if checksum.parts.len() != parts.len() => {
            Err(MultipartError::InvalidPart(last.number))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn part(number: u32, size: u64) -> PartRecord {
        PartRecord {
            number,
            size,
            tag: super::super::PartTag::Md5([number as u8; 16]),
            checksums: Vec::new(),
            modified: SystemTime::UNIX_EPOCH,
        }
    }

    fn named(number: u32) -> CompletePart {
        CompletePart {
            number,
            etag: format!("\"{}\"", part(number, 0).etag()),
        }
    }

    fn recorded(sizes: &[(u32, u64)]) -> impl FnMut(u32) -> Option<PartRecord> + '_ {
        move |n| {
            sizes
                .iter()
                .find(|(k, _)| *k == n)
                .map(|&(k, s)| part(k, s))
        }
    }

    #[test]
    fn parts_in_order_with_their_etags_are_selected() {
        let have = [(1, MIN_PART_SIZE), (2, MIN_PART_SIZE), (5, 1), (9, 7)];
        let chosen = select_parts(&[named(1), named(2), named(5)], recorded(&have)).unwrap();
        let numbers: Vec<u32> = chosen.iter().map(|p| p.number).collect();
        assert_eq!(numbers, [1, 2, 5]);
        // An unquoted, upper-case ETag names the same part.
        let upper = CompletePart {
            number: 9,
            etag: part(9, 0).etag().to_uppercase(),
        };
        assert_eq!(select_parts(&[upper], recorded(&have)).unwrap()[0].size, 7);
    }

    #[test]
    fn each_rule_is_refused_with_its_error() {
        let have = [(1, MIN_PART_SIZE), (2, MIN_PART_SIZE - 1), (3, 1)];
        let err = |list: &[CompletePart]| select_parts(list, recorded(&have)).unwrap_err();
        assert!(matches!(err(&[]), MultipartError::NoParts));
        assert!(matches!(
            err(&[named(2), named(1)]),
            MultipartError::InvalidPartOrder
        ));
        assert!(matches!(
            err(&[named(1), named(1)]),
            MultipartError::InvalidPartOrder
        ));
        assert!(matches!(
            err(&[named(1), named(4)]),
            MultipartError::InvalidPart(4)
        ));
        let wrong = CompletePart {
            number: 1,
            etag: format!("\"{}\"", part(7, 0).etag()),
        };
        assert!(matches!(err(&[wrong]), MultipartError::InvalidPart(1)));
        assert!(matches!(err(&[named(0)]), MultipartError::InvalidPart(0)));
        assert!(matches!(
            err(&[named(1), named(2), named(3)]),
            MultipartError::EntityTooSmall { part: 2 }
        ));
        // The last part may be small; so may a single one.
        assert!(select_parts(&[named(1), named(3)], recorded(&have)).is_ok());
        assert!(select_parts(&[named(3)], recorded(&have)).is_ok());
    }
}
