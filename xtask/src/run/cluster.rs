//! Run stage: a fresh 1 stateless / 1 log / 1 storage FDB cluster on loopback, as
//! supervised children of the gate, with readiness read from the cluster itself.
//!
//! This replaces `tests/loopback_cluster/run_custom_cluster.sh` (used by
//! `contrib/mako_storage_bench.sh`): ports are chosen at run time instead of fixed, every
//! step is bounded, readiness is the servers' listening sockets and `status json`
//! instead of `sleep`, and teardown is by process group instead of `kill -9` of saved pids.

use std::{
    net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

use fdb::{
    status::{
        mask_secrets, parse_database_status, parse_recovery_state, tester_addresses, tls_failure,
        ClientView, ClusterStatus, CONFIGURATION_NEVER_CREATED, FULLY_RECOVERED,
        LONG_DELAY_WARNING,
    },
    trace::{knob_problems, trace_errors},
    Engine, Knob, Release,
};

use crate::{
    build::tree::{locality_args, FdbTree},
    config::{existing::ExistingCluster, topology::Topology, BenchConfig},
    input::PortRange,
    plan::{env::ChildEnv, pinning::Pinning, workdir::Workdir, ArmPlan},
    process::{
        excerpt, exit_of, interrupted, output_note, process_running, read_output, Child,
        PhaseError, POLL,
    },
    results::{
        fs::create_new,
        trial::{Availability, CpuRole},
    },
};

/// The storage engine of a cluster the gate did not start (`config.existing`), read once
/// before the plan is made ([`crate::plan::resolve::EngineProbe`]): `status json` with the
/// `arm`'s fdbcli through a copy of the cluster file in a scratch dir, inside a run dir
/// of its own under `workdir` ([`super::reaper::RunDir`], so that a killed gate's is
/// cleaned by the next run), waited for within `--timeout-available` as a trial waits
/// (available, recovered), its `cluster.configuration.storage_engine` read by
/// [`fdb::status::ClusterStatus::engine`]. The scratch
/// dir is removed whatever happens; a failure's message carries the end of fdbcli's
/// stderr. Errors:
/// no `--cluster-file`; the cluster does not answer in time; it names no engine the gate
/// knows.
pub fn engine_of_existing(
    config: &BenchConfig,
    arm: &ArmPlan,
    env: &ChildEnv,
    workdir: &Workdir,
) -> Result<Engine> {
    let e = config
        .cluster
        .existing()
        .context("no --cluster-file: the gate configures the engine of its own clusters")?;
    let (tree, release, bound) = (&arm.tree, arm.mako.release, config.bounds.available);
    let workdir = &workdir.path;
    // A run dir of its own, locked while this process lives: if the gate is killed
    // (SIGKILL) during the probe, the next run's `clean_stale_runs` removes it. The
    // scratch dir inside it goes first when both are dropped.
    let run = super::reaper::RunDir::create(workdir)?;
    let scratch = tempfile::Builder::new()
        .prefix("engine-")
        .tempdir_in(&run.path)
        .with_context(|| format!("cannot make a scratch dir in {}", run.path.display()))?;
    let read = || -> Result<Engine> {
        // No tester runs here, so no port is taken.
        let (at, ports) = (scratch.path(), None);
        let place = Place {
            work: at,
            artifacts: at,
            env,
            ports,
        };
        let c = Cluster::existing(tree, release, e, place)?;
        // The phase error's text only: as a source too, `{:#}` would print it twice.
        c.wait_available(bound).map_err(|e| match e {
            PhaseError::Timeout(..) => {
                anyhow!("{e} (raise --timeout-available if it needs longer)")
            }
            e => anyhow!("{e}"),
        })?;
        let text = read_output(&scratch.path().join("status.json"))?;
        let status = ClusterStatus::parse(&text)
            .map_err(|why| anyhow!("{why}; its status json begins:\n{}", excerpt(&text, 5)))?;
        status.engine().map_err(|why| anyhow!(why))
    };
    read().map_err(|err| {
        // The scratch dir goes (it is on the shared work dir); what fdbcli said on
        // stderr goes into the message instead.
        let stderr = read_output(&scratch.path().join("status.err")).unwrap_or_default();
        let said = fdbcli_said(&stderr);
        err.context(format!(
            "cannot read the storage engine of the cluster {} (coordinators {}) before \
             the plan{said}",
            e.connection.description,
            e.connection.coordinators.join(","),
        ))
    })
}

/// fdbcli's `stderr` for an error message: "; fdbcli's stderr ends with:" and its last 5
/// lines, without its progress warnings ([`LONG_DELAY_WARNING`]); empty when nothing else
/// is left.
fn fdbcli_said(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != LONG_DELAY_WARNING)
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "; fdbcli's stderr ends with:\n{}",
        excerpt(&lines.join("\n"), 5)
    )
}

/// Before the plan (and any FDB build) of a run against a cluster the gate did not start:
/// errors when none of its coordinators resolves or accepts a TCP connection now (each
/// tried within 1 s), so that a cluster that is down, or a cluster file that names the
/// wrong hosts, is said in seconds, not after a build's hours or `--timeout-available`.
/// Its storage engine and release need the built fdbcli and are read after the build
/// ([`engine_of_existing`]).
pub fn refuse_unreachable(e: &ExistingCluster) -> Result<()> {
    let resolved = resolved_coordinators(e);
    if resolved.is_empty() && !e.connection.coordinators.is_empty() {
        bail!(
            "no coordinator of --cluster-file {} ({}) resolves to an address from this \
             host, so nothing was built or run: check the names (DNS, /etc/hosts) or give the \
             cluster file of a cluster that runs",
            e.path.display(),
            e.connection.coordinators.join(", ")
        );
    }
    match none_answers(&resolved) {
        None => Ok(()),
        Some(names) => Err(anyhow!(
            "none of the coordinators of --cluster-file {} ({names}) accepts a TCP \
             connection from this host (each tried within 1 s), so nothing was built or \
             run: start the cluster, or give the cluster file of one that runs",
            e.path.display()
        )),
    }
}

/// `e`'s coordinators as the cluster file names them, with their address; a name that
/// does not resolve is left out.
fn resolved_coordinators(e: &ExistingCluster) -> Vec<(String, std::net::SocketAddr)> {
    e.connection
        .coordinators
        .iter()
        .filter_map(|c| {
            let plain = fdb::cluster_file::host_port(c);
            let addr = std::net::ToSocketAddrs::to_socket_addrs(plain)
                .ok()?
                .next()?;
            Some((c.clone(), addr))
        })
        .collect()
}

