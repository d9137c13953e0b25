//! Plan stage, I/O shell: the facts of this machine recorded with every run and every
//! baseline, so that numbers are compared like with like.

use serde::{Deserialize, Serialize};

/// The machine the run was on, to compare like with like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    /// Logical CPUs available to the gate.
    pub cpus: usize,
    /// `MemTotal` from /proc/meminfo, bytes.
    pub memory_bytes: u64,
}

impl Host {
    /// Reads this machine's facts (empty or 0 where unreadable).
    pub fn read() -> Host {
        let uname = nix::sys::utsname::uname().ok();
        let proc_field = |file: &str, key: &str| -> Option<String> {
            let text = std::fs::read_to_string(file).ok()?;
            let line = text.lines().find(|l| l.starts_with(key))?;
            Some(line.split_once(':')?.1.trim().to_string())
        };
        Host {
            hostname: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_default(),
            kernel: uname
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
            cpu_model: proc_field("/proc/cpuinfo", "model name").unwrap_or_default(),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            memory_bytes: proc_field("/proc/meminfo", "MemTotal")
                .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
                .map_or(0, |kb| kb * 1024),
        }
    }
}

impl Host {
    /// The class of machine a recorded baseline is valid for: CPU model, logical CPUs and
    /// memory (GiB). Hostname and kernel are recorded but do not change the class.
    pub fn class(&self) -> String {
        format!(
            "{} x{}, {} GiB",
            self.cpu_model,
            self.cpus,
            (self.memory_bytes as f64 / f64::from(1u32 << 30)).round()
        )
    }
}
