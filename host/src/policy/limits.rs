//! Rate limits (token buckets) and call quotas (fixed windows), composed: a call must pass
//! every one that applies to it, and takes nothing from any when one refuses it. Counters
//! outlive a reload of the policy when their entry did not change.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use super::{
    Caller, Denial, DenialKind, ToolFacts,
    buckets::{Bucket, Keyed, Shape, Window},
    file::{Entry, LimitEntry, Per, QuotaEntry},
    matcher::{Matcher, key},
};

/// One rate limit, compiled.
#[derive(Debug)]
pub(crate) struct Limit {
    name: String,
    entry: LimitEntry,
    matcher: Matcher,
    per: Vec<Per>,
    buckets: Arc<Keyed<Bucket>>,
}

/// One quota, compiled.
#[derive(Debug)]
pub(crate) struct Quota {
    name: String,
    entry: QuotaEntry,
    matcher: Matcher,
    windows: Arc<Keyed<Window>>,
}

/// The rate limits and quotas of a policy.
#[derive(Debug, Default)]
pub(crate) struct Limits {
    limits: Vec<Limit>,
    quotas: Vec<Quota>,
}

impl Limits {
    /// The limits and quotas of `limits` and `quotas`, keeping the counters of `previous`'s
    /// entries that did not change.
    pub(crate) fn compile(
        limits: &[Entry<LimitEntry>],
        quotas: &[Entry<QuotaEntry>],
        previous: Option<&Limits>,
    ) -> Self {
        let limits = limits
            .iter()
            .map(|entry| {
                let kept = previous.and_then(|p| {
                    p.limits
                        .iter()
                        .find(|l| l.name == entry.name && l.entry == entry.value)
                });
                let value = &entry.value;
                let shape = Shape {
                    capacity: f64::from(value.burst.unwrap_or(value.rate).max(1)),
                    per_second: f64::from(value.rate.max(1)) / value.period.as_secs_f64(),
                };
                Limit {
                    name: entry.name.clone(),
                    entry: value.clone(),
                    matcher: Matcher::new(value.matching()),
                    per: value.per.clone(),
                    buckets: kept
                        .map_or_else(|| Arc::new(Keyed::new(shape)), |l| Arc::clone(&l.buckets)),
                }
            })
            .collect();
        let quotas = quotas
            .iter()
            .map(|entry| {
                let kept = previous.and_then(|p| {
                    p.quotas
                        .iter()
                        .find(|q| q.name == entry.name && q.entry == entry.value)
                });
                let value = &entry.value;
                Quota {
                    name: entry.name.clone(),
                    entry: value.clone(),
                    matcher: Matcher::new(value.matching()),
                    windows: kept.map_or_else(
                        || Arc::new(Keyed::new((value.calls, value.period))),
                        |q| Arc::clone(&q.windows),
                    ),
                }
            })
            .collect();
        Self { limits, quotas }
    }

    /// How many limits and quotas it has.
    pub(crate) fn len(&self) -> usize {
        self.limits.len() + self.quotas.len()
    }

    /// Whether there is any limit or quota.
    pub(crate) fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.quotas.is_empty()
    }
}

/// A counter a call draws on: a limit's bucket or a quota's window, under its key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Counter<'a> {
    /// A token bucket of a rate limit.
    Bucket(&'a Limit, &'a str),
    /// A fixed window of a quota.
    Window(&'a Quota, &'a str),
}

/// How one counter counts, as a shared store counts it ([`crate::policy::shared_limits`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Counting {
    /// A token bucket of `capacity` tokens refilled at `per_second`.
    Bucket { capacity: f64, per_second: f64 },
    /// At most `calls` per `period`.
    Window { calls: u64, period: Duration },
}