/// The names of `coordinators`, comma-separated, when none accepts a TCP connection now
/// (each tried within 1 s); `None` when one does, or there are none to try.
fn none_answers(coordinators: &[(String, std::net::SocketAddr)]) -> Option<String> {
    if coordinators.is_empty() {
        return None;
    }
    let answers = |(_, a): &(String, std::net::SocketAddr)| {
        TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok()
    };
    if coordinators.iter().any(answers) {
        return None;
    }
    let names: Vec<&str> = coordinators.iter().map(|(c, _)| c.as_str()).collect();
    Some(names.join(", "))
}

/// Process class of a server (`fdbserver -c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Coordinator, cluster controller, proxies, resolver.
    Stateless,
    /// Transaction log (tlog).
    Log,
    /// Storage server.
    Storage,
    /// A tester (`-c test`): runs the multitest driver's workload as a client of the
    /// cluster; not one of its servers.
    Tester,
}

impl Role {
    /// The role this server's CPU is accounted to.
    fn cpu_role(self) -> CpuRole {
        match self {
            Role::Stateless => CpuRole::Stateless,
            Role::Log => CpuRole::Log,
            Role::Storage => CpuRole::Storage,
            Role::Tester => CpuRole::Client,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Role::Stateless => "stateless",
            Role::Log => "log",
            Role::Storage => "storage",
            Role::Tester => "test",
        }
    }
}

/// One fdbserver of the cluster.
#[derive(Debug)]
pub struct Server {
    pub role: Role,
    /// Its "host", from 1: it listens on 127.0.0.<host>.
    pub host: u32,
    pub port: u16,
    /// Data directory (`-d`), on the work dir.
    pub data_dir: PathBuf,
    /// Trace files (`-L`), on the work dir; copied to the results by [`Cluster::harvest`].
    pub log_dir: PathBuf,
    /// The process, once started.
    pub child: Option<Child>,
    /// Listens on `auto:<port>` (the address FDB picks on the route to the
    /// coordinators), as a tester of a cluster the gate did not start must: that cluster
    /// may be on other hosts.
    auto_address: bool,
}

impl Server {
    /// All of the server's trace files so far, concatenated, each decoded lossily. Errors:
    /// the log dir or a trace file cannot be read (a refused knob must not pass unseen).
    fn trace_text(&self) -> Result<String> {
        let mut trace = String::new();
        let entries = std::fs::read_dir(&self.log_dir)
            .with_context(|| format!("cannot list {}", self.log_dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", self.log_dir.display()))?;
            trace += &read_output(&entry.path())?;
        }
        Ok(trace)
    }

    /// Its address, `127.0.0.<host>:<port>`.
    pub fn address(&self) -> SocketAddrV4 {
        SocketAddrV4::new(host_ip(self.host), self.port)
    }

    fn new(work: &Path, role: Role, host: u32, port: u16) -> Result<Server> {
        let dir = work.join(format!("{}-{port}", role.as_str()));
        let (data_dir, log_dir) = (dir.join("data"), dir.join("log"));
        for d in [&data_dir, &log_dir] {
            crate::files::create_dir_all("work dir", d)?;
        }
        Ok(Server {
            role,
            host,
            port,
            data_dir,
            log_dir,
            child: None,
            auto_address: false,
        })
    }
}

/// Where a trial's cluster lives and what its processes get.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// Its data, trace files and cluster file (on the work dir).
    pub work: &'a Path,
    /// Where fdbcli outputs and server stdout/stderr go (the trial's results dir).
    pub artifacts: &'a Path,
    /// The environment of every server and fdbcli call.
    pub env: &'a ChildEnv,
    /// Where servers' and testers' ports come from (`--port-range`); `None`: any free one.
    pub ports: Option<PortRange>,
}

/// A running cluster; dropping it kills every server.
#[derive(Debug)]
pub struct Cluster {
    pub cluster_file: PathBuf,
    pub servers: Vec<Server>,
    /// Its shape: hosts, processes, redundancy, coordinators, role counts.
    topology: Topology,
    fdbcli: PathBuf,
    /// The environment of every server and fdbcli call.
    env: ChildEnv,
    /// Where fdbcli outputs and server stdout/stderr go (the trial's results dir).
    artifacts: PathBuf,
    /// A cluster the gate did not start (`--cluster-file`), whose only processes here are
    /// the gate's testers; `None` for the gate's own cluster.
    existing: Option<Existing>,
    /// Where its servers' and testers' ports come from (`--port-range`); `None`: any.
    ports: Option<PortRange>,
}

/// What the gate keeps of a cluster it did not start.
#[derive(Debug)]
struct Existing {
    /// The FDB release of the gate's testers and fdbcli (the tree's), for messages.
    release: Release,
    /// Its coordinators, resolved when the trial began (one whose name did not resolve is
    /// left out), as the cluster file lists them.
    coordinators: Vec<(String, std::net::SocketAddr)>,
    /// When a coordinator was last tried, and since when none has accepted a connection.
    probed: std::cell::Cell<Option<Instant>>,
    failing_since: std::cell::Cell<Option<Instant>>,
}

/// How often, during a test, the gate tries a TCP connection to an existing cluster's
/// coordinators, and how long none may accept one before the cluster counts as gone: FDB's
/// multitest waits for a gone cluster without end.
const COORDINATOR_PROBE: Duration = Duration::from_secs(5);
const COORDINATORS_GONE: Duration = Duration::from_secs(15);

/// The first bound of each `fdbcli status json` call while the gate polls a cluster,
/// seconds: a new cluster answers within it once up (fdbcli prints nothing before, see
/// `status-json-unconfigured.json` of the fixtures); each call cut short doubles it.
const STATUS_CALL_BOUND: Duration = Duration::from_secs(10);

