//! What a valid host name and device path are. The CRD schema enforces the same rules through
//! [`HOST_PATTERN`] and [`DEVICE_PATH_PATTERN`]; the Rust checks serve the offline preview and
//! CRs stored before the rules existed.
//!
//! One disk must have one spelling: `/dev/sdb`, `/dev/sdb/`, `/dev//sdb` and `/dev/./sdb` would
//! otherwise be four OSDs on one disk, and `node1` / `NODE1` two OSDs on one host.

/// Kubernetes node names are lower-case DNS-1123 subdomains.
pub(crate) const HOST_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// The longest DNS-1123 subdomain (and so the longest node name).
pub(crate) const MAX_HOST_LEN: usize = 253;
/// Absolute and normalised: `/` then components that are neither empty, `.` nor `..`.
pub(crate) const DEVICE_PATH_PATTERN: &str = r"^(/([^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+))+$";
/// Linux's `PATH_MAX`.
pub(crate) const MAX_DEVICE_PATH_LEN: usize = 4096;

/// Why `host` is not a valid node name, if it is not.
pub(crate) fn host_problem(host: &str) -> Option<&'static str> {
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    if host.len() > MAX_HOST_LEN {
        Some("must be at most 253 characters (a Kubernetes node name)")
    } else if !host.split('.').all(label_ok) {
        Some(
            "must be a Kubernetes node name: lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit",
        )
    } else {
        None
    }
}

/// Why `path` is not an absolute, normalised device path, if it is not.
pub(crate) fn device_path_problem(path: &str) -> Option<&'static str> {
    if path.len() > MAX_DEVICE_PATH_LEN {
        return Some("must be at most 4096 bytes");
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Some("must be an absolute path (start with '/')");
    };
    for component in rest.split('/') {
        match component {
            "" => return Some("must not contain repeated '/' or end with '/'"),
            "." | ".." => return Some("must not contain '.' or '..' components"),
            _ => {}
        }
    }
    None
}

/// The one spelling of a device path: repeated `/` and `.` collapsed, `..` resolved
/// lexically, no trailing `/`. Paths that normalise alike name the same disk (a symlinked
/// `..` may be a different one; treating it as the same is the safe side).
pub(crate) fn normalise_device_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 1);
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => out.truncate(out.rfind('/').unwrap_or(0)),
            other => {
                out.push('/');
                out.push_str(other);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The one spelling of a host: node names are matched case-insensitively here, as DNS is.
pub(crate) fn normalise_host(host: &str) -> String {
    host.to_ascii_lowercase()
}

#[cfg(test)]
mod tests;
