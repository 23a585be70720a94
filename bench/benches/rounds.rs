//! Criterion benchmark of what an input-required round (protocol 2026-07-28) adds to a call
//! (BENCHMARKS.md, "Input-required rounds"): opening the `requestState` a client echoes (an
//! HMAC-SHA256 check and the answers' JSON), finding the answers of an `ask`, and sealing the
//! state of the next round, for 1 and 3 answers. The group is `rounds`.

use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use reactor_mcp_server::internals::serve::{Binding, Round, Sealer};
use serde_json::{Value, json};

/// `n` elicitation answers, `answer-0` ... `answer-{n-1}`.
fn answers(n: usize) -> BTreeMap<String, Value> {
    (0..n)
        .map(|i| {
            let answer = json!({"action": "accept", "content": {"name": format!("user {i}")}});
            (format!("answer-{i}"), answer)
        })
        .collect()
}

fn rounds(c: &mut Criterion) {
    let sealer = Sealer::random();
    let binding = Binding::new(
        "tools/call",
        "greet",
        &json!({"city": "Paris"}),
        Some("alice"),
    );
    let mut group = c.benchmark_group("rounds");
    for n in [1, 3] {
        let asked: Vec<(String, &str)> = (0..n)
            .map(|i| (format!("answer-{i}"), "elicitation/create"))
            .collect();
        let first = Round::open(&sealer, &binding, None, Some(answers(n))).expect("no state");
        first.answers(&asked).expect("every answer");
        let state = first.seal(&sealer, &binding);
        group.bench_function(format!("open the state of {n} answers"), |b| {
            b.iter(|| Round::open(&sealer, &binding, Some(&state), None).expect("it opens"));
        });
        let round = Round::open(&sealer, &binding, Some(&state), None).expect("it opens");
        group.bench_function(format!("answer an ask of {n}"), |b| {
            b.iter(|| round.answers(&asked).expect("every answer"));
        });
        group.bench_function(format!("seal {n} answers"), |b| {
            b.iter(|| round.seal(&sealer, &binding));
        });
        println!("a state of {n} answers is {} bytes", state.len());
    }
    group.finish();
}

criterion_group!(benches, rounds);
criterion_main!(benches);
