//! Plan stage: which CPUs each process of a trial may run on. With `--pin`, on a host
//! with 2 or more CPUs the storage server gets one of its own and everything else (the
//! other servers, mako, fdbcli, the gate's own thread) the rest, so the storage server
//! does not share its core with the client.

use std::fmt;

use serde::Serialize;

use crate::error::UsageError;

/// CPU sets of a trial's processes, as CPU numbers (`/sys/devices/system/cpu/cpuN`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pinning {
    /// The storage server's CPUs.
    pub storage: Vec<usize>,
    /// Everything else's CPUs: stateless and log servers, mako, fdbcli, the gate.
    pub others: Vec<usize>,
}

/// Whether the run pins, and why not when it does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PinPlan {
    Pinned(Pinning),
    /// Not pinned, with the reason (no `--pin`, or fewer than 2 CPUs).
    Off(String),
}

impl PinPlan {
    /// The pinning for this process's allowed CPUs (`sched_getaffinity`, so a container's
    /// or taskset's limit counts): the last allowed CPU for the storage server, the rest
    /// for everything else; off when `pin` is false or fewer than 2 CPUs are allowed.
    pub fn for_host(pin: bool) -> PinPlan {
        if !pin {
            return PinPlan::Off("the default; --pin turns it on".into());
        }
        match crate::process::allowed_cpus() {
            Ok(cpus) => PinPlan::of(&cpus),
            Err(e) => PinPlan::Off(format!("the allowed CPUs cannot be read: {e}")),
        }
    }

    /// The pinning of a host whose allowed CPUs are `cpus` (ascending).
    pub fn of(cpus: &[usize]) -> PinPlan {
        match cpus.split_last() {
            Some((&last, rest)) if !rest.is_empty() => PinPlan::Pinned(Pinning {
                storage: vec![last],
                others: rest.to_vec(),
            }),
            _ => PinPlan::Off(format!(
                "only {} CPU allowed: nothing to give the storage server alone",
                cpus.len()
            )),
        }
    }

    /// The pinning, when the run pins.
    pub fn pinned(&self) -> Option<&Pinning> {
        match self {
            PinPlan::Pinned(p) => Some(p),
            PinPlan::Off(_) => None,
        }
    }
}

impl fmt::Display for PinPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PinPlan::Pinned(p) => write!(
                f,
                "storage server on CPU {}; other servers, mako and the gate on CPU {} (--pin)",
                cpu_list(&p.storage),
                cpu_list(&p.others)
            ),
            PinPlan::Off(why) => write!(f, "off ({why})"),
        }
    }
}

/// The two halves of the CPUs this process may run on (ascending, equal in size; with an
/// odd count the last CPU is in neither, left to the gate), on which a duet's arms run.
/// Errors: fewer than 2 CPUs allowed, or they cannot be read (a [`UsageError`]).
pub fn duet_halves() -> Result<[Vec<usize>; 2], UsageError> {
    let cpus = crate::process::allowed_cpus().map_err(|e| {
        UsageError(format!(
            "--pairing duet: the allowed CPUs cannot be read: {e}"
        ))
    })?;
    halves_of(&cpus)
}

/// [`duet_halves`] of the allowed CPUs `cpus`.
fn halves_of(cpus: &[usize]) -> Result<[Vec<usize>; 2], UsageError> {
    let half = cpus.len() / 2;
    if half == 0 {
        return Err(UsageError(format!(
            "--pairing duet runs the two arms at once on a CPU each at least, and this gate \
             may run on {} CPU: give it 2 or more (taskset, the container's limit), or drop \
             --pairing duet",
            cpus.len()
        )));
    }
    Ok([cpus[..half].to_vec(), cpus[half..2 * half].to_vec()])
}

/// CPU numbers as a list, `0,1`.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storage_server_gets_the_last_cpu_and_one_cpu_is_not_pinned() {
        assert_eq!(
            PinPlan::of(&[0, 1, 2, 3]),
            PinPlan::Pinned(Pinning {
                storage: vec![3],
                others: vec![0, 1, 2]
            })
        );
        assert!(matches!(PinPlan::of(&[5]), PinPlan::Off(why) if why.contains("only 1 CPU")));
        assert!(matches!(PinPlan::for_host(false), PinPlan::Off(why) if why.contains("--pin")));
        let allowed = crate::process::allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        assert_eq!(PinPlan::for_host(true), PinPlan::of(&allowed));
    }

    #[test]
    fn a_duet_splits_the_allowed_cpus_in_two_equal_halves() {
        assert_eq!(halves_of(&[0, 1]).unwrap(), [vec![0], vec![1]]);
        assert_eq!(
            halves_of(&[0, 1, 2, 3, 4]).unwrap(),
            [vec![0, 1], vec![2, 3]]
        );
        assert_eq!(halves_of(&[2, 5, 6, 7]).unwrap(), [vec![2, 5], vec![6, 7]]);
        let e = halves_of(&[3]).unwrap_err().0;
        assert!(e.contains("may run on 1 CPU"), "{e}");
    }
}
