//! Run stage, the host-speed probe: a fixed amount of CPU work, timed just before a
//! trial's cluster starts and just after it is torn down, with the host's steal time and
//! CPU clock over the trial ([`HostSpeed`]).
//!
//! Why: on a shared or virtual host the speed of the whole machine drifts between trials
//! (other tenants, the hypervisor's scheduling, thermal limits), and that drift is most of
//! a pair's noise. The probe's work is the same in both arms and runs while no server of
//! either arm exists, so no change to FDB can move it; the judge regresses each pair's log
//! TPS ratio on the probe's log speed ratio and removes the host's share (a control
//! variate, as CUPED does: Deng, Xu, Kohavi, Walker, WSDM 2013; `judge::stats::adjusted`).

use std::{hint::black_box, time::Instant};

use procfs::{Current, CurrentSI};

use crate::results::trial::HostSpeed;

/// Rounds of the probe's loop: about 0.75 s on a 2.3 GHz VM core in the gate's debug build.
/// Fixed, so that every probe of every run does the same work.
pub const PROBE_ROUNDS: u64 = 20_000_000;

/// 4 MiB of state: larger than a core's L2, so the probe also feels a neighbour's pressure on
/// the shared cache and memory bandwidth, as the storage server does.
const PROBE_WORDS: usize = 1 << 19;

/// The probe's work: `rounds` read-modify-writes at pseudo-random places of a 4 MiB
/// buffer (xorshift64 indices). Returns a checksum so the work cannot be optimised away.
fn work(rounds: u64) -> u64 {
    let mut buf = vec![0u64; PROBE_WORDS];
    let mask = PROBE_WORDS - 1;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x as usize) & mask;
        buf[k] = buf[k].wrapping_add(i);
    }
    black_box(buf.iter().fold(0u64, |a, b| a.wrapping_add(*b)))
}

/// Seconds the probe's work takes now, on the calling thread.
fn timed_probe() -> f64 {
    let t = Instant::now();
    black_box(work(black_box(PROBE_ROUNDS)));
    t.elapsed().as_secs_f64()
}

/// The host's CPU time counters (`/proc/stat`'s `cpu` line): (steal, total), ticks; `None`
/// where the kernel does not report steal time (bare metal without a hypervisor).
fn cpu_ticks() -> Option<(u64, u64)> {
    let t = procfs::KernelStats::current().ok()?.total;
    let steal = t.steal?;
    let total = t.user
        + t.nice
        + t.system
        + t.idle
        + t.iowait.unwrap_or(0)
        + t.irq.unwrap_or(0)
        + t.softirq.unwrap_or(0)
        + steal;
    Some((steal, total))
}

/// Mean CPU clock of the host's cores now, MHz (`/proc/cpuinfo`'s `cpu MHz`); `None` where
/// the kernel does not report it.
fn cpu_mhz() -> Option<f64> {
    let info = procfs::CpuInfo::current().ok()?;
    let mhz: Vec<f64> = (0..info.num_cores())
        .filter_map(|c| info.get_field(c, "cpu MHz")?.trim().parse().ok())
        .collect();
    (!mhz.is_empty()).then(|| mhz.iter().sum::<f64>() / mhz.len() as f64)
}

/// The probe taken before a trial, waiting for the one after it ([`Before::after`]).
pub struct Before {
    seconds: f64,
    ticks: Option<(u64, u64)>,
    mhz: Option<f64>,
}

/// Probes the host before a trial: call before its cluster starts.
pub fn before() -> Before {
    let (ticks, mhz) = (cpu_ticks(), cpu_mhz());
    Before {
        seconds: timed_probe(),
        ticks,
        mhz,
    }
}

impl Before {
    /// Probes the host again after the trial (call once its cluster is torn down) and
    /// returns both probes with the steal time and CPU clock between them.
    pub fn after(self) -> HostSpeed {
        let after_s = timed_probe();
        let (ticks, mhz) = (cpu_ticks(), cpu_mhz());
        let steal_pct = match (self.ticks, ticks) {
            (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => {
                Some(100.0 * s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
            }
            _ => None,
        };
        let cpu_mhz = match (self.mhz, mhz) {
            (Some(a), Some(b)) => Some((a + b) / 2.0),
            (a, b) => a.or(b),
        };
        HostSpeed {
            probe_rounds: PROBE_ROUNDS,
            before_s: self.seconds,
            after_s,
            steal_pct,
            cpu_mhz,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_fixed_and_not_optimised_away() {
        // The same rounds give the same checksum, other rounds another.
        assert_eq!(work(1000), work(1000));
        assert_ne!(work(1000), work(1001));
    }

    #[test]
    fn a_probe_records_its_rounds_and_positive_times() {
        let h = before().after();
        assert_eq!(h.probe_rounds, PROBE_ROUNDS);
        assert!(h.before_s > 0.0 && h.after_s > 0.0, "{h:?}");
        assert!(h.speed() > 0.0);
        if let Some(s) = h.steal_pct {
            assert!((0.0..=100.0).contains(&s), "{s}");
        }
    }
}
