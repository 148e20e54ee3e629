//! Progress of a campaign of runs: a bar on a terminal; elsewhere (CI logs, batch jobs) one
//! line on stderr every few seconds with runs done/total, elapsed time and an ETA.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// The wall clock (the CLI reports it; simulations never read it).
#[expect(
    clippy::disallowed_methods,
    reason = "the CLI reports wall-clock time; simulations never read it"
)]
pub(crate) fn wall_clock() -> Instant {
    Instant::now()
}

/// Shows how far a campaign is.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    /// Last line printed, the phase (figure) it was about, and when that phase began.
    last: Mutex<(Instant, String, Instant)>,
}

impl Progress {
    /// A progress display: a bar if stderr is a terminal, else lines.
    pub(crate) fn new() -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(0);
            b.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} {msg} [{wide_bar}] {pos}/{len} runs, ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        });
        let start = wall_clock();
        Self {
            bar,
            start,
            last: Mutex::new((start, String::new(), start)),
        }
    }

    /// `done` of `total` runs of `phase` (empty: the only phase) are finished.
    pub(crate) fn update(&self, phase: &str, done: usize, total: usize) {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let new_phase = last.1 != phase;
        if new_phase {
            last.1 = phase.to_string();
            last.2 = wall_clock();
        }
        if let Some(b) = &self.bar {
            if new_phase {
                b.set_message(phase.to_string());
            }
            b.set_length(total as u64);
            b.set_position(done as u64);
            return;
        }
        let now = wall_clock();
        if !(done == total || new_phase || now - last.0 >= LINE_EVERY) {
            return;
        }
        last.0 = now;
        let elapsed = now - self.start;
        // The ETA of this phase from its own pace (phases differ in cost per run).
        let in_phase = now - last.2;
        let eta = (done > 0 && done < total)
            .then(|| in_phase.mul_f64((total - done) as f64 / done as f64))
            .map_or_else(String::new, |d| format!(", ETA {:.0} s", d.as_secs_f64()));
        let phase = if phase.is_empty() {
            String::new()
        } else {
            format!("{phase}: ")
        };
        eprintln!(
            "progress: {phase}{done}/{total} runs, {:.0} s{eta}",
            elapsed.as_secs_f64()
        );
    }

    /// Removes the bar (lines stay).
    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
