//! Results stage: what the run stage records and every later stage reads: trial records,
//! the results directory and its files, saved runs read back, recorded baselines, and the
//! host they were measured on.

pub mod baseline;
pub mod fs;
pub mod host;
pub mod noise;
pub mod profile;
pub mod saved;
pub mod trial;
