//! `cargo xtask deploy`: checks the deployment files under `deploy/`. The Kubernetes manifests
//! are validated against the Kubernetes API schemas (strictly: an unknown field is an error) by
//! `kubernetes-validate` [`VERSION`] from PyPI, in a virtual environment `.tools/deploy/python`
//! installed once; the compose file against the Compose Specification's schema by
//! `check-jsonschema` [`COMPOSE_VERSION`] (which carries that schema) in the same environment;
//! the balancer configurations by HAProxy's and nginx's own checks when those are installed
//! (Debian's `haproxy` and `nginx-light`), said and skipped otherwise; and the image, with
//! podman or buildah when one is installed, said and skipped otherwise.

use std::{path::Path, process::Command};

use anyhow::{Context, Result};

use crate::{clients, project_root, run_command};

/// The pinned validator; it carries the schemas, so it validates offline.
const VERSION: &str = "1.37.0";

/// The pinned validator of the compose file; it carries the Compose Specification's schema.
const COMPOSE_VERSION: &str = "0.39.0";

/// The options of `cargo xtask deploy` (none).
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Args {}

/// Validates every file of `deploy/`.
pub(crate) fn run(_args: &Args) -> Result<()> {
    let deploy = project_root().join("deploy");
    let venv = project_root().join(".tools").join("deploy").join("python");
    let python = clients::python_with(&venv, "kubernetes-validate", VERSION)?;
    let mut manifests: Vec<_> = std::fs::read_dir(deploy.join("kubernetes"))
        .context("reading deploy/kubernetes")?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    manifests.sort();
    run_command(
        Command::new(&python)
            .args(["-m", "kubernetes_validate", "--strict", "--quiet"])
            .args(&manifests),
    )
    .context("a Kubernetes manifest does not validate")?;
    eprintln!("{} Kubernetes manifest file(s) valid", manifests.len());
    let python = clients::python_with(&venv, "check-jsonschema", COMPOSE_VERSION)?;
    run_command(
        Command::new(&python)
            .args([
                "-m",
                "check_jsonschema",
                "--builtin-schema",
                "vendor.compose-spec",
            ])
            .arg(deploy.join("compose.yaml")),
    )
    .context("deploy/compose.yaml does not follow the Compose Specification")?;
    for config in ["haproxy.cfg", "compose/haproxy.cfg"] {
        check_with(
            "haproxy",
            &["-c", "-f"],
            &deploy.join(config),
            "apt-get install haproxy",
        )?;
    }
    check_with(
        "nginx",
        &["-t", "-c"],
        &deploy.join("nginx.conf"),
        "apt-get install nginx-light",
    )?;
    build_image()
}

/// Builds the image of `deploy/Containerfile` with podman or buildah when one is installed
/// (it pulls its base images from docker.io); says so and skips it otherwise.
fn build_image() -> Result<()> {
    let root = project_root();
    let file = root.join("deploy").join("Containerfile");
    for (tool, verb) in [("podman", "build"), ("buildah", "bud")] {
        if Command::new(tool).arg("--version").output().is_ok() {
            return run_command(
                Command::new(tool)
                    .args([verb, "--file"])
                    .arg(&file)
                    .args(["--tag", "reactor-mcp-server:check"])
                    .arg(&root),
            )
            .with_context(|| format!("{tool} cannot build {}", file.display()));
        }
    }
    eprintln!(
        "neither podman nor buildah is installed: the image of {} is not built \
         (apt-get install podman builds it)",
        file.display()
    );
    Ok(())
}

/// Runs `program ARGS FILE`, the program's own check of its configuration, if it is installed.
fn check_with(program: &str, args: &[&str], file: &Path, install: &str) -> Result<()> {
    if Command::new(program).arg("-v").output().is_err() {
        eprintln!(
            "{program} is not installed: {} not checked ({install} checks it)",
            file.display()
        );
        return Ok(());
    }
    run_command(Command::new(program).args(args).arg(file))
        .with_context(|| format!("{program} refuses {}", file.display()))
}