impl Cluster {
    /// Prepares a cluster under `work` (data and trace dirs) with ports chosen now and
    /// its cluster file; [`Cluster::start`] starts the servers. Kept apart so that a
    /// cluster that fails to start is still there to harvest and tear down.
    pub fn new(tree: &FdbTree, topology: &Topology, at: Place) -> Result<Cluster> {
        let Place {
            work,
            artifacts,
            env,
            ports,
        } = at;
        let t = topology;
        let per_host = [
            (Role::Stateless, t.stateless_per_host),
            (Role::Log, t.logs_per_host),
            (Role::Storage, t.storage_per_host),
        ];
        let shape: Vec<(u32, Role)> = (1..=t.hosts)
            .flat_map(|host| {
                per_host
                    .iter()
                    .flat_map(move |&(role, n)| (0..n).map(move |_| (host, role)))
            })
            .collect();
        // Distinct port numbers across hosts keep every server's files apart by name.
        let chosen = free_ports(shape.len(), ports)?;
        let servers: Vec<Server> = shape
            .into_iter()
            .zip(chosen)
            .map(|((host, role), port)| Server::new(work, role, host, port))
            .collect::<Result<_>>()?;
        // Coordinators: the first stateless process of each of the first N hosts.
        let coordinators: Vec<String> = (1..=t.coordinators)
            .filter_map(|h| {
                servers
                    .iter()
                    .find(|s| s.host == h && s.role == Role::Stateless)
                    .map(|s| s.address().to_string())
            })
            .collect();
        let cluster_file = work.join("fdb.cluster");
        // Description and ID are arbitrary.
        let id = format!("{:08x}", std::process::id() ^ u32::from(servers[0].port));
        crate::files::write(
            "work dir",
            &cluster_file,
            format!("perfgate:{id}@{}\n", coordinators.join(",")),
        )?;
        Ok(Cluster {
            cluster_file,
            servers,
            topology: topology.clone(),
            fdbcli: tree.fdbcli.clone(),
            env: env.clone(),
            artifacts: artifacts.to_path_buf(),
            existing: None,
            ports,
        })
    }

    /// A cluster the gate did not start, through a cluster file in `work` holding its
    /// connection string (FDB rewrites a cluster file when the coordinators change; the
    /// user's is never written). It has no server of the gate's until [`Cluster::start_testers`].
    pub fn existing(
        tree: &FdbTree,
        release: Release,
        e: &ExistingCluster,
        at: Place,
    ) -> Result<Cluster> {
        let cluster_file = at.work.join("fdb.cluster");
        create_new(&cluster_file, &format!("{}\n", e.connection))?;
        let coordinators = resolved_coordinators(e);
        Ok(Cluster {
            cluster_file,
            servers: Vec::new(),
            topology: Topology::default(),
            fdbcli: tree.fdbcli.clone(),
            env: at.env.clone(),
            artifacts: at.artifacts.to_path_buf(),
            existing: Some(Existing {
                release,
                coordinators,
                probed: Default::default(),
                failing_since: Default::default(),
            }),
            ports: at.ports,
        })
    }

    /// What `status json` (from the last answer [`Cluster::wait_available`] kept) says of
    /// a cluster the gate did not start, checked: its protocol is the testers' `protocol`
    /// (FDB's `fdbserver --version`; testers of another release cannot join), and the
    /// database holds no normal key (ReadWrite's test clears every normal key when it
    /// ends: `clearAfterTest`, `fdbserver/tester/test.cpp`). Checked before every trial,
    /// not only the first: keys another client wrote since the last test would be
    /// cleared with the test's own. First it
    /// waits, within `bound`, until at most `remote` tester-class processes are registered:
    /// the last trial's testers stay listed for some seconds after they end (about 8 s on
    /// FDB 8.0 here), and a multitest started meanwhile takes a gone tester for one and
    /// waits on it without end. Errors name what differs and what to give instead.
    pub fn existing_status(
        &self,
        protocol: &str,
        remote: u32,
        bound: Duration,
    ) -> Result<ClusterStatus, PhaseError> {
        let status = self.without_stray_testers(remote, bound)?;
        if let Some(theirs) = status
            .protocol_version
            .as_deref()
            .filter(|p| *p != protocol)
        {
            return Err(anyhow!(
                "the cluster speaks protocol {theirs} (FDB {}), the testers' fdbserver \
                 {protocol}: testers of another release cannot join it; give \
                 --experiment-build a tree of the cluster's release",
                status.versions.join(", ")
            )
            .into());
        }
        self.check_empty(bound)?;
        Ok(status)
    }

    /// Errors when the cluster's storage engine was reconfigured since `before` was read
    /// (its configured engine differs, or its storage servers run another, see
    /// [`ClusterStatus::engine`]), or it recovered: its `status json`
    /// generation (the recovery count) grew, so a test between the two answers ran across
    /// a recovery (a server killed or restarted, a tlog lost) and its TPS is not the
    /// cluster's steady throughput; FDB's multitest still reports it as passed. Polled
    /// within `bound` until the cluster answers; the answer is kept as `status-after.json`.
    pub fn check_no_recovery(
        &self,
        before: &ClusterStatus,
        bound: Duration,
    ) -> Result<(), PhaseError> {
        let answer = self.artifacts.join("status-after.json");
        let after = self.poll_status_into(
            "status-after.json",
            bound,
            Duration::from_secs(1),
            |text, late| match ClusterStatus::parse(text) {
                Ok(status) => Ok(Some(status)),
                Err(_) if !late => Ok(None),
                Err(e) => Err(anyhow!(
                    "the cluster gave no status after the test, so whether it stayed up \
                         cannot be told: {e}; see {}",
                    answer.display()
                )
                .into()),
            },
        )?;
        // A reconfigured engine recovers the cluster too, but is said for what it is.
        let now = after.engine();
        if now.is_err() || now != before.engine() {
            // A new configured name says the change; the servers' engines say how far it
            // got. With the same name, the mismatch is the whole story.
            let detail = match now.err() {
                Some(m) if before.storage_engine == after.storage_engine => format!("; {m}"),
                _ if after.storage_server_engines.is_empty() => String::new(),
                _ => format!(
                    "; its storage servers run {}",
                    after.storage_server_engines.join(", ")
                ),
            };
            return Err(anyhow!(
                "the cluster's storage engine was changed during the test (configured {:?} \
                 before, {:?} after{detail}): its TPS spans a reconfiguration and a data \
                 migration, so the trial is not measured; run again once every storage \
                 server runs the new engine; see {}",
                before.storage_engine,
                after.storage_engine,
                answer.display()
            )
            .into());
        }
        match (before.generation, after.generation) {
            (Some(b), Some(a)) if a != b => Err(anyhow!(
                "the cluster recovered during the test (status json generation {b} before, \
                 {a} after; recovery state now {}): its TPS spans a recovery, not the \
                 cluster's steady throughput, so the trial is not measured; see {}",
                after.recovery_state.as_deref().unwrap_or("not given"),
                answer.display()
            )
            .into()),
            _ => Ok(()),
        }
    }

