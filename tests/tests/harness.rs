//! The harness itself: a long-running host process is found, watched and killed.

use std::{net::TcpStream, time::Duration};

use e2e::{HostProcess, PluginDir, host_bin, library_file_name};

#[test]
fn host_process_collects_stderr_as_it_comes_and_reports_the_exit() {
    let dir = PluginDir::with(&["sandboxes"]);
    dir.write(&library_file_name("broken"), "not a library");
    let plugin_dir = dir.path().to_str().unwrap();
    let mut host = HostProcess::spawn(&["list", "--plugin-dir", plugin_dir], &[]);
    let line = host.wait_for_stderr("skipping plugin file", Duration::from_secs(20));
    assert!(line.contains(&library_file_name("broken")), "{line}");
    let status = host.wait_for_exit(Duration::from_secs(20));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert!(host.stdout_so_far().contains("sandboxes 0.1.0"));
}

#[cfg(target_os = "linux")]
#[test]
fn serving_host_gives_its_address_and_its_mappings() {
    // `benchmarks` is opened only when a URL names its toolset, so a host that has served
    // nothing yet has not mapped it.
    let dir = PluginDir::with(&["benchmarks"]);
    let host = HostProcess::serve(&dir, &[]);
    assert_ne!(host.addr().port(), 0);
    assert_eq!(host.base_url(), format!("http://{}", host.addr()));
    TcpStream::connect_timeout(&host.addr(), Duration::from_secs(5))
        .expect("the host accepts connections where it said it listens");

    let binary = host_bin().canonicalize().unwrap();
    assert!(
        host.mapped_files().contains(&binary),
        "the host's maps list its own binary"
    );
    assert!(
        host.mapped_plugin_libraries(&dir).is_empty(),
        "{:?}\n{}",
        host.mapped_plugin_libraries(&dir),
        host.stderr_so_far()
    );
}