impl Counter<'_> {
    /// The entry's name and how the counter counts: with its key, what names it in a shared
    /// store (a changed entry starts anew, as it does in one process).
    pub(crate) fn identity(&self) -> (&str, Counting) {
        match self {
            Self::Bucket(limit, _) => {
                let shape = limit.buckets.config();
                let counting = Counting::Bucket {
                    capacity: shape.capacity,
                    per_second: shape.per_second,
                };
                (&limit.name, counting)
            }
            Self::Window(quota, _) => {
                let (calls, period) = quota.windows.config();
                (&quota.name, Counting::Window { calls, period })
            }
        }
    }

    /// The key counted under: the caller, the tool, ... as the entry's `per` says.
    pub(crate) fn key(&self) -> &str {
        match self {
            Self::Bucket(_, key) | Self::Window(_, key) => key,
        }
    }

    /// The refusal of a call by this counter, a call passing again in `wait`.
    pub(crate) fn denial(&self, wait: Duration) -> Denial {
        match self {
            Self::Bucket(limit, _) => Denial {
                rule: limit.name.clone(),
                kind: DenialKind::RateLimited,
                message: format!(
                    "rate limit `{}` reached ({} call(s) per {:?}{})",
                    limit.name,
                    limit.entry.rate,
                    limit.entry.period,
                    per_text(&limit.per)
                ),
                retry_after: Some(wait),
            },
            Self::Window(quota, _) => {
                let (calls, period) = quota.windows.config();
                Denial {
                    rule: quota.name.clone(),
                    kind: DenialKind::QuotaExhausted,
                    message: format!(
                        "quota `{}` used up ({calls} call(s) per {period:?} per caller)",
                        quota.name
                    ),
                    retry_after: Some(wait),
                }
            }
        }
    }

    /// Takes one call from this counter in this process at `now`, or says how long to wait.
    fn take(&self, now: Instant) -> Result<(), Duration> {
        match self {
            Self::Bucket(limit, key) => {
                let shape = limit.buckets.config();
                limit.buckets.with(key, now, |b| b.take(shape, now))
            }
            Self::Window(quota, key) => {
                let (calls, period) = quota.windows.config();
                quota.windows.with(key, now, |w| w.take(calls, period, now))
            }
        }
    }

    /// Gives back the call [`Counter::take`] took.
    fn give_back(&self, now: Instant) {
        match self {
            Self::Bucket(limit, key) => {
                let shape = limit.buckets.config();
                limit.buckets.with(key, now, |b| b.give_back(shape));
            }
            Self::Window(quota, key) => quota.windows.with(key, now, Window::give_back),
        }
    }
}

impl Limits {
    /// The keys `caller` calling `tool` counts under, one per limit and quota that applies,
    /// limits first, in the policy's order.
    pub(crate) fn keys(&self, caller: &Caller<'_>, tool: &ToolFacts<'_>) -> Vec<String> {
        let limits = self
            .limits
            .iter()
            .filter(|limit| limit.matcher.matches(caller, tool))
            .map(|limit| key(&limit.per, caller, tool));
        let quotas = self
            .quotas
            .iter()
            .filter(|quota| quota.matcher.matches(caller, tool))
            .map(|_| caller.key.to_owned());
        limits.chain(quotas).collect()
    }

    /// The counters `caller` calling `tool` draws on, under `keys` ([`Limits::keys`]).
    pub(crate) fn counters<'a>(
        &'a self,
        caller: &Caller<'_>,
        tool: &ToolFacts<'_>,
        keys: &'a [String],
    ) -> Vec<Counter<'a>> {
        let limits = self
            .limits
            .iter()
            .filter(|limit| limit.matcher.matches(caller, tool))
            .map(Ok);
        let quotas = self
            .quotas
            .iter()
            .filter(|quota| quota.matcher.matches(caller, tool))
            .map(Err);
        limits
            .chain(quotas)
            .zip(keys)
            .map(|(entry, key)| match entry {
                Ok(limit) => Counter::Bucket(limit, key),
                Err(quota) => Counter::Window(quota, key),
            })
            .collect()
    }

    /// Counts `caller` calling `tool` at `now` against every limit and quota that applies,
    /// or refuses it, naming the entry and how long until a call would pass it; a refused
    /// call takes from none.
    pub(crate) fn admit(
        &self,
        caller: &Caller<'_>,
        tool: &ToolFacts<'_>,
        now: Instant,
    ) -> Result<(), Denial> {
        let keys = self.keys(caller, tool);
        let counters = self.counters(caller, tool, &keys);
        for (taken, counter) in counters.iter().enumerate() {
            if let Err(wait) = counter.take(now) {
                for earlier in &counters[..taken] {
                    earlier.give_back(now);
                }
                return Err(counter.denial(wait));
            }
        }
        Ok(())
    }
}