    /// The cluster's `status json` once it lists at most `remote` tester-class processes,
    /// polled within `bound`; the last answer is kept as `status.json`.
    fn without_stray_testers(
        &self,
        remote: u32,
        bound: Duration,
    ) -> Result<ClusterStatus, PhaseError> {
        let answer = self.artifacts.join("status.json");
        let mut said = false;
        self.poll_status(bound, Duration::from_secs(1), |text, late| {
            let status =
                ClusterStatus::parse(text).map_err(|e| anyhow!("{e}; see {}", answer.display()))?;
            let testers = status.processes_by_class.get("test").copied().unwrap_or(0);
            if testers <= u64::from(remote) {
                return Ok(Some(status));
            }
            if !said {
                said = true;
                tracing::info!(
                    "the cluster lists {testers} tester-class processes, more than the \
                     {remote} --remote-testers: waiting (within --timeout-available) for \
                     ended ones to leave before the multitest takes every tester it finds"
                );
            }
            if late {
                return Err(anyhow!(
                    "{testers} tester-class processes are registered with the cluster ({}), \
                     more than the {remote} --remote-testers: a multitest takes every tester \
                     it finds, so stray ones (of another run, or ended and not yet gone) \
                     would join the test; end them, or give --remote-testers their number; \
                     see {}",
                    tester_addresses(text).join(", "),
                    answer.display()
                )
                .into());
            }
            Ok(None)
        })
    }

    /// Errors when the database holds a normal key: `fdbcli getrangekeys "" \xff 1` printed
    /// one (`fdbcli/fdbcli.cpp`: each key as `` `key' `` on a line of its own). Its output
    /// is kept as `fdbcli-getrange.txt`.
    fn check_empty(&self, bound: Duration) -> Result<(), PhaseError> {
        let out = self.artifacts.join("fdbcli-getrange.txt");
        let status = self.fdbcli("getrangekeys \"\" \\xff 1", &out, bound)?;
        let text = read_output(&out)?;
        if !status.success() || !text.contains("Range limited to") {
            return Err(anyhow!(
                "cannot tell whether the database is empty: `fdbcli getrangekeys` failed \
                 ({status}); {}; {}",
                output_note("stderr", &out.with_extension("err"), 5),
                output_note("stdout", &out, 5)
            )
            .into());
        }
        if let Some(key) = text.lines().find(|l| l.starts_with('`')) {
            return Err(anyhow!(
                "the database is not empty (it holds the key {}): ReadWrite's test clears \
                 every normal key when it ends, so the gate runs it only on an empty \
                 database; give --cluster-file a cluster whose data may go, after clearing \
                 it yourself (fdbcli: writemode on; clearrange \"\" \\xff)",
                excerpt(key, 1)
            )
            .into());
        }
        Ok(())
    }

    /// Starts the three servers with `knobs` (on their CPUs, with `pinning`) and waits
    /// until each listens on its port.
    pub fn start(
        &mut self,
        tree: &FdbTree,
        knobs: &[Knob],
        pinning: Option<&Pinning>,
        bound: Duration,
    ) -> Result<(), PhaseError> {
        self.spawn_from(0, tree, knobs, pinning, bound)
    }

    /// Adds `n` tester processes (`fdbserver -c test`, with `knobs`, on the CPUs of the
    /// servers that are not the storage server) as supervised children of the cluster:
    /// checked, stopped and harvested like its servers. Waits until each listens.
    pub fn start_testers(
        &mut self,
        tree: &FdbTree,
        n: u32,
        knobs: &[Knob],
        pinning: Option<&Pinning>,
        bound: Duration,
    ) -> Result<(), PhaseError> {
        let first = self.servers.len();
        let work = self
            .cluster_file
            .parent()
            .expect("cluster file in the work dir");
        // Spread over the hosts, as testers on machines of their own would be.
        let hosts = self.topology.hosts;
        for (i, port) in free_ports(n as usize, self.ports)?.into_iter().enumerate() {
            let host = i as u32 % hosts + 1;
            let mut tester = Server::new(work, Role::Tester, host, port)?;
            tester.auto_address = self.existing.is_some();
            self.servers.push(tester);
        }
        self.spawn_from(first, tree, knobs, pinning, bound)
    }

    /// Starts fdbserver `server` of this cluster from `tree` with `knobs` (on the CPUs of
    /// its role when pinned); its stdout and stderr go to the artifacts dir as
    /// `fdbserver-<role>-<port>.out`/`.err`.
    fn spawn_server(
        &self,
        server: &Server,
        tree: &FdbTree,
        knobs: &[Knob],
        pinning: Option<&Pinning>,
    ) -> Result<Child> {
        let mut cmd = Command::new(&tree.fdbserver);
        self.env.apply(&mut cmd);
        let public = if server.auto_address {
            format!("auto:{}", server.port)
        } else {
            server.address().to_string()
        };
        cmd.arg("-p")
            .arg(public)
            .args(["-c", server.role.as_str()])
            .arg("-d")
            .arg(&server.data_dir)
            .arg("-L")
            .arg(&server.log_dir)
            .arg("-C")
            .arg(&self.cluster_file)
            .args(knobs.iter().map(Knob::arg))
            .current_dir(server.data_dir.parent().expect("server dir"));
        // One machine and zone per "host": redundancy places replicas apart.
        cmd.args(locality_args(&format!("host{}", server.host)));
        let (role, port) = (server.role.as_str(), server.port);
        let stem = format!("fdbserver-{role}-{port}");
        let cpus = pinning.map(|p| match server.role {
            Role::Storage => p.storage.as_slice(),
            Role::Stateless | Role::Log | Role::Tester => p.others.as_slice(),
        });
        Child::spawn_on(
            &format!("fdbserver {role} :{port}"),
            cmd,
            &self.artifacts.join(format!("{stem}.out")),
            &self.artifacts.join(format!("{stem}.err")),
            cpus,
        )
    }

