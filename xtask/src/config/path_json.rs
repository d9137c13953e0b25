//! Config stage, paths in the JSON records: a path is an OS string (any bytes but NUL on
//! Unix), JSON text is UTF-8. Every path field of a record is written with
//! `#[serde(serialize_with = "path_json::lossy")]` (or `lossy_opt`): the bytes that are not
//! UTF-8 become U+FFFD in the record, for reading, while the gate itself keeps using the
//! real path. Without this a `--out` with such a byte made serde fail after the run.

use std::path::Path;

use serde::Serializer;

/// Writes `p` as a string, lossily (see the module doc).
pub fn lossy<P: AsRef<Path>, S: Serializer>(p: &P, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.as_ref().to_string_lossy())
}

/// [`lossy`] for an optional path: `null` when absent.
pub fn lossy_opt<P: AsRef<Path>, S: Serializer>(p: &Option<P>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&*p.as_ref().to_string_lossy()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use std::{ffi::OsStr, os::unix::ffi::OsStrExt as _, path::PathBuf};

    #[derive(serde::Serialize)]
    struct Record {
        #[serde(serialize_with = "super::lossy")]
        path: PathBuf,
        #[serde(serialize_with = "super::lossy_opt")]
        maybe: Option<PathBuf>,
        #[serde(serialize_with = "super::lossy_opt")]
        none: Option<PathBuf>,
    }

    #[test]
    fn a_path_that_is_not_utf8_is_written_lossily() {
        let odd = PathBuf::from(OsStr::from_bytes(b"/tmp/out-\xff"));
        let r = Record {
            path: odd.clone(),
            maybe: Some(odd),
            none: None,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"path":"/tmp/out-\ufffd","maybe":"/tmp/out-\ufffd","none":null}"#
                .replace("\\ufffd", "\u{fffd}")
        );
    }
}
