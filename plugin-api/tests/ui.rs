//! The compile errors of `#[plugin]`, each case in `tests/ui/` checked against the message in
//! its `.stderr` file; and the cases in `tests/ui/pass/`, which must compile and run.
//!
//! After changing a message on purpose, regenerate the files with `TRYBUILD=overwrite cargo test
//! -p reactor-plugin-api --test ui` and read the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
