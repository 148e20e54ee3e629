//! Summary statistics of one metric over the seeds of a sweep point: mean, sample standard
//! deviation and the half-width of the 95 % confidence interval of the mean (Student's t with
//! n − 1 degrees of freedom: `ci95 = t(0.975, n−1) · s / √n`).
//!
//! Values that are NaN (a run where the metric is undefined, e.g. no message was delivered)
//! are left out: `n` counts the values used. With `n = 1` the sample standard deviation and
//! the interval are undefined and reported as NaN (`null` in JSON, an empty CSV cell), not 0,
//! so that a single run never looks exact; with `n = 0` the mean is NaN too.

use serde::{Deserialize, Deserializer, Serialize};

/// Statistics of one metric over several runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Mean.
    #[serde(deserialize_with = "nan_if_null")]
    pub mean: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's t).
    #[serde(deserialize_with = "nan_if_null")]
    pub ci95: f64,
    /// Number of (non-NaN) values.
    pub n: usize,
    /// Sample standard deviation (divisor n − 1).
    #[serde(deserialize_with = "nan_if_null")]
    pub std: f64,
    /// Smallest value.
    #[serde(deserialize_with = "nan_if_null")]
    pub min: f64,
    /// Largest value.
    #[serde(deserialize_with = "nan_if_null")]
    pub max: f64,
}

/// JSON has no NaN: serde_json writes it as `null`; read `null` back as NaN.
fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Summary {
    /// Summarises `values`, leaving out NaNs.
    pub fn of(values: &[f64]) -> Summary {
        let xs: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        let n = xs.len();
        if n == 0 {
            return Summary {
                mean: f64::NAN,
                ci95: f64::NAN,
                n,
                std: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let nf = n as f64;
        let mean = xs.iter().sum::<f64>() / nf;
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (std, ci95) = if n < 2 {
            (f64::NAN, f64::NAN)
        } else {
            let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
            let std = (ss / (nf - 1.0)).sqrt();
            (std, student_t975((n - 1) as u64) * std / nf.sqrt())
        };
        Summary {
            mean,
            ci95,
            n,
            std,
            min,
            max,
        }
    }
}

/// `mean ± ci95` with both to `decimals` places: the interval is printed to the mean's
/// precision, so one far below it (±6.7e-16 of a deterministic metric's rounding) prints
/// as ±0 at that precision, never in exponent notation. A NaN interval is left out.
pub fn mean_ci(mean: f64, ci95: f64, decimals: usize) -> String {
    let mean = fixed(mean, decimals);
    if ci95.is_nan() {
        mean
    } else {
        format!("{mean} ± {}", fixed(ci95, decimals))
    }
}

/// `x` to `decimals` places, without a minus sign on a value that rounds to zero.
pub fn fixed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// Two-sided 95 % critical values t(0.975, df) for df = 1..=30.
const T975: [f64; 30] = [
    12.706_204_736,
    4.302_652_730,
    3.182_446_305,
    2.776_445_105,
    2.570_581_836,
    2.446_911_851,
    2.364_624_252,
    2.306_004_135,
    2.262_157_163,
    2.228_138_852,
    2.200_985_160,
    2.178_812_830,
    2.160_368_656,
    2.144_786_688,
    2.131_449_546,
    2.119_905_299,
    2.109_815_578,
    2.100_922_040,
    2.093_024_054,
    2.085_963_447,
    2.079_613_845,
    2.073_873_068,
    2.068_657_610,
    2.063_898_562,
    2.059_538_553,
    2.055_529_439,
    2.051_830_516,
    2.048_407_142,
    2.045_229_642,
    2.042_272_456,
];

/// The 0.975 quantile of Student's t distribution with `df` degrees of freedom: a table for
/// df ≤ 30, above that the Cornish–Fisher expansion around the normal quantile (error below
/// 1e-6 at df = 31, shrinking with df). `df = 0` gives NaN.
pub fn student_t975(df: u64) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    if let Some(t) = usize::try_from(df - 1).ok().and_then(|i| T975.get(i)) {
        return *t;
    }
    // Abramowitz & Stegun 26.7.5.
    let z: f64 = 1.959_963_984_540_054;
    let v = df as f64;
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
    z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_print_to_the_means_precision() {
        assert_eq!(mean_ci(9.535_212_4, 6.7e-16, 4), "9.5352 ± 0.0000");
        assert_eq!(mean_ci(9.535_212_4, 0.012_34, 2), "9.54 ± 0.01");
        assert_eq!(mean_ci(1.5, f64::NAN, 3), "1.500");
        assert_eq!(mean_ci(-1e-9, 1e-17, 3), "0.000 ± 0.000");
    }

    #[test]
    fn expansion_matches_table_at_30() {
        // The expansion is good enough to continue the table without a visible step.
        let approx = {
            let z: f64 = 1.959_963_984_540_054;
            let v = 30.0;
            let z2 = z * z;
            z + (z2 + 1.0) * z / 4.0 / v
                + ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0 / (v * v)
                + (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0 / (v * v * v)
                + ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z
                    / 92160.0
                    / (v * v * v * v)
        };
        assert!((approx - student_t975(30)).abs() < 1e-5, "{approx}");
        // Known values: t(0.975, 40) = 2.021075, t(0.975, 120) = 1.979930.
        assert!((student_t975(40) - 2.021_075).abs() < 1e-5);
        assert!((student_t975(120) - 1.979_930).abs() < 1e-5);
        assert!(student_t975(1_000_000) - 1.959_964 < 1e-5);
        assert!(student_t975(0).is_nan());
    }
}
