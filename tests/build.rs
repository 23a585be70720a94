//! Lets the one e2e test binary link several fixture plugins' `rlib`s, which the parity test
//! builds in process with `PluginTest`.
//!
//! `#[plugin]` exports the library header abi_stable looks up when the host opens a plugin's
//! `cdylib`, under one `#[no_mangle]` name in every plugin, so two plugins linked into one
//! binary define it twice. The test binary never looks it up (its host side opens the `cdylib`
//! files), so the linker may keep either copy. The tests read `/proc`, so they run on Linux alone.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo::rustc-link-arg-tests=-Wl,--allow-multiple-definition");
    }
}
