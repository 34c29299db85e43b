//! What one `ceph` call left, whichever way it ran (a process, or the long-lived session).

/// Its exit code (`None`: ended by a signal), stdout, stderr: the CLI's shape.
#[derive(Debug)]
pub(super) struct Finished {
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}
