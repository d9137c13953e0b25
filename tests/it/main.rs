//! End-to-end tests of `cargo xtask bench` against the FDB test double: the real gate
//! binary, real processes (fake fdbserver/fdbcli/mako), temp dirs, ports chosen at run
//! time. One binary, a module per area.

mod baseline;
mod bench;
mod build;
mod ci;
mod flags;
mod golden;
mod layout;
mod shared;
mod support;
mod tidy;
