//! What a paper says and whether braid agrees: a stated number with its tolerance
//! ([`Expect`]), a data point ([`Check`]), a claim without a number ([`Claim`]), and the
//! verdict ([`Verdict`]) the report prints and the quick test asserts.

use crate::stats::Summary;

/// How far a value may be from a number the paper states ("around", "nearly") and still
/// hold: ±10 %.
pub const TOLERANCE_PCT: f64 = 10.0;

/// What the paper says about one value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expect {
    /// About this value (within [`TOLERANCE_PCT`]).
    About(f64),
    /// Below this value.
    Below(f64),
    /// Above this value.
    Above(f64),
    /// Within this range ("slightly above 5": more than 5, less than 6).
    Between(f64, f64),
}

impl Expect {
    /// Deviation of `v` from the paper in %, for a stated value.
    pub fn deviation_pct(&self, v: f64) -> Option<f64> {
        match *self {
            Expect::About(p) if p != 0.0 => Some((v - p) / p * 100.0),
            _ => None,
        }
    }

    /// Whether `v` agrees with the paper.
    pub fn holds(&self, v: f64) -> bool {
        match *self {
            Expect::About(_) => self
                .deviation_pct(v)
                .is_some_and(|d| d.abs() <= TOLERANCE_PCT),
            Expect::Below(b) => v < b,
            Expect::Above(b) => v > b,
            Expect::Between(lo, hi) => v > lo && v < hi,
        }
    }

    /// The paper's value as the report prints it.
    pub fn show(&self) -> String {
        match *self {
            Expect::About(p) => format!("≈ {p}"),
            Expect::Below(p) => format!("< {p}"),
            Expect::Above(p) => format!("> {p}"),
            Expect::Between(lo, hi) => format!("{lo} … {hi}"),
        }
    }
}

/// Whether braid agrees with the paper on a number or a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It agrees (within the tolerance, or the claim's comparison is true).
    Holds,
    /// It does not.
    Departs,
    /// A value it needs was not run (a variant without that point).
    NotRun,
}

impl Verdict {
    /// The word the report prints.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Departs => "departs",
            Verdict::NotRun => "not run",
        }
    }
}

/// One number the paper states, with braid's value.
#[derive(Debug, Clone)]
pub struct Check {
    /// A stable name (`fig4/75ms/rr/full-sigma`): what [`departure`] looks up.
    pub id: String,
    /// The figure (`Fig. 4`).
    pub figure: &'static str,
    /// The curve and point in the paper's words.
    pub what: String,
    /// The metric compared (a metric of the summaries, or a quantity derived from them).
    pub metric: String,
    /// The paper's value.
    pub paper: Expect,
    /// braid's mean and 95 % CI over the seeds (None: the point was not run).
    pub braid: Option<Summary>,
}

impl Check {
    /// Holds when braid's mean agrees with [`Check::paper`].
    pub fn verdict(&self) -> Verdict {
        match self.braid {
            Some(s) if s.n > 0 && !s.mean.is_nan() => {
                if self.paper.holds(s.mean) {
                    Verdict::Holds
                } else {
                    Verdict::Departs
                }
            }
            _ => Verdict::NotRun,
        }
    }
}

/// A claim of the paper without a number of its own, computed from braid's means.
#[derive(Debug, Clone)]
pub struct Claim {
    /// A stable name, as [`Check::id`].
    pub id: String,
    /// The figure.
    pub figure: &'static str,
    /// The claim, and how braid's values decide it.
    pub statement: String,
    /// braid's values the decision used.
    pub values: String,
    /// The decision (None: a value was not run).
    pub holds: Option<bool>,
}

impl Claim {
    /// A claim decided by `holds` from `inputs`, not run if any input is NaN.
    pub fn new(
        id: String,
        figure: &'static str,
        statement: String,
        values: String,
        inputs: &[f64],
        holds: bool,
    ) -> Self {
        let run = inputs.iter().all(|v| !v.is_nan());
        Claim {
            id,
            figure,
            statement,
            values,
            holds: run.then_some(holds),
        }
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        match self.holds {
            Some(true) => Verdict::Holds,
            Some(false) => Verdict::Departs,
            None => Verdict::NotRun,
        }
    }
}

/// A known departure from the paper: the number or claim, and why braid differs.
#[derive(Debug, Clone, Copy)]
pub struct Departure {
    /// [`Check::id`] or [`Claim::id`]; `*` matches any run of characters.
    pub id: &'static str,
    /// Why, in a few sentences (the report prints it).
    pub reason: &'static str,
}

/// Whether `id` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, id: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == id,
        Some((head, rest)) => {
            id.starts_with(head)
                && (0..=id.len() - head.len())
                    .filter(|&i| id.is_char_boundary(head.len() + i))
                    .any(|i| glob(rest, &id[head.len() + i..]))
        }
    }
}

/// The reason `departures` give for `id`, if any.
pub fn departure(departures: &[Departure], id: &str) -> Option<&'static str> {
    departures.iter().find(|d| glob(d.id, id)).map(|d| d.reason)
}

/// The departures a report cites, each cause once: a row cites its cause by a label
/// ("D1"), and [`Citations::section`] prints each cause's paragraph once, however many rows
/// it covers. Causes are numbered in the order they are first cited; entries of the list
/// with the same reason are one cause.
#[derive(Debug, Clone)]
pub struct Citations<'a> {
    departures: &'a [Departure],
    /// The reasons cited, in order of first citation, with the ids that cited them.
    cited: Vec<(&'static str, Vec<String>)>,
}