/// ` per caller and tool`, or nothing for one bucket in all.
fn per_text(per: &[Per]) -> String {
    if per.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = per
        .iter()
        .map(|p| match p {
            Per::Identity => "caller",
            Per::Tool => "tool",
            Per::Toolset => "toolset",
            Per::Plugin => "plugin",
        })
        .collect();
    format!(" per {}", names.join(" and "))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::policy::{
        file::PolicyFile,
        tests::{alice, bob, tool},
    };

    fn limits(text: &str, previous: Option<&Limits>) -> Limits {
        let file = PolicyFile::parse(Path::new("p.toml"), text).unwrap();
        Limits::compile(&file.limits, &file.quotas, previous)
    }

    const TWO_PER_KEY: &str =
        "[[limit]]\nname = \"per key\"\nper = [\"identity\"]\nrate = 2\nperiod = \"1m\"\n";

    #[test]
    fn each_caller_has_its_own_bucket() {
        let limits = limits(TWO_PER_KEY, None);
        let (t, now) = (tool("t", "s", false), Instant::now());
        assert!(limits.admit(&alice(), &t, now).is_ok());
        assert!(limits.admit(&alice(), &t, now).is_ok());
        let denial = limits.admit(&alice(), &t, now).unwrap_err();
        assert_eq!(denial.rule, "per key");
        assert_eq!(denial.kind, DenialKind::RateLimited);
        assert_eq!(denial.retry_after, Some(Duration::from_secs(30)));
        assert!(limits.admit(&bob(), &t, now).is_ok(), "another caller");
        assert!(
            limits
                .admit(&alice(), &t, now + Duration::from_secs(30))
                .is_ok(),
            "refilled"
        );
    }

    #[test]
    fn a_call_must_pass_every_limit_and_a_refusal_takes_from_none() {
        let limits = limits(
            &format!(
                "{TWO_PER_KEY}[[limit]]\nname = \"server\"\nrate = 3\nperiod = \"1m\"\n\
                 [[quota]]\nname = \"q\"\ntool = \"other\"\ncalls = 1\nperiod = \"1d\"\n"
            ),
            None,
        );
        let (t, now) = (tool("t", "s", false), Instant::now());
        assert!(limits.admit(&alice(), &t, now).is_ok());
        assert!(limits.admit(&alice(), &t, now).is_ok());
        assert!(limits.admit(&bob(), &t, now).is_ok());
        assert_eq!(limits.admit(&bob(), &t, now).unwrap_err().rule, "server");
        let other = tool("other", "s", false);
        let later = now + Duration::from_secs(60);
        assert!(limits.admit(&bob(), &other, later).is_ok());
        assert_eq!(limits.admit(&bob(), &other, later).unwrap_err().rule, "q");
        // Bob's refused call gave back its tokens: two more calls of `t` pass.
        assert!(limits.admit(&bob(), &t, later).is_ok());
    }

    #[test]
    fn a_reload_keeps_the_counters_of_unchanged_entries() {
        let first = limits(TWO_PER_KEY, None);
        let (t, now) = (tool("t", "s", false), Instant::now());
        first.admit(&alice(), &t, now).unwrap();
        first.admit(&alice(), &t, now).unwrap();
        let same = limits(TWO_PER_KEY, Some(&first));
        assert!(same.admit(&alice(), &t, now).is_err(), "kept");
        let changed = limits(&TWO_PER_KEY.replace("rate = 2", "rate = 3"), Some(&first));
        assert!(changed.admit(&alice(), &t, now).is_ok(), "new buckets");
    }
}
