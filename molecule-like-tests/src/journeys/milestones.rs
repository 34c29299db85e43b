//! A journey's milestones: the moments a scenario reached (on the recorders' clock or its
//! own), the figures it measured, and what it recorded, printed at the end as one aligned
//! table instead of one long `println!`. The figures feed the measured ranges in the README.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// One row of the table.
#[derive(Clone, Debug)]
enum Row {
    /// A moment on the clock; `since`: an earlier milestone it is measured from.
    Moment {
        what: String,
        at: Duration,
        since: Option<(String, Duration)>,
    },
    /// A duration or any other figure.
    Figure { what: String, value: String },
}

/// The milestones of one journey (see the module docs).
#[derive(Clone, Debug)]
pub struct Milestones {
    journey: String,
    clock: Instant,
    rows: Vec<Row>,
    /// Recordings and lists printed below the table, each under its title.
    sections: Vec<(String, String)>,
}

impl Milestones {
    /// Milestones on a clock of their own, started now.
    pub fn new(journey: impl Into<String>) -> Self {
        Self::on_clock(journey, Instant::now())
    }

    /// Milestones on `clock` (the recorders' clock: moments of recordings line up).
    pub fn on_clock(journey: impl Into<String>, clock: Instant) -> Self {
        Self {
            journey: journey.into(),
            clock,
            rows: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// `what` happened now; returns the moment.
    pub fn mark(&mut self, what: impl Into<String>) -> Duration {
        let at = self.clock.elapsed();
        self.mark_at(what, at);
        at
    }

    /// `what` happened at `at` on the clock (a moment read from a recording).
    pub fn mark_at(&mut self, what: impl Into<String>, at: Duration) -> &mut Self {
        self.rows.push(Row::Moment {
            what: what.into(),
            at,
            since: None,
        });
        self
    }

    /// `what` happened at `at`, reported also as the time since the milestone `from` (an
    /// earlier row's name; a name not marked yet counts from the clock's start).
    pub fn mark_since(&mut self, what: impl Into<String>, at: Duration, from: &str) -> &mut Self {
        let start = self.moment(from).unwrap_or_default();
        self.rows.push(Row::Moment {
            what: what.into(),
            at,
            since: Some((from.to_owned(), at.saturating_sub(start))),
        });
        self
    }

    /// A duration that is no moment (a span, a setup), in seconds.
    pub fn span(&mut self, what: impl Into<String>, length: Duration) -> &mut Self {
        self.figure(what, format!("{:.2}s", length.as_secs_f64()))
    }

    /// Any other figure or fact (a count, a condition, the ids asked about).
    pub fn figure(&mut self, what: impl Into<String>, value: impl Display) -> &mut Self {
        self.rows.push(Row::Figure {
            what: what.into(),
            value: value.to_string(),
        });
        self
    }

    /// A block printed below the table under `title` (a recording, a list of calls).
    pub fn section(&mut self, title: impl Into<String>, text: impl Display) -> &mut Self {
        self.sections.push((title.into(), text.to_string()));
        self
    }

    /// The moment of the milestone named `what`, when marked.
    pub fn moment(&self, what: &str) -> Option<Duration> {
        self.rows.iter().rev().find_map(|row| match row {
            Row::Moment { what: w, at, .. } if w == what => Some(*at),
            _ => None,
        })
    }

    /// The table: one line a milestone (name, moment, time since its reference), then the
    /// figures, then the sections.
    pub fn report(&self) -> String {
        let width = self
            .rows
            .iter()
            .map(|row| match row {
                Row::Moment { what, .. } | Row::Figure { what, .. } => what.chars().count(),
            })
            .max()
            .unwrap_or(0);
        let mut out = format!("==== {}\n", self.journey);
        for row in &self.rows {
            let line = match row {
                Row::Moment { what, at, since } => {
                    let since = since.as_ref().map_or_else(String::new, |(from, d)| {
                        format!("  +{:.2}s after {from}", d.as_secs_f64())
                    });
                    format!("{what:<width$}  at {:>8.2}s{since}", at.as_secs_f64())
                }
                Row::Figure { what, value } => format!("{what:<width$}  {value}"),
            };
            out.push_str("  ");
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for (title, text) in &self.sections {
            out.push_str(&format!("{title}:\n{}\n", text.trim_end()));
        }
        out
    }

    /// Prints [`Self::report`] (cargo shows it with `--nocapture` or when the test fails).
    pub fn print(&self) {
        println!("{}", self.report());
    }
}

#[cfg(test)]
mod tests;
