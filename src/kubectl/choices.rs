//! The choices of the plugin's flags: the output format and the state `--until` waits for.

use clap::ValueEnum;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Wide,
    Json,
    Yaml,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Until {
    /// Every OSD runs the current template and is Ready.
    Complete,
    /// `spec.paused` took effect.
    Paused,
    /// The rollout reached its partition or canary hold (or completed).
    Partitioned,
}
