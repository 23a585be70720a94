//! Pinned npm packages in a git-ignored prefix under `.tools/`, with a Node binary of their own
//! (the npm package `node-<os>-<arch>`, [`NODE_VERSION`]): the machine's Node may be older than
//! the tools need, and only the install step needs `npm` (any version) and the network.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::run_command;

/// The pinned version of the Node binary package.
pub(crate) const NODE_VERSION: &str = "22.23.5";

/// A prefix holding a Node binary and pinned packages.
#[derive(Debug)]
pub(crate) struct Prefix {
    /// The Node binary installed there.
    pub(crate) node: PathBuf,
    modules: PathBuf,
}

impl Prefix {
    /// Installs Node and `packages` (`(name, version)`) into `prefix`, unless the exact
    /// versions are there already.
    pub(crate) fn install(prefix: &Path, packages: &[(&str, &str)]) -> Result<Self> {
        let node_package = node_package()?;
        let modules = prefix.join("node_modules");
        let installed = Self {
            node: modules.join(&node_package).join("bin").join("node"),
            modules,
        };
        let wanted: Vec<(&str, &str)> = std::iter::once((node_package.as_str(), NODE_VERSION))
            .chain(packages.iter().copied())
            .collect();
        if installed.node.is_file()
            && wanted
                .iter()
                .all(|(package, version)| installed.version(package).as_deref() == Some(*version))
        {
            eprintln!("already installed in {}", prefix.display());
            return Ok(installed);
        }
        fs::create_dir_all(prefix).with_context(|| format!("creating {}", prefix.display()))?;
        let mut npm = Command::new("npm");
        npm.arg("install")
            .arg("--prefix")
            .arg(prefix)
            .args([
                "--save-exact",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                // The machine's Node runs npm only; the tools run on the Node installed here.
                "--engine-strict=false",
            ])
            .args(
                wanted
                    .iter()
                    .map(|(package, version)| format!("{package}@{version}")),
            );
        run_command(&mut npm).context(
            "installing the npm tools needs `npm` (any version) and access to the npm registry",
        )?;
        ensure!(
            installed.node.is_file(),
            "npm finished but {} is missing",
            installed.node.display()
        );
        Ok(installed)
    }

    /// A file of an installed package.
    pub(crate) fn file(&self, package: &str, path: &str) -> PathBuf {
        self.modules.join(package).join(path)
    }

    /// The `version` of an installed package.
    fn version(&self, package: &str) -> Option<String> {
        let text = fs::read_to_string(self.modules.join(package).join("package.json")).ok()?;
        let json: Value = serde_json::from_str(&text).ok()?;
        json["version"].as_str().map(str::to_owned)
    }
}

/// The npm package holding a Node binary for this machine.
fn node_package() -> Result<String> {
    let os = match env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        other => bail!("no Node binary package for {other}: run the tool by hand (see README)"),
    };
    let arch = match env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => bail!("no Node binary package for {other}: run the tool by hand (see README)"),
    };
    Ok(format!("node-{os}-{arch}"))
}
