//! The plugin's own logs: its `tracing` events and `log` records reach the host's log.
//!
//! A plugin library has its own copy of `tracing`'s and `log`'s statics, so the host's
//! subscriber never sees what it logs. When the host hands the library its sink
//! ([`log_to`], before the plugin is instantiated), this module makes itself the library's
//! global `tracing` subscriber and its `log` logger: each event at or above the host's most
//! verbose level is formatted (its message, its other fields as a JSON object) and sent across,
//! through the current call's `HostContext` when a call runs on the thread (so the host writes
//! it inside the call's span), else through the sink (at instantiation, on background threads).
//! Below the host's level, an event is dropped before anything is formatted: `tracing`'s
//! callsites are told they are disabled, and `log`'s maximum level is set, so a disabled event
//! costs one atomic load. A host that hands no sink (older than plugin-abi 0.2.1) leaves
//! everything disabled.
//!
//! The plugin's own spans are not forwarded: its events appear in the call's span, not in
//! spans of its own.

use std::sync::{
    Once, PoisonError, RwLock,
    atomic::{AtomicU8, Ordering},
};

use abi_stable::std_types::RStr;
use serde_json::{Map, Value};
use tracing_core::{
    Event, Interest, Level, LevelFilter, Metadata, Subscriber,
    field::{Field, Visit},
    span,
};

use crate::{
    context::Context,
    ffi::{FfiLogEvent, LogSinkBox, TraceLevel},
};

/// The most verbose level the host keeps ([`TraceLevel`]'s number); 0 until a host says.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(TraceLevel::Off as u8);

/// Where events from outside any call go.
static SINK: RwLock<Option<LogSinkBox>> = RwLock::new(None);

/// One event as the plugin made it, formatted.
struct Forwarded {
    level: TraceLevel,
    target: String,
    message: String,
    fields: Map<String, Value>,
}

impl Forwarded {
    /// Sends it: through the current call's context, else the sink.
    fn send(&self) {
        let fields = Value::Object(self.fields.clone()).to_string();
        let plugin = crate::runtime::plugin_name().unwrap_or_default();
        let event = FfiLogEvent {
            plugin: RStr::from(plugin),
            level: self.level as u8,
            target: RStr::from(self.target.as_str()),
            message: RStr::from(self.message.as_str()),
            fields_json: RStr::from(fields.as_str()),
        };
        if let Some(context) = Context::current() {
            context.host().plugin_event(event);
            return;
        }
        if let Some(sink) = SINK.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
            sink.event(event);
        }
    }
}

/// The root module's `log_to`: the host hands its sink, before instantiating the plugin.
#[doc(hidden)]
pub extern "C" fn log_to(sink: LogSinkBox) {
    let max = TraceLevel::from_u8(sink.max_level());
    *SINK.write().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    forward_from(max);
}

/// Forwards events at `max` and above from now on: installs the forwarder (once) and tells
/// `tracing`'s callsites and `log` the new level.
pub(crate) fn forward_from(max: TraceLevel) {
    static INSTALL: Once = Once::new();
    MAX_LEVEL.store(max as u8, Ordering::Release);
    INSTALL.call_once(|| {
        // A plugin that installed a subscriber or logger of its own keeps it.
        let _ =
            tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(Forwarder));
        let _ = log::set_logger(&Forwarder);
    });
    log::set_max_level(log_level_filter(max));
    tracing_core::callsite::rebuild_interest_cache();
}

fn max_level() -> TraceLevel {
    TraceLevel::from_u8(MAX_LEVEL.load(Ordering::Acquire))
}

fn trace_level(level: Level) -> TraceLevel {
    match level {
        Level::ERROR => TraceLevel::Error,
        Level::WARN => TraceLevel::Warn,
        Level::INFO => TraceLevel::Info,
        Level::DEBUG => TraceLevel::Debug,
        _ => TraceLevel::Trace,
    }
}

