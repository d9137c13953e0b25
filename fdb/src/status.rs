//! `fdbcli --exec "status json"`: the part of FDB's machine-readable status the gate
//! reads.

/// `client.database_status` of a `status json` answer (`fdbclient/StatusClient.actor.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatabaseStatus {
    pub available: bool,
    pub healthy: bool,
}

/// Reads `client.database_status` from `status json` output; `None` when fdbcli printed
/// nothing or something else (as it does before the database exists).
pub fn parse_database_status(text: &str) -> Option<DatabaseStatus> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let s = v.get("client")?.get("database_status")?;
    Some(DatabaseStatus {
        available: s.get("available")?.as_bool()?,
        healthy: s.get("healthy").and_then(|h| h.as_bool()).unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_right_after_configure_is_available_but_not_healthy() {
        let s = parse_database_status(include_str!("../testdata/status-json-available.json"));
        assert_eq!(
            s,
            Some(DatabaseStatus {
                available: true,
                healthy: false
            })
        );
    }

    #[test]
    fn empty_status_of_an_unconfigured_cluster_is_not_available() {
        // fdbcli printed nothing before configure (fixture status-json-unconfigured.json).
        assert_eq!(parse_database_status(""), None);
        assert_eq!(parse_database_status("{\"client\": {}}"), None);
    }
}