    /// Spawns `servers[first..]` and waits, within `bound`, until each listens.
    fn spawn_from(
        &mut self,
        first: usize,
        tree: &FdbTree,
        knobs: &[Knob],
        pinning: Option<&Pinning>,
        bound: Duration,
    ) -> Result<(), PhaseError> {
        let deadline = Instant::now() + bound;
        for i in first..self.servers.len() {
            let child = self.spawn_server(&self.servers[i], tree, knobs, pinning)?;
            self.servers[i].child = Some(child);
        }
        // A tester on `auto:<port>` listens where FDB chose; the multitest's own wait for
        // its testers (bounded by the caller) stands for this one.
        for server in self.servers[first..].iter().filter(|s| !s.auto_address) {
            let addr = server.address();
            while TcpStream::connect_timeout(&addr.into(), Duration::from_millis(200)).is_err() {
                self.check_alive()?;
                if interrupted() {
                    return Err(PhaseError::Interrupted);
                }
                if Instant::now() >= deadline {
                    return Err(PhaseError::Timeout(bound, String::new()));
                }
                thread::sleep(POLL);
            }
        }
        Ok(())
    }

    /// `fdbcli --exec "configure new <redundancy> <engine> [logs=N ...]"` with `release`'s
    /// name of the engine and the topology's mode and counts, bounded. Output is kept as
    /// `fdbcli-configure.txt`, its stderr `.err`.
    pub fn configure(
        &self,
        engine: Engine,
        release: Release,
        bound: Duration,
    ) -> Result<(), PhaseError> {
        let name = release.engine_name(engine).map_err(|e| anyhow!(e))?;
        let command = format!("configure new {}", self.topology.configure_args(name));
        let out = self.artifacts.join("fdbcli-configure.txt");
        let status = self.fdbcli(&command, &out, bound)?;
        let text = read_output(&out)?;
        if !status.success() || !text.contains("Database created") {
            // fdbcli prints its reason on stderr ("ERROR: Database already exists!").
            return Err(anyhow!(
                "`fdbcli --exec \"{command}\"` failed ({status}); {}; {}",
                output_note("stderr", &out.with_extension("err"), 10),
                output_note("stdout", &out, 10),
            )
            .into());
        }
        Ok(())
    }

    /// Polls `status json` until `client.database_status.available` is true. The last
    /// answer is kept as `status.json`.
    /// Errors: at the bound, a timeout that says what the client saw (its messages and
    /// coordinators, [`ClientView`]); for a cluster the gate did not start, at once when
    /// fdbcli warns that the cluster speaks another protocol.
    pub fn wait_available(&self, bound: Duration) -> Result<Availability, PhaseError> {
        let mut polls = 0;
        let stderr = self.artifacts.join("status.err");
        self.poll_status(bound, Duration::from_millis(200), |text, late| {
            polls += 1;
            if let Some(s) = parse_database_status(text).filter(|s| s.available) {
                match self.still_recovering(text) {
                    None => {
                        return Ok(Some(Availability {
                            healthy: s.healthy,
                            polls,
                        }))
                    }
                    Some(why) if late => return Err(PhaseError::Timeout(bound, why)),
                    Some(_) => return Ok(None),
                }
            }
            if let Some(why) = self.never_configured(text) {
                return Err(anyhow!(why).into());
            }
            let err = read_output(&stderr).unwrap_or_default();
            if let Some(line) = tls_failure(&err).filter(|_| self.existing.is_some()) {
                return Err(anyhow!(
                    "fdbcli cannot reach the cluster over TLS: {line:?} (stderr in {}): check \
                     the files FDB_TLS_CERTIFICATE_FILE, FDB_TLS_KEY_FILE and FDB_TLS_CA_FILE \
                     name and FDB_TLS_PASSWORD (`flow/TLSConfig.cpp`)",
                    stderr.display()
                )
                .into());
            }
            let view = ClientView::parse(text, &err);
            if let Some(Existing { release, .. }) =
                self.existing.as_ref().filter(|_| view.incompatible)
            {
                return Err(anyhow!(
                    "fdbcli of --experiment-build (FDB {release}) cannot use the cluster: it \
                     warns that a process of the cluster is incompatible with its release, \
                     so the coordinators, though they may run, do not answer it ({}); \
                     testers of FDB {release} cannot join a cluster of another release: give \
                     --experiment-build a tree of the cluster's release (the servers' \
                     `fdbserver --version`)",
                    view.messages_described()
                )
                .into());
            }
            if late {
                return Err(PhaseError::Timeout(bound, self.unavailable_hint(&view)));
            }
            Ok(None)
        })
    }

    /// Why a cluster the gate did not start, though available, is not ready for a test:
    /// still recovering (`cluster.recovery_state.name` not "fully_recovered"; a real 8.0
    /// cluster is available a few seconds before, `fdb/testdata/status-json-recovering-8.0.json`),
    /// when a test would measure the recovery. `None` when ready, and always for the gate's
    /// own cluster, which is new.
    fn still_recovering(&self, text: &str) -> Option<String> {
        let state = parse_recovery_state(text)?;
        (self.existing.is_some() && state != FULLY_RECOVERED).then(|| {
            format!(
                "the cluster is available but still recovering (status json recovery state \
                 {state}, not {FULLY_RECOVERED}); a test now would measure the recovery: \
                 check the cluster's health (fdbcli status), or raise --timeout-available"
            )
        })
    }

    /// Why a cluster the gate did not start cannot be tested at all: its coordinators have
    /// no record of a database ([`CONFIGURATION_NEVER_CREATED`]), which no wait mends and
    /// the gate does not create (it never runs `configure new` on a cluster it did not
    /// start). `None` otherwise, and always for the gate's own cluster, configured before
    /// it is polled.
    fn never_configured(&self, text: &str) -> Option<String> {
        let state = parse_recovery_state(text)?;
        (self.existing.is_some() && state == CONFIGURATION_NEVER_CREATED).then(|| {
            format!(
                "the cluster's coordinators have no record of a database (status json \
                 recovery state {state}, \"Unable to read database configuration.\"): none \
                 was created on this cluster, or --cluster-file names other coordinators \
                 than the database's; create it (`fdbcli -C FILE --exec \"configure new \
                 single ssd-2\"`, with the redundancy and engine to test) or give the \
                 cluster file of the database to test; the gate never configures a cluster \
                 it did not start"
            )
        })
    }

