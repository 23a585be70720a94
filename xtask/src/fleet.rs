//! `cargo xtask fleet`: the fleet tests alone (`tests/tests/fleet.rs`): replicas of the real
//! host sharing state in a real Redis, behind a real HAProxy. They need Debian's
//! `redis-server` and `haproxy` (`apt-get install redis-server haproxy`); here, unlike under a
//! plain `cargo test`, a missing one fails the run instead of skipping the tests.

use std::process::Command;

use anyhow::{Result, bail};

use crate::{cargo, run_command};

/// The options of `cargo xtask fleet` (none).
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Args {}

/// The environment variable that turns the fleet tests' SKIPPED into a failure.
pub(crate) const REQUIRED: &str = "E2E_REQUIRE_FLEET";

/// Runs the fleet tests, requiring Redis and HAProxy.
pub(crate) fn run(_args: &Args) -> Result<()> {
    for (program, package) in [("redis-server", "redis-server"), ("haproxy", "haproxy")] {
        if Command::new(program).arg("--version").output().is_err() {
            bail!("{program} is not installed: apt-get install {package}");
        }
    }
    let mut command = cargo();
    command
        .args(["test", "-p", "e2e", "--test", "tests", "fleet::"])
        .env(REQUIRED, "1");
    run_command(&mut command)
}
