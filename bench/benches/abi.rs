//! Criterion benchmark of the ABI crossing (figure 2 of `cargo xtask bench`): `echo` through
//! the host's handler table against the same function called directly, and the host's
//! argument validation.
//!
//! The plugin library is `$REACTOR_BENCH_PLUGIN`, else the `benchmarks` library of this
//! workspace's `target/release` (the bench profile builds there). The group is `abi`; the
//! report reads criterion's `target/criterion/abi/<id>/new/estimates.json`.

use std::{path::PathBuf, time::Duration};

use bench::abi::Subjects;
use criterion::{Criterion, criterion_group, criterion_main};

fn plugin_library() -> PathBuf {
    if let Some(path) = std::env::var_os("REACTOR_BENCH_PLUGIN") {
        return PathBuf::from(path);
    }
    let file = format!(
        "{}benchmarks{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/release")
        .join(file)
}

fn abi(c: &mut Criterion) {
    let library = plugin_library();
    let subjects = Subjects::new(&library).unwrap_or_else(|e| {
        panic!(
            "cannot open {} ({e:#}); build it with `cargo build --release -p benchmarks`",
            library.display()
        )
    });
    subjects.self_check().expect("the subjects work");
    let mut group = c.benchmark_group("abi");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("direct_fn", |b| b.iter(|| subjects.direct_fn()));
    group.bench_function("direct_json", |b| b.iter(|| subjects.direct_json()));
    group.bench_function("handler_table", |b| b.iter(|| subjects.handler_table()));
    group.bench_function("validate", |b| b.iter(|| subjects.validate()));
    group.finish();
}

criterion_group!(benches, abi);
criterion_main!(benches);