    /// What a timeout in `available` says: what the client saw, and for a cluster the gate
    /// did not start, what to check in its cluster file.
    fn unavailable_hint(&self, view: &ClientView) -> String {
        let seen = view.describe();
        let seen = if seen.is_empty() {
            "fdbcli printed no status".to_string()
        } else {
            format!("status json says: {seen}")
        };
        if self.existing.is_none() {
            return seen;
        }
        let check = if view.reachable.is_empty() {
            "check that the cluster runs and that --cluster-file lists its coordinators, \
             reachable from this host"
                .to_string()
        } else if view.minority_reachable() {
            format!(
                "{} of {} coordinators answer, and FDB needs a majority: check that the \
                 others run and are reachable from this host",
                view.reachable.len(),
                view.reachable.len() + view.unreachable.len()
            )
        } else {
            "a majority of the coordinators answer but lead to no database: check that \
             --cluster-file's description:ID is the cluster's own (compare with a server's \
             cluster file) and that its servers run"
                .to_string()
        };
        format!("{seen}; {check}")
    }

    /// Calls `fdbcli status json` every `pause` until `done` (given the answer, kept as
    /// `status.json`, and whether `bound` has passed) returns a value or an error, checking
    /// the gate's servers and interrupts between calls. A call that times out (fdbcli
    /// prints nothing before the database is up) is not an error: `done` or the bound
    /// decides. Errors: [`PhaseError::Timeout`] once `bound` passed and `done` still
    /// returned `None`.
    fn poll_status<T>(
        &self,
        bound: Duration,
        pause: Duration,
        done: impl FnMut(&str, bool) -> Result<Option<T>, PhaseError>,
    ) -> Result<T, PhaseError> {
        self.poll_status_into("status.json", bound, pause, done)
    }

    /// [`Cluster::poll_status`] with the answer kept in the artifacts as `name` (its
    /// stderr beside it, `.err`).
    fn poll_status_into<T>(
        &self,
        name: &str,
        bound: Duration,
        pause: Duration,
        mut done: impl FnMut(&str, bool) -> Result<Option<T>, PhaseError>,
    ) -> Result<T, PhaseError> {
        let deadline = Instant::now() + bound;
        let out = self.artifacts.join(name);
        let mut last = String::new();
        // Each fdbcli call is cut at `cap` so that a cluster coming up is seen soon; a
        // call that printed nothing (cut short, or timed out itself) doubles it, up to
        // what is left of `bound`: a cluster whose status takes longer (a database never
        // created answers after about 15 s) is still heard within the bound.
        let mut cap = STATUS_CALL_BOUND;
        loop {
            self.check_alive()?;
            if interrupted() {
                return Err(PhaseError::Interrupted);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                match self.fdbcli("status json", &out, left.min(cap)) {
                    Ok(_) | Err(PhaseError::Timeout(..)) => {}
                    Err(e) => return Err(e),
                }
            }
            let late = Instant::now() >= deadline;
            // A call cut short (fdbcli takes about 5 s to give up on unreachable
            // coordinators) prints nothing: the last answer, which says why the cluster is
            // not up, stays the one kept and read.
            let mut text = read_output(&out)?;
            // The results are shared: a TLS password on a command line is not kept.
            if let Some(masked) = mask_secrets(&text) {
                crate::files::write("--out", &out, &masked)?;
                text = masked;
            }
            if text.trim().is_empty() {
                cap = cap.saturating_mul(2);
            }
            if text.trim().is_empty() && !last.is_empty() {
                crate::files::write("--out", &out, &last)?;
                text = last.clone();
            }
            if let Some(value) = done(&text, late)? {
                return Ok(value);
            }
            if late {
                return Err(PhaseError::Timeout(bound, String::new()));
            }
            last = text;
            thread::sleep(pause);
        }
    }

    /// Runs `fdbcli --exec command` killed at `bound`; fdbcli's own `--timeout` ends it a
    /// second earlier so that it can say so itself. A server that dies meanwhile ends the
    /// wait at once (fdbcli itself would wait for its timeout).
    fn fdbcli(
        &self,
        command: &str,
        out: &Path,
        bound: Duration,
    ) -> Result<std::process::ExitStatus, PhaseError> {
        let own = bound.as_secs().saturating_sub(1).max(1);
        let mut cmd = Command::new(&self.fdbcli);
        self.env.apply(&mut cmd);
        cmd.arg("-C")
            .arg(&self.cluster_file)
            .args(["--exec", command, "--timeout"])
            .arg(own.to_string());
        let err = out.with_extension("err");
        let mut child = Child::spawn("fdbcli", cmd, out, &err)?;
        child.wait_until(Instant::now() + bound, bound, || self.check_alive())
    }

    /// One `status json` within `bound` (at most [`STATUS_CALL_BOUND`]), kept as
    /// `status-probe.json`: `None` when it says the database is available, else what it
    /// saw ([`ClientView::describe`], or that fdbcli printed nothing). For
    /// [`super::stall::StallWatch`].
    pub fn unanswered(&self, bound: Duration) -> Result<Option<String>, PhaseError> {
        let out = self.artifacts.join("status-probe.json");
        let bound = bound.min(STATUS_CALL_BOUND);
        match self.fdbcli("status json", &out, bound) {
            Ok(_) | Err(PhaseError::Timeout(..)) => {}
            Err(e) => return Err(e),
        }
        let text = read_output(&out)?;
        if parse_database_status(&text).is_some_and(|s| s.available) {
            return Ok(None);
        }
        let err = read_output(&out.with_extension("err")).unwrap_or_default();
        let seen = ClientView::parse(&text, &err).describe();
        Ok(Some(if seen.is_empty() {
            format!("fdbcli printed no status within {} s", bound.as_secs())
        } else {
            seen
        }))
    }

    /// For a cluster the gate did not start: its coordinators as the cluster file names
    /// them when none accepts a TCP connection now (each tried within 1 s), else `None`.
    pub fn coordinators_gone(&self) -> Option<String> {
        let e = self.existing.as_ref()?;
        none_answers(&e.coordinators)
    }

