//! The Prometheus parser the metrics tests read `/metrics` with: the official Python client
//! library's (`prometheus-client` [`VERSION`]), in a virtual environment
//! `.tools/prometheus/python` made with the machine's `python3`, installed once. Its Python is
//! handed to the tests in [`PYTHON_ENV`].

use std::{path::PathBuf, process::Command};

use anyhow::Result;

use crate::{clients, project_root};

/// The pinned prometheus-client.
const VERSION: &str = "0.21.1";

/// The variable naming the Python with prometheus-client.
const PYTHON_ENV: &str = "REACTOR_E2E_PROMETHEUS_PYTHON";

/// The installed parser.
#[derive(Debug)]
pub(crate) struct Installed {
    python: PathBuf,
}

impl Installed {
    /// Sets [`PYTHON_ENV`] on `command`.
    pub(crate) fn pass_to(&self, command: &mut Command) {
        command.env(PYTHON_ENV, &self.python);
    }
}

/// Installs the parser unless it is there.
pub(crate) fn install() -> Result<Installed> {
    let venv = project_root()
        .join(".tools")
        .join("prometheus")
        .join("python");
    let python = clients::python_with(&venv, "prometheus-client", VERSION)?;
    Ok(Installed { python })
}
