//! A Ceph release and how Ceph names it: read from a version string (`ceph version 16.2.15
//! (…) pacific (stable)`) or a release name (`require_osd_release`). A release is its major
//! version: Ceph orders them so, and lets an OSD boot at most two releases past the cluster's
//! `require_osd_release`.

use std::fmt;

/// A Ceph release, by its major version (16: Pacific, 18: Reef).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release(pub u32);

/// The named releases, by major version.
const NAMES: [(u32, &str); 9] = [
    (12, "luminous"),
    (13, "mimic"),
    (14, "nautilus"),
    (15, "octopus"),
    (16, "pacific"),
    (17, "quincy"),
    (18, "reef"),
    (19, "squid"),
    (20, "tentacle"),
];

impl Release {
    pub const PACIFIC: Self = Self(16);
    pub const REEF: Self = Self(18);

    /// The release Ceph names so (`pacific`, as `require_osd_release` says it).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.trim();
        (NAMES.iter())
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(major, _)| Self(*major))
    }

    /// Its name (`reef`), for the releases known by name.
    pub fn name(self) -> Option<&'static str> {
        (NAMES.iter())
            .find(|(major, _)| *major == self.0)
            .map(|(_, n)| *n)
    }

    /// The release of a version as Ceph prints it: `ceph version 18.2.7 (…) reef (stable)`
    /// (`ceph versions`, `osd metadata`'s `ceph_version`, `ceph-osd --version`), or a bare
    /// `18.2.7` / `v18.2.7`. The major version decides; a release name printed with it must
    /// agree (a version that says `16.2.15 … reef` is not read at all).
    pub fn of_version(text: &str) -> Option<Self> {
        let mut words = text.split_whitespace();
        let number = match words.next()? {
            "ceph" => match (words.next(), words.next()) {
                (Some("version"), Some(number)) => number,
                _ => return None,
            },
            number => number,
        };
        let number = number.strip_prefix('v').unwrap_or(number);
        let major = number.split('.').next()?;
        if !major.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let release = Self(major.parse().ok()?);
        // After the version: `(hash)`, then the name, then `(stable)` or `(dev)`.
        let named = words
            .filter(|w| !w.starts_with('('))
            .find_map(Self::from_name);
        match named {
            Some(named) if named != release => None,
            _ => Some(release),
        }
    }

    /// How many releases `later` is past this one (negative: before it).
    pub fn steps_to(self, later: Self) -> i64 {
        i64::from(later.0) - i64::from(self.0)
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "release {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests;
