//! Config stage: which cluster the trials run against, decided once from `--cluster-file`
//! and the topology flags: one the gate starts for each trial, or one it did not start.

use serde::{ser::SerializeMap as _, Serialize, Serializer};

use super::{existing::ExistingCluster, topology::Topology};

/// The cluster every trial runs against. The questions the other stages ask of it (how
/// many servers, whose knobs, which testers) are answered by its methods; where the
/// stages really differ (the plan reading the engine of a cluster it did not start, a
/// trial starting servers or only checking `status json`) they match on it, so another
/// kind of cluster is one more variant.
#[derive(Debug, Clone)]
pub enum ClusterSource {
    /// The gate starts and configures a cluster of this shape for each trial.
    Own(Topology),
    /// A cluster the gate did not start (`--cluster-file`): trials run only testers
    /// against it, one arm; its servers, knobs, engine and shape are its own.
    Existing(ExistingCluster),
    /// FDB's simulator's cluster, inside the one `fdbserver -r simulation` process of each
    /// trial (the simulation driver): no servers, ports or `status json`; its shape is the
    /// spec's `[configuration]` (`fdb::simulation::SimulationSpec`).
    Simulated,
}

impl ClusterSource {
    /// The cluster the gate did not start, if that is what the trials run against.
    pub fn existing(&self) -> Option<&ExistingCluster> {
        match self {
            ClusterSource::Existing(e) => Some(e),
            ClusterSource::Own(_) | ClusterSource::Simulated => None,
        }
    }

    /// The shape of the gate's own cluster; the default shape for a cluster it did not
    /// start, whose shape is read from `status json` at each trial instead (and which a
    /// recorded baseline stores as the default).
    pub fn topology(&self) -> &Topology {
        match self {
            ClusterSource::Own(t) => t,
            ClusterSource::Existing(_) | ClusterSource::Simulated => &Topology::LOOPBACK,
        }
    }

    /// fdbserver processes the gate starts per trial, each on a port of its own: none for
    /// a cluster it did not start.
    pub fn servers(&self) -> u32 {
        match self {
            ClusterSource::Own(t) => t.servers(),
            ClusterSource::Existing(_) | ClusterSource::Simulated => 0,
        }
    }

    /// Testers started on other hosts that each multitest waits for (`--remote-testers`);
    /// only a cluster the gate did not start has any.
    pub fn remote_testers(&self) -> u32 {
        self.existing().map_or(0, |e| e.remote_testers)
    }

    /// Whose the knobs of a trial are, as a prefix of the word "knobs" in the plan and
    /// the report: the testers' alone against a cluster the gate did not start (its
    /// servers have their own), else the servers' and testers' both (no prefix).
    pub fn knob_owner(&self) -> &'static str {
        match self {
            ClusterSource::Own(_) | ClusterSource::Simulated => "",
            ClusterSource::Existing(_) => "tester ",
        }
    }
}

/// Saved in meta.json's config as it always was: `topology` when the gate's own cluster
/// is not the default one, `existing` for a cluster the gate did not start.
impl Serialize for ClusterSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match self {
            ClusterSource::Own(t) if t.is_default() => {}
            ClusterSource::Own(t) => map.serialize_entry("topology", t)?,
            ClusterSource::Existing(e) => map.serialize_entry("existing", e)?,
            ClusterSource::Simulated => map.serialize_entry("simulated", &true)?,
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_own_cluster_of_the_default_shape_saves_nothing_and_another_its_topology() {
        let json = |c: &ClusterSource| serde_json::to_value(c).unwrap();
        assert_eq!(
            json(&ClusterSource::Own(Topology::default())),
            serde_json::json!({})
        );
        let three = Topology {
            hosts: 3,
            ..Topology::default()
        };
        let saved = json(&ClusterSource::Own(three.clone()));
        assert_eq!(saved["topology"]["hosts"], 3);
        assert_eq!(saved.as_object().unwrap().len(), 1);
        assert_eq!(ClusterSource::Own(three).servers(), 9);
    }
}