fn log_trace_level(level: log::Level) -> TraceLevel {
    TraceLevel::from_u8(level as usize as u8)
}

fn log_level_filter(level: TraceLevel) -> log::LevelFilter {
    match level {
        TraceLevel::Off => log::LevelFilter::Off,
        TraceLevel::Error => log::LevelFilter::Error,
        TraceLevel::Warn => log::LevelFilter::Warn,
        TraceLevel::Info => log::LevelFilter::Info,
        TraceLevel::Debug => log::LevelFilter::Debug,
        TraceLevel::Trace => log::LevelFilter::Trace,
    }
}

fn level_filter(level: TraceLevel) -> LevelFilter {
    match level {
        TraceLevel::Off => LevelFilter::OFF,
        TraceLevel::Error => LevelFilter::ERROR,
        TraceLevel::Warn => LevelFilter::WARN,
        TraceLevel::Info => LevelFilter::INFO,
        TraceLevel::Debug => LevelFilter::DEBUG,
        TraceLevel::Trace => LevelFilter::TRACE,
    }
}

/// The library's `tracing` subscriber and `log` logger: forwards events, ignores spans.
struct Forwarder;

impl Subscriber for Forwarder {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.enabled(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(level_filter(max_level()))
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && trace_level(*metadata.level()) <= max_level()
    }

    fn new_span(&self, _span: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _span: &span::Id, _values: &span::Record<'_>) {}

    fn record_follows_from(&self, _span: &span::Id, _follows: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        Forwarded {
            level: trace_level(*metadata.level()),
            target: metadata.target().to_owned(),
            message: fields.message,
            fields: fields.others,
        }
        .send();
    }

    fn enter(&self, _span: &span::Id) {}

    fn exit(&self, _span: &span::Id) {}
}

impl log::Log for Forwarder {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        log_trace_level(metadata.level()) <= max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !log::Log::enabled(self, record.metadata()) {
            return;
        }
        let mut fields = Map::new();
        let _ = record.key_values().visit(&mut KeyValues(&mut fields));
        Forwarded {
            level: log_trace_level(record.level()),
            target: record.target().to_owned(),
            message: record.args().to_string(),
            fields,
        }
        .send();
    }

    fn flush(&self) {}
}

/// An event's message and its other fields as JSON.
#[derive(Default)]
struct Fields {
    message: String,
    others: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            match value {
                Value::String(text) => self.message = text,
                other => self.message = other.to_string(),
            }
        } else {
            self.others.insert(field.name().to_owned(), value);
        }
    }
}

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::from(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

/// Collects a `log` record's key-values as JSON.
struct KeyValues<'a>(&'a mut Map<String, Value>);

impl<'kvs> log::kv::VisitSource<'kvs> for KeyValues<'_> {
    fn visit_pair(
        &mut self,
        key: log::kv::Key<'kvs>,
        value: log::kv::Value<'kvs>,
    ) -> Result<(), log::kv::Error> {
        let value = if let Some(n) = value.to_i64() {
            Value::from(n)
        } else if let Some(n) = value.to_u64() {
            Value::from(n)
        } else if let Some(n) = value.to_f64() {
            Value::from(n)
        } else if let Some(b) = value.to_bool() {
            Value::from(b)
        } else {
            Value::from(value.to_string())
        };
        self.0.insert(key.as_str().to_owned(), value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_number_as_the_log_crate_does() {
        assert_eq!(log_trace_level(log::Level::Warn), TraceLevel::Warn);
        assert_eq!(log_trace_level(log::Level::Trace), TraceLevel::Trace);
        assert_eq!(trace_level(Level::INFO), TraceLevel::Info);
        assert_eq!(trace_level(Level::ERROR), TraceLevel::Error);
        assert!(TraceLevel::Debug > TraceLevel::Info);
        assert_eq!(log_level_filter(TraceLevel::Off), log::LevelFilter::Off);
        assert_eq!(level_filter(TraceLevel::Warn), LevelFilter::WARN);
    }
}
