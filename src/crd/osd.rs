//! OSD identity: the key `<host>:<data>`, the pod name prefix and the random pod-name suffix.
//!
//! Names equal the reference operator's wherever its name was valid; where it was not
//! (uppercase, `_`, non-ASCII, dots in odd hosts) we sanitise instead of failing.

use crate::crd::storage_rules::{normalise_device_path, normalise_host};
use rand::Rng;
use std::fmt;

/// Maximum length of a name prefix in characters (the suffix adds 5: 63 in all).
pub(crate) const PREFIX_LEN: usize = 58;
/// Length of the random pod-name suffix.
pub(crate) const SUFFIX_LEN: usize = 5;
const SUFFIX_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Identity of one OSD: the host it runs on and its data device. Displayed as `host:data`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OsdKey {
    pub host: String,
    pub data: String,
}

impl OsdKey {
    pub fn new(host: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            data: data.into(),
        }
    }

    /// Byte `i` of `host:data`, `None` past its end.
    fn byte(&self, i: usize) -> Option<u8> {
        let host = self.host.as_bytes();
        match i.checked_sub(host.len()) {
            None => Some(host[i]),
            Some(0) => Some(b':'),
            Some(j) => self.data.as_bytes().get(j - 1).copied(),
        }
    }

    /// Where `host:data` of `self` and `other` may first differ: the bytes before are equal.
    fn first_difference(&self, other: &Self) -> usize {
        let (left, right) = (self.host.as_bytes(), other.host.as_bytes());
        let same = common_prefix(left, right);
        if same < left.len() || same < right.len() {
            return same;
        }
        same + 1 + common_prefix(self.data.as_bytes(), other.data.as_bytes())
    }

    /// `host:data`, character by character.
    fn chars(&self) -> impl Iterator<Item = char> + '_ {
        self.host
            .chars()
            .chain(std::iter::once(':'))
            .chain(self.data.chars())
    }

    /// The prefix every pod of this OSD carries: ours (always a valid name part).
    pub fn name_prefix(&self) -> String {
        self.name_prefix_chars().collect()
    }

    /// Whether `name` starts with [`Self::name_prefix`] (without building it).
    pub(crate) fn prefixes(&self, name: &str) -> bool {
        let mut name = name.chars();
        self.name_prefix_chars().all(|c| name.next() == Some(c))
    }

    /// The reference operator's prefix, sanitised character by character.
    fn name_prefix_chars(&self) -> impl Iterator<Item = char> + '_ {
        let base =
            device_base(&self.data)
                .chars()
                .map(|c| if is_python_word_char(c) { c } else { '-' });
        "osd-"
            .chars()
            .chain(short_host(&self.host).chars())
            .chain(std::iter::once('-'))
            .chain(base)
            .chain(std::iter::once('-'))
            .take(PREFIX_LEN)
            .map(sanitised)
    }

    /// The disk this key names, whatever its spelling: two keys with one device id are one
    /// disk, and never get two pods.
    pub fn device_id(&self) -> DeviceId {
        DeviceId {
            host: normalise_host(&self.host),
            data: normalise_device_path(&self.data),
        }
    }
}

/// One physical disk: the host and data device of an [`OsdKey`], normalised.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId {
    pub host: String,
    pub data: String,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.data)
    }
}

/// The rollout order: `host:data` case-insensitively (character by character), ties broken
/// by the exact key so the order is total. Allocates nothing: keys are compared in every map
/// of the planner.
impl Ord for OsdKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        // One pass over the bytes: the first case-folded difference decides, else the first
        // exact one. Equal bytes are equal characters, so a non-ASCII byte matters only where
        // the keys first differ; from there on the character path decides.
        let mut exact = Ordering::Equal;
        let mut i = self.first_difference(other);
        loop {
            match (self.byte(i), other.byte(i)) {
                (None, None) => return exact,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(a), Some(b)) if a == b => {}
                (Some(a), Some(b)) if a.is_ascii() && b.is_ascii() => {
                    let (fa, fb) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
                    if fa != fb {
                        return fa.cmp(&fb);
                    }
                    if exact == Ordering::Equal {
                        exact = a.cmp(&b);
                    }
                }
                (Some(_), Some(_)) => break,
            }
            i += 1;
        }
        self.chars()
            .flat_map(char::to_lowercase)
            .cmp(other.chars().flat_map(char::to_lowercase))
            .then_with(|| self.chars().cmp(other.chars()))
    }
}

/// The length of the longest common prefix of `left` and `right`.
fn common_prefix(left: &[u8], right: &[u8]) -> usize {
    // Eight bytes at a time, then byte by byte from the first word that differs.
    let words = left
        .chunks_exact(8)
        .zip(right.chunks_exact(8))
        .take_while(|(l, r)| <[u8; 8]>::try_from(*l).ok() == <[u8; 8]>::try_from(*r).ok())
        .count();
    let start = words * 8;
    start
        + left[start..]
            .iter()
            .zip(&right[start..])
            .take_while(|(l, r)| l == r)
            .count()
}

impl PartialOrd for OsdKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for OsdKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.data)
    }
}

/// The reference operator's prefix, which may be an invalid name part (kept to document and
/// test compatibility: ours equals it whenever it is only `[a-z0-9-]`).
#[cfg(test)]
pub(crate) fn reference_name_prefix(host: &str, data: &str) -> String {
    let base: String = device_base(data)
        .chars()
        .map(|c| if is_python_word_char(c) { c } else { '-' })
        .collect();
    format!("osd-{}-{}-", short_host(host), base)
        .chars()
        .take(PREFIX_LEN)
        .collect()
}

/// Host up to its first `.`; the whole host when it starts with `.` or ends right after it.
fn short_host(host: &str) -> &str {
    match host.split_once('.') {
        Some((first, rest)) if !first.is_empty() && !rest.is_empty() => first,
        _ => host,
    }
}

/// Last path component of a device; the whole string when there is none (no slash, only a
/// leading slash, or a trailing slash).
fn device_base(data: &str) -> &str {
    match data.rsplit_once('/') {
        Some((before, last)) if !before.is_empty() && !last.is_empty() => last,
        _ => data,
    }
}

/// Python's `\w` for `str` patterns: alphanumeric (Unicode) or `_`.
fn is_python_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// ASCII letters lowercased, every character other than `[a-z0-9-]` replaced by `-`.
fn sanitised(c: char) -> char {
    match c {
        'a'..='z' | '0'..='9' | '-' => c,
        'A'..='Z' => c.to_ascii_lowercase(),
        _ => '-',
    }
}

/// Where pod-name suffixes come from: random in production, scripted in tests.
pub trait SuffixSource {
    fn next_suffix(&mut self) -> String;
}

/// Five random characters from `[a-z0-9]`, drawn anew for every pod.
#[derive(Default)]
pub struct RandomSuffix;

impl SuffixSource for RandomSuffix {
    fn next_suffix(&mut self) -> String {
        let mut rng = rand::rng();
        (0..SUFFIX_LEN)
            .map(|_| char::from(SUFFIX_ALPHABET[rng.random_range(0..SUFFIX_ALPHABET.len())]))
            .collect()
    }
}

/// Deterministic suffixes `00000`, `00001`, ... for tests and previews.
#[derive(Default)]
pub struct CountingSuffix(u32);

impl SuffixSource for CountingSuffix {
    fn next_suffix(&mut self) -> String {
        self.0 += 1;
        format!("{:05}", self.0 % 100_000)
    }
}

#[cfg(test)]
mod tests;
