//! FDB's cluster file: `description:ID@address:port[,address:port...]`, the one
//! connection string a client and a tester need (`fdbclient/MonitorLeader.cpp`,
//! `ClusterConnectionString`). Read here to refuse a file FDB would refuse before any
//! process is started with it, and to name the cluster in messages.

/// The most a cluster file may hold, in bytes: FDB refuses a longer one ("File too
/// large"; `MAX_CLUSTER_FILE_BYTES`, `fdbclient/include/fdbclient/CoordinationInterface.h`).
pub const MAX_BYTES: usize = 60000;

/// A cluster file's connection string, checked as FDB checks it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConnectionString {
    /// Letters, digits and `_`.
    pub description: String,
    /// Letters and digits.
    pub id: String,
    /// Coordinators as written: `IP:PORT`, `[IPv6]:PORT` or `hostname:PORT`, each with an
    /// optional `:tls`; at least one, no two the same.
    pub coordinators: Vec<String>,
}

impl ConnectionString {
    /// Reads a cluster file's bytes as FDB does (`ClusterConnectionFile.cpp` reads bytes,
    /// not text): at most [`MAX_BYTES`], and a byte that is not UTF-8 is refused only where
    /// FDB looks, outside a comment. Errors: as [`ConnectionString::parse`], or too long.
    pub fn parse_bytes(bytes: &[u8]) -> Result<ConnectionString, String> {
        if bytes.len() > MAX_BYTES {
            return Err(format!(
                "it holds {} bytes, more than the {MAX_BYTES} FDB reads (fdbcli says \"File \
                 too large\")",
                bytes.len()
            ));
        }
        // A byte that is not UTF-8 becomes U+FFFD, which no description, ID or address
        // holds: refused there, dropped with a comment.
        ConnectionString::parse(&String::from_utf8_lossy(bytes))
    }

    /// Whether a coordinator is reached over TLS (`:tls`): FDB's clients then need a
    /// certificate (`flow/TLSConfig.cpp`).
    pub fn tls(&self) -> bool {
        self.coordinators.iter().any(|c| host_port(c) != c)
    }

    /// Reads a cluster file's text as FDB does (`trim` in `MonitorLeader.cpp`): a `#`
    /// starts a comment that runs to the end of its line, and spaces, tabs and line breaks
    /// anywhere are dropped, so a comment may follow the connection string on its line.
    /// Errors: what is wrong, with the offending part.
    pub fn parse(text: &str) -> Result<ConnectionString, String> {
        // A comment ends at `\n` or `\r`, as in FDB's `trim`.
        let trimmed: String = text
            .split(['\n', '\r'])
            .map(|l| l.split_once('#').map_or(l, |(before, _)| before))
            .flat_map(str::chars)
            .filter(|c| !matches!(c, ' ' | '\t' | '\r' | '\n'))
            .collect();
        let line = trimmed.as_str();
        match line.matches('@').count() {
            _ if line.is_empty() => return Err("it holds no connection string".into()),
            n if n > 1 => {
                return Err(format!(
                    "it holds {n} `@`: a cluster file holds one connection string"
                ))
            }
            _ => {}
        }
        let shape = "description:ID@address:port[,address:port...]";
        let (key, addrs) = line
            .split_once('@')
            .ok_or_else(|| format!("its connection string has no `@`: not {shape}"))?;
        let (description, id) = key
            .split_once(':')
            .ok_or_else(|| format!("its connection string has no `:` before `@`: not {shape}"))?;
        if !description
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "its description {description:?} holds a character other than letters, \
                 digits and `_`"
            ));
        }
        if !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!(
                "its ID {id:?} holds a character other than letters and digits"
            ));
        }
        let mut coordinators: Vec<String> = Vec::new();
        for addr in addrs.split(',') {
            check_address(addr)?;
            if coordinators.iter().any(|c| c == addr) {
                return Err(format!("it names the coordinator {addr} twice"));
            }
            coordinators.push(addr.to_string());
        }
        Ok(ConnectionString {
            description: description.to_string(),
            id: id.to_string(),
            coordinators,
        })
    }
}

/// The connection string as FDB writes it: `description:ID@address,address`.
impl std::fmt::Display for ConnectionString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}@{}",
            self.description,
            self.id,
            self.coordinators.join(",")
        )
    }
}

/// A coordinator as written (`host:port[:tls]`) without its `:tls`: the address to
/// connect to.
pub fn host_port(coordinator: &str) -> &str {
    coordinator.strip_suffix(":tls").unwrap_or(coordinator)
}

