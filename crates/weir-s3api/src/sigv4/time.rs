//! `x-amz-date` / `X-Amz-Date` timestamps (`YYYYMMDDTHHMMSSZ`, always UTC) as Unix seconds,
//! and HTTP dates (IMF-fixdate, RFC 9110 section 5.6.7), which S3 also takes in `x-amz-date`
//! or, without that, in `Date` (botocore sends one when its caller sets it): the string to
//! sign then holds the same instant in the ISO 8601 form.
//!
//! Sans-IO: the caller passes the current time; nothing here reads a clock. The civil-date
//! conversion is Howard Hinnant's `days_from_civil`, a few lines, rather than a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// A parsed SigV4 timestamp: its text (part of every string to sign) and its Unix time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AmzDate {
    pub(crate) text: [u8; 16],
    pub(crate) unix: i64,
}

impl AmzDate {
    /// Parses `YYYYMMDDTHHMMSSZ` strictly (digits where digits go, a real calendar date).
    pub(crate) fn parse(s: &str) -> Option<AmzDate> {
        let b = s.as_bytes();
        if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
            return None;
        }
        let num = |range: std::ops::Range<usize>| -> Option<i64> {
            b[range].iter().try_fold(0i64, |acc, &d| {
                d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
            })
        };
        let (year, month, day) = (num(0..4)?, num(4..6)?, num(6..8)?);
        let (hour, minute, second) = (num(9..11)?, num(11..13)?, num(13..15)?);
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return None;
        }
        if hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let unix = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
        let mut text = [0u8; 16];
        text.copy_from_slice(b);
        Some(AmzDate { text, unix })
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, or with `+0000`/`-0000` for
    /// `GMT`) strictly, as the same instant in the ISO 8601 basic form.
    pub(crate) fn parse_http_date(s: &str) -> Option<AmzDate> {
        const MONTHS: [&[u8]; 12] = [
            b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
            b"Dec",
        ];
        // RFC 2822's zone `+0000`/`-0000` is UTC too (Python's `formatdate`, which botocore
        // sends in `Date`).
        let s = [" GMT", " +0000", " -0000"]
            .iter()
            .find_map(|zone| s.strip_suffix(zone))?;
        let b = s.as_bytes();
        if b.len() != 25
            || &b[3..5] != b", "
            || b[7] != b' '
            || b[11] != b' '
            || b[16] != b' '
            || b[19] != b':'
            || b[22] != b':'
        {
            return None;
        }
        let month = MONTHS.iter().position(|m| *m == &b[8..11])? + 1;
        // The digits are checked by `parse`, which gets them in its own order.
        let mut text = [0u8; 16];
        text[..4].copy_from_slice(&b[12..16]);
        text[4] = b'0' + u8::try_from(month / 10).ok()?;
        text[5] = b'0' + u8::try_from(month % 10).ok()?;
        text[6..8].copy_from_slice(&b[5..7]);
        text[8] = b'T';
        text[9..11].copy_from_slice(&b[17..19]);
        text[11..13].copy_from_slice(&b[20..22]);
        text[13..15].copy_from_slice(&b[23..25]);
        text[15] = b'Z';
        AmzDate::parse(std::str::from_utf8(&text).ok()?)
    }

    /// The whole timestamp, as sent.
    pub(crate) fn date_time_text(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }

    /// The `YYYYMMDD` part, which the credential scope must repeat.
    pub(crate) fn date(&self) -> &str {
        // Checked ASCII digits in `parse`.
        std::str::from_utf8(&self.text[..8]).unwrap_or("")
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `now` as Unix seconds (times before 1970 are negative).
pub(crate) fn unix_seconds(now: SystemTime) -> i64 {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_instants() {
        assert_eq!(AmzDate::parse("19700101T000000Z").unwrap().unix, 0);
        // Fri, 24 May 2013 00:00:00 GMT, the date of AWS's examples.
        assert_eq!(
            AmzDate::parse("20130524T000000Z").unwrap().unix,
            1_369_353_600
        );
        assert_eq!(
            AmzDate::parse("20240229T235959Z").unwrap().unix,
            1_709_251_199
        );
        assert_eq!(
            AmzDate::parse("20130524T000000Z").unwrap().date(),
            "20130524"
        );
    }

    #[test]
    fn http_dates_are_the_same_instants() {
        let d = AmzDate::parse_http_date("Fri, 24 May 2013 00:00:00 GMT").unwrap();
        assert_eq!(d, AmzDate::parse("20130524T000000Z").unwrap());
        let d = AmzDate::parse_http_date("Sun, 06 Dec 2026 19:40:07 GMT").unwrap();
        assert_eq!(d.date_time_text(), "20261206T194007Z");
        let d = AmzDate::parse_http_date("Sun, 06 Dec 2026 19:40:07 -0000").unwrap();
        assert_eq!(d.date_time_text(), "20261206T194007Z");
        for bad in [
            "Fri, 24 May 2013 00:00:00 UTC",
            "Fri, 24 May 2013 00:00:00 +0100",
            "Fri, 24 May 2013 00:00:00 ",
            "Fri, 24 Maj 2013 00:00:00 GMT",
            "Fri, 31 Feb 2013 00:00:00 GMT",
            "Fri, 24 May 2013 0:00:00 GMT",
            "Friday, 24-May-13 00:00:00 GMT",
            "20130524T000000Z",
        ] {
            assert_eq!(AmzDate::parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn refuses_malformed() {
        for bad in [
            "20130524T000000",
            "20130524 000000Z",
            "2013052AT000000Z",
            "20130230T000000Z",
            "20230229T000000Z",
            "20131324T000000Z",
            "20130524T240000Z",
            "+0130524T000000Z",
        ] {
            assert_eq!(AmzDate::parse(bad), None, "{bad}");
        }
    }
}
