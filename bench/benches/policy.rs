//! Criterion benchmark of what a policy adds to each tool call (BENCHMARKS.md, "Policies: the
//! cost per call"): the checks a call goes through (a rule that hides the tool, the rate limits
//! and quotas), with no policy file and with one of 10 rules and 3 buckets; and a decision the
//! rules make the first time a caller meets a tool (the 10 CEL conditions run), which later
//! calls find in the map. The group is `policy`.

use std::{hint::black_box, path::Path};

use criterion::{Criterion, criterion_group, criterion_main};
use plugin_manifest::Annotations;
use reactor_mcp_server::internals::policy::{Caller, Policy, PolicyFile, ToolFacts};

/// 10 rules no call below matches (each runs), and 3 buckets every call passes through.
const POLICY: &str = include_str!("../fixtures/policy.toml");

fn policy(text: &str) -> Policy {
    let path = Path::new("policy.toml");
    Policy::compile(path, &PolicyFile::parse(path, text).unwrap(), None).unwrap()
}

/// What a call goes through: the rules, then the limits.
fn checks(policy: &Policy, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> bool {
    policy.hides(caller, tool).is_none() && policy.admit(caller, tool).is_ok()
}

fn bench(c: &mut Criterion) {
    let scopes = ["read".to_owned()];
    let caller = Caller {
        key: "key:alice",
        name: "alice",
        kind: "key",
        scopes: &scopes,
        claims: None,
    };
    let annotations = Annotations {
        read_only: Some(true),
        ..Annotations::default()
    };
    let tool = ToolFacts {
        name: "echo",
        toolset: "benchmarks",
        plugin: "benchmarks",
        annotations: &annotations,
    };
    let none = Policy::default();
    let some = policy(POLICY);
    let mut group = c.benchmark_group("policy");
    group.bench_function("a call, no policy file", |b| {
        b.iter(|| black_box(checks(&none, black_box(&caller), black_box(&tool))));
    });
    group.bench_function("a call, 10 rules and 3 buckets", |b| {
        b.iter(|| black_box(checks(&some, black_box(&caller), black_box(&tool))));
    });
    let mut n = 0u64;
    group.bench_function("a first decision: 10 CEL rules run", |b| {
        b.iter(|| {
            n += 1;
            let name = format!("user-{n}");
            let key = format!("key:{name}");
            let fresh = Caller {
                key: &key,
                name: &name,
                ..caller
            };
            black_box(some.hides(&fresh, &tool).is_none())
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