impl<'a> Citations<'a> {
    /// Nothing cited yet.
    pub fn new(departures: &'a [Departure]) -> Self {
        Citations {
            departures,
            cited: Vec::new(),
        }
    }

    /// The label of the cause `departures` give for `id` ("D2"), if any.
    pub fn cite(&mut self, id: &str) -> Option<String> {
        let reason = departure(self.departures, id)?;
        let n = match self.cited.iter().position(|(r, _)| *r == reason) {
            Some(i) => i,
            None => {
                self.cited.push((reason, Vec::new()));
                self.cited.len() - 1
            }
        };
        let ids = &mut self.cited[n].1;
        if !ids.iter().any(|i| i == id) {
            ids.push(id.to_string());
        }
        Some(format!("D{}", n + 1))
    }

    /// `## Departures` with one paragraph per cause cited, naming the numbers and claims it
    /// covers; empty if none was.
    pub fn section(&self) -> String {
        if self.cited.is_empty() {
            return String::new();
        }
        let mut md = String::from("\n## Departures\n\n");
        for (i, (reason, ids)) in self.cited.iter().enumerate() {
            let covers: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
            md.push_str(&format!(
                "**D{}** ({}): {reason}\n\n",
                i + 1,
                covers.join(", ")
            ));
        }
        md
    }
}

/// What a quick test asserts empty: every (id, description, verdict) that differs from what
/// the report states (holds, unless `departures` lists it: departs), and every listed
/// departure that matches no id (a stale report).
pub fn mismatches(departures: &[Departure], verdicts: &[(String, String, Verdict)]) -> Vec<String> {
    let mut out = Vec::new();
    for (id, what, v) in verdicts {
        let expected = if departure(departures, id).is_some() {
            Verdict::Departs
        } else {
            Verdict::Holds
        };
        if *v != expected {
            out.push(format!(
                "{id}: {} where the report says {}: {what}",
                v.word(),
                expected.word()
            ));
        }
    }
    for d in departures {
        if !verdicts
            .iter()
            .any(|(id, _, _)| departure(std::slice::from_ref(d), id).is_some())
        {
            out.push(format!("departure {} matches no number or claim", d.id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_one_paragraph_however_many_rows_cite_it() {
        let d = [
            Departure {
                id: "fig6/*/rr/*",
                reason: "the window stalls",
            },
            Departure {
                id: "fig7/*",
                reason: "another cause",
            },
        ];
        let mut c = Citations::new(&d);
        assert_eq!(c.cite("fig7/fixed").as_deref(), Some("D1"));
        assert_eq!(c.cite("fig6/75/rr/full").as_deref(), Some("D2"));
        assert_eq!(c.cite("fig6/150/rr/full").as_deref(), Some("D2"));
        assert_eq!(c.cite("fig5/x"), None);
        let md = c.section();
        assert_eq!(md.matches("the window stalls").count(), 1, "{md}");
        assert!(md.contains("**D2** (`fig6/75/rr/full`, `fig6/150/rr/full`): the window stalls"));
        assert!(Citations::new(&d).section().is_empty());
    }

    #[test]
    fn about_holds_within_the_tolerance_only() {
        let e = Expect::About(20.0);
        assert!(e.holds(21.9) && e.holds(18.1));
        assert!(!e.holds(22.1) && !e.holds(17.9));
        assert!(!e.holds(f64::NAN));
        assert!(Expect::Between(5.0, 6.0).holds(5.7));
        assert!(!Expect::Between(5.0, 6.0).holds(4.9));
    }

    #[test]
    fn a_claim_with_a_missing_value_is_not_run() {
        let c = Claim::new(
            "x".into(),
            "Fig. 1",
            "s".into(),
            "v".into(),
            &[1.0, f64::NAN],
            true,
        );
        assert_eq!(c.verdict(), Verdict::NotRun);
        let d = [Departure {
            id: "fig6/*",
            reason: "r",
        }];
        assert_eq!(departure(&d, "fig6/25/rr"), Some("r"));
        assert_eq!(departure(&d, "fig7/x"), None);
        assert!(glob(
            "fig7/fixed/*/delay",
            "fig7/fixed/nr-sack-true/128KiB/delay"
        ));
        assert!(!glob(
            "fig7/fixed/*/delay",
            "fig7/fixed/nr-sack-true/128KiB/goodput"
        ));
        assert!(glob("a*", "a") && !glob("a*b", "ab/c"));
    }

    #[test]
    fn mismatches_flag_every_verdict_the_report_would_not_state() {
        let d = [
            Departure {
                id: "a/*",
                reason: "r",
            },
            Departure {
                id: "gone",
                reason: "r",
            },
        ];
        let v = |id: &str, verdict| (id.to_string(), String::new(), verdict);
        let got = mismatches(
            &d,
            &[
                v("a/1", Verdict::Departs),
                v("a/2", Verdict::Holds),
                v("b", Verdict::Departs),
                v("c", Verdict::Holds),
            ],
        );
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].starts_with("a/2: holds where the report says departs"));
        assert!(got[1].starts_with("b: departs where the report says holds"));
        assert!(got[2].contains("gone matches no"));
    }
}
