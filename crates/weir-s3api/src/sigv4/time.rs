//! `x-amz-date` / `X-Amz-Date` timestamps (`YYYYMMDDTHHMMSSZ`, always UTC) as Unix seconds.
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
