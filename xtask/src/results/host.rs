//! Plan stage, I/O shell: the facts of this machine recorded with every run and every
//! baseline, so that numbers are compared like with like.

use serde::{Deserialize, Serialize};

/// What [`cpu_identity`] gives when `/proc/cpuinfo` names no CPU: a host class holding it
/// matches nothing, itself included (see [`class_identifies_cpu`]).
pub const UNKNOWN_CPU: &str = "unknown CPU";

/// The machine the run was on, to compare like with like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub kernel: String,
    /// The CPU as Linux names it ([`cpu_identity`]); [`UNKNOWN_CPU`] or, in records from
    /// before the CPU was read on every architecture, "" when it could not be told.
    pub cpu_model: String,
    /// Logical CPUs available to the gate.
    pub cpus: usize,
    /// `MemTotal` from /proc/meminfo, bytes.
    pub memory_bytes: u64,
}

impl Host {
    /// Reads this machine's facts (empty or 0 where unreadable; the CPU [`UNKNOWN_CPU`]).
    pub fn read() -> Host {
        let uname = nix::sys::utsname::uname().ok();
        let proc_field = |file: &str, key: &str| -> Option<String> {
            let text = std::fs::read_to_string(file).ok()?;
            let line = text.lines().find(|l| l.starts_with(key))?;
            Some(line.split_once(':')?.1.trim().to_string())
        };
        let machine = uname
            .as_ref()
            .map(|u| u.machine().to_string_lossy().into_owned())
            .unwrap_or_default();
        Host {
            hostname: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_default(),
            kernel: uname
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
            cpu_model: cpu_identity(
                &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
                &machine,
            ),
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
    /// The class of machine a recorded baseline is valid for: CPU, logical CPUs and
    /// memory (GiB). Hostname and kernel are recorded but do not change the class.
    pub fn class(&self) -> String {
        let cpu = if self.cpu_model.trim().is_empty() {
            UNKNOWN_CPU
        } else {
            &self.cpu_model
        };
        format!(
            "{cpu} x{}, {} GiB",
            self.cpus,
            (self.memory_bytes as f64 / f64::from(1u32 << 30)).round()
        )
    }
}

/// Whether a host class (as [`Host::class`] writes it, or an older record's) names its
/// CPU: `false` for [`UNKNOWN_CPU`] and for the empty CPU of records made before ARM CPUs
/// were identified (" x2, 24 GiB"). Two such classes are equal strings but may be any two
/// machines, so callers treat them as a mismatch.
pub fn class_identifies_cpu(class: &str) -> bool {
    !(class.starts_with(' ') || class.starts_with(UNKNOWN_CPU))
}

/// The CPU named by `/proc/cpuinfo`'s text, on every architecture Linux reports:
/// - Arm: `CPU implementer`, `CPU part` and `CPU variant` (MIDR fields; `model name`,
///   where an arm64 kernel prints one, is the generic "ARMv8 Processor"), e.g.
///   `aarch64 implementer 0x41 part 0xd0c variant 0x3` (Neoverse N1, AWS Graviton2);
/// - x86 and others that print it: `model name`;
/// - MIPS `cpu model`, PowerPC `cpu`, RISC-V `uarch` or `mvendorid`/`marchid`/`mimpid`,
///   s390x `machine`;
/// - else [`UNKNOWN_CPU`].
///
/// A host with cores of more than one kind (big.LITTLE) gets each kind once, in order,
/// joined by " + ". `machine` is the kernel's architecture (`uname -m`), prefixed to the
/// identifiers that are numbers only.
pub fn cpu_identity(cpuinfo: &str, machine: &str) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for block in cpuinfo.split("\n\n") {
        let field = |key: &str| -> Option<&str> {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key && !v.trim().is_empty()).then_some(v.trim())
            })
        };
        let numbered = |fields: &[(&str, &str)]| -> Option<String> {
            let parts: Option<Vec<String>> = fields
                .iter()
                .map(|(key, name)| field(key).map(|v| format!("{name} {v}")))
                .collect();
            parts.map(|p| format!("{machine} {}", p.join(" ")).trim().to_string())
        };
        let kind = numbered(&[
            ("CPU implementer", "implementer"),
            ("CPU part", "part"),
            ("CPU variant", "variant"),
        ])
        .or_else(|| {
            ["model name", "cpu model", "cpu", "uarch"]
                .iter()
                .find_map(|k| field(k).map(str::to_string))
        })
        .or_else(|| {
            numbered(&[
                ("mvendorid", "mvendorid"),
                ("marchid", "marchid"),
                ("mimpid", "mimpid"),
            ])
        })
        .or_else(|| s390x_machine(block).map(|m| format!("{machine} machine {m}")));
        if let Some(kind) = kind {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    if kinds.is_empty() {
        UNKNOWN_CPU.to_string()
    } else {
        kinds.join(" + ")
    }
}

