//! Rate limits and quotas counted in Redis (`--redis-url`), so the replicas of a deployment
//! draw on the same buckets and windows: one Lua script takes a call from every counter that
//! applies, or from none when one refuses, atomically, on Redis's clock (the replicas' clocks
//! may differ). A counter's key names the entry, how it counts and what it counts per, so a
//! changed entry starts anew, as it does in one process; it expires once it would be full
//! (bucket) or over (window) again.

use std::{sync::OnceLock, time::Duration};

use super::{
    Denial, DenialKind,
    limits::{Counter, Counting},
};
use crate::shared::Shared;

/// Takes a call from every counter, or refuses at the first that is empty: `{0, 0}` when taken,
/// `{i, wait_ms}` when counter `i` (from 1) refuses.
const TAKE: &str = r"
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local next = {}
for i, key in ipairs(KEYS) do
  local base = (i - 1) * 3
  local kind, a, b = ARGV[base + 1], tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3])
  if kind == 'bucket' then
    local held = redis.call('HMGET', key, 'tokens', 'at')
    local tokens = tonumber(held[1]) or a
    local at = tonumber(held[2]) or now
    tokens = math.min(a, tokens + math.max(0, now - at) / 1000 * b)
    if tokens < 1 then
      return {i, math.ceil((1 - tokens) / b * 1000)}
    end
    next[i] = {'tokens', tostring(tokens - 1), 'at', tostring(math.max(now, at)),
               math.ceil(a / b * 1000) + 1000}
  else
    local held = redis.call('HMGET', key, 'start', 'used')
    local start = tonumber(held[1]) or now
    local used = tonumber(held[2]) or 0
    if now - start >= b then
      start, used = now, 0
    end
    if used >= a then
      return {i, start + b - now}
    end
    next[i] = {'start', tostring(start), 'used', tostring(used + 1), start + b - now + 1000}
  end
end
for i, key in ipairs(KEYS) do
  local n = next[i]
  redis.call('HSET', key, n[1], n[2], n[3], n[4])
  redis.call('PEXPIRE', key, n[5])
end
return {0, 0}
";

fn script() -> &'static redis::Script {
    static SCRIPT: OnceLock<redis::Script> = OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(TAKE))
}

/// Counts one call against `counters` in `shared`, or refuses it, naming the entry and how
/// long until a call would pass it; a Redis that does not answer refuses it too, saying so.
pub(crate) async fn admit(shared: &Shared, counters: &[Counter<'_>]) -> Result<(), Denial> {
    if counters.is_empty() {
        return Ok(());
    }
    let mut invocation = script().prepare_invoke();
    for counter in counters {
        let (name, counting) = counter.identity();
        let (kind, a, b) = match counting {
            Counting::Bucket {
                capacity,
                per_second,
            } => ("bucket", capacity, per_second),
            Counting::Window { calls, period } => {
                #[allow(clippy::cast_precision_loss)] // counts and milliseconds far below 2^52
                let (calls, period) = (calls as f64, period.as_millis() as f64);
                ("window", calls, period)
            }
        };
        invocation
            .key(shared.key(&format!("limit:{name}:{kind}:{a}:{b}:{}", counter.key())))
            .arg(kind)
            .arg(a)
            .arg(b);
    }
    let taken: Result<(usize, u64), redis::RedisError> =
        invocation.invoke_async(&mut shared.connection()).await;
    match taken {
        Ok((0, _)) => Ok(()),
        Ok((refused, wait)) => {
            let counter = counters.get(refused - 1).unwrap_or(&counters[0]);
            Err(counter.denial(Duration::from_millis(wait)))
        }
        Err(error) => {
            let (name, _) = counters[0].identity();
            Err(Denial {
                rule: name.to_owned(),
                kind: DenialKind::Unshared,
                message: format!(
                    "the policy's `{name}` cannot be counted: the shared counters in Redis \
                     (--redis-url) do not answer ({error})"
                ),
                retry_after: Some(Duration::from_secs(1)),
            })
        }
    }
}
