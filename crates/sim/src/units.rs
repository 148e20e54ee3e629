//! Quantities with units, as written in scenario files: rates ("10Mbit/s", "1.5Gbit/s"),
//! sizes ("64KiB", "4MB", or a plain number of bytes), durations ("10ms", "60s", "250us").
//! Rates and durations need their unit: `delay = 10` could mean seconds or milliseconds.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A link or traffic rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Rate(pub f64);

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Size(pub u64);

/// A duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

/// Splits "12.5Mbit/s" into (12.5, "Mbit/s").
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(s.len());
    // "1e3s" vs "10ms": an 'e' is part of the number only if a digit follows it.
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim()))
}

/// Parses a rate; the unit is required.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) = number_and_unit(s).ok_or_else(|| format!("not a rate: {s:?}"))?;
    let f = match unit {
        "bit/s" | "bps" => 1.0,
        "kbit/s" | "Kbit/s" | "kbps" => 1e3,
        "Mbit/s" | "Mbps" => 1e6,
        "Gbit/s" | "Gbps" => 1e9,
        _ => {
            return Err(format!(
                "unknown rate unit {unit:?} in {s:?} (use bit/s, kbit/s, Mbit/s, Gbit/s)"
            ));
        }
    };
    let r = v * f;
    if !(r > 0.0 && r.is_finite()) {
        return Err(format!("rate must be positive: {s:?}"));
    }
    Ok(Rate(r))
}

/// Parses a size; a bare number is bytes.
pub fn parse_size(s: &str) -> Result<Size, String> {
    let (v, unit) = number_and_unit(s).ok_or_else(|| format!("not a size: {s:?}"))?;
    let f = match unit {
        "" | "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "unknown size unit {unit:?} in {s:?} (use B, kB, MB, GB, KiB, MiB, GiB)"
            ));
        }
    };
    let b = v * f;
    if !(b >= 0.0 && b.is_finite() && b <= u64::MAX as f64) {
        return Err(format!(
            "size must be a non-negative number of bytes: {s:?}"
        ));
    }
    Ok(Size(b.round() as u64))
}

/// Parses a duration; the unit is required.
pub fn parse_duration(s: &str) -> Result<Dur, String> {
    let (v, unit) = number_and_unit(s).ok_or_else(|| format!("not a duration: {s:?}"))?;
    let f = match unit {
        "" => {
            let n = s.trim();
            return Err(format!(
                "a duration needs a unit: {n:?} (write e.g. \"{n}s\" or \"{n}ms\"; units: ns, \
                 us, ms, s, min)"
            ));
        }
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        _ => {
            return Err(format!(
                "unknown duration unit {unit:?} in {s:?} (use ns, us, ms, s, min)"
            ));
        }
    };
    let secs = v * f;
    if !(secs >= 0.0 && secs.is_finite() && secs < 1e12) {
        return Err(format!("duration must be non-negative: {s:?}"));
    }
    Ok(Dur(Duration::from_secs_f64(secs)))
}

macro_rules! unit_deserialize {
    ($ty:ident, $parse:ident, $what:literal) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        $parse(s).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        $parse(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        $parse(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        $parse(&v.to_string()).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_deserialize!(Rate, parse_rate, "a rate such as \"10Mbit/s\"");
unit_deserialize!(
    Size,
    parse_size,
    "a size such as \"64KiB\" or a number of bytes"
);
unit_deserialize!(Dur, parse_duration, "a duration such as \"10ms\"");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse() {
        assert_eq!(parse_rate("10Mbit/s"), Ok(Rate(10e6)));
        assert_eq!(parse_rate("1.5 Gbit/s"), Ok(Rate(1.5e9)));
        assert_eq!(parse_size("64KiB"), Ok(Size(65536)));
        assert_eq!(parse_size("4MB"), Ok(Size(4_000_000)));
        assert_eq!(parse_size("1452"), Ok(Size(1452)));
        assert_eq!(parse_duration("10ms"), Ok(Dur(Duration::from_millis(10))));
        assert_eq!(parse_duration("60s"), Ok(Dur(Duration::from_secs(60))));
        assert!(parse_rate("-1Mbit/s").is_err());
        assert!(parse_rate("10 furlongs").is_err());
        assert!(parse_size("12 apples").is_err());
    }

    #[test]
    fn a_duration_without_a_unit_is_refused() {
        for bare in ["10", "0.5", "0", " 3 "] {
            let e = parse_duration(bare).unwrap_err();
            assert!(e.contains("needs a unit"), "{bare:?}: {e}");
        }
        assert_eq!(parse_duration("0s"), Ok(Dur(Duration::ZERO)));
        assert_eq!(parse_duration("2min"), Ok(Dur(Duration::from_secs(120))));
        // A bare TOML number is refused the same way.
        #[derive(Debug, Deserialize)]
        struct T {
            d: Dur,
        }
        for text in ["d = 10", "d = 1.5", "d = \"10\""] {
            let e = toml::from_str::<T>(text)
                .map(|t| t.d)
                .unwrap_err()
                .to_string();
            assert!(e.contains("needs a unit"), "{text}: {e}");
        }
    }
}