/// s390x prints its machine type inside each `processor N:` line:
/// `processor 0: version = 00,  identification = 0A1B2C,  machine = 8561`.
fn s390x_machine(block: &str) -> Option<&str> {
    block.lines().find_map(|l| {
        let rest = l.strip_prefix("processor ")?;
        let at = rest.find("machine = ")? + "machine = ".len();
        rest[at..].split_whitespace().next()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpuinfo(name: &str) -> String {
        let path = format!("{}/testdata/cpuinfo/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn x86_keeps_its_model_name_so_older_records_still_match() {
        assert_eq!(
            cpu_identity(&cpuinfo("x86-this-host"), "x86_64"),
            "Intel(R) Xeon(R) Processor"
        );
    }

    #[test]
    fn graviton2_and_graviton3_are_different_classes() {
        let g2 = cpu_identity(&cpuinfo("aarch64-graviton2"), "aarch64");
        let v1 = cpu_identity(&cpuinfo("aarch64-neoverse-v1"), "aarch64");
        assert_eq!(g2, "aarch64 implementer 0x41 part 0xd0c variant 0x3");
        assert_eq!(v1, "aarch64 implementer 0x41 part 0xd40 variant 0x1");
        let host = |cpu_model: String| Host {
            hostname: "h".into(),
            kernel: "k".into(),
            cpu_model,
            cpus: 2,
            memory_bytes: 24 << 30,
        };
        assert_ne!(host(g2).class(), host(v1).class());
    }

    #[test]
    fn other_architectures_are_named_by_their_own_fields() {
        assert_eq!(
            cpu_identity(&cpuinfo("riscv64-spacemit-x60"), "riscv64"),
            "Spacemit(R) X60"
        );
        let riscv = "processor\t: 0\nhart\t: 0\nisa\t: rv64imafdc\nmvendorid\t: 0x489\n\
                     marchid\t: 0x8000000000000007\nmimpid\t: 0x20181004\n";
        assert_eq!(
            cpu_identity(riscv, "riscv64"),
            "riscv64 mvendorid 0x489 marchid 0x8000000000000007 mimpid 0x20181004"
        );
        let power = "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\nclock\t\t: \
                     2166.000000MHz\nrevision\t: 2.2 (pvr 004e 1202)\n\ntimebase\t: 512000000\n\
                     platform\t: PowerNV\nmodel\t\t: 9006-22P\n";
        assert_eq!(
            cpu_identity(power, "ppc64le"),
            "POWER9 (raw), altivec supported"
        );
        let s390x = "vendor_id       : IBM/S390\n# processors    : 2\nbogomips per cpu: 3241.00\n\
                     processor 0: version = FF,  identification = 0133E8,  machine = 8561\n\
                     processor 1: version = FF,  identification = 0133E8,  machine = 8561\n";
        assert_eq!(cpu_identity(s390x, "s390x"), "s390x machine 8561");
        let mips = "system type\t\t: MediaTek MT7621 ver:1 eco:3\nmachine\t\t\t: Ubiquiti \
                    EdgeRouter X\nprocessor\t\t: 0\ncpu model\t\t: MIPS 1004Kc V2.15\n";
        assert_eq!(cpu_identity(mips, "mips"), "MIPS 1004Kc V2.15");
    }

    #[test]
    fn cores_of_two_kinds_are_both_named() {
        let block = |part: &str, implementer: &str| {
            format!(
                "processor : 0\nCPU implementer : {implementer}\nCPU architecture: 8\n\
                 CPU variant : 0x1\nCPU part : {part}\nCPU revision : 0\n"
            )
        };
        let text = [
            block("0xd05", "0x41"),
            block("0xd05", "0x41"),
            block("0xd40", "0x48"),
        ]
        .join("\n");
        assert_eq!(
            cpu_identity(&text, "aarch64"),
            "aarch64 implementer 0x41 part 0xd05 variant 0x1 + \
             aarch64 implementer 0x48 part 0xd40 variant 0x1"
        );
    }

    #[test]
    fn a_cpu_nobody_named_is_unknown_and_its_class_says_so() {
        assert_eq!(cpu_identity("", "x86_64"), UNKNOWN_CPU);
        assert_eq!(
            cpu_identity("processor : 0\nBogoMIPS : 2.0\n", "arm"),
            UNKNOWN_CPU
        );
        let host = Host {
            hostname: "h".into(),
            kernel: "k".into(),
            cpu_model: String::new(),
            cpus: 2,
            memory_bytes: 24 << 30,
        };
        assert_eq!(host.class(), "unknown CPU x2, 24 GiB");
        assert!(!class_identifies_cpu(&host.class()));
        // The class records made before this change wrote for an ARM host.
        assert!(!class_identifies_cpu(" x2, 24 GiB"));
        assert!(class_identifies_cpu(
            "Intel(R) Xeon(R) Processor x2, 24 GiB"
        ));
    }
}
