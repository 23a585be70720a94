//! The "Many tools" figures (BENCHMARKS.md): on the generated catalogue of 200 plugins of 10
//! tools ([`bench::catalogue`]), the size of `tools/list` in normal and discovery mode (bytes,
//! and tokens estimated as bytes / 4, the usual rule of thumb for English and JSON with
//! OpenAI's and Anthropic's tokenizers), the size of one `search_tools` answer, the time to
//! build the index, the recall of the 50 queries (right tool in the top 1 and top 5), printed
//! first; then criterion times one search (group `search`).

use std::{hint::black_box, time::Instant};

use bench::catalogue::{self, QUERIES};
use criterion::{Criterion, criterion_group, criterion_main};
use reactor_mcp_server::internals::{
    reports::{ToolIndex, search_everything},
    serve::tools_list,
};

/// Bytes and estimated tokens of `json`.
fn size(what: &str, json: &str) {
    println!(
        "{what:<44} {:>10} bytes  ~{:>8} tokens",
        json.len(),
        json.len().div_ceil(4)
    );
}

fn figures() {
    let registry = catalogue::registry();
    let normal = serde_json::to_string(&tools_list(&registry, false)).unwrap();
    let discover = serde_json::to_string(&tools_list(&registry, true)).unwrap();
    println!("Many tools: 200 plugins x 10 tools (generated manifests)");
    size("tools/list, normal mode (2,001 tools)", &normal);
    size("tools/list, discovery mode (3 tools)", &discover);
    let started = Instant::now();
    let index = ToolIndex::new(&registry);
    println!(
        "{:<44} {:>10.1} ms",
        "search index built (once per generation)",
        started.elapsed().as_secs_f64() * 1e3
    );
    let answer = search_everything(&index, &registry, QUERIES[0].0, 5);
    size("one search_tools answer (5 tools)", &answer.to_string());
    let ranks = catalogue::ranks(&registry, &index, 5);
    let top1 = ranks.iter().filter(|r| **r == Some(1)).count();
    let top5 = ranks.iter().filter(|r| r.is_some()).count();
    println!(
        "recall on {} queries: top 1 {top1}, top 5 {top5}",
        QUERIES.len()
    );
    for ((query, answer), rank) in QUERIES.iter().zip(&ranks) {
        if rank.is_none() {
            println!("  missed: {query:?} (wanted {answer})");
        }
    }
}

fn bench(c: &mut Criterion) {
    figures();
    let registry = catalogue::registry();
    let index = ToolIndex::new(&registry);
    let mut group = c.benchmark_group("search");
    let mut n = 0;
    group.bench_function("one search of 2,000 tools (limit 5)", |b| {
        b.iter(|| {
            n = (n + 1) % QUERIES.len();
            black_box(search_everything(&index, &registry, QUERIES[n].0, 5))
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