    /// For a cluster the gate did not start, during a test: errors once none of its
    /// coordinators has accepted a TCP connection for [`COORDINATORS_GONE`] (tried every
    /// [`COORDINATOR_PROBE`], each within 1 s), naming them. Nothing to check for the
    /// gate's own cluster, whose servers [`Cluster::check_alive`] watches.
    pub fn check_coordinators(&self) -> Result<(), PhaseError> {
        let Some(e) = self
            .existing
            .as_ref()
            .filter(|e| !e.coordinators.is_empty())
        else {
            return Ok(());
        };
        let now = Instant::now();
        if e.probed.get().is_some_and(|t| now - t < COORDINATOR_PROBE) {
            return Ok(());
        }
        e.probed.set(Some(now));
        let Some(names) = self.coordinators_gone() else {
            e.failing_since.set(None);
            return Ok(());
        };
        let since = e.failing_since.get().unwrap_or(now);
        e.failing_since.set(Some(since));
        if now - since < COORDINATORS_GONE {
            return Ok(());
        }
        Err(anyhow!(
            "none of the cluster's coordinators ({names}) has accepted a connection for {} s \
             during the test: the cluster stopped, or this host lost its way to it (FDB's \
             multitest would wait for it without end)",
            (now - since).as_secs()
        )
        .into())
    }

    /// Errors when a server has exited, naming it, the end of its stderr and the last
    /// error events of its trace files.
    pub fn check_alive(&self) -> Result<(), PhaseError> {
        for s in &self.servers {
            let Some(c) = &s.child else { continue };
            // `try_wait` needs `&mut`; /proc answers through a shared borrow.
            if process_running(c.pid()) {
                continue;
            }
            // An excerpt for the message: an unreadable trace is named, not fatal.
            let events = match s.trace_text() {
                Ok(trace) => {
                    let errors = trace_errors(&trace, 3);
                    if errors.is_empty() {
                        String::new()
                    } else {
                        let errors: Vec<String> = errors.iter().map(|e| excerpt(e, 1)).collect();
                        format!("\nlast trace errors: {}", errors.join("; "))
                    }
                }
                Err(e) => format!("\ntrace files: {e:#}"),
            };
            return Err(anyhow!(
                "{} exited during the trial ({}); {}{events}",
                c.name,
                exit_of(c.pid()).unwrap_or_else(|| "status unknown".into()),
                c.stderr_note(10),
            )
            .into());
        }
        Ok(())
    }

    /// The longest `SlowTask` of at least `min_s` seconds in its servers' trace files, as
    /// a clause for a failed trial's error: "the storage server :4503 logged a SlowTask of
    /// 5.03 s, at 2026-12-05T09:05:39Z: ...". `None`: none that long, or
    /// no trace files (a cluster the gate did not start, an unreadable log dir).
    pub fn slow_task_note(&self, min_s: f64) -> Option<String> {
        let (server, task) = self
            .servers
            .iter()
            .filter_map(|s| Some((s, fdb::trace::longest_slow_task(&s.trace_text().ok()?)?)))
            .max_by(|a, b| a.1.duration_s.total_cmp(&b.1.duration_s))?;
        if task.duration_s < min_s {
            return None;
        }
        let at = Duration::try_from_secs_f64(task.time_unix_s)
            .ok()
            .and_then(|d| std::time::UNIX_EPOCH.checked_add(d))
            .map_or(String::new(), |t| {
                format!(", at {}", humantime::format_rfc3339_seconds(t))
            });
        Some(format!(
            "the {} server :{} logged a SlowTask of {:.2} s{at}: its run loop blocked that \
             long, and every request to it waited",
            server.role.as_str(),
            server.port,
            task.duration_s
        ))
    }

    /// Every started server's pid with the role its CPU is accounted to.
    pub fn server_pids(&self) -> Vec<(CpuRole, u32)> {
        self.servers
            .iter()
            .filter_map(|s| Some((s.role.cpu_role(), s.child.as_ref()?.pid())))
            .collect()
    }

    /// Stops every server: SIGTERM to all (fdbserver flushes its trace files), then
    /// SIGKILL to what is left when `bound` passes, which is a teardown TIMEOUT.
    pub fn stop(&mut self, bound: Duration) -> Result<(), PhaseError> {
        let deadline = Instant::now() + bound;
        let mut children: Vec<&mut Child> = self
            .servers
            .iter_mut()
            .filter_map(|s| s.child.as_mut())
            .collect();
        children.iter().for_each(|c| c.terminate());
        while Instant::now() < deadline {
            if children.iter_mut().all(|c| c.finished()) {
                return Ok(());
            }
            thread::sleep(POLL);
        }
        let mut stuck = Vec::new();
        for c in children.iter_mut() {
            if !c.finished() {
                stuck.push(c.name.clone());
                c.stop(Duration::ZERO);
            }
        }
        if stuck.is_empty() {
            return Ok(());
        }
        Err(PhaseError::Timeout(
            bound,
            format!(
                "{} ignored SIGTERM and were killed (trace files may be incomplete)",
                stuck.join(", ")
            ),
        ))
    }

    /// Knobs some server refused (it then runs with the default, silently benchmarking
    /// another configuration), from its stderr and trace files; one line per problem,
    /// naming the server. Errors: a stderr or trace file cannot be read.
    pub fn knob_problems(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        for s in &self.servers {
            let Some(child) = &s.child else { continue };
            let stderr = read_output(&child.stderr)?;
            for p in knob_problems(&stderr, &s.trace_text()?) {
                problems.push(format!("{}: {}", child.name, excerpt(&p, 1)));
            }
        }
        Ok(problems)
    }

    /// Copies each server's trace files into `<artifacts>/<role>-<port>/`.
    pub fn harvest(&self) -> Result<()> {
        for s in &self.servers {
            let dest = self
                .artifacts
                .join(format!("{}-{}", s.role.as_str(), s.port));
            // A server that never started has no log dir to copy.
            if s.log_dir.is_dir() {
                copy_files(&s.log_dir, &dest)?;
            }
        }
        Ok(())
    }
}

/// Copies the regular files of `from` (a trace dir on the work dir) into `to`, made if
/// needed; directories and links in it are not followed.
pub(super) fn copy_files(from: &Path, to: &Path) -> Result<()> {
    crate::files::create_dir_all("--out", to)?;
    let entries =
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?;
    let files = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()));
    for entry in files {
        crate::files::copy("--out", &entry.path(), &to.join(entry.file_name()))
            .with_context(|| format!("cannot copy {} to the results", entry.path().display()))?;
    }
    Ok(())
}