/// `host:port[:tls]`, host an IPv4 address, `[IPv6]` or a hostname, port 1-65535.
fn check_address(addr: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("its coordinator {addr:?} is not host:port: {why}"));
    let plain = host_port(addr);
    let (host, port) = match plain.strip_prefix('[') {
        Some(rest) => match rest.split_once("]:") {
            Some((ip, port)) if ip.parse::<std::net::Ipv6Addr>().is_ok() => (ip, port),
            _ => return bad("an IPv6 address goes in brackets, [::1]:4500"),
        },
        None => match plain.rsplit_once(':') {
            Some(hp) => hp,
            None => return bad("no port"),
        },
    };
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
    {
        return bad("no host, or a character no address or hostname has");
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => bad("the port is not a number from 1 to 65535"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gates_own_and_a_real_multi_host_cluster_file_are_read() {
        let c = ConnectionString::parse("perfgate:1a2b3c4d@127.0.0.1:4500\n").unwrap();
        assert_eq!(c.description, "perfgate");
        assert_eq!(c.coordinators, ["127.0.0.1:4500"]);
        // As FDB's own tests write them (`MonitorLeader.cpp`), with a comment line.
        let c = ConnectionString::parse(
            "# qualification cluster\nTestCluster:0@10.0.0.1:4500:tls,[::1]:4501,host-2.example:4500\n",
        )
        .unwrap();
        assert_eq!(c.id, "0");
        assert_eq!(c.coordinators.len(), 3);
        // A comment after the connection string, and blanks anywhere, as FDB's `trim`
        // drops them (fdbcli 8.0 takes this file).
        let c = ConnectionString::parse("hand:abc@127.0.0.1:4500 # main\r\n").unwrap();
        assert_eq!(c.coordinators, ["127.0.0.1:4500"]);
        // A comment ended by a lone CR (fdbcli 8.0 takes it).
        let c = ConnectionString::parse("# old mac\rhand:abc@127.0.0.1:4500\r").unwrap();
        assert_eq!(c.coordinators, ["127.0.0.1:4500"]);
        let c = ConnectionString::parse("hand:abc@127.0.0.1:4500,\n\t127.0.0.2:4500\n").unwrap();
        assert_eq!(c.coordinators, ["127.0.0.1:4500", "127.0.0.2:4500"]);
    }

    #[test]
    fn bytes_are_read_as_fdb_reads_them() {
        // Latin-1 in a comment: FDB drops the comment, bytes and all.
        let c =
            ConnectionString::parse_bytes(b"# caf\xe9 cluster\nhand:abc@127.0.0.1:4500\n").unwrap();
        assert_eq!(c.to_string(), "hand:abc@127.0.0.1:4500");
        assert!(!c.tls());
        let e = ConnectionString::parse_bytes(b"caf\xe9:abc@127.0.0.1:4500").unwrap_err();
        assert!(e.contains("description"), "{e}");
        // At FDB's limit it is read; one byte more is refused, as fdbcli refuses it.
        let mut text = b"hand:abc@127.0.0.1:4500:tls\n".to_vec();
        text.resize(MAX_BYTES, b'\n');
        assert!(ConnectionString::parse_bytes(&text).unwrap().tls());
        text.push(b'\n');
        let e = ConnectionString::parse_bytes(&text).unwrap_err();
        assert_eq!(
            e,
            "it holds 60001 bytes, more than the 60000 FDB reads (fdbcli says \"File too \
             large\")"
        );
    }

    #[test]
    fn what_fdb_refuses_is_refused_naming_the_part() {
        for (text, says) in [
            ("", "no connection string"),
            ("# only a comment\n", "no connection string"),
            ("a:b@1.2.3.4:1\na:c@1.2.3.4:1\n", "holds 2 `@`"),
            ("ab@1.2.3.4:4500", "no `:` before `@`"),
            ("a:b", "no `@`"),
            ("a-b:c@1.2.3.4:4500", "description \"a-b\""),
            ("a:b_c@1.2.3.4:4500", "ID \"b_c\""),
            ("a:b@1.2.3.4", "no port"),
            ("a:b@1.2.3.4:0", "1 to 65535"),
            ("a:b@1.2.3.4:99999", "1 to 65535"),
            ("a:b@1.2.3.4:4500,1.2.3.4:4500", "twice"),
            ("a:b@[zz]:4500", "IPv6"),
            ("a:b@:4500", "no host"),
            ("a:b@1.2.3.4:4500,", "no port"),
        ] {
            let e = ConnectionString::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
