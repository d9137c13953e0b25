//! What can go wrong before or outside a verdict, and the exit statuses it maps to. A
//! run's verdicts map to their own statuses (0, 1, 2) in `judge::exit_code`.

/// Bad user input: the message names the flag and the fix. Maps to exit status 64.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Exit status of a usage error (BSD `EX_USAGE`): a bad flag or value, a missing tool or
/// tree, an A/B whose arms cannot differ. Apart from 2, so CI can tell "fix the call"
/// from "the run failed".
pub const EXIT_USAGE: u8 = 64;

/// Exit status of any other error (nothing measured), as for a TIMEOUT or ERROR verdict.
pub const EXIT_ERROR: u8 = 2;

/// The exit status of an error that ended a command: [`EXIT_USAGE`] for a [`UsageError`]
/// (with or without context around it), else [`EXIT_ERROR`].
pub fn exit_status(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<UsageError>().is_some() {
        EXIT_USAGE
    } else {
        EXIT_ERROR
    }
}
