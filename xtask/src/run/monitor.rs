//! Run stage: low-rate samples of a running trial: the work dir filesystem's usage
//! (peak growth, so a filling RAM disk shows) and the storage server's CPU over the
//! measurement window (a valid run keeps that single-threaded process near one core).
//!
//! One `statfs` a second and two reads of `/proc/<pid>/stat` a trial: the gate's own
//! overhead stays far below 0.5% of a core.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use nix::sys::statfs::statfs;

const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Samples of one trial.
#[derive(Debug)]
pub struct Monitor {
    workdir: PathBuf,
    used_at_start: Option<u64>,
    /// Largest growth of the work dir filesystem's used bytes since the trial started.
    pub peak_growth_bytes: u64,
    last_sample: Option<Instant>,
    cpu_window_start: Option<(Instant, f64)>,
}

impl Monitor {
    pub fn new(workdir: &Path) -> Monitor {
        Monitor {
            workdir: workdir.to_path_buf(),
            used_at_start: used_bytes(workdir),
            peak_growth_bytes: 0,
            last_sample: None,
            cpu_window_start: None,
        }
    }

    /// Takes a usage sample if the last one is a second old; call it often.
    pub fn tick(&mut self) {
        if self.last_sample.is_some_and(|t| t.elapsed() < SAMPLE_EVERY) {
            return;
        }
        self.last_sample = Some(Instant::now());
        if let (Some(start), Some(now)) = (self.used_at_start, used_bytes(&self.workdir)) {
            self.peak_growth_bytes = self.peak_growth_bytes.max(now.saturating_sub(start));
        }
    }

    /// Marks the start of the measurement window for the CPU of process `pid`; only the
    /// first call counts.
    pub fn start_cpu_window(&mut self, pid: u32) {
        if self.cpu_window_start.is_none() {
            self.cpu_window_start = cpu_seconds(pid).map(|cpu| (Instant::now(), cpu));
        }
    }

    /// CPU used by `pid` since [`Monitor::start_cpu_window`], in cores (CPU seconds per
    /// wall-clock second); `None` if the window never started.
    pub fn cpu_cores(&self, pid: u32) -> Option<f64> {
        let (t0, cpu0) = self.cpu_window_start?;
        let wall = t0.elapsed().as_secs_f64();
        let cpu = cpu_seconds(pid)?;
        (wall > 0.0).then(|| (cpu - cpu0) / wall)
    }
}

/// Used bytes of the filesystem holding `path` (total minus free).
fn used_bytes(path: &Path) -> Option<u64> {
    let st = statfs(path).ok()?;
    let block = st.block_size() as u64;
    Some((st.blocks() as u64).saturating_sub(st.blocks_free() as u64) * block)
}

/// CPU time of a process, user + system, in seconds (`/proc/<pid>/stat` fields 14 and 15).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    // After the command name, field 3 (state) is index 0, so fields 14/15 are 11/12.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    Some(ticks as f64 / hz as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_of_a_busy_process_is_near_one_core() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let mut m = Monitor::new(Path::new("/"));
        m.start_cpu_window(child.id());
        // CPU time, not wall time, is asserted: any host gives a busy loop some CPU.
        while cpu_seconds(child.id()).unwrap() < m.cpu_window_start.unwrap().1 + 0.2 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let cores = m.cpu_cores(child.id()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(cores > 0.0 && cores <= 1.05, "{cores}");
    }

    #[test]
    fn growth_of_the_work_dir_is_tracked() {
        let dir = if Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let mut m = Monitor::new(dir.path());
        std::fs::write(dir.path().join("data"), vec![1u8; 8 << 20]).unwrap();
        m.tick();
        // Other programs may write or delete at the same time; 8 MiB dominates.
        assert!(m.peak_growth_bytes >= 4 << 20, "{}", m.peak_growth_bytes);
    }
}