/// The loopback address of "host" `host` (from 1): 127.0.0.<host>.
fn host_ip(host: u32) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, host.clamp(1, 254) as u8)
}

/// `n` distinct ports that were free a moment ago on every address (bound together on
/// 0.0.0.0, then released: a port held on 127.0.0.2 only, where a second "host" listens,
/// is not free): the first free ones of `range`, else of the ports below the kernel's
/// ephemeral range ([`unassigned_ports`]) from a random one on. Below that range no
/// outgoing connection (mako's, fdbcli's, a concurrent gate's clients') is given one of
/// them between the choice and the server's bind, as it could be a port the OS gave for
/// port 0; a program binding a fixed port still could, and the cluster start then fails
/// with that server's "address in use" error rather than hanging. Errors: fewer than `n`
/// free ports in `range`.
fn free_ports(n: usize, range: Option<PortRange>) -> Result<Vec<u16>> {
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let bind = |p: u16| {
        (!handed.contains(&p))
            .then(|| TcpListener::bind((Ipv4Addr::UNSPECIFIED, p)).ok())
            .flatten()
    };
    let listeners: Vec<TcpListener> = match range {
        None => match unassigned_ports(ephemeral_ports()) {
            Some(window) => {
                let width = (window.end - window.start) as usize;
                let first = rand::random_range(0..width);
                let free: Vec<TcpListener> = window
                    .clone()
                    .cycle()
                    .skip(first)
                    .take(width)
                    .filter_map(bind)
                    .take(n)
                    .collect();
                if free.len() < n {
                    bail!(
                        "ports {}-{} (below the kernel's ephemeral ports) have {} free now, \
                         and the cluster needs {n}: free some, or give --port-range",
                        window.start,
                        window.end - 1,
                        free.len()
                    );
                }
                free
            }
            None => (0..n)
                .map(|_| TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)))
                .collect::<Result<_, _>>()
                .context("cannot find free loopback ports")?,
        },
        Some(r) => {
            let free: Vec<TcpListener> = (r.low..=r.high).filter_map(bind).take(n).collect();
            if free.len() < n {
                bail!(
                    "--port-range {r} has {} free port(s) now, and the cluster needs {n} \
                     (one per server and tester): widen the range",
                    free.len()
                );
            }
            free
        }
    };
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()?;
    handed.extend(&ports);
    Ok(ports)
}

/// Ports [`free_ports`] gave the servers of clusters that exist now (released when the
/// cluster is dropped): trials that start at once (both arms of a duet) would otherwise
/// find the same port free before either server binds it.
static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        for server in &self.servers {
            handed.remove(&server.port);
        }
    }
}

/// The kernel's ephemeral ports, `net.ipv4.ip_local_port_range` (inclusive), which it gives
/// outgoing connections and binds to port 0; its default 32768-60999 when unreadable.
fn ephemeral_ports() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|p| p.parse::<u16>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32768, 60999))
}

/// The ports the gate draws from without `--port-range`: from 10000 (above the well-known
/// ones and those services commonly use, FDB's 4500 among them) up to the ephemeral
/// range's first, or `None` when fewer than 1000 lie there (a host that made most ports
/// ephemeral), where the OS's choice (port 0) is what is left.
fn unassigned_ports((low, _high): (u16, u16)) -> Option<std::ops::Range<u16>> {
    const FIRST: u16 = 10000;
    (low >= FIRST + 1000).then_some(FIRST..low)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real 8.0 fdbcli's stderr before a never-created database's status json answered
    /// (`real.sh nc`): its progress warning alone, which said nothing of the cause and read
    /// as if it were the cause in front of it.
    #[test]
    fn fdbcli_progress_warnings_are_left_out_of_messages() {
        assert_eq!(
            fdbcli_said("\nWARNING: Long delay (Ctrl-C to interrupt)\n"),
            ""
        );
        assert_eq!(fdbcli_said(""), "");
        let said = fdbcli_said(
            "\nWARNING: Long delay (Ctrl-C to interrupt)\nERROR: Could not communicate\n",
        );
        assert_eq!(
            said,
            "; fdbcli's stderr ends with:\nERROR: Could not communicate"
        );
    }

    #[test]
    fn free_ports_are_distinct_and_none_is_one_the_kernel_gives_outgoing_connections() {
        let p = free_ports(3, None).unwrap();
        assert!(p[0] != p[1] && p[1] != p[2] && p[0] != p[2], "{p:?}");
        let (low, high) = ephemeral_ports();
        if unassigned_ports((low, high)).is_some() {
            assert!(p.iter().all(|&p| (10000..low).contains(&p)), "{p:?} {low}");
        }
    }

    #[test]
    fn ports_are_drawn_below_the_ephemeral_range_where_it_leaves_room() {
        assert_eq!(unassigned_ports((32768, 60999)), Some(10000..32768));
        assert_eq!(unassigned_ports((11000, 60999)), Some(10000..11000));
        assert_eq!(unassigned_ports((10999, 60999)), None);
        assert_eq!(unassigned_ports((1024, 65535)), None);
    }

    #[test]
    fn ports_of_a_range_are_its_free_ones_or_an_error_that_says_so() {
        // A port below the kernel's ephemeral range (32768 and up by default): no other
        // test's bind to port 0 can take it once it is released below.
        let (held, port) = (20_000..30_000)
            .find_map(|p| Some((TcpListener::bind((Ipv4Addr::LOCALHOST, p)).ok()?, p)))
            .expect("a free port in 20000-29999");
        let range = PortRange {
            low: port,
            high: port,
        };
        let err = free_ports(1, Some(range)).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "--port-range {port}-{port} has 0 free port(s) now, and the cluster needs 1"
            )),
            "{err}"
        );
        drop(held);
        assert_eq!(free_ports(1, Some(range)).unwrap(), [port]);
        // Handed to a cluster that still exists: not free for another starting at once.
        assert!(free_ports(1, Some(range)).is_err());
        HANDED_OUT.lock().unwrap().remove(&port);
        assert_eq!(free_ports(1, Some(range)).unwrap(), [port]);
        HANDED_OUT.lock().unwrap().remove(&port);
    }

    #[test]
    fn own_process_is_running() {
        assert!(process_running(std::process::id()));
        assert!(!process_running(u32::MAX));
    }
}
